"""The group-commit queue both stores share (aophub.store.group_commit), with a fake commit."""

from __future__ import annotations

import asyncio

import pytest

from aophub.store.base import ReserveSeq, StoreError, WriteOp
from aophub.store.group_commit import GroupAnswers, GroupCommit

pytestmark = pytest.mark.timeout(10)


class FakeCommit:
    """Records each group it is given; answers each batch with its op count, or fails the ones named."""

    def __init__(self) -> None:
        self.groups: list[list[int]] = []
        self.failing: set[int] = set()  # batches (by their first op's upto) answered with an error
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Event()  # set once a group is being committed

    async def __call__(self, group: list[tuple[WriteOp, ...]]) -> GroupAnswers:
        self.entered.set()
        await self.gate.wait()
        self.groups.append([len(ops) for ops in group])
        return [
            StoreError("bad batch", retryable=False)
            if isinstance(ops[0], ReserveSeq) and ops[0].upto in self.failing
            else [len(ops)]
            for ops in group
        ]


def batch(upto: int, size: int = 1) -> list[WriteOp]:
    return [ReserveSeq("s", upto)] * size


async def test_batches_queued_meanwhile_commit_together_up_to_max_group_ops() -> None:
    """While a group commits, later batches queue; the next group takes them in order, at most 5 ops."""
    commit = FakeCommit()
    commits = GroupCommit(commit, max_group_ops=5, name="test")
    commits.start()
    commit.gate.clear()
    first = commits.submit(batch(0), "open")
    await commit.entered.wait()  # the writer task took the first batch and waits at the gate
    rest = [commits.submit(batch(n, size), "open") for n, size in enumerate((2, 2, 2, 9), start=1)]
    assert len(commits) == 4
    commit.failing.add(2)
    commit.gate.set()
    assert await first == [1]
    outcomes = await asyncio.gather(*rest, return_exceptions=True)
    assert [str(o) if isinstance(o, StoreError) else o for o in outcomes] == [[2], "bad batch", [2], [9]]
    assert commit.groups == [[1], [2, 2], [2], [9]]  # a batch larger than the bound goes alone
    await commits.drain()


async def test_drain_commits_what_was_queued_then_refuses() -> None:
    """drain(): every queued batch is answered; afterwards submit fails at once, naming the store's state."""
    commits = GroupCommit(FakeCommit(), max_group_ops=100, name="test")
    refused = commits.submit(batch(1), "new")
    with pytest.raises(StoreError, match="store is new: not accepting writes"):
        await refused
    commits.start()
    queued = [commits.submit(batch(n), "open") for n in range(3)]
    await commits.drain()
    assert [future.result() for future in queued] == [[1], [1], [1]]
    assert not commits.accepting
    with pytest.raises(StoreError, match="store is closing: not accepting writes"):
        await commits.submit(batch(9), "closing")


async def test_a_writer_that_dies_fails_the_batches_it_holds() -> None:
    """The task cancelled mid-commit: the batch being committed and those queued fail, not hang."""
    commit = FakeCommit()
    commit.gate.clear()
    commits = GroupCommit(commit, max_group_ops=1, name="test")
    commits.start()
    futures = [commits.submit(batch(n), "open") for n in range(3)]
    await commit.entered.wait()
    assert commits._task is not None
    commits._task.cancel()
    for future in futures:
        with pytest.raises(StoreError, match="store writer stopped"):
            await future
    assert not commits.accepting
