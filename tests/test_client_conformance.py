"""The shared client conformance scenario (clients/conformance/README.md) for the Python client.

One hub for the module, started by the shared launcher (``python -m tests.support.conformance_hub``)
exactly as every other language's runner starts it: a pipe on its stdin, its first stdout line
read as JSON. Each numbered step of the scenario is a test here.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import pytest
from connectrpc.code import Code as ConnectCode
from connectrpc.errors import ConnectError
from google.protobuf import any_pb2

from aop import chat_pb2, protocol_pb2
from aophub.client import (
    Code,
    HubClient,
    HubClientError,
    Management,
    Watcher,
    WatchItem,
    approve,
    interaction_of,
    pack,
    text_of,
)
from aophub.v1 import extensions_pb2, interaction_pb2, session_pb2, system_pb2

from .support.postgres import PostgresCluster
from .support.replicas import migrated_database
from .support.server import ROOT
from .support.spread import REPLICAS, SERVES

pytestmark = pytest.mark.timeout(60)
CUTS = 20


@dataclass
class Hub:
    """The launcher's hub; over replicas, each ``url`` asked for is the next replica's (the node is on r0)."""

    urls: list[str]
    token: str
    node: str
    max_watches: int
    _turn: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def url(self) -> str:
        return self.urls[next(self._turn) % len(self.urls)]


@pytest.fixture(scope="module", params=SERVES)
def hub(request: pytest.FixtureRequest) -> Iterator[Hub]:
    """The launcher's hub (or its 3 replicas on PostgreSQL); it stops (and removes its data) when its stdin closes."""
    command = [sys.executable, "-m", "tests.support.conformance_hub"]
    if request.param == REPLICAS:
        postgres: PostgresCluster = request.getfixturevalue("postgres")
        command += ["--database", migrated_database(postgres), "--replicas", "3"]
    launcher = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert launcher.stdin is not None
    assert launcher.stdout is not None
    try:
        ready = json.loads(launcher.stdout.readline())
        yield Hub(ready.get("urls", [ready["url"]]), ready["token"], ready["node"], ready["max_watches"])
    finally:
        launcher.stdin.close()
        launcher.wait(timeout=30)
        launcher.stdout.close()


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[HubClient]:
    async with await HubClient.connect(hub.url, hub.token) as connected:
        yield connected


async def until(watcher: Watcher, match: Callable[[WatchItem], bool]) -> WatchItem:
    """Read the watch until ``match`` accepts an item; that item."""
    async for item in watcher:
        if match(item):
            return item
    raise AssertionError("the watch ended")


def turn_ended(turn_id: str) -> Callable[[WatchItem], bool]:
    return lambda item: item.event.turn_id == turn_id and item.event.HasField("turn_ended")


def assistant_message(turn_id: str) -> Callable[[WatchItem], bool]:
    return lambda item: item.event.turn_id == turn_id and item.event.message.role == "assistant"


async def stored(client: HubClient, session_id: str, after: str = "") -> list[WatchItem]:
    """The stored sequence: ListEvents paged from ``after`` to an empty page."""
    return [item async for item in client.events(session_id, after)]


def assert_same_sequence(got: list[WatchItem], want: list[WatchItem]) -> None:
    assert len(got) == len(want), f"the watch yielded {len(got)} persisted events, the hub stores {len(want)}"
    for index, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        assert (mine.cursor, mine.event) == (theirs.cursor, theirs.event), f"event {index} differs"


# 1. Turns: open, run two turns, cancel a third.
async def test_turns(hub: Hub, client: HubClient) -> None:
    session = await client.open_session(hub.node)
    async with client.watch(session.id) as watcher:
        for text in ("hello", "again"):
            receipt = await client.run_turn(session.id, text)
            answer = ""
            async for item in watcher:
                if assistant_message(receipt.turn_id)(item):
                    answer = text_of(item.event.message)
                if turn_ended(receipt.turn_id)(item):
                    assert item.event.turn_ended.stop_reason == "completed"
                    break
            assert answer.strip() == f"echo: {text}"

        long = await client.run_turn(session.id, "long")
        await until(watcher, assistant_message(long.turn_id))
        canceled = await client.cancel_turn(session.id, long.turn_id, "conformance")
        assert canceled.state == "canceled"
        ended = await until(watcher, turn_ended(long.turn_id))
        assert ended.event.turn_ended.stop_reason == "canceled"

    starts: dict[str, int] = {}
    ends: dict[str, int] = {}
    for item in await stored(client, session.id):
        if item.event.HasField("turn_started"):
            starts[item.event.turn_id] = starts.get(item.event.turn_id, 0) + 1
        if item.event.HasField("turn_ended"):
            ends[item.event.turn_id] = ends.get(item.event.turn_id, 0) + 1
    assert len(starts) == 3
    assert starts == ends == dict.fromkeys(starts, 1)
    closed = await client.close_session(session.id, "done")
    assert closed.state == "closed"


