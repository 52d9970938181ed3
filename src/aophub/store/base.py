"""The store interface: what the hub persists and how it reads it back.

The hub writes through :meth:`Store.submit`, one ordered stream of write
batches. A batch is atomic (all of its operations commit or none do), batches
commit in submission order, and ``await submit(...)`` returns only once the
batch is durable. Implementations group consecutive batches into one
transaction (group commit) so that sustained load does not pay one fsync per
event; a failing group is retried batch by batch so that one bad batch fails
alone.

Cursors are assigned by the store at commit time: dense per session, starting
at 1, in submission order. A batch that fails consumes no cursor.

Every implementation passes ``tests/test_store.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "AppendArtifact",
    "AppendEvent",
    "ArtifactRecord",
    "BridgeBinding",
    "BridgeRequest",
    "DeleteSession",
    "DeleteToken",
    "InteractionRecord",
    "JournalEntry",
    "PruneBridgeRequests",
    "PutBridgeBinding",
    "PutBridgeRequest",
    "PutInteraction",
    "PutJournal",
    "PutScan",
    "PutSession",
    "PutSubagent",
    "PutToken",
    "PutTurn",
    "ReserveSeq",
    "ScanRecord",
    "SessionRecord",
    "Store",
    "StoreError",
    "StoredEvent",
    "SubagentRecord",
    "TokenRecord",
    "TurnRecord",
    "WriteOp",
]


class StoreError(Exception):
    """The store could not do what was asked (disk full, unwritable file, closed).

    Raised by every store method in place of the backend's own exceptions.
    ``retryable`` is true when the same call may succeed later (disk full,
    database locked), false when it cannot (corrupt file, store closed).
    """

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """A persisted event: its session, cursor, seq and serialized ``aop.Event``."""

    session_id: str
    cursor: int
    seq: int
    data: bytes


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session as stored. Times are Unix seconds."""

    id: str
    node_id: str
    title: str
    state: str  # "open" or "closed"
    created_at: float
    updated_at: float
    archived: bool = False
    parent_session_id: str = ""
    parent_tool_call_id: str = ""
    close_reason: str = ""
    # The serialized aop.OpenSessionRequest that opened the session (keeps
    # its extensions, e.g. aophub.v1.ClientTools, for re-opening on a node).
    open_request: bytes = b""
    # Every seq up to this one may have been handed out (see ReserveSeq).
    seq_reserved: int = 0
    # The name of the token that opened the session ("admin": the access key, and every session
    # stored before sessions had owners), and the token names it is shared with ("*": everyone),
    # sorted; see aophub.access.ownership.
    owner: str = "admin"
    shared_with: tuple[str, ...] = ()
    # Derived on read: cursor of the newest event (0 if none), and the count.
    last_cursor: int = 0
    event_count: int = 0


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """A turn as stored. ``state`` is "queued", "running" or "ended"."""

    session_id: str
    turn_id: str
    state: str
    created_at: float
    request: bytes = b""  # the serialized aop.RunTurnRequest
    ended_at: float = 0.0
    stop_reason: str = ""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """An idempotency journal entry: the first response to one request id."""

    key: str
    method: str
    fingerprint: bytes
    response: bytes
    created_at: float


@dataclass(frozen=True, slots=True)
class InteractionRecord:
    """A durable interaction; ``data`` is the serialized ``aophub.v1.Interaction``.

    ``position`` orders interactions oldest first across sessions (an update keeps it); the
    store sets it on reads, writes ignore it.
    """

    id: str
    session_id: str
    turn_id: str
    state: int  # aophub.v1.InteractionState
    data: bytes
    position: int = 0


@dataclass(frozen=True, slots=True)
class ScanRecord:
    """A scan; ``data`` is the serialized ``aophub.v1.Scan``; ``owner`` the token name that submitted it."""

    id: str
    status: int  # aophub.v1.ScanStatus
    created_at: float
    data: bytes
    owner: str = "admin"


@dataclass(frozen=True, slots=True)
class SubagentRecord:
    """A subagent of a session's agent; ``data`` is the serialized ``aophub.v1.Subagent``."""

    id: str
    parent_session_id: str
    status: int  # aophub.v1.SubagentStatus
    created_at: float
    data: bytes


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    """An archived artifact event; ``cursor`` orders the whole archive."""

    cursor: int
    event_id: str
    session_id: str
    data: bytes  # the serialized aop.Event


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """A named access token: never its secret, only a salted hash of it (see ``aophub.access.tokens``).

    ``id`` is the token's public lookup id (part of the token text); ``scopes`` their names;
    ``node_id`` the node id or glob of the node scope ("" without it); ``expires_at`` Unix seconds
    or None; ``digest`` is HMAC-SHA256 keyed with ``salt`` over the token text.
    """

    id: str
    name: str
    scopes: tuple[str, ...]
    node_id: str
    created_at: float
    expires_at: float | None
    salt: bytes = field(repr=False)
    digest: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class BridgeBinding:
    """A dialect conversation bound to an AOP session (bridges.md 1.4), keyed by ``(dialect, principal, scope)``.

    ``generation`` is the attempt number of the creating open (1.5): it grows when the bound
    session is closed or deleted, or when a creating open was refused ``retryable``.
    """

    dialect: str
    principal: str
    scope: str
    session_id: str
    node_id: str
    generation: int
    updated_at: float


