"""B7: hub replicas on PostgreSQL: echo turns/s and first-delta p99 with 1, 2 and 3 replicas, against one hub on SQLite.

Four configurations run side by side in the same run: one hub on SQLite (the baseline,
``--durability full``), and 1, 2 and 3 replicas (``aophub serve --database``) on three databases
of one PostgreSQL server (fsync and synchronous_commit on: the same durability). ``sessions``
sessions, each on its own connection with a watch, spread round-robin over a configuration's
replicas (each session on its replica's built-in node), run echo turns of 20 deltas: saturated
for a window, then paced at one turn per ``pace`` seconds each for the latency. Each repeat runs
every configuration once, rotating which goes first.

With 2 replicas, a variant ("pg2-elsewhere") runs the same turns on the same two replicas with
every session owned by one replica (opened there, on its built-in node) and watched, and sent its
turns, on the other: each RunTurn is forwarded to the owner and each delta reaches the watcher
through the owner's live feed (aophub.cluster.live_relay). Its first-delta figures are set against
pg2's, where the watcher is on the owner: the difference is what forwarding and the relay add.

Every hub process is pinned to the server CPU (one core on a two-core machine) and PostgreSQL runs
unpinned beside the load generator, so on this machine the figures show what replication costs,
not the capacity more machines would add. Each database's table statistics and events table give
the rows written per stored event and the bytes per stored event (docs/scaling.md uses both).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from websockets.asyncio.client import ClientConnection

from aophub.store.postgres_schema import migrate_database
from bench.client import APPLICATION_PATH, ECHO_WORDS, connect_app, gather_limited, open_session, start_watch
from bench.context import Context, Skip
from bench.load import TurnSource, WindowResult, closed_loop
from bench.processes import ServerProcess
from bench.report import Figure, ScenarioResult
from bench.scenarios._common import SETUP_CONCURRENCY, close_all, hub_sessions, latency_figure, turn_sources
from tests.support.postgres import PostgresCluster, find_bin_dir, postgres_cluster  # initdb + pg_ctl, as tests do

KEY = "B7"
TITLE = "replicas on PostgreSQL: echo turns with 1, 2, 3 replicas"
BASELINE = "one hub on SQLite (--durability full) in the same run, same sessions and turns"


@dataclass(frozen=True)
class Sizes:
    replicas: tuple[int, ...]
    sessions: int
    warmup: float
    seconds: float
    pace: float


FULL = Sizes(replicas=(1, 2, 3), sessions=64, warmup=1.0, seconds=4.0, pace=1.0)
QUICK = Sizes(replicas=(1, 2), sessions=4, warmup=0.3, seconds=1.0, pace=0.5)


async def spread(servers: Sequence[ServerProcess], sessions: int) -> list[TurnSource]:
    """``sessions`` watched sessions, dealt round-robin over ``servers``."""
    counts = [sessions // len(servers) + (1 if index < sessions % len(servers) else 0) for index in range(len(servers))]
    opened = []
    for server, count in zip(servers, counts, strict=True):
        opened += await hub_sessions(server, count)
    return turn_sources(opened)


ELSEWHERE = "pg2-elsewhere"


async def elsewhere(servers: Sequence[ServerProcess], sessions: int) -> tuple[list[TurnSource], list[ClientConnection]]:
    """``sessions`` sessions owned by ``servers[0]`` (opened there), each watched and driven from ``servers[1]``;
    with the connections that opened them (kept open until the end)."""
    owner, other = servers[0].url(APPLICATION_PATH), servers[1].url(APPLICATION_PATH)

    async def one() -> tuple[tuple[ClientConnection, str], ClientConnection]:
        opener = await connect_app(owner)
        session_id = await open_session(opener)
        ws = await connect_app(other)
        await start_watch(ws, session_id)
        return (ws, session_id), opener

    made = await gather_limited(SETUP_CONCURRENCY, [one() for _ in range(sessions)])
    return turn_sources([watched for watched, _ in made]), [opener for _, opener in made]


def _database_writes(postgres: PostgresCluster, database: str) -> tuple[int, int, int]:
    """``(rows written, stored events, their bytes)`` of ``database`` so far.

    Rows written: inserts, updates and deletes of every table (``pg_stat_user_tables``, which the
    server updates within about a second: the window's warm-up absorbs the delay).
    """
    psql = postgres.psql
    rows = int(
        psql("SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables", database).strip()
    )
    events, size = psql("SELECT count(*), coalesce(sum(octet_length(data)), 0) FROM events", database).split("|")
    return rows, int(events), int(size)


async def run(ctx: Context) -> ScenarioResult:
    sizes = ctx.sizes(KEY, FULL, QUICK)
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise Skip("PostgreSQL server binaries not found (install Debian's postgresql: make install)")
    result = ScenarioResult(KEY, TITLE, BASELINE)
    result.settings = {
        **asdict(sizes),
        "echo_words": ECHO_WORDS,
        "durability": "SQLite synchronous=FULL; PostgreSQL fsync=on, synchronous_commit=on",
        "placement": "every hub process pinned to the server CPU; PostgreSQL unpinned",
        "cpu": {},
    }
    with postgres_cluster(bin_dir, durable=True) as postgres, contextlib.ExitStack() as stack:
        configurations: dict[str, list[ServerProcess]] = {"sqlite": [stack.enter_context(ctx.hub("b7-sqlite"))]}
        databases: dict[str, str] = {}
        for count in sizes.replicas:
            name = f"pg{count}"
            url = postgres.create_database(f"b7_{name}")
            databases[name] = url.rsplit("/", 1)[1]
            await migrate_database(url)
            configurations[name] = [
                stack.enter_context(ctx.hub(f"b7-{name}-r{index}", "--database", url, "--replica-id", f"r{index}"))
                for index in range(1, count + 1)
            ]
        sources = {name: await spread(servers, sizes.sessions) for name, servers in configurations.items()}
        openers: list[ClientConnection] = []
        if "pg2" in configurations:
            configurations[ELSEWHERE] = configurations["pg2"][::-1]  # the window's CPU figure: the watchers' replica
            sources[ELSEWHERE], openers = await elsewhere(configurations["pg2"], sizes.sessions)
        try:
            for pace in (None, sizes.pace):
                runs: dict[str, list[WindowResult]] = {name: [] for name in configurations}
                writes: dict[str, list[tuple[int, int, int]]] = {}
                for repeat in range(ctx.repeats):
                    order = list(configurations)
                    order = order[repeat % len(order) :] + order[: repeat % len(order)]
                    for name in order:
                        if pace is None and name in databases:
                            before = _database_writes(postgres, databases[name])
                        window = await closed_loop(
                            sources[name],
                            warmup=sizes.warmup,
                            seconds=sizes.seconds,
                            server_pid=configurations[name][0].pid,
                            pace=pace,
                        )
                        runs[name].append(window)
                        if pace is None and name in databases:
                            after = _database_writes(postgres, databases[name])
                            writes.setdefault(name, []).append(_difference(before, after))
                    ctx.log(
                        f"B7 {'saturated' if pace is None else f'paced {pace:g}s'} run {repeat + 1}/{ctx.repeats}: "
                        + ", ".join(f"{name} {runs[name][-1].turns_per_second:,.0f} turns/s" for name in configurations)
                    )
                label = f"{sizes.sessions} sessions" + ("" if pace is None else f", 1 turn/{pace:g}s each")
                result.settings["cpu"][label] = {name: [r.cpu for r in each] for name, each in runs.items()}
                result.figures += figures(sizes.replicas, runs, label, saturated=pace is None)
                if ELSEWHERE in runs:
                    result.figures += elsewhere_figures(runs, label)
                if writes:
                    result.figures += write_figures(writes, runs)
        finally:
            await close_all([ws for each in sources.values() for ws, _ in each] + openers)
    return result


def _difference(before: tuple[int, int, int], after: tuple[int, int, int]) -> tuple[int, int, int]:
    """What a window (its warm-up included) added: rows written, stored events, their bytes."""
    return after[0] - before[0], after[1] - before[1], after[2] - before[2]


def figures(
    replicas: Sequence[int], runs: dict[str, list[WindowResult]], label: str, *, saturated: bool
) -> list[Figure]:
    """Per replica count: turns/s (saturated) or first-delta p99 (paced), against SQLite's."""
    baseline = runs["sqlite"]
    made: list[Figure] = []
    for count in replicas:
        mine = runs[f"pg{count}"]
        at = f"{count} replica{'s' if count > 1 else ''} on PostgreSQL, {label}"
        if saturated:
            made.append(
                Figure(
                    f"turns/s, {at}", "/s", [r.turns_per_second for r in mine], [r.turns_per_second for r in baseline]
                )
            )
            made.append(latency_figure("first_delta", 99, at, mine, baseline))
        else:
            made.append(latency_figure("first_delta", 50, at, mine, baseline))
            made.append(latency_figure("first_delta", 99, at, mine, baseline))
    return made


def elsewhere_figures(runs: dict[str, list[WindowResult]], label: str) -> list[Figure]:
    """First delta p50/p99 on the replica that does not own the session, against pg2's on the owner."""
    at = f"2 replicas, watcher and RunTurn on the replica not owning the session, {label}"
    note = "baseline column: the same two replicas, each session watched and driven on its owner"
    return [
        dataclasses.replace(latency_figure("first_delta", q, at, runs[ELSEWHERE], runs["pg2"]), note=note)
        for q in (50, 99)
    ]


def write_figures(writes: dict[str, list[tuple[int, int, int]]], runs: dict[str, list[WindowResult]]) -> list[Figure]:
    """Stored events per turn, database rows written per stored event and bytes per stored event (saturated)."""
    sqlite = runs["sqlite"]
    made = [Figure("stored events per turn, SQLite", "", [r.persisted / max(r.turns, 1) for r in sqlite], decimals=1)]
    for name, samples in writes.items():
        rows = [r / e for r, e, _ in samples if e]
        sizes = [b / e for _, e, b in samples if e]
        note = "rows inserted, updated or deleted in every table (pg_stat_user_tables) per event stored"
        made.append(Figure(f"database rows written per stored event, {name}", "", rows, note=note, decimals=2))
        made.append(Figure(f"bytes per stored event (payload), {name}", "B", sizes, decimals=0))
    return made
