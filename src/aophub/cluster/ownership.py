"""Session ownership between hub replicas: which replica runs each session, recorded as leases.

Every session has at most one *owner*: the replica that runs its turns and writes its events. The
owner is the replica the session's node is connected to. Two lease tables (schema version 6) record
it: ``session_leases`` (session -> replica, epoch) and ``node_leases`` (node -> the replica it is
connected to). A lease is *live* while its replica is alive (:mod:`aophub.cluster.membership`: a
heartbeat younger than the lease time), so one heartbeat renews every lease a replica holds, and
every lease of a replica that died expires with it. The epoch counts owner changes.

Deciding where a request for a session runs (:func:`decide`, no I/O):

- the lease is this replica's: here;
- the session's node is connected here (a node that moved): *take over*, even from a live owner;
- the lease is another live replica's: *forward* there;
- no live lease, but the node is connected to another live replica: forward there (it claims it);
- otherwise (no live lease; the built-in node, or the node is nowhere): *claim* it here.

Writes are fenced in the database: a replica's write of events or turns into a session whose lease
another replica holds fails (SQLSTATE ``AO001``, see the schema), so a replica that lost a session
(its node moved, or it was partitioned from the database and others took over) can never write into
it again. Whoever takes a session over reads its turns after the takeover committed and ends those
left running or queued exactly once (:class:`SessionKeeper.take`): ``agent_disconnected`` when the
previous owner is alive (the node moved away from it, which for its turns is a node that dropped),
``hub_restarted`` when it is dead (or there was none: a hub that stopped).

When a node connects, this replica takes its node lease and every open session of the node at
once (:meth:`Ownership.node_attached`). A sweeper (:meth:`Ownership.sweep`) claims sessions with
turns left open under dead leases, so turns of a replica that died end even when their node never
comes back. A replica that loses the database (:meth:`Ownership.fence`) stops serving: every
placement answers ``UNAVAILABLE`` until the connection is back and it has checked which of its
sessions it still holds (:meth:`Ownership.unfence`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol
from urllib.parse import urlsplit

from aophub.cluster.leases import LeaseTable
from aophub.cluster.placement import Claim, Decision, Lease, Placement, decide, ending_reason
from aophub.protocol.errors import Code, HubError
from aophub.store.base import StoreError

__all__ = [
    "Claim",
    "Decision",
    "Lease",
    "LeaseTable",
    "Ownership",
    "Placement",
    "Replicas",
    "SessionKeeper",
    "decide",
    "ending_reason",
    "reachable",
]

log = logging.getLogger(__name__)


class SessionKeeper(Protocol):
    """What the hub does when this replica gains or loses a session (implemented by :class:`~aophub.hub.hub.Hub`)."""

    async def take_session(self, session_id: str, code: str, message: str) -> int:
        """Load the session afresh from the store and end its turns left open (with ``code``); how many."""

    def abandon_session(self, session_id: str) -> None:
        """Forget the session's running turns in memory without writing anything (another replica owns it)."""

    async def node_moved(self, node_id: str) -> None:
        """The node connected to another replica: close its stale connection here, as a replaced one."""


class Replicas(Protocol):
    """The part of :class:`~aophub.cluster.membership.Membership` ownership needs."""

    replica_id: str
    lease_ttl: float

    @property
    def registered(self) -> bool: ...


