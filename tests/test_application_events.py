"""End-to-end: reading a session's events, ListEvents and WatchEvents (AOP section 4), real hub, real sockets.

Pages and watches over sessions the echo node or a scripted node filled: oldest-first paging with
exclusive cursors, replay-then-live watches with dense cursors on persisted events only, watch
replacement and cancellation, and watchers that come and go while turns run. After each test the
lifecycle invariants of AOP section 6 are checked over everything the hub persisted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aop import chat_pb2, event_pb2, protocol_pb2

from .support.server import RunningHub
from .support.spread import SERVES, scripted_node, serving
from .support.wire import AppSocket, first_event, kinds, list_events, protocol_error, run, stored, wait_cursor


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


# -- ListEvents -------------------------------------------------------------------------------


async def test_list_events_pages_oldest_first(app: AppSocket) -> None:
    """Pages run oldest first; after_cursor is exclusive; next_cursor is the last cursor, "" when none."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    for text in ["one", "two"]:
        await app.turn_ended(watch, (await run(app, session.id, text)).turn_id)
    everything = (await list_events(app, session.id)).events
    count = len(everything)
    assert [d.cursor for d in everything] == [str(cursor) for cursor in range(1, count + 1)]
    assert everything[0].event.HasField("session_started")
    assert count > 7

    paged: list[chat_pb2.EventDelivery] = []
    cursor = ""
    while True:
        page = await list_events(app, session.id, cursor, limit=3)
        assert page.next_cursor == (page.events[-1].cursor if page.events else "")
        if not page.events:
            break
        assert len(page.events) == min(3, count - len(paged))
        paged += page.events
        cursor = page.next_cursor
    assert paged == list(everything)
    assert [d.cursor for d in (await list_events(app, session.id, "2", limit=2)).events] == ["3", "4"]
    for past_the_end in [str(count), str(count + 100)]:
        assert await list_events(app, session.id, past_the_end) == chat_pb2.ListEventsResponse()


async def test_list_events_default_and_maximum_page(hub: RunningHub) -> None:
    """A page holds 1000 events by default and at most 10000; a watch replays past one store page."""
    async with await AppSocket.open(hub.app_url, max_size=None) as app:
        session = await app.open_session()
        live = await hub.runtime.hub.session(session.id)
        assert live is not None
        await live.log.publish_many([event_pb2.Event(status=event_pb2.Status(state="s")) for _ in range(10_500)])
        total = 10_501
        page = await list_events(app, session.id)
        assert (len(page.events), page.events[-1].cursor, page.next_cursor) == (1000, "1000", "1000")
        page = await list_events(app, session.id, limit=1_000_000)
        assert (len(page.events), page.next_cursor) == (10_000, "10000")
        page = await list_events(app, session.id, "10000", limit=1_000_000)
        assert (len(page.events), page.next_cursor) == (total - 10_000, str(total))
        # A watch replays more than one store page (1000), in order.
        watch = await app.watch(session.id, after_cursor="8000")
        await wait_cursor(app, watch, str(total))
        assert [cursor for cursor, _ in app.deliveries(watch)] == [str(n) for n in range(8001, total + 1)]


# Not decimal ASCII digits, or beyond the store's 64-bit cursors.
BAD_CURSORS = ["abc", "-1", "1.5", " 1", "0x10", "²", "\u0661", "9" * 19, "1" * 20]


@pytest.mark.parametrize("cursor", BAD_CURSORS)
async def test_list_events_with_a_bad_cursor_is_a_protocol_error(app: AppSocket, cursor: str) -> None:
    """A cursor that is not a decimal number gives ProtocolError INVALID_ARGUMENT."""
    session = await app.open_session()
    reply = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session.id, after_cursor=cursor))
    assert protocol_error(reply).code == "INVALID_ARGUMENT"


async def test_list_events_of_an_unknown_session_is_a_protocol_error(app: AppSocket) -> None:
    """An unknown session gives ProtocolError NOT_FOUND; a missing session_id INVALID_ARGUMENT."""
    reply = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="no-such-session"))
    assert protocol_error(reply).code == "NOT_FOUND"
    reply = await app.call(list_events_request=chat_pb2.ListEventsRequest())
    assert protocol_error(reply).code == "INVALID_ARGUMENT"


# -- WatchEvents ------------------------------------------------------------------------------


async def complete_turn(app: AppSocket, session_id: str, text: str = "hello") -> str:
    """Run a turn to its end, observed through a watch of its own that is then cancelled."""
    watch = await app.watch(session_id)
    receipt = await run(app, session_id, text)
    await app.turn_ended(watch, receipt.turn_id)
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id=watch)))
    return receipt.turn_id