class CuttableClient(HubClient):
    """Counts its dials, and cuts its TCP connection on demand as a network failure would (no close frame)."""

    dials = 0

    async def _dial(self) -> None:
        await super()._dial()
        self.dials += 1

    def cut(self) -> bool:
        socket = self._socket
        if socket is None or not self._connected.is_set():
            return False
        socket.transport.abort()
        return True


# 2. Resume: 20 cuts during a long turn.
async def test_resume_across_cuts(hub: Hub) -> None:
    async with await CuttableClient.connect(hub.url, hub.token, reconnect_min=0.005, reconnect_max=0.05) as client:
        session = await client.open_session(hub.node)
        yielded: list[WatchItem] = []
        done = 0
        async with client.watch(session.id) as watcher:
            long = await client.run_turn(session.id, "long")
            async for item in watcher:
                if not item.cursor:
                    continue  # deltas are live only
                yielded.append(item)
                if turn_ended(long.turn_id)(item):
                    break
                if not assistant_message(long.turn_id)(item):
                    continue
                # Cut each connection once, after a persisted event of the turn: the next cut waits
                # until the client has dialled again.
                if done < CUTS and client.dials == done + 1 and client.cut():
                    done += 1
                elif done == CUTS:
                    await client.cancel_turn(session.id, long.turn_id)
                    done += 1
        assert done > CUTS, f"the long turn ended after {done} cuts, before {CUTS}"
        assert client.dials == CUTS + 1
        history = await stored(client, session.id)
        assert_same_sequence(yielded, history)

    # A program restarted with a saved cursor resumes exactly after it.
    saved = len(history) // 2
    async with await HubClient.connect(hub.url, hub.token) as restarted:
        resumed: list[WatchItem] = []
        async with restarted.watch(session.id, history[saved].cursor) as watcher:
            async for item in watcher:
                if item.cursor:
                    resumed.append(item)
                if len(resumed) == len(history) - saved - 1:
                    break
    assert_same_sequence(resumed, history[saved + 1 :])


# 3. Approval.
async def test_approval(hub: Hub, client: HubClient) -> None:
    session = await client.open_session(hub.node)
    async with client.watch(session.id) as watcher:
        turn = await client.run_turn(session.id, "approve")
        item = await until(
            watcher,
            lambda item: (
                (found := interaction_of(item.event)) is not None
                and found.state == interaction_pb2.INTERACTION_STATE_PENDING
            ),
        )
        pending = interaction_of(item.event)
        assert pending is not None
        assert pending.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
        assert pending.turn_id == turn.turn_id
        answered = await client.answer_interaction(approve(pending.id, True, "conformance"))
        assert answered.state == interaction_pb2.INTERACTION_STATE_ANSWERED
        result = ""
        async for item in watcher:
            if item.event.tool_result.call_id == pending.call.id:
                result = text_of_output(item)
            if turn_ended(turn.turn_id)(item):
                break
    assert result == "approved"
    with pytest.raises(HubClientError) as again:
        await client.answer_interaction(approve(pending.id, False, "too late"))
    assert again.value.code == Code.FAILED_PRECONDITION


def text_of_output(item: WatchItem) -> str:
    return "".join(part.text.text for part in item.event.tool_result.output)


# 4. A 2 MB event.
async def test_big_event(hub: Hub, client: HubClient) -> None:
    size = 2_000_000
    session = await client.open_session(hub.node)
    async with client.watch(session.id) as watcher:
        turn = await client.run_turn(session.id, f"big {size}")
        big = await until(watcher, lambda item: item.event.message.id == f"big_{turn.turn_id}")
        assert big.cursor
        assert len(text_of(big.event.message)) == size
        await until(watcher, turn_ended(turn.turn_id))
    [whole] = [item for item in await stored(client, session.id) if item.event.message.id == f"big_{turn.turn_id}"]
    assert len(text_of(whole.event.message)) == size