async def reachable(address: str, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections at ``address`` (``http://host:port``)."""
    parts = urlsplit(address)
    if not parts.hostname:
        return False
    try:
        async with asyncio.timeout(timeout):
            _reader, writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


class Ownership:
    """This replica's sessions: placement of requests, claims and takeovers, loss, sweeping.

    ``keeper`` is the hub (:class:`SessionKeeper`); ``node_connected(node_id)`` says whether an
    external node is connected to this replica; ``built_in(node_id)`` whether an id is the built-in
    node's. ``check_interval`` is how often :meth:`run` looks for sessions lost to another replica
    and for orphaned turns (default: a third of the lease time).
    """

    def __init__(
        self,
        leases: LeaseTable,
        replicas: Replicas,
        keeper: SessionKeeper,
        *,
        node_connected: Callable[[str], bool],
        built_in: Callable[[str], bool],
        check_interval: float | None = None,
        probe: Callable[[str], Awaitable[bool]] = reachable,
    ) -> None:
        self.leases = leases
        self._replicas = replicas
        self._keeper = keeper
        self._node_connected = node_connected
        self._built_in = built_in
        self.check_interval = check_interval if check_interval is not None else replicas.lease_ttl / 3
        self._probe = probe
        # Sessions this replica holds, with the epoch it holds them at.
        self.held: dict[str, int] = {}
        self._node_epochs: dict[str, int] = {}
        # One placement or takeover of a session at a time, with how many callers use each lock.
        self._locks: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self.fenced = False
        self.taken_over = 0  # sessions taken from another replica or claimed with turns left open
        self.turns_ended = 0  # turns left open by a previous owner that this replica ended

    def __repr__(self) -> str:
        state = "fenced" if self.fenced else "serving"
        return f"<Ownership {self.leases.replica_id} {state} held={len(self.held)} nodes={len(self._node_epochs)}>"

    @property
    def replica_id(self) -> str:
        return self.leases.replica_id

    def _check_serving(self) -> None:
        if self.fenced or not self._replicas.registered:
            raise HubError(
                Code.UNAVAILABLE,
                f"replica {self.replica_id} has lost the database and does not serve sessions; retry",
                retryable=True,
            )

    async def place(self, session_id: str, node_id: str, *, dead: frozenset[str] = frozenset()) -> Placement:
        """Where a request acting on ``session_id`` (of node ``node_id``) runs; claims it here when that is here.

        ``dead``: replicas found not to answer (their leases count as expired). Raises
        :class:`HubError` ``UNAVAILABLE`` while this replica is fenced, or when the owner it should
        forward to does not advertise an address.
        """
        self._check_serving()
        if session_id in self.held and self._node_here_or_builtin(node_id):
            return Placement(True, self.replica_id)
        async with self._session_lock(session_id):
            return await self._place_locked(session_id, node_id, dead)

    @contextlib.asynccontextmanager
    async def _session_lock(self, session_id: str) -> AsyncIterator[None]:
        """Hold the session's placement lock (dropped once no caller uses or waits for it)."""
        lock, users = self._locks.setdefault(session_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[session_id]

    async def place_node(self, node_id: str, *, dead: frozenset[str] = frozenset()) -> Placement:
        """Where a request to open a new session on ``node_id`` runs: where the node is connected (here if nowhere)."""
        self._check_serving()
        if self._node_here_or_builtin(node_id):
            return Placement(True, self.replica_id)
        _session, node = await self.leases.lookup("", node_id)
        if node is None or not node.live or node.replica_id in {self.replica_id, *dead}:
            return Placement(True, self.replica_id)
        address = await self.leases.address(node.replica_id)
        if not address:
            return Placement(True, self.replica_id)
        return Placement(False, node.replica_id, address)

    def _node_here_or_builtin(self, node_id: str) -> bool:
        return self._built_in(node_id) or self._node_connected(node_id)

    async def _place_locked(self, session_id: str, node_id: str, dead: frozenset[str]) -> Placement:
        external = "" if self._built_in(node_id) else node_id
        node_here = bool(external) and self._node_connected(external)
        # A read first (one round trip): a session another replica owns is forwarded without a transaction.
        session, node = await self.leases.lookup(session_id, external)
        decision, target = decide(session, node, me=self.replica_id, node_here=node_here, dead=dead)
        if decision is Decision.FORWARD:
            address = next((lease.address for lease in (session, node) if lease and lease.replica_id == target), "")
            if address:
                return Placement(False, target, address)
        decision, target, claim = await self.leases.acquire(session_id, external, node_here=node_here, dead=dead)
        if decision is Decision.FORWARD:
            address = await self.leases.address(target)
            if not address:
                raise HubError(
                    Code.UNAVAILABLE,
                    f"session {session_id} is owned by replica {target}, not reachable; retry",
                    retryable=True,
                )
            return Placement(False, target, address)
        assert claim is not None
        if self.held.get(session_id) != claim.epoch:
            await self._taken(claim)
        return Placement(True, self.replica_id)

    async def _taken(self, claim: Claim) -> None:
        """This replica holds ``claim``'s session now: the hub loads it afresh and ends what was left open."""
        previous = claim.previous
        reachable_previous = False
        if previous is not None and previous.live and previous.replica_id != self.replica_id:
            address = await self.leases.address(previous.replica_id)
            reachable_previous = bool(address) and await self._probe(address)
        code, message = ending_reason(previous, previous_reachable=reachable_previous)
        self.held[claim.session_id] = claim.epoch
        ended = await self._keeper.take_session(claim.session_id, code, message)
        if ended:
            self.taken_over += 1
            self.turns_ended += ended
            log.info(
                "session %s: taken from %s; %d turn%s left open ended %s",
                claim.session_id,
                previous.replica_id if previous is not None else "nobody",
                ended,
                "" if ended == 1 else "s",
                code,
            )

    def claimed(self, session_id: str, epoch: int) -> None:
        """A session this replica created and claimed (nothing to take over)."""
        self.held[session_id] = epoch

    async def claim_new(self, session_id: str, node_id: str) -> None:
        """Claim a session this replica has just opened (for its node, connected here or built in).

        Nothing of it can have been left open by another replica, so nothing is taken over.
        """
        self._check_serving()
        external = "" if self._built_in(node_id) else node_id
        async with self._session_lock(session_id):
            _decision, _target, claim = await self.leases.acquire(
                session_id, external, node_here=bool(external) and self._node_connected(external)
            )
            if claim is not None:
                self.held[session_id] = claim.epoch

    async def node_attached(self, node_id: str) -> None:
        """An external node connected here: take its lease and its open sessions (ending what others left open)."""
        self._check_serving()
        try:
            epoch, claims = await self.leases.attach_node(node_id)
        except StoreError as error:
            raise HubError(Code.UNAVAILABLE, f"cannot take the node's sessions: {error}", retryable=True) from None
        self._node_epochs[node_id] = epoch
        for claim in claims:
            async with self._session_lock(claim.session_id):
                await self._taken(claim)
        if claims:
            log.info(
                "node %s: %d session%s moved to replica %s",
                node_id,
                len(claims),
                "" if len(claims) == 1 else "s",
                self.replica_id,
            )

    async def node_detached(self, node_id: str) -> None:
        """An external node's connection here ended: release its node lease.

        Its sessions stay this replica's until the node shows up at another one.
        """
        epoch = self._node_epochs.pop(node_id, None)
        if epoch is None:
            return
        try:
            await self.leases.detach_node(node_id, epoch)
        except StoreError as error:
            log.warning("node %s: could not release its lease: %s", node_id, error)

    def fence(self) -> None:
        """The database is lost: stop serving sessions (every placement answers UNAVAILABLE)."""
        if not self.fenced:
            log.warning("replica %s: database lost; not serving sessions until it is back", self.replica_id)
        self.fenced = True

    async def unfence(self) -> None:
        """The database is back: drop the sessions taken meanwhile, then serve again."""
        await self.check_lost()
        self.fenced = False
        log.warning("replica %s: database back; serving %d sessions", self.replica_id, len(self.held))

    async def check_lost(self) -> list[str]:
        """Abandon the sessions another replica took from this one; their ids. Then close the connections
        here of the nodes that dialled another replica since (stale: it took their lease and sessions)."""
        lost = await self.leases.lost(list(self.held))
        for session_id in lost:
            self.held.pop(session_id, None)
            self._keeper.abandon_session(session_id)
        if lost:
            log.info(
                "replica %s: %d session%s taken by other replicas",
                self.replica_id,
                len(lost),
                "" if len(lost) == 1 else "s",
            )
        held_nodes = dict(self._node_epochs)
        for node_id in await self.leases.nodes_lost(held_nodes):
            if self._node_epochs.get(node_id) != held_nodes[node_id]:
                continue  # it connected here again meanwhile
            del self._node_epochs[node_id]  # its lease is another replica's: leave it alone
            log.warning("node %s: connected to another replica; closing its connection here", node_id)
            await self._keeper.node_moved(node_id)
        return lost

    async def adopt(self, session_id: str, node_id: str) -> bool:
        """Take ``session_id`` over here when its holder is gone (its heartbeat lapsed, or it does not
        answer), as :meth:`sweep` does for sessions with turns left open; whether it is held here now."""
        if self.fenced or not self._replicas.registered:
            return False
        if session_id in self.held:
            return True
        external = "" if self._built_in(node_id) else node_id
        session, _node = await self.leases.lookup(session_id, external)
        holder, address = (session.replica_id, session.address) if session is not None else ("", "")
        return await self._claim_unless_answering(session_id, node_id, holder, address, {})

    async def _claim_unless_answering(
        self, session_id: str, node_id: str, holder: str, address: str | None, answers: dict[str, bool]
    ) -> bool:
        """Claim ``session_id`` here unless ``holder`` (another replica; "": none, or its lease lapsed)
        accepts connections at ``address`` (None: read it); whether it is held here now. ``answers``
        keeps each holder's probe for the caller's next sessions."""
        dead: frozenset[str] = frozenset()
        if holder and holder != self.replica_id:
            if holder not in answers:
                if address is None:
                    address = await self.leases.address(holder)
                answers[holder] = bool(address) and await self._probe(address)
            if answers[holder]:
                return False  # alive: it runs what the session has
            dead = frozenset({holder})
        try:
            placement = await self.place(session_id, node_id, dead=dead)
        except HubError:
            return False
        return placement.local

    async def sweep(self) -> int:
        """Claim sessions with turns left open under dead leases and end those turns; how many sessions."""
        if self.fenced or not self._replicas.registered:
            return 0
        swept = 0
        answers: dict[str, bool] = {}  # per live replica holding some: does it accept connections?
        for session_id, node_id, holder, live in await self.leases.orphans():
            if holder == self.replica_id and session_id in self.held:
                continue  # its turns are running here
            # A holder whose lease lapsed counts as gone without asking it.
            swept += await self._claim_unless_answering(session_id, node_id, holder if live else "", None, answers)
        return swept

    async def run(self) -> None:
        """Until cancelled, at once and then every ``check_interval``: drop sessions lost to others, sweep orphans."""
        while True:
            try:
                if self.fenced:
                    if self._replicas.registered:
                        await self.unfence()
                elif not self._replicas.registered:
                    self.fence()
                else:
                    await self.check_lost()
                    await self.sweep()
            except StoreError as error:
                log.warning("replica %s: lease check failed: %s", self.replica_id, error)
            except Exception:
                log.exception("replica %s: lease check failed", self.replica_id)
            await asyncio.sleep(self.check_interval)
