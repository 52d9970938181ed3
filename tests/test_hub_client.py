"""The application SDK (``aophub.client``) against a real hub: frame size limits, timeouts, watches.

The hub takes frames up to ``--max-frame-bytes`` (16 MiB by default), so events that large
exist; the SDK reads them with the same default limit. A frame over the SDK's own limit
fails what was in flight once, with a clear error, instead of reconnecting and resuming into
the same frame for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from websockets.asyncio.server import ServerConnection, serve

from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.client import HubClient, HubClientError, Watcher, pack
from aophub.settings import DEFAULT_MAX_FRAME_BYTES

from .support.server import TOKEN, running_hub

TIMEOUT = 20.0
LARGE = 2_000_000  # over the websockets default limit of 1 MiB, far under the hub's 16 MiB


def user_text(event: event_pb2.Event) -> str:
    if event.WhichOneof("payload") != "message" or event.message.role != "user":
        return ""
    return "".join(part.text.text for part in event.message.content)


async def until_turn_ended(watcher: Watcher, turn_id: str) -> list[event_pb2.Event]:
    events = []
    async for item in watcher:
        events.append(item.event)
        if item.event.turn_id == turn_id and item.event.WhichOneof("payload") == "turn_ended":
            return events
    raise AssertionError("the watch ended before the turn")


async def test_default_limit_is_the_hubs() -> None:
    """A client made without options reads frames as large as the hub accepts by default."""
    client = HubClient("ws://127.0.0.1:1/api/aop/application/ws", TOKEN)
    assert client.max_frame_bytes == DEFAULT_MAX_FRAME_BYTES


async def test_large_user_message_comes_back_through_watch_and_list_events(tmp_path: Path) -> None:
    """A 2 MB user message: the watch delivers it and ``list_events`` returns it (before: 1009, reconnect loop)."""
    text = "x" * LARGE
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN) as client:
        session = await client.open_session("local")
        async with asyncio.timeout(TIMEOUT):
            async with await client.watch(session.id) as watcher:
                receipt = await client.run_turn(session.id, text)
                watched = await until_turn_ended(watcher, receipt.turn_id)
            page = await client.list_events(session.id)
    assert text in [user_text(event) for event in watched]
    assert text in [user_text(delivery.event) for delivery in page.events]
    assert watched[-1].turn_ended.stop_reason == "completed"


async def drain(watcher: Watcher, into: list[event_pb2.Event]) -> None:
    async for item in watcher:
        into.append(item.event)  # noqa: PERF401 (a comprehension would lose what came before the error)


class CountingClient(HubClient):
    """Counts its dials, to prove a frame it cannot take does not make it reconnect in a loop."""

    dials = 0

    async def _dial(self) -> None:
        self.dials += 1
        await super()._dial()


async def test_event_over_the_client_limit_fails_once_and_the_client_goes_on(tmp_path: Path) -> None:
    """64 KiB limit, 100 KB event: the watch and then ``list_events`` fail once each; the client stays usable."""
    limit = 64 * 1024
    async with running_hub(tmp_path) as hub:
        async with await HubClient.connect(hub.http, TOKEN) as writer:
            session = await writer.open_session("local")
            async with await writer.watch(session.id) as watcher, asyncio.timeout(TIMEOUT):
                receipt = await writer.run_turn(session.id, "y" * 100_000)
                await until_turn_ended(watcher, receipt.turn_id)
        async with await CountingClient.connect(hub.http, TOKEN, max_frame_bytes=limit) as client:
            async with asyncio.timeout(TIMEOUT):
                read: list[event_pb2.Event] = []  # session_started, then the 100 KB user message
                with pytest.raises(HubClientError) as watch_failure:
                    await drain(await client.watch(session.id), read)
                assert read, "the events before the large one arrive"
                assert not any(map(user_text, read))
                assert watch_failure.value.code == "RESOURCE_EXHAUSTED"
                assert "max_frame_bytes" in watch_failure.value.message
                assert str(limit) in watch_failure.value.message

                with pytest.raises(HubClientError) as list_failure:
                    await client.list_events(session.id)
                assert list_failure.value.code == "RESOURCE_EXHAUSTED"

                # Still usable: small requests go through on the reconnected socket.
                other = await client.open_session("local")
                small = await client.list_events(other.id)
            assert [delivery.event.WhichOneof("payload") for delivery in small.events] == ["session_started"]
            assert client.dials == 3  # the first dial, one after each failure: no loop


async def test_request_over_the_client_limit_is_refused_before_sending(tmp_path: Path) -> None:
    """A request frame larger than ``max_frame_bytes`` raises at once and the connection stays."""
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN, max_frame_bytes=4096) as client:
        session = await client.open_session("local")
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(HubClientError) as failure:
                await client.run_turn(session.id, "z" * 10_000)
            assert failure.value.code == "INVALID_ARGUMENT"
            assert "4096" in failure.value.message
            with pytest.raises(HubClientError, match="max_frame_bytes"):
                await client.watch("s" * 5000)
            assert "watches=0" in repr(client)  # nothing left to resume after a reconnect
            assert (await client.list_events(session.id)).events  # same connection, still fine


async def test_request_over_the_hubs_limit_fails_once(tmp_path: Path) -> None:
    """The hub closes with 1009 on a request larger than its limit: the request fails once, no resend loop."""
    async with (
        running_hub(tmp_path, max_frame_bytes=32 * 1024) as hub,
        await CountingClient.connect(hub.http, TOKEN) as client,
    ):
        session = await client.open_session("local")
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(HubClientError) as failure:
                await client.run_turn(session.id, "w" * 100_000)
            assert failure.value.code == "RESOURCE_EXHAUSTED"
            assert (await client.list_events(session.id)).events
            assert client.dials == 2


# -- Defects of the first SDK (issue 13) ---------------------------------------------------------


async def test_the_docstring_example_iterates_a_watch_directly(tmp_path: Path) -> None:
    """``async for item in hub.watch(...)`` yields the events (before: TypeError, a coroutine is not iterable)."""
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN) as client:
        session = await client.open_session("local")
        kinds = []
        async with asyncio.timeout(TIMEOUT):
            async for item in client.watch(session.id):
                kinds.append(item.event.WhichOneof("payload"))
                break
    assert kinds == ["session_started"]


@contextlib.asynccontextmanager
async def silent_hub() -> AsyncIterator[str]:
    """A WebSocket server that accepts every connection and never answers: the URL of its endpoint."""

    async def swallow(connection: ServerConnection) -> None:
        async for _ in connection:
            pass

    async with serve(swallow, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/api/aop/application/ws"


async def test_a_request_without_an_answer_times_out() -> None:
    """No answer: ``TimeoutError`` after the request's timeout, naming the id to retry with (before: waited forever)."""
    async with silent_hub() as url, await HubClient.connect(url, TOKEN, request_timeout=0.2) as client:
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(TimeoutError, match="envelope_id='retry-me'"):
                await client.open_session("local", envelope_id="retry-me")
            with pytest.raises(TimeoutError):
                await client.list_events("s", timeout=0.05)
            assert "pending=0" in repr(client)  # a request given up is not resent after a reconnect