# 5. Every error code the hub can give.
async def refused(call: object, code: Code) -> HubClientError:
    with pytest.raises(HubClientError) as caught:
        await call  # type: ignore[misc]
    assert caught.value.code == code, caught.value
    return caught.value


async def test_unauthenticated(hub: Hub) -> None:
    await refused(HubClient.connect(hub.url, "not-the-key"), Code.UNAUTHENTICATED)
    with Management(hub.url, "not-the-key") as management, pytest.raises(ConnectError) as caught:
        await management.call(management.system.get_status, system_pb2.GetStatusRequest())
    assert caught.value.code == ConnectCode.UNAUTHENTICATED


async def test_invalid_argument(client: HubClient) -> None:
    await refused(client.open_session(""), Code.INVALID_ARGUMENT)


async def test_not_found(client: HubClient) -> None:
    await refused(client.run_turn("no-such-session", "hi"), Code.NOT_FOUND)
    await refused(anext(client.watch("no-such-session")), Code.NOT_FOUND)
    management = client.management
    with pytest.raises(ConnectError) as caught:
        await management.call(
            management.sessions.get_session, session_pb2.GetSessionRequest(session_id="no-such-session")
        )
    assert caught.value.code == ConnectCode.NOT_FOUND


async def test_already_exists(hub: Hub, client: HubClient) -> None:
    envelope_id = f"conformance-open-{id(client)}"
    first = await client.open_session(hub.node, title="one", envelope_id=envelope_id)
    again = await client.open_session(hub.node, title="one", envelope_id=envelope_id)
    assert again.id == first.id  # the same id and body: the stored answer
    await refused(client.open_session(hub.node, title="two", envelope_id=envelope_id), Code.ALREADY_EXISTS)


async def test_failed_precondition(hub: Hub, client: HubClient) -> None:
    session = await client.open_session(hub.node)
    long = await client.run_turn(session.id, "long")
    reject = extensions_pb2.TurnOptions(policy=extensions_pb2.TURN_POLICY_REJECT)
    await refused(client.run_turn(session.id, "hello", extensions=[reject]), Code.FAILED_PRECONDITION)
    await client.cancel_turn(session.id, long.turn_id)


async def test_unavailable(client: HubClient) -> None:
    error = await refused(client.open_session("offline-node"), Code.UNAVAILABLE)
    assert error.retryable


async def test_resource_exhausted(hub: Hub, client: HubClient) -> None:
    session = await client.open_session(hub.node)
    async with await HubClient.connect(hub.url, hub.token) as watchers:
        running = [watchers.watch(session.id) for _ in range(hub.max_watches)]
        for watcher in running:
            await anext(watcher)  # delivered: the watch runs on the hub
        await refused(anext(watchers.watch(session.id)), Code.RESOURCE_EXHAUSTED)


async def test_invalid_payload(client: HubClient) -> None:
    garbage = any_pb2.Any(type_url="type.googleapis.com/aop.ProtocolMessage", value=b"\xff\xff")
    await refused(client.call(garbage), Code.INVALID_PAYLOAD)


async def test_unsupported_namespace(client: HubClient) -> None:
    await refused(client.call(pack(chat_pb2.Session(id="s"))), Code.UNSUPPORTED_NAMESPACE)


async def test_unsupported_message(client: HubClient) -> None:
    status = protocol_pb2.ProtocolMessage(agent_status=protocol_pb2.AgentStatus())
    await refused(client.call(pack(status)), Code.UNSUPPORTED_MESSAGE)


async def test_wrong_endpoint(hub: Hub) -> None:
    async with await HubClient.connect(hub.url, hub.token, reconnect_min=0.005) as fresh:
        hello = protocol_pb2.ProtocolMessage(agent_hello=protocol_pb2.AgentHello(node_id="not-here"))
        await refused(fresh.call(pack(hello)), Code.WRONG_ENDPOINT)
        # The hub closed that connection; the client reconnects for what comes next.
        assert (await fresh.open_session(hub.node)).id


async def test_an_expired_timeout_fails_with_timeout_error(hub: Hub, client: HubClient) -> None:
    with pytest.raises(TimeoutError):
        await client.open_session(hub.node, timeout=0)
