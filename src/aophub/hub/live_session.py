"""Sessions loaded in memory, and the hub's own writes into them.

A :class:`LiveSession` holds what the hub keeps of a session while it serves it:
the stored record, its :class:`EventLog`, its turns and the lock every change of
the session is made under. :class:`LiveSessions` loads each session from the
store at most once (concurrent loads share one read) and stamps what the hub
itself writes into a session, its events and the changes of its record, with
the hub's clock and ids.

Sessions leave memory again (:meth:`LiveSessions.evict`): a closed one as soon as
nothing uses it, an open one once it has been idle for a while. A session is in
use while it has a watcher, an active (running or queued) turn, turn endings not
yet stored, a write in flight, or its lock is held; pending interactions belong to
an active turn. Using a session (:meth:`LiveSessions.get`) stamps it, so one just
handed to a caller is not idle. An evicted session is loaded again from the store
on its next use, as after a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from google.protobuf.message import Message

from aop import chat_pb2, event_pb2
from aophub.access.ownership import may_act, may_see
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal
from aophub.hub.event_log import EventLog
from aophub.hub.session_summary import SummaryMemo
from aophub.hub.turns import SessionState, SessionTurns, Turn
from aophub.ids import IdGenerator
from aophub.protocol.errors import Code, HubError
from aophub.store.base import PutSession, SessionRecord, Store, StoreError, WriteOp

__all__ = ["HUB_EMITTER", "LiveSession", "LiveSessions", "check_access", "unknown_session"]

HUB_EMITTER = "hub"


def unknown_session(session_id: str) -> HubError:
    """The refusal of a session that does not exist, or that the caller may not see (the same bytes)."""
    return HubError(Code.NOT_FOUND, f"session {session_id} not found")


def check_access(record: SessionRecord, caller: Principal, *, act: bool) -> None:
    """Refuse ``caller`` a session it may not see (as :func:`unknown_session`), or act in when ``act``.

    See :mod:`aophub.access.ownership`: a session the caller sees but may not act in is refused
    with ``PERMISSION_DENIED``.
    """
    if not may_see(caller, record.owner, record.shared_with):
        raise unknown_session(record.id)
    if act and not may_act(caller, record.owner, record.shared_with):
        raise HubError(
            Code.PERMISSION_DENIED,
            f"this token may read session {record.id} but not act in it: it is not its owner's or shared with it",
        )


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
    # When it was last handed to a caller (the hub's clock), and whether it has left memory since.
    last_used: float = 0.0
    evicted: bool = False
    # How far GetSession has read the stored events for the running summary, and what it found.
    summary: SummaryMemo = field(default_factory=SummaryMemo)

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

    @property
    def in_use(self) -> bool:
        """Whether anything holds on to this session in memory (see the module docstring)."""
        return bool(
            self.turns.active()
            or self.unsaved_endings
            or self.settling
            or self.log.watcher_count
            or self.log.busy
            or self.lock.locked()
        )

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
        # Given to every loaded session's log (EventLog.on_watchers): replicas follow the owner's
        # live feed of a session while it has watchers here.
        self.on_watchers: Callable[[str, bool], None] | None = None

    def __repr__(self) -> str:
        return f"<LiveSessions loaded={len(self._loaded)} loading={len(self._loading)}>"

    def __len__(self) -> int:
        return len(self._loaded)

    def all_loaded(self) -> list[LiveSession]:
        """Every session loaded in memory now."""
        return list(self._loaded.values())

    def loaded(self, session_id: str) -> LiveSession | None:
        """The session if it is loaded in memory, without loading it."""
        return self._loaded.get(session_id)

    async def get(self, session_id: str) -> LiveSession | None:
        """The session with this id, loading it from the store if needed; ``None`` if there is none."""
        live = self._loaded.get(session_id)
        if live is not None:
            live.last_used = self._clock()
            return live
        if not session_id:
            return None
        pending = self._loading.get(session_id)
        if pending is not None:
            return await pending
        future: asyncio.Future[LiveSession | None] = asyncio.get_running_loop().create_future()
        self._loading[session_id] = future
        try:
            record = await self._store.get_session(session_id)
            if record is not None:
                last_seq = await self._store.max_seq(session_id)
                log = EventLog(session_id, self._store, last_seq=last_seq, last_cursor=record.last_cursor)
                log.on_watchers = self.on_watchers
                live = LiveSession(record, log)
                live.last_used = self._clock()
                self._loaded[session_id] = live
            future.set_result(live)
            return live
        except BaseException as error:
            future.set_exception(error)
            future.exception()  # retrieved: concurrent waiters re-raise it themselves
            raise
        finally:
            del self._loading[session_id]

    async def require(
        self, session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL, *, act: bool = True
    ) -> LiveSession:
        """The session with this id; ``INVALID_ARGUMENT`` without an id, ``NOT_FOUND`` if there is none.

        ``caller`` must see it, and act in it when ``act`` (:func:`check_access`); the default, the
        access key's principal, is the hub acting by itself.
        """
        if not session_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
        session = await self.get(session_id)
        if session is None:
            raise unknown_session(session_id)
        check_access(session.record, caller, act=act)
        return session

    async def node_of(self, session_id: str, caller: Principal) -> str:
        """The node id of the session ``session_id`` (an id the caller checked), which ``caller`` may act in:
        where an upload or a workspace call that names a session goes.

        Raises :class:`HubError`: ``UNAVAILABLE`` when the store fails (retryable as it says),
        ``NOT_FOUND`` "unknown session" for a session that does not exist or that ``caller`` may
        not act in (the same refusal), ``FAILED_PRECONDITION`` when the session has no node.
        """
        try:
            session = await self.get(session_id)
        except StoreError as error:
            raise HubError(Code.UNAVAILABLE, f"storage unavailable: {error}", retryable=error.retryable) from None
        if session is None or not may_act(caller, session.record.owner, session.record.shared_with):
            raise HubError(Code.NOT_FOUND, f"unknown session {session_id}")
        if not session.record.node_id:
            raise HubError(Code.FAILED_PRECONDITION, f"session {session.id} has no node")
        return session.record.node_id

    async def refresh_locked(self, session: LiveSession) -> None:
        """Read ``session``'s record and seq afresh from the store (another hub replica wrote into it).

        The caller holds the session's lock.
        """
        record = await self._store.get_session(session.id)
        if record is not None:
            session.record = record
        session.log.continue_after(await self._store.max_seq(session.id))

    def add(self, session: LiveSession) -> None:
        """Hold a session just created (its record not yet stored: :meth:`remove` it if that fails)."""
        session.last_used = self._clock()
        session.log.on_watchers = self.on_watchers
        self._loaded[session.id] = session

    def remove(self, session: LiveSession) -> None:
        """Forget ``session`` (deleted, evicted, or never stored); a session loaded since under its id stays."""
        if self._loaded.get(session.id) is session:
            del self._loaded[session.id]

    @contextlib.asynccontextmanager
    async def locked(self, session_id: str, caller: Principal = ACCESS_KEY_PRINCIPAL) -> AsyncIterator[LiveSession]:
        """The session with this id (as :meth:`require`, for ``caller`` to act in), its lock held.

        Never one evicted meanwhile.
        """
        while True:
            session = await self.require(session_id, caller)
            async with session.lock:
                if not session.evicted:
                    yield session
                    return

    def evict_locked(self, session: LiveSession) -> bool:
        """Let ``session`` leave memory if nothing but the caller (who holds its lock) uses it."""
        if session.evicted or self._loaded.get(session.id) is not session:
            return False
        if session.turns.active() or session.unsaved_endings or session.settling:
            return False
        if session.log.watcher_count or session.log.busy:
            return False
        session.evicted = True
        del self._loaded[session.id]
        return True

    async def evict(self, *, idle_for: float) -> int:
        """Evict every session not in use that is closed, or was last used ``idle_for`` seconds ago or more.

        Returns how many left. Each is checked again under its lock: a caller that got the session
        meanwhile stamped it as used, and one that waited for the lock has had its turn.
        """
        evicted = 0
        for session in list(self._loaded.values()):
            if session.in_use or not self._expired(session, idle_for):
                continue
            async with session.lock:
                if self._expired(session, idle_for) and self.evict_locked(session):
                    evicted += 1
        return evicted

    def _expired(self, session: LiveSession, idle_for: float) -> bool:
        return session.closed or self._clock() - session.last_used >= idle_for

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