async def test_watching_from_now_costs_one_call_however_long_the_history(tmp_path: Path) -> None:
    """``last_cursor`` is the newest stored cursor from one GetSession, even past one ListEvents page.

    Before, programs listed up to 10,000 events (``list_events(limit=10_000)``) to find it, and with
    pages capped by ``--max-page-bytes`` they got the end of the first page, not of the history.
    """
    async with running_hub(tmp_path, max_page_bytes=4096) as hub, await HubClient.connect(hub.http, TOKEN) as client:
        session = await client.open_session("local")
        async with asyncio.timeout(TIMEOUT):
            async with client.watch(session.id) as watcher:
                for index in range(3):
                    receipt = await client.run_turn(session.id, f"turn {index} " + "p" * 2000)
                    await until_turn_ended(watcher, receipt.turn_id)
            stored = [item.cursor async for item in client.events(session.id)]
            first_page = await client.list_events(session.id, limit=10_000)
            assert first_page.next_cursor != stored[-1]  # what the old way found
            assert await client.last_cursor(session.id) == stored[-1]
            async with client.watch(session.id, await client.last_cursor(session.id)) as watcher:
                receipt = await client.run_turn(session.id, "now")
                seen = await until_turn_ended(watcher, receipt.turn_id)
    assert {event.turn_id for event in seen} == {receipt.turn_id}  # nothing from before "now"


