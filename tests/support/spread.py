"""The application-channel e2e suite a second time, over replicas: one hub, or three replicas on PostgreSQL.

A test module's ``hub`` fixture takes :data:`SERVES` as its params and builds its hub with
:func:`serving`. For :data:`ONE_HUB` that is the in-process hub of
:func:`~tests.support.lifecycle.checked_hub` as before; for :data:`REPLICAS` it is a
:class:`SpreadHub`: three ``aophub serve`` processes (r0, r1, r2) on one PostgreSQL database,
started once per module and shared by its tests. Every URL a test asks the spread hub for
(``app_url``, ``node_url``, ``http``, ``port``) names the next replica in turn, so a test's
connections and nodes land on different replicas: its node on one, its first client on the next,
a reconnect or second client on the third. The test body is unchanged; what it asserts must hold
whichever replica answers.

After each test, as ``checked_hub`` does for the one hub, the sessions the test created are
closed (through a replica, forwarded to their owner) and the lifecycle invariants of AOP
section 6 are checked over what the database stored for them.

Tests that cannot run over replica processes are listed in :data:`SINGLE_PROCESS` with the
reason (they read or drive the hub object in-process); tests that fail only because of a known
gap of the replica code are in :data:`KNOWN_REPLICA_GAPS`, marked ``xfail(strict=True)`` with the
gap named, so that the mark must go when the gap is fixed. ``tests/conftest.py`` applies both
(``pytest -m replicas`` runs only the replica variants, ``-m "not replicas"`` only the one hub).
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from aop import chat_pb2
from aophub.store.postgres import PostgresStore

from .lifecycle import check_stored_lifecycle, checked_hub
from .node import ScriptedNode, SocketScriptedNode
from .postgres import PostgresCluster
from .replicas import Replicas, migrated_database, replicas
from .server import HubProcess, RunningHub
from .wire import AppSocket

__all__ = [
    "KNOWN_REPLICA_GAPS",
    "ONE_HUB",
    "REPLICAS",
    "SERVES",
    "SINGLE_PROCESS",
    "ReplicaClusters",
    "SpreadHub",
    "over_replicas",
    "scripted_node",
    "serving",
]

ONE_HUB = "one-hub"
REPLICAS = "3-replicas"
# The params of a module's ``hub`` fixture: the one hub, then the same tests over three replicas.
SERVES = [ONE_HUB, pytest.param(REPLICAS, marks=pytest.mark.replicas)]

COUNT = 3
_ALL = 1_000_000

# Settings overrides of ``running_hub`` and the ``aophub serve`` flag that sets each on a replica.
_FLAGS = {
    "echo_delay": "--echo-delay",
    "turn_start_timeout": "--turn-start-timeout",
    "node_turns_per_minute": "--node-turns-per-minute",
}
# running_hub's own default (aophub serve's is 0.02 s).
_DEFAULTS: dict[str, object] = {"echo_delay": 0.001}


# Why a test cannot run over replica processes, by reason.
_NODES_IN_PROCESS = "reads the hub's node registry in-process (hub.runtime.hub.nodes)"
_STORE_IN_PROCESS = "counts rows through the hub's store in-process (hub.runtime.store)"
_LOGS_IN_PROCESS = "asserts on the hub's log records, captured in-process (caplog); a replica logs to its own output"
_TURNS_IN_PROCESS = "checks the hub's in-memory turn table in-process (hub.runtime.hub._turns)"
_COMMANDS_IN_PROCESS = "reads the hub's pending commands in-process (hub.runtime.hub.commands)"
_CONSTANT_IN_PROCESS = (
    "patches a constant of the hub's modules in this process (monkeypatch), which a replica process never sees"
)

_AUDIT_IN_DATA_DIR = (
    "reads the audit log in the test's data directory; each replica writes its own, in its data directory"
    " (tests/test_replicas_workspace.py reads it on the node's replica)"
)

# "test_file.py::test_name" -> why the test cannot run over replica processes (it is skipped there).
SINGLE_PROCESS: dict[str, str] = {
    "test_terminals.py::test_closing_the_app_connection_detaches_every_stream_it_bound": (
        "counts the hub's bound streams in-process (hub.runtime.hub.terminals)"
    ),
    "test_terminals.py::test_open_attach_kill_and_close_are_audited_with_node_stream_peer_and_outcome": (
        _AUDIT_IN_DATA_DIR
    ),
    "test_terminals.py::test_a_terminal_request_the_hub_cannot_audit_is_refused_in_the_stream": (
        "replaces the hub's audit sink in-process (hub.runtime.hub.terminals)"
    ),
    "test_workspace_calls.py::test_an_app_that_goes_away_has_its_calls_cancelled": (
        "counts the hub's calls in flight in-process (hub.runtime.hub.workspace_calls)"
    ),
    "test_workspace_calls.py::test_exec_calls_and_file_writes_are_audited_reads_are_not": _AUDIT_IN_DATA_DIR,
    "test_uploads.py::test_every_upload_is_audited_with_its_outcome": _AUDIT_IN_DATA_DIR,
    "test_application_ws.py::test_mutating_request_without_envelope_id_is_invalid_argument": (
        "asserts through the hub's store in-process that no session exists at all"
        " (a module's replicas share one database with the other tests' sessions)"
    ),
    "test_application_events.py::test_list_events_default_and_maximum_page": (
        "publishes 10,500 events straight into the live session's event log in-process"
    ),
    "test_application_errors.py::test_agent_hello_first_is_wrong_endpoint_and_closes": _NODES_IN_PROCESS,
    "test_application_auth.py::test_login_cookie_authenticates_the_websocket": (
        "sends the hub's own address as Origin; each replica here has its own address (no load balancer in"
        " front), so the Origin names another replica and the upgrade is refused as cross-origin, rightly"
    ),
    "test_idempotency_e2e.py::test_concurrent_duplicates_over_many_connections_make_one_turn": _STORE_IN_PROCESS,
    "test_node_initiated_turns.py::test_a_scheduled_node_turn_is_relayed_whole_as_a_turn_of_the_session": (
        _TURNS_IN_PROCESS
    ),
    "test_node_initiated_turns.py::test_node_turns_are_relayed_or_dropped_whole_and_bounded_per_minute": (
        _LOGS_IN_PROCESS
    ),
    "test_node_initiated_turns.py::test_a_node_without_an_llm_cannot_flood_the_hub": _LOGS_IN_PROCESS,
    "test_node_initiated_turns.py::test_a_node_turn_is_canceled_under_the_nodes_id_and_ends_when_the_node_leaves": (
        _TURNS_IN_PROCESS
    ),
    "test_node_rotation.py::test_the_rotations_lifecycle_events_are_dropped": (
        "reads the live session in-process (hub.runtime.hub.session)"
    ),
    "test_node_rotation.py::test_an_open_answering_another_id_records_an_alias": (
        "reads the node connection's continuation aliases in-process (hub.runtime.hub.nodes)"
    ),
    "test_node_rotation.py::test_a_second_rotation_replaces_the_alias": (
        "reads the node connection's continuation aliases in-process (hub.runtime.hub.nodes)"
    ),
    "test_node_rotation.py::test_events_of_sub_agent_and_helper_sessions_stay_dropped": _NODES_IN_PROCESS,
    "test_node_rotation.py::test_after_a_reconnect_a_rotated_session_is_closed_and_opened_again_before_the_next_turn": (
        "asserts the exact requests close, open, run: the hub resets the session without asking because it"
        " remembers the node's previous connection, which rotated it. The replica the node reconnects to never"
        " saw that connection: it learns of the dead continuation from the open's answer (the path of a"
        " restarted hub, AOP-nodes 9.8.3) and then closes, opens and runs once as required: one open more"
    ),
    "test_node_dispatch.py::test_an_implicit_open_answering_a_continuation_id_resets_the_session": _NODES_IN_PROCESS,
    "test_node_dispatch.py::test_deleting_a_session_closes_it_on_the_node_with_the_close_envelope_id": (
        "deletes the session by calling the hub in-process (hub.runtime.hub.delete_session)"
    ),
    "test_commands.py::test_an_offline_node_is_command_failed": _NODES_IN_PROCESS,
    "test_commands.py::test_an_answer_after_the_session_closed_adds_nothing": _COMMANDS_IN_PROCESS,
    "test_node_endpoint.py::test_a_node_dropping_mid_turn_ends_the_turn_agent_disconnected": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_a_node_that_says_nothing_is_closed_after_the_hello_timeout": _CONSTANT_IN_PROCESS,
    "test_node_endpoint.py::test_a_protocol_violation_drops_that_node_only": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_a_refused_or_unanswered_open_is_refused_and_leaves_no_session": (
        "shortens the hub's node timeout in-process (monkeypatch on hub.runtime.hub)"
    ),
    "test_node_endpoint.py::test_a_remote_node_cannot_take_the_built_in_node_id": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_a_replacement_is_logged_with_both_peers_addresses": _LOGS_IN_PROCESS,
    "test_node_endpoint.py::test_agent_hello_with_a_node_id_over_256_bytes_closes_the_connection": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_agent_hello_without_node_id_closes_the_connection": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_agent_status_and_stats_are_kept": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_an_envelope_id_over_256_bytes_drops_the_node": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_anything_but_agent_hello_first_closes_the_connection": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_hello_is_answered_with_agent_accepted_and_the_common_capabilities": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_node_upgrade_without_the_access_key_is_refused_with_401": _NODES_IN_PROCESS,
    "test_node_endpoint.py::test_reconnect_with_the_same_node_id_replaces_the_old_connection": (
        _NODES_IN_PROCESS + "; its replacement across replicas is test_replicas_e2e's"
        " test_a_node_that_reconnects_to_another_replica_is_replaced_on_the_first"
    ),
    "test_node_endpoint.py::test_two_live_connections_with_one_id_do_not_take_it_from_each_other": (
        _CONSTANT_IN_PROCESS + "; it also reads the node registry and the log in-process"
    ),
    "test_reference_node.py::test_a_payload_the_hub_cannot_read_is_answered_in_band_and_the_node_stays": (
        _NODES_IN_PROCESS
    ),
    "test_reference_node.py::test_a_known_namespace_with_an_unknown_or_empty_case_is_ignored": _NODES_IN_PROCESS,
    "test_reference_node.py::test_a_nodes_protocol_error_is_never_answered": _NODES_IN_PROCESS,
    "test_reference_node.py::test_a_protocol_error_answering_a_run_fails_the_turn_at_once": _NODES_IN_PROCESS,
    "test_reference_node.py::test_the_hub_answers_a_nodes_pings": _NODES_IN_PROCESS,
    "test_reference_node.py::test_agent_accepted_is_the_first_thing_a_node_receives": (
        "holds the hub's interactions in-process (monkeypatch on hub.runtime.hub.interactions)"
    ),
    "test_reference_node.py::test_the_nodes_turn_ended_after_a_hub_cancel_is_dropped": _STORE_IN_PROCESS,
    "test_interactions_e2e.py::test_a_session_done_asking_is_not_remembered": (
        "reads the hub's interactions in-process (hub.runtime.hub.interactions)"
    ),
    "test_reference_node.py::test_repeated_node_event_ids_and_restarting_seqs_get_the_hubs_own": (
        "asserts seqs dense from 1 (1, 2, 3...). The restarted node reconnects to another replica, which"
        " takes the session over and continues above the old owner's seq reservation, as a restarted hub"
        " does: strictly increasing as AOP section 6 requires, not dense"
    ),
}

# "test_file.py::test_name" -> the known gap of the replica code it hits, fixed in parallel: these run
# over replicas marked xfail(strict=True), so each mark must be removed once its gap is fixed.
_DELTAS_GAP = "live deltas do not reach watchers on a replica other than the node's (persisted events do)"

KNOWN_REPLICA_GAPS: dict[str, str] = {
    "test_node_endpoint.py::test_run_turn_reaches_the_node_under_the_turn_id_and_its_events_are_routed_by_it": (
        _DELTAS_GAP
    ),
}


def flags(overrides: dict[str, object]) -> tuple[str, ...]:
    """The ``aophub serve`` flags giving a replica the settings ``overrides`` give an in-process hub."""
    values = {**_DEFAULTS, **overrides}
    unknown = set(values) - set(_FLAGS)
    if unknown:
        raise ValueError(f"no aophub serve flag for {sorted(unknown)}: add it to tests/support/spread.py")
    return tuple(itertools.chain.from_iterable((_FLAGS[name], str(value)) for name, value in sorted(values.items())))


@dataclass
class SpreadHub:
    """Three replicas standing in for one hub: each URL asked for names the next replica."""

    replicas: Replicas
    _turn: Iterator[int] = field(default_factory=lambda: itertools.cycle(range(COUNT)))

    @property
    def database(self) -> str:
        return self.replicas.url

    def next(self) -> HubProcess:
        """The next replica in turn (r0, r1, r2, r0, ...)."""
        return self.replicas[next(self._turn)]

    @property
    def port(self) -> int:
        return self.next().port

    @property
    def http(self) -> str:
        return self.next().http

    @property
    def app_url(self) -> str:
        return self.next().app_url

    @property
    def node_url(self) -> str:
        return self.next().node_url


class ReplicaClusters:
    """A module's replica clusters, one per set of ``aophub serve`` flags, started when first asked for."""

    def __init__(self, postgres: PostgresCluster, base: Path) -> None:
        self.postgres = postgres
        self.base = base
        self._stack = contextlib.ExitStack()
        self._hubs: dict[tuple[str, ...], SpreadHub] = {}

    def spread(
        self, overrides: dict[str, object], *, prepare: Callable[[Path], None] | None = None, kind: str = ""
    ) -> SpreadHub:
        """The module's cluster for ``overrides`` and ``kind``, started at the first call.

        ``prepare`` fills each replica's data directory before it starts (a config.yaml, a workspace);
        clusters prepared differently must differ in ``kind``.
        """
        key = (kind, *flags(overrides))
        if key not in self._hubs:
            url = migrated_database(self.postgres)
            directory = self.base / f"cluster-{len(self._hubs)}"
            if prepare is not None:
                for index in range(COUNT):
                    replica_dir = directory / f"replica-{index}"
                    replica_dir.mkdir(parents=True)
                    prepare(replica_dir)
            running = self._stack.enter_context(replicas(url, directory, COUNT, *key[1:]))
            self._hubs[key] = SpreadHub(running)
        return self._hubs[key]

    def close(self) -> None:
        self._stack.close()


