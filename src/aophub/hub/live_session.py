"""Sessions loaded in memory, and the hub's own writes into them.

A :class:`LiveSession` holds what the hub keeps of a session while it serves it:
the stored record, its :class:`EventLog`, its turns and the lock every change of
the session is made under. :class:`LiveSessions` loads each session from the
store at most once (concurrent loads share one read) and stamps what the hub
itself writes into a session, its events and the changes of its record, with
the hub's clock and ids.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from google.protobuf.message import Message

from aop import chat_pb2, event_pb2
from aophub.hub.event_log import EventLog
from aophub.hub.turns import SessionState, SessionTurns, Turn
from aophub.ids import IdGenerator
from aophub.protocol.errors import Code, HubError
from aophub.store.base import PutSession, SessionRecord, Store, WriteOp

__all__ = ["HUB_EMITTER", "LiveSession", "LiveSessions"]

HUB_EMITTER = "hub"


@dataclass(eq=False)
class LiveSession:
    """A session loaded in memory: its record, event log, turns and lock."""

    record: SessionRecord
    log: EventLog
    turns: SessionTurns = field(default_factory=SessionTurns)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Turns ended in memory whose ending the store refused, oldest first, with their final events:
    # stored before anything else of the session, retried in the background until the store works.
    unsaved_endings: list[tuple[Turn, list[event_pb2.Event]]] = field(default_factory=list)
    settling: bool = False

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def closed(self) -> bool:
        return self.record.state == SessionState.CLOSED

    def to_proto(self) -> chat_pb2.Session:
        record = self.record
        return chat_pb2.Session(id=record.id, state=record.state, node_id=record.node_id, title=record.title)

    def reopen_request(self) -> chat_pb2.OpenSessionRequest:
        """The request that opens this session again on its node: the original one, with the current title."""
        request = chat_pb2.OpenSessionRequest()
        if self.record.open_request:
            request.ParseFromString(self.record.open_request)
        request.session_id = self.id
        request.node_id = self.record.node_id
        request.title = self.record.title
        return request

    def __repr__(self) -> str:
        return f"<LiveSession {self.id} {self.record.state} node={self.record.node_id} turns={self.turns.active()}>"


class LiveSessions:
    """The sessions loaded in memory, by id; see the module docstring."""

    def __init__(self, store: Store, *, clock: Callable[[], float], ids: IdGenerator) -> None:
        self._store = store
        self._clock = clock
        self._ids = ids
        self._loaded: dict[str, LiveSession] = {}
        self._loading: dict[str, asyncio.Future[LiveSession | None]] = {}

    def __repr__(self) -> str:
        return f"<LiveSessions loaded={len(self._loaded)} loading={len(self._loading)}>"

    def __len__(self) -> int:
        return len(self._loaded)

    def loaded(self, session_id: str) -> LiveSession | None:
        """The session if it is loaded in memory, without loading it."""
        return self._loaded.get(session_id)

    async def get(self, session_id: str) -> LiveSession | None:
        """The session with this id, loading it from the store if needed; ``None`` if there is none."""
        live = self._loaded.get(session_id)
        if live is not None or not session_id:
            return live
        pending = self._loading.get(session_id)
        if pending is not None:
            return await pending
        future: asyncio.Future[LiveSession | None] = asyncio.get_running_loop().create_future()
        self._loading[session_id] = future
        try:
            record = await self._store.get_session(session_id)
            if record is not None:
                last_seq = await self._store.max_seq(session_id)
                live = LiveSession(record, EventLog(session_id, self._store, last_seq=last_seq))
                self._loaded[session_id] = live
            future.set_result(live)
            return live
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: concurrent waiters re-raise it themselves
            raise
        finally:
            del self._loading[session_id]

    async def require(self, session_id: str) -> LiveSession:
        """The session with this id; ``INVALID_ARGUMENT`` without an id, ``NOT_FOUND`` if there is none."""
        if not session_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
        session = await self.get(session_id)
        if session is None:
            raise HubError(Code.NOT_FOUND, f"session {session_id} not found")
        return session

    def add(self, session: LiveSession) -> None:
        """Hold a session just created (its record not yet stored: :meth:`remove` it if that fails)."""
        self._loaded[session.id] = session

    def remove(self, session_id: str) -> None:
        """Forget a session (deleted, or never stored)."""
        self._loaded.pop(session_id, None)

    def event(self, session: LiveSession, turn_id: str = "", **payload: Message) -> event_pb2.Event:
        """A hub event of ``session`` with id, time and emitter set, and ``payload``'s fields copied in."""
        event = event_pb2.Event(id=self._ids("evt"), session_id=session.id, turn_id=turn_id, emitter=HUB_EMITTER)
        event.emitted_at.FromNanoseconds(int(self._clock() * 1e9))
        for name, value in payload.items():
            getattr(event, name).CopyFrom(value)
        return event

    def touch(self, session: LiveSession, **changes: object) -> PutSession:
        """The write that stores ``changes`` to the session's record, with ``updated_at`` stamped.

        The record in memory changes only once the write committed: publish it with
        ``on_commit=`` :meth:`committed`, or commit it with :meth:`write`. So a write the
        store refuses leaves memory as the store has it.
        """
        return PutSession(dataclasses.replace(session.record, updated_at=self._clock(), **changes))  # type: ignore[arg-type]

    @staticmethod
    def committed(session: LiveSession, change: PutSession | None) -> Callable[[], None]:
        """A callback that gives ``session`` the record ``change`` stored (for ``on_commit``; ``None``: no change)."""

        def apply() -> None:
            if change is not None:
                session.record = change.record

        return apply

    async def write(self, session: LiveSession, ops: Sequence[WriteOp], change: PutSession | None) -> None:
        """Commit ``ops`` (``change`` among them, if any); the record takes ``change`` once they commit.

        Also when the caller is cancelled after the batch was queued: the store commits it anyway.
        Raises :class:`StoreError` when the batch did not commit.
        """
        apply = self.committed(session, change)
        future = asyncio.ensure_future(self._store.submit(ops))
        future.add_done_callback(lambda done: None if done.cancelled() or done.exception() else apply())
        await asyncio.shield(future)