# -- Against a scripted hub: what a real hub does too rarely to test on demand ---------------------


def core_message(**fields: object) -> protocol_pb2.ProtocolMessage:
    return protocol_pb2.ProtocolMessage(**fields)  # type: ignore[arg-type]


def reply(envelope_id: str, message: protocol_pb2.ProtocolMessage, cursor: str = "") -> bytes:
    return envelope_pb2.Envelope(
        reply_to=envelope_id, delivery_cursor=cursor, payload=pack(message)
    ).SerializeToString()


@contextlib.asynccontextmanager
async def scripted_hub(script: Callable[[int, ServerConnection], Awaitable[None]]) -> AsyncIterator[str]:
    """A WebSocket server running ``script(n, connection)`` for its n-th connection (from 1)."""
    connections = 0

    async def handle(connection: ServerConnection) -> None:
        nonlocal connections
        connections += 1
        await script(connections, connection)

    async with serve(handle, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/api/aop/application/ws"


async def receive(connection: ServerConnection) -> tuple[str, protocol_pb2.ProtocolMessage]:
    envelope = envelope_pb2.Envelope.FromString(await connection.recv(decode=False))
    message = protocol_pb2.ProtocolMessage()
    assert envelope.payload.Unpack(message)
    return envelope.id, message


async def test_stopping_a_watch_ends_a_reader_waiting_on_it() -> None:
    """``stop()`` from one task ends the ``async for`` of another (before: it waited for an event for ever)."""
    watching = asyncio.Event()

    async def script(number: int, connection: ServerConnection) -> None:
        await receive(connection)
        watching.set()  # the reader's iteration has started: it sent the watch
        await connection.wait_closed()

    async with scripted_hub(script) as url, await HubClient.connect(url, TOKEN) as client:
        watcher = client.watch("s")
        reader = asyncio.create_task(drain(watcher, []))
        async with asyncio.timeout(TIMEOUT):
            await watching.wait()
            await watcher.stop()
            await reader
        assert "watches=0" in repr(client)


async def test_a_request_cut_off_is_resent_with_the_same_envelope_id() -> None:
    """The connection drops before the answer: after the reconnect the same envelope id is sent again."""
    seen: list[str] = []

    async def script(number: int, connection: ServerConnection) -> None:
        envelope_id, _ = await receive(connection)
        seen.append(envelope_id)
        if number == 1:
            connection.transport.abort()  # gone before answering, as a network failure
            return
        session = chat_pb2.Session(id="s1", state="open", node_id="local")
        await connection.send(
            reply(envelope_id, core_message(open_session_response=chat_pb2.OpenSessionResponse(accepted=session)))
        )
        await connection.wait_closed()

    async with scripted_hub(script) as url, await HubClient.connect(url, TOKEN, reconnect_min=0.01) as client:
        async with asyncio.timeout(TIMEOUT):
            session = await client.open_session("local")
    assert session.id == "s1"
    assert len(seen) == 2
    assert seen[0] == seen[1]


async def test_a_watch_refused_for_a_while_watches_again_from_its_cursor() -> None:
    """A retryable protocol error on a watch: the client watches again after its cursor, under a new id."""
    requests: list[tuple[str, str]] = []

    async def script(number: int, connection: ServerConnection) -> None:
        watch_id, message = await receive(connection)
        requests.append((watch_id, message.watch_events_request.after_cursor))
        first = event_pb2.Event(session_id="s", id="e1")
        await connection.send(reply(watch_id, core_message(event=first), cursor="1"))
        busy = event_pb2.ProtocolError(code="UNAVAILABLE", message="store busy", retryable=True)
        await connection.send(reply(watch_id, core_message(protocol_error=busy)))
        again, message = await receive(connection)
        requests.append((again, message.watch_events_request.after_cursor))
        await connection.send(reply(watch_id, core_message(event=event_pb2.Event(id="stale")), cursor="9"))
        await connection.send(reply(again, core_message(event=first), cursor="1"))  # an overlap: dropped
        await connection.send(reply(again, core_message(event=event_pb2.Event(session_id="s", id="e2")), cursor="2"))
        await connection.wait_closed()

    async with (
        scripted_hub(script) as url,
        await HubClient.connect(url, TOKEN, reconnect_min=0.01) as client,
        asyncio.timeout(TIMEOUT),
        client.watch("s") as watcher,
    ):
        got = [await anext(watcher), await anext(watcher)]
    assert [(item.cursor, item.event.id) for item in got] == [("1", "e1"), ("2", "e2")]
    assert [cursor for _, cursor in requests] == ["", "1"]
    assert requests[0][0] != requests[1][0]


# -- The watch buffer: a slow reader holds at most buffer_bytes, and gets every event -----------


async def test_a_slow_watch_reader_holds_at_most_the_bound_and_gets_every_event_in_order(tmp_path: Path) -> None:
    """Five 3 KB turns read only once they ended: the watch pauses at 8 KiB and resumes from its
    cursor, so what waits for the reader stays under the bound and the persisted events come
    exactly once, in the stored order (before: all of them queued, unbounded)."""
    bound = 8 * 1024
    async with running_hub(tmp_path) as hub, await HubClient.connect(hub.http, TOKEN) as client:
        session = await client.open_session("local")
        async with asyncio.timeout(TIMEOUT), client.watch(session.id, buffer_bytes=bound) as slow:
            async with client.watch(session.id) as fast:
                for index in range(5):
                    receipt = await client.run_turn(session.id, f"turn {index} " + "p" * 3000)
                    await until_turn_ended(fast, receipt.turn_id)
            stored = [item.cursor async for item in client.events(session.id)]
            held: list[int] = []
            subscriptions = {slow.id}
            persisted: list[str] = []
            while len(persisted) < len(stored):
                held.append(slow.buffered)
                item = await anext(slow)
                subscriptions.add(slow.id)
                if item.cursor:
                    persisted.append(item.cursor)
    assert persisted == stored
    assert max(held) <= bound, held
    assert len(subscriptions) > 1  # it paused and watched again from its cursor


async def test_a_paused_watch_cancels_its_subscription_and_watches_again_after_what_it_holds() -> None:
    """Past the bound the client cancels the watch, drops what still comes for it, and once the
    reader has read what it holds watches again after the last event it queued."""
    requests: list[tuple[str, protocol_pb2.ProtocolMessage]] = []
    event = event_pb2.Event(session_id="s")
    event.message.content.add().text.text = "x" * 100
    size = len(pack(core_message(event=event)).value)

    async def script(number: int, connection: ServerConnection) -> None:
        watch_id, message = await receive(connection)
        requests.append((watch_id, message))
        for cursor in ("1", "2", "3"):  # the third would pass the bound: the watch pauses
            await connection.send(reply(watch_id, core_message(event=event), cursor=cursor))
        requests.append(await receive(connection))  # the cancel
        await connection.send(reply(watch_id, core_message(event=event), cursor="4"))  # in flight: dropped
        requests.append(await receive(connection))  # the new watch, once the reader has read 1 and 2
        again = requests[-1][0]
        for cursor in ("3", "4"):
            await connection.send(reply(again, core_message(event=event), cursor=cursor))
        await connection.wait_closed()

    async with (
        scripted_hub(script) as url,
        await HubClient.connect(url, TOKEN) as client,
        asyncio.timeout(TIMEOUT),
        client.watch("s", buffer_bytes=2 * size) as watcher,
    ):
        got = [(await anext(watcher)).cursor for _ in range(4)]
    assert got == ["1", "2", "3", "4"]
    (first, _), (_, cancel), (_, rewatch) = requests
    assert cancel.cancel_operation.target_id == first
    assert rewatch.watch_events_request.after_cursor == "2"


def test_the_watch_bound_must_be_positive() -> None:
    """buffer_bytes of 0 or less is a ValueError."""
    client = HubClient("ws://127.0.0.1:1/api/aop/application/ws", TOKEN)
    with pytest.raises(ValueError, match="buffer_bytes"):
        client.watch("s", buffer_bytes=0)
