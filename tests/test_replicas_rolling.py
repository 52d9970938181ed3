"""The rolling restart: three replicas, 32 sessions running turns, every replica restarted in turn.

Sessions: 16 on the built-in node (each replica has one; a session belongs to the replica that
opened it until that one stops) and 16 on two external nodes that, like nodes behind a load
balancer, reconnect to the next replica when theirs goes away. Each session has a watcher on a
replica other than the one its turns are sent to; a watcher whose replica goes away resumes on the
next one from its last cursor, and a driver whose request got no answer sends it again, same
envelope id, to the next replica. Every accepted request is also sent a second time to another
replica. r0 and r1 are stopped with SIGTERM, r2 with kill -9, each restarted before the next.

Afterwards: every watcher holds exactly the stored sequence of its session (0 lost, 0 duplicated),
every accepted turn has one turn_started and one turn_ended, and every request sent more than once
got the same reply each time.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from websockets.exceptions import WebSocketException

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.agent.echo import EchoAgent
from aophub.node import serve_agent
from aophub.node.client import NodeRefused

from .support.postgres import PostgresCluster
from .support.replicas import Replicas, migrated_database, replicas
from .support.server import TOKEN
from .support.wire import AppSocket, stored, text_input

pytestmark = pytest.mark.timeout(180)

REPLICAS = 3
SESSIONS = 32
TURN_TIMEOUT = 30.0
# Turns the drivers finish between two restarts, so each restart hits turns in flight.
TURNS_BETWEEN_RESTARTS = 24


def for_watch(watch_id: str) -> Callable[[envelope_pb2.Envelope, protocol_pb2.ProtocolMessage], bool]:
    return lambda envelope, _message: envelope.reply_to == watch_id


@dataclass
class Watcher:
    """Follows one session from replica to replica, resuming after its last cursor."""

    cluster: Replicas
    session_id: str
    replica: int
    events: list[tuple[str, str, str, str]] = field(default_factory=list)  # cursor, event id, kind, turn id
    ended: dict[str, str] = field(default_factory=dict)  # turn id -> stop reason / error code
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    resumes: int = 0

    @property
    def cursor(self) -> str:
        return self.events[-1][0] if self.events else ""

    async def run(self) -> None:
        while True:
            with contextlib.suppress(OSError, ConnectionError, WebSocketException, TimeoutError):
                async with await AppSocket.open(self.cluster[self.replica].app_url, open_timeout=5) as app:
                    watch = await app.watch(self.session_id, self.cursor)
                    while True:
                        envelope, message = await app.wait_for(for_watch(watch), timeout=3600)
                        if not envelope.delivery_cursor:
                            continue  # a delta (or an error): not part of the stored sequence
                        event = message.event
                        kind = str(event.WhichOneof("payload"))
                        self.events.append((envelope.delivery_cursor, event.id, kind, event.turn_id))
                        if kind == "turn_ended":
                            self.ended[event.turn_id] = event.turn_ended.error.code or event.turn_ended.stop_reason
                        self.changed.set()
            self.replica = (self.replica + 1) % REPLICAS
            self.resumes += 1
            await asyncio.sleep(0.05)  # backoff before the next replica

    async def wait_ended(self, turn_id: str) -> str:
        async with asyncio.timeout(TURN_TIMEOUT):
            while turn_id not in self.ended:
                self.changed.clear()
                await self.changed.wait()
        return self.ended[turn_id]

    async def wait_cursor(self, cursor: str) -> None:
        async with asyncio.timeout(TURN_TIMEOUT):
            while not self.events or int(self.cursor) < int(cursor):
                self.changed.clear()
                await self.changed.wait()


@dataclass
class Driver:
    """Runs turns in one session, sending each request to the next replica until one answers."""

    cluster: Replicas
    session_id: str
    replica: int
    watcher: Watcher
    stop: asyncio.Event
    accepted: list[str] = field(default_factory=list)
    replies: dict[str, list[bytes]] = field(default_factory=lambda: collections.defaultdict(list))
    rejected: collections.Counter[str] = field(default_factory=collections.Counter)
    _app: AppSocket | None = None

    async def call(self, envelope_id: str, request: chat_pb2.RunTurnRequest, replica: int) -> chat_pb2.RunTurnResponse:
        """Send ``request`` with ``envelope_id`` until a replica answers it (same id on every try)."""
        while True:
            try:
                if self._app is None:
                    self._app = await AppSocket.open(self.cluster[replica].app_url, open_timeout=5)
                sent = await self._app.send(protocol_pb2.ProtocolMessage(run_turn_request=request), envelope_id)
                reply = await self._app.reply(sent, timeout=TURN_TIMEOUT)
            except (OSError, ConnectionError, WebSocketException, TimeoutError):
                await self._drop()
                replica = (replica + 1) % REPLICAS
                await asyncio.sleep(0.05)
                continue
            if reply.WhichOneof("message") == "protocol_error":  # not journaled (e.g. UNAVAILABLE): send again
                await self._drop()
                replica = (replica + 1) % REPLICAS
                await asyncio.sleep(0.05)
                continue
            self.replies[envelope_id].append(reply.run_turn_response.SerializeToString(deterministic=True))
            return reply.run_turn_response

    async def _drop(self) -> None:
        if self._app is not None:
            with contextlib.suppress(Exception):
                await self._app.close()
            self._app = None

    async def run(self) -> None:
        try:
            for n in itertools.count():
                if self.stop.is_set():
                    return
                envelope_id = uuid.uuid4().hex
                request = chat_pb2.RunTurnRequest(session_id=self.session_id, input=text_input(f"turn {n} of the test"))
                response = await self.call(envelope_id, request, self.replica)
                if response.WhichOneof("outcome") != "accepted":
                    self.rejected[response.rejected.code] += 1  # journaled: a new id next time
                    await asyncio.sleep(0.1)
                    continue
                turn_id = response.accepted.turn_id
                self.accepted.append(turn_id)
                await self._drop()  # the retry goes to another replica, as a client's would
                await self.call(envelope_id, request, (self.replica + 1) % REPLICAS)
                await self.watcher.wait_ended(turn_id)
        finally:
            await self._drop()


async def roaming_node(cluster: Replicas, node_id: str, replica: int) -> None:
    """An external echo node that, when its replica goes away, connects to the next one (a load balancer's job)."""
    while True:
        with contextlib.suppress(NodeRefused, OSError):
            await serve_agent(cluster[replica].http, TOKEN, node_id, EchoAgent(delay=0.005), reconnect=False)
        replica = (replica + 1) % REPLICAS
        await asyncio.sleep(0.05)


async def open_session(cluster: Replicas, replica: int, node_id: str) -> str:
    async with asyncio.timeout(TURN_TIMEOUT):
        while True:
            async with await AppSocket.open(cluster[replica].app_url) as app:
                reply = await app.call(open_session_request=chat_pb2.OpenSessionRequest(node_id=node_id))
            outcome = reply.open_session_response
            if outcome.WhichOneof("outcome") == "accepted":
                return outcome.accepted.id
            await asyncio.sleep(0.1)  # the node is still connecting


def turns_done(drivers: list[Driver]) -> int:
    return sum(len(driver.watcher.ended) for driver in drivers)


async def progress(drivers: list[Driver], turns: int) -> None:
    """Wait until the sessions have ended ``turns`` more turns."""
    target = turns_done(drivers) + turns
    async with asyncio.timeout(60):
        while turns_done(drivers) < target:
            for driver in drivers:  # every waiter re-checks its own condition when woken: clearing is safe
                driver.watcher.changed.clear()
            waits = [asyncio.ensure_future(driver.watcher.changed.wait()) for driver in drivers]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()


async def restart(cluster: Replicas, index: int, how: str) -> None:
    """Stop replica ``index`` (SIGTERM: it must exit 0 in time; or kill -9) and start it again."""
    if how == "SIGTERM":
        try:
            status = await asyncio.to_thread(cluster[index].terminate)
        except subprocess.TimeoutExpired:
            status = -1
        assert status == 0, "".join(cluster[index].output[-80:])
    else:
        await asyncio.to_thread(cluster[index].kill)
    await asyncio.to_thread(cluster.restart, index)


async def test_rolling_restart_loses_nothing(postgres: PostgresCluster, tmp_path: Path) -> None:
    """Restart r0 and r1 (SIGTERM) and r2 (kill -9) under load: every watcher exact, every turn ended once."""
    with replicas(migrated_database(postgres), tmp_path, REPLICAS, "--echo-delay", "0.005") as cluster:
        nodes = [asyncio.create_task(roaming_node(cluster, f"n{k}", k)) for k in range(2)]
        stop = asyncio.Event()
        drivers: list[Driver] = []
        tasks: list[asyncio.Task[None]] = []
        started = time.perf_counter()
        try:
            for index in range(SESSIONS):
                node_id = "local" if index % 2 == 0 else f"n{index % 4 // 2}"
                session_id = await open_session(cluster, index % REPLICAS, node_id)
                watcher = Watcher(cluster, session_id, (index + 1) % REPLICAS)
                driver = Driver(cluster, session_id, (index + 2) % REPLICAS, watcher, stop)
                drivers.append(driver)
                tasks += [asyncio.create_task(watcher.run()), asyncio.create_task(driver.run())]
            await progress(drivers, TURNS_BETWEEN_RESTARTS)
            for index, how in ((0, "SIGTERM"), (1, "SIGTERM"), (2, "kill -9")):
                await restart(cluster, index, how)
                await progress(drivers, TURNS_BETWEEN_RESTARTS)
            stop.set()
            async with asyncio.timeout(60):
                await asyncio.gather(*(task for task in tasks[1::2]))
            # Everything stored, read from one replica; every watcher must reach its session's last cursor.
            lost = duplicated = 0
            endings: collections.Counter[str] = collections.Counter()
            async with await AppSocket.open(cluster[0].app_url) as reader:
                for driver in drivers:
                    events = await stored(reader, driver.session_id)
                    await driver.watcher.wait_cursor(events[-1].cursor)
                    expected = [(e.cursor, e.event.id) for e in events]
                    seen = [(cursor, event_id) for cursor, event_id, _, _ in driver.watcher.events]
                    duplicated += len(seen) - len(set(seen))
                    lost += len(set(expected) - set(seen))
                    assert seen == expected, driver.session_id
                    for turn_id in driver.accepted:
                        mine = [e.event.WhichOneof("payload") for e in events if e.event.turn_id == turn_id]
                        assert (mine.count("turn_started"), mine.count("turn_ended")) == (1, 1), (turn_id, mine)
                        endings[driver.watcher.ended[turn_id]] += 1
            retried = [replies for driver in drivers for replies in driver.replies.values() if len(replies) > 1]
            assert all(len(set(replies)) == 1 for replies in retried)
            accepted = sum(len(driver.accepted) for driver in drivers)
            resumes = sum(driver.watcher.resumes for driver in drivers)
            rejected = sum((driver.rejected for driver in drivers), collections.Counter())
            print(
                f"\nrolling restart: {SESSIONS} sessions, {accepted} turns accepted in"
                f" {time.perf_counter() - started:.1f} s; endings {dict(endings)}; rejected {dict(rejected)};"
                f" {len(retried)} requests sent more than once, all answered the same; {resumes} watcher resumes;"
                f" lost {lost}, duplicated {duplicated}"
            )
            assert (lost, duplicated) == (0, 0)
        finally:
            stop.set()
            for task in tasks + nodes:
                task.cancel()
            await asyncio.gather(*tasks, *nodes, return_exceptions=True)
