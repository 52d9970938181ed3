"""Group commit: batches submitted from the event loop, committed a group at a time by one task.

Both stores (:mod:`aophub.store.sqlite`, :mod:`aophub.store.postgres`) queue every batch of write
ops here. One writer task takes the queued batches in order, as many as fit in ``max_group_ops``
operations (a larger batch goes alone), hands them to the store's ``commit`` at once, and resolves
each batch's future with its answer: its results, or the :class:`StoreError` that failed it. How a
group is committed (one transaction, a retry batch by batch) is the store's; the queue, the
grouping and the answering are here.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aophub.store.base import StoreError, WriteOp

__all__ = ["CommitGroup", "GroupAnswers", "GroupCommit"]

# One answer per batch of a group, in order: its results, or the error that failed it.
GroupAnswers = list[list[int | None] | StoreError]
# Commits a group (the ops of each batch, in order) and answers every batch.
CommitGroup = Callable[[list[tuple[WriteOp, ...]]], Awaitable[GroupAnswers]]


@dataclass(slots=True)
class _Batch:
    ops: tuple[WriteOp, ...]
    future: asyncio.Future[list[int | None]]


class GroupCommit:
    """The queue of submitted batches and the writer task that commits them with ``commit``.

    :meth:`start` starts the task; :meth:`submit` queues a batch while it runs; :meth:`drain`
    stops taking batches, lets the task commit every one already queued, and waits for it. If the
    task dies (a bug, or cancelled), the batches it still holds fail with "store writer stopped".
    """

    def __init__(self, commit: CommitGroup, *, max_group_ops: int, name: str) -> None:
        self._commit = commit
        self._max_group_ops = max_group_ops
        self._name = name
        self._pending: deque[_Batch] = deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._draining = False

    def __repr__(self) -> str:
        return f"<GroupCommit {self._name!r} pending={len(self._pending)} accepting={self.accepting}>"

    def __len__(self) -> int:
        """Batches queued and not yet taken into a group."""
        return len(self._pending)

    @property
    def accepting(self) -> bool:
        """Whether :meth:`submit` queues batches: started, not draining, and the task alive."""
        return self._task is not None and not self._task.done() and not self._draining

    def start(self) -> None:
        """Start the writer task (in the running event loop)."""
        self._task = asyncio.create_task(self._run(), name=self._name)

    def submit(self, ops: Sequence[WriteOp], store_state: str) -> asyncio.Future[list[int | None]]:
        """Queue ``ops`` as one batch; the future resolves once it is committed (see ``Store.submit``).

        Unless :attr:`accepting`, the future fails at once with a non-retryable :class:`StoreError`
        saying the store is ``store_state``. Cancelling the future does not withdraw the batch.
        """
        future: asyncio.Future[list[int | None]] = asyncio.get_running_loop().create_future()
        if not self.accepting:
            future.set_exception(StoreError(f"store is {store_state}: not accepting writes", retryable=False))
            return future
        self._pending.append(_Batch(tuple(ops), future))
        self._wakeup.set()
        return future

    async def drain(self) -> None:
        """Stop taking batches, and wait until every batch queued before is committed (or failed)."""
        self._draining = True
        self._wakeup.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        group: list[_Batch] = []
        try:
            while True:
                if not self._pending:
                    if self._draining:
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                group = self._take_group()
                await self._answer(group)
                group = []
        finally:
            # Only reached with batches left if the writer died (a bug, or
            # cancelled): fail them rather than leave their callers hanging.
            stopped = StoreError("store writer stopped", retryable=False)
            for batch in [*group, *self._pending]:
                if not batch.future.done():
                    batch.future.set_exception(stopped)
            self._pending.clear()

    def _take_group(self) -> list[_Batch]:
        group = [self._pending.popleft()]
        size = len(group[0].ops)
        while self._pending and size + len(self._pending[0].ops) <= self._max_group_ops:
            batch = self._pending.popleft()
            size += len(batch.ops)
            group.append(batch)
        return group

    async def _answer(self, group: list[_Batch]) -> None:
        answers = await self._commit([batch.ops for batch in group])
        for batch, answer in zip(group, answers, strict=True):
            if batch.future.done():
                continue
            if isinstance(answer, StoreError):
                batch.future.set_exception(answer)
            else:
                batch.future.set_result(answer)