async def _session_ids(store: PostgresStore) -> set[str]:
    records = await store.list_sessions(limit=_ALL, include_closed=True, include_archived=True)
    return {record.id for record in records}


@contextlib.asynccontextmanager
async def checked_spread(hub: SpreadHub) -> AsyncIterator[SpreadHub]:
    """The spread hub for one test; afterwards its sessions are closed and their lifecycle checked."""
    async with PostgresStore(hub.database, migrate=False) as store:
        before = await _session_ids(store)
        printed = [len(replica.output) for replica in hub.replicas.hubs]
        try:
            yield hub
        finally:  # what the replicas logged meanwhile (pytest shows it when the test fails)
            for replica, seen in zip(hub.replicas.hubs, printed, strict=True):
                for line in replica.output[seen:]:
                    print(f"{replica.data_dir.name}: {line}", end="")
        created = await _session_ids(store) - before
        open_ones = {record.id for record in await store.list_sessions(limit=_ALL, include_archived=True)}
        async with await AppSocket.open(hub.app_url) as app:
            for session_id in sorted(created & open_ones):
                request = chat_pb2.CloseSessionRequest(session_id=session_id, reason="test teardown")
                reply = await app.call(f"teardown-{session_id}", close_session_request=request)
                assert reply.close_session_response.WhichOneof("outcome") == "accepted", reply
        await check_stored_lifecycle(store, created)