@dataclass(frozen=True, slots=True)
class BridgeRequest:
    """One entry of a bridge's request log (bridges.md 2.2.3): how a client request id was carried out.

    ``key`` is derived from the principal, session and client request id; ``turns`` is the chain of
    turn ids the request started (continuations appended); ``attempt`` and ``continue_attempt``
    are the attempt numbers of its derived ids (1.5); ``start_cursor`` the session's last cursor
    before the first turn (the resume point).
    """

    key: str
    kind: str
    attempt: int
    continue_attempt: int
    session_id: str
    request_id: str
    turns: tuple[str, ...]
    start_cursor: str
    created_at: float


# -- write operations ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AppendEvent:
    """Append one event; its result is the cursor it was given. The session row must exist."""

    session_id: str
    seq: int
    data: bytes
    event_id: str = ""


@dataclass(frozen=True, slots=True)
class PutSession:
    """Insert or replace a session row (``last_cursor``/``event_count`` are ignored)."""

    record: SessionRecord


@dataclass(frozen=True, slots=True)
class PutTurn:
    """Insert or replace a turn row. Its session row must exist."""

    record: TurnRecord


@dataclass(frozen=True, slots=True)
class PutJournal:
    """Insert a journal entry; an existing entry with the same key is kept."""

    entry: JournalEntry


@dataclass(frozen=True, slots=True)
class PutInteraction:
    """Insert or update an interaction (its position in the session's list is kept)."""

    record: InteractionRecord


@dataclass(frozen=True, slots=True)
class PutScan:
    """Insert or update a scan."""

    record: ScanRecord


@dataclass(frozen=True, slots=True)
class PutSubagent:
    """Insert or update a subagent."""

    record: SubagentRecord


@dataclass(frozen=True, slots=True)
class AppendArtifact:
    """Archive an artifact event; its result is its archive cursor, or None if ``event_id`` was archived before."""

    event_id: str
    session_id: str
    data: bytes


@dataclass(frozen=True, slots=True)
class DeleteSession:
    """Delete a session with its events, turns and interactions; its result is the number of events deleted."""

    session_id: str


@dataclass(frozen=True, slots=True)
class ReserveSeq:
    """Record that seqs up to ``upto`` may be handed out in this session (kept as a maximum)."""

    session_id: str
    upto: int


@dataclass(frozen=True, slots=True)
class PutToken:
    """Insert a token; fails (constraint, not retryable) if its id or name is taken."""

    record: TokenRecord


@dataclass(frozen=True, slots=True)
class DeleteToken:
    """Delete a token by id; its result is the number of rows deleted (0 or 1)."""

    token_id: str


@dataclass(frozen=True, slots=True)
class PutBridgeBinding:
    """Write a binding if the stored one has generation ``expect`` (0: only if there is none).

    Compare-and-set: its result is 1 when written, 0 when another writer got there first.
    """

    record: BridgeBinding
    expect: int


@dataclass(frozen=True, slots=True)
class PutBridgeRequest:
    """Write a request-log entry if the stored one has ``(attempt, continue_attempt, turns) == expect``.

    ``expect`` None: only if there is no entry with that key. Result 1 when written, else 0.
    """

    record: BridgeRequest
    expect: tuple[int, int, tuple[str, ...]] | None


@dataclass(frozen=True, slots=True)
class PruneBridgeRequests:
    """Delete request-log entries created before ``before`` (Unix seconds); its result is how many went."""

    before: float


WriteOp = (
    AppendEvent
    | PutSession
    | PutTurn
    | PutJournal
    | PutInteraction
    | PutScan
    | PutSubagent
    | AppendArtifact
    | DeleteSession
    | ReserveSeq
    | PutToken
    | DeleteToken
    | PutBridgeBinding
    | PutBridgeRequest
    | PruneBridgeRequests
)