async def test_watch_replays_then_follows_live(app: AppSocket) -> None:
    """A watch from "" replays stored events (no deltas), then live ones; only persisted ones carry dense cursors."""
    session = await app.open_session()
    await app.watch(session.id, watch_id="first")
    replayed_turn = (await run(app, session.id, "first")).turn_id
    await app.turn_ended("first", replayed_turn)
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id="first")))
    before = await stored(app, session.id)
    watch = await app.watch(session.id, watch_id="w")
    await wait_cursor(app, watch, before[-1].cursor)
    live_turn = (await run(app, session.id, "second turn")).turn_id
    await app.turn_ended(watch, live_turn)

    deliveries = app.deliveries(watch)
    after = await stored(app, session.id)
    persisted = [(cursor, message.event) for cursor, message in deliveries if cursor]
    assert [cursor for cursor, _ in persisted] == [str(n) for n in range(1, len(after) + 1)]
    assert [event for _, event in persisted] == [d.event for d in after]
    events = [message.event for _, message in deliveries]
    assert all(e.turn_id != replayed_turn for e in events if e.HasField("message_delta"))
    deltas = [(cursor, e) for cursor, message in deliveries if (e := message.event).HasField("message_delta")]
    assert deltas
    assert all(cursor == "" and e.turn_id == live_turn for cursor, e in deltas)
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs))
    assert {envelope.reply_to for envelope, message in app.received if message.HasField("event")} == {"first", "w"}


async def test_watch_after_cursor_is_exclusive(app: AppSocket) -> None:
    """A watch after cursor N starts with N+1; after the last cursor it delivers only what comes next."""
    session = await app.open_session()
    await complete_turn(app, session.id)
    before = await stored(app, session.id)
    watch = await app.watch(session.id, after_cursor="3")
    await wait_cursor(app, watch, before[-1].cursor)
    assert [cursor for cursor, _ in app.deliveries(watch)] == [d.cursor for d in before[3:]]

    tail = await app.watch(session.id, after_cursor=before[-1].cursor)
    turn_id = (await run(app, session.id)).turn_id
    await app.turn_ended(tail, turn_id)
    cursors = [cursor for cursor, _ in app.deliveries(tail) if cursor]
    assert cursors[0] == str(len(before) + 1)
    assert {message.event.turn_id for _, message in app.deliveries(tail)} == {turn_id}


async def test_reusing_a_watch_id_replaces_the_watch(app: AppSocket) -> None:
    """A second watch under the same id replaces the first: later events arrive once, not twice."""
    session = await app.open_session()
    await complete_turn(app, session.id)
    last = (await stored(app, session.id))[-1].cursor
    await app.watch(session.id, watch_id="w")
    await wait_cursor(app, "w", last)
    await app.watch(session.id, watch_id="w")
    await wait_cursor(app, "w", last)  # the second replay
    turn_id = (await run(app, session.id)).turn_id
    await app.turn_ended("w", turn_id)
    await list_events(app, session.id)  # a round trip, so a duplicate would have had time to arrive
    live = [cursor for cursor, message in app.deliveries("w") if message.event.turn_id == turn_id and cursor]
    assert len(live) == len(set(live)) == len(kinds(await stored(app, session.id), turn_id))


async def test_cancel_operation_ends_the_watch(app: AppSocket) -> None:
    """After cancel_operation{target_id} the watch delivers nothing more; other watches go on."""
    session = await app.open_session()
    await app.watch(session.id, watch_id="ended")
    await wait_cursor(app, "ended", "1")
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id="ended")))
    other = await app.watch(session.id, watch_id="other")
    await app.turn_ended(other, (await run(app, session.id)).turn_id)
    await list_events(app, session.id)
    assert [cursor for cursor, _ in app.deliveries("ended")] == ["1"]
    # Cancelling an unknown id is a no-op.
    await app.send(protocol_pb2.ProtocolMessage(cancel_operation=protocol_pb2.CancelOperation(target_id="nothing")))
    await list_events(app, session.id)


async def test_disconnecting_a_watcher_does_not_cancel_the_turn(hub: RunningHub) -> None:
    """The connection that started and watched a turn goes away; the turn runs on and completes."""
    async with scripted_node(hub) as node:
        async with await AppSocket.open(hub.app_url) as first:
            session = await first.open_session(node.node_id)
            watch = await first.watch(session.id)
            turn_id = (await run(first, session.id)).turn_id
            await first_event(first, watch, turn_id, "turn_started")
        async with await AppSocket.open(hub.app_url) as second:
            watch = await second.watch(session.id)
            await first_event(second, watch, turn_id, "turn_started")
            await node.emit(session.id, turn_id, status=event_pb2.Status(state="still working"))
            await node.end_turn(session.id, turn_id)
            ended = (await second.turn_ended(watch, turn_id)).event
        assert (ended.turn_ended.stop_reason, ended.emitter) == ("completed", node.node_id)
        assert not node.sent("cancel_turn_request")


@pytest.mark.parametrize(
    ("session_id", "code"), [("no-such-session", "NOT_FOUND"), ("", "INVALID_ARGUMENT")], ids=["unknown", "missing"]
)
async def test_watch_of_no_session_is_a_protocol_error(app: AppSocket, session_id: str, code: str) -> None:
    """A watch of an unknown session (or none) answers a ProtocolError with reply_to = the watch id."""
    watch = await app.watch(session_id)
    assert protocol_error(await app.reply(watch)).code == code


@pytest.mark.parametrize("cursor", BAD_CURSORS)
async def test_watch_with_a_bad_cursor_is_a_protocol_error(app: AppSocket, cursor: str) -> None:
    """A watch after a cursor that is not a decimal number answers ProtocolError INVALID_ARGUMENT."""
    session = await app.open_session()
    watch = await app.watch(session.id, cursor)
    assert protocol_error(await app.reply(watch)).code == "INVALID_ARGUMENT"