def scripted_node(hub: RunningHub, node_id: str = "scripted") -> ScriptedNode:
    """A :class:`~tests.support.node.ScriptedNode` attached to ``hub``: in-process to the one hub, over a
    node WebSocket to the next replica of a :class:`SpreadHub`."""
    if isinstance(hub, SpreadHub):
        return SocketScriptedNode(hub.node_url, node_id, hub.database)
    return ScriptedNode(hub.runtime.hub, node_id)


def over_replicas(request: pytest.FixtureRequest) -> bool:
    """Whether the test of ``request`` runs over replicas (its ``hub`` fixture's param is :data:`REPLICAS`)."""
    callspec = getattr(request.node, "callspec", None)
    return callspec is not None and REPLICAS in callspec.params.values()


@contextlib.asynccontextmanager
async def serving(
    request: pytest.FixtureRequest,
    data_dir: Path,
    *,
    prepare: Callable[[Path], None] | None = None,
    kind: str = "",
    **overrides: Any,
) -> AsyncIterator[RunningHub]:
    """The hub of a test whose ``hub`` fixture has the params :data:`SERVES`: one hub, or three replicas.

    Typed as the one hub so that test bodies stay unchanged: a :class:`SpreadHub` has its addresses,
    the only attributes the tests that run over replicas use (the others are in :data:`SINGLE_PROCESS`).
    """
    if request.param == ONE_HUB:
        if prepare is not None:
            prepare(data_dir)
        async with checked_hub(data_dir, **overrides) as running:
            yield running
        return
    clusters: ReplicaClusters = request.getfixturevalue("replica_clusters")
    async with checked_spread(clusters.spread(overrides, prepare=prepare, kind=kind)) as spread:
        yield cast(RunningHub, spread)