class Store(Protocol):
    """Durable state of the hub: sessions, events, turns and the journal."""

    #: The database it keeps them in, as GetStatus names it: ``sqlite`` or ``postgresql``.
    backend: str

    async def open(self) -> None:
        """Create or migrate the schema and start the writer."""

    async def close(self) -> None:
        """Finish every submitted write, then release the database."""

    def submit(self, ops: Sequence[WriteOp]) -> Awaitable[list[int | None]]:
        """Queue ``ops`` to commit atomically and durably, after every earlier batch.

        The awaitable returns one result per op: the cursor for ``AppendEvent``,
        the number of events deleted for ``DeleteSession``, ``None`` otherwise;
        it raises :class:`StoreError` if the batch did not commit (then none of
        it did). The batch is queued when ``submit`` returns, whether or not the
        caller waits.
        """
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """One session, or ``None``."""
        ...

    async def list_sessions(
        self,
        *,
        limit: int,
        before: tuple[float, str] | None = None,
        include_closed: bool = False,
        include_archived: bool = False,
        node_id: str = "",
        visible_to: str | None = None,
        title_contains: str = "",
    ) -> list[SessionRecord]:
        """Sessions ordered by ``(updated_at, id)`` descending, strictly before ``before``.

        With ``visible_to``, only the sessions that token name owns or that are shared with it or
        with everyone; with ``title_contains``, only those whose title contains that text
        (:mod:`aophub.store.title_search`: ASCII letters in either case, no wildcards).
        """
        ...

    async def read_events(
        self, session_id: str, after_cursor: int, limit: int, *, max_bytes: int | None = None
    ) -> list[StoredEvent]:
        """Up to ``limit`` events with cursor > ``after_cursor``, oldest first.

        With ``max_bytes``, the page ends before the event that would take the events' data past
        it, but holds at least one event, so a reader always makes progress; an empty page means
        there are no more. The page is read without loading the events past it.
        """
        ...

    async def max_seq(self, session_id: str) -> int:
        """The highest seq stored or reserved for the session (0 if none)."""
        ...

    async def get_journal(self, key: str) -> JournalEntry | None:
        """The journal entry for ``key``, or ``None``."""
        ...

    async def get_turn(self, session_id: str, turn_id: str) -> TurnRecord | None:
        """One turn of a session, whatever its state, or ``None``."""
        ...

    async def list_turns(self, states: Sequence[str]) -> list[TurnRecord]:
        """Turns in any of ``states``, ordered by session, then creation."""
        ...

    async def get_interaction(self, interaction_id: str) -> InteractionRecord | None:
        """One interaction, or ``None``."""
        ...

    async def list_interactions(
        self,
        *,
        session_id: str = "",
        states: Sequence[int] | None = None,
        after: int = 0,
        limit: int | None = None,
        visible_to: str | None = None,
    ) -> list[InteractionRecord]:
        """Interactions (of one session when ``session_id`` is set, in ``states`` when given), oldest first.

        Only those whose ``position`` is past ``after``; at most ``limit`` when given; with
        ``visible_to``, only those of sessions visible to that token name (as in list_sessions).
        """
        ...

    async def count_interactions(self, session_ids: Sequence[str], states: Sequence[int]) -> dict[str, int]:
        """How many interactions in ``states`` each of ``session_ids`` has (sessions with none are left out)."""
        ...

    async def get_scan(self, scan_id: str) -> ScanRecord | None:
        """One scan, or ``None``."""
        ...

    async def list_scans(
        self,
        *,
        limit: int,
        before: tuple[float, str] | None = None,
        statuses: Sequence[int] = (),
        owner: str | None = None,
    ) -> list[ScanRecord]:
        """Scans newest first by ``(created_at, id)``, strictly before ``before``, in ``statuses`` when given.

        With ``owner``, only the scans that token name submitted.
        """
        ...

    async def get_subagent(self, subagent_id: str) -> SubagentRecord | None:
        """One subagent, or ``None``."""
        ...

    async def list_subagents(
        self, *, parent_session_id: str = "", statuses: Sequence[int] = (), limit: int = 1000
    ) -> list[SubagentRecord]:
        """Subagents oldest first by ``(created_at, id)``: of ``parent_session_id`` when set, in ``statuses``
        when given, at most ``limit``."""
        ...

    async def read_artifacts(
        self,
        after_cursor: int,
        limit: int,
        *,
        session_id: str = "",
        max_bytes: int | None = None,
        visible_to: str | None = None,
    ) -> list[ArtifactRecord]:
        """Up to ``limit`` archived artifacts after ``after_cursor``, oldest first (``max_bytes`` as in read_events).

        With ``visible_to``, only artifacts of sessions visible to that token name (as in list_sessions).
        """
        ...

    async def has_artifacts_after(
        self, after_cursor: int, *, session_id: str = "", visible_to: str | None = None
    ) -> bool:
        """Whether any archived artifact (of ``session_id``, when set; visible as in read_artifacts) follows."""
        ...

    async def list_tokens(self) -> list[TokenRecord]:
        """Every token, ordered by name."""
        ...

    async def count_sessions(self) -> tuple[int, int]:
        """``(open sessions, all sessions)``."""
        ...

    async def health(self) -> tuple[bool, str, int]:
        """``(ok, error, size_bytes)`` from a probe query."""
        ...

    async def get_bridge_binding(self, dialect: str, principal: str, scope: str) -> BridgeBinding | None:
        """The binding of a dialect conversation (bridges.md 1.4), or ``None``."""
        ...

    async def get_bridge_request(self, key: str) -> BridgeRequest | None:
        """A bridge request-log entry (bridges.md 2.2.3), or ``None``."""
        ...
