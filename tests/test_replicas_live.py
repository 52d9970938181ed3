"""Live deltas across replicas (aophub.cluster.live_relay, live_feeds): real ``aophub serve`` processes.

A watcher on a replica other than the session's owner gets the owner's deltas through the owner's
live feed, in order with the persisted events it reads from the table; the feed follows the
session when its node moves to another replica; a subscriber that does not read is dropped once
the owner's queue for it overflows (``--live-relay-queue``), and the watchers lose no persisted event.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections.abc import Iterator

import asyncpg
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from aop import event_pb2
from aophub.cli import build_parser
from aophub.cluster.forwarding import CLUSTER_HEADER
from aophub.cluster.live_feeds import feed_url
from aophub.cluster.live_wire import CLOSE_LAGGED, FrameKind, decode_frames
from aophub.cluster.options import with_replica_options
from aophub.settings import Settings

from .support.postgres import PostgresCluster
from .support.raw_node import RawNode
from .support.replicas import Replicas, external_node, migrated_database, replicas
from .support.wire import AppSocket, run, stored, wait_cursor
from .test_replicas_e2e import holds_stored_sequence, owner_of

pytestmark = pytest.mark.timeout(120)

QUEUE = 64  # --live-relay-queue of these replicas (frames)
WORDS = 60
TEXT = " ".join(f"w{n}" for n in range(WORDS))  # the echo agent answers "echo: " and one delta per word


@pytest.fixture(scope="module")
def cluster(postgres: PostgresCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    url = migrated_database(postgres)
    with replicas(url, tmp_path_factory.mktemp("live"), 3, "--live-relay-queue", str(QUEUE)) as running:
        yield running


def live(app: AppSocket, watch_id: str) -> list[event_pb2.Event]:
    return [message.event for _cursor, message in app.deliveries(watch_id)]


def deltas(app: AppSocket, watch_id: str, turn_id: str) -> list[tuple[int, str]]:
    """(seq, text) of the turn's deltas the watch delivered, in arrival order."""
    return [
        (event.seq, event.message_delta.text)
        for event in live(app, watch_id)
        if event.turn_id == turn_id and event.HasField("message_delta")
    ]


def delta_arrivals(app: AppSocket, watch_id: str, turn_id: str) -> dict[int, float]:
    """When each of the turn's deltas arrived at the watch (by seq; time.monotonic())."""
    return {
        message.event.seq: at
        for (envelope, message), at in zip(app.received, app.arrival_times, strict=True)
        if envelope.reply_to == watch_id
        and message.event.turn_id == turn_id
        and message.event.HasField("message_delta")
    }


def strictly_increasing(app: AppSocket, watch_id: str) -> None:
    seqs = [event.seq for event in live(app, watch_id)]
    assert seqs == sorted(set(seqs)), seqs


async def watching(app: AppSocket, session_id: str) -> str:
    """A watch of the session, once it is subscribed (its replay delivered session_started)."""
    watch = await app.watch(session_id)
    await wait_cursor(app, watch, "1")
    return watch


async def test_a_watcher_on_another_replica_sees_every_delta_of_a_turn_in_order(cluster: Replicas) -> None:
    """Node on r0, watchers on r0 and r1, turn from r1: r1 delivers the same deltas as the owner, in seq order."""
    async with (
        external_node(cluster[0].http, "live-1", delay=0.002),
        await AppSocket.open(cluster[0].app_url) as app0,
        await AppSocket.open(cluster[1].app_url) as app1,
    ):
        session = await app1.open_session("live-1")
        assert await owner_of(cluster.url, session.id) == "r0"
        owner_watch = await watching(app0, session.id)
        watch = await watching(app1, session.id)
        turn = await run(app1, session.id, TEXT)
        await app1.turn_ended(watch, turn.turn_id)
        await app0.turn_ended(owner_watch, turn.turn_id)
        relayed = deltas(app1, watch, turn.turn_id)
        assert len(relayed) == WORDS + 1
        assert relayed == deltas(app0, owner_watch, turn.turn_id)
        strictly_increasing(app1, watch)
        ended_at = next(i for i, e in enumerate(live(app1, watch)) if e.HasField("turn_ended"))
        assert all(not e.HasField("message_delta") for e in live(app1, watch)[ended_at:])
        await holds_stored_sequence(app1, watch, app0, session.id)
        on_owner, relayed_at = (
            delta_arrivals(app0, owner_watch, turn.turn_id),
            delta_arrivals(app1, watch, turn.turn_id),
        )
        lags = sorted((relayed_at[seq] - at) * 1000 for seq, at in on_owner.items())
        print(
            f"\nrelayed deltas arrive after the owner's: p50 {statistics.median(lags):.2f} ms,"
            f" max {lags[-1]:.2f} ms ({len(lags)} deltas)"
        )


async def test_the_feed_follows_the_session_when_its_node_moves(cluster: Replicas) -> None:
    """The node moves r0 -> r2: the watcher on r1 gets the next turns' deltas from r2.

    A turn started on r2 (the new owner) reaches r1 through the owners notification: its deltas from
    the move on, the last one certainly. A turn started through r1 waits for r1's feed: all of them.
    """
    async with (
        await AppSocket.open(cluster[1].app_url) as app1,
        await AppSocket.open(cluster[2].app_url) as app2,
    ):
        async with external_node(cluster[0].http, "live-2", delay=0.002):
            session = await app1.open_session("live-2")
            watch = await watching(app1, session.id)
            first = await run(app1, session.id, TEXT)
            await app1.turn_ended(watch, first.turn_id)
            assert len(deltas(app1, watch, first.turn_id)) == WORDS + 1
        async with external_node(cluster[2].http, "live-2", delay=0.004):
            assert await owner_of(cluster.url, session.id) == "r2"  # taken when the node connected
            owner_watch = await watching(app2, session.id)
            from_owner = await run(app2, session.id, " ".join(f"x{n}" for n in range(200)))
            await app1.turn_ended(watch, from_owner.turn_id)
            await app2.turn_ended(owner_watch, from_owner.turn_id)
            relayed, reference = deltas(app1, watch, from_owner.turn_id), deltas(app2, owner_watch, from_owner.turn_id)
            assert relayed
            assert relayed == reference[len(reference) - len(relayed) :]
            print(f"\nafter the move, a turn started on the new owner: {len(relayed)} of {len(reference)} deltas on r1")
            through_r1 = await run(app1, session.id, TEXT)
            await app1.turn_ended(watch, through_r1.turn_id)
            await app2.turn_ended(owner_watch, through_r1.turn_id)
            assert deltas(app1, watch, through_r1.turn_id) == deltas(app2, owner_watch, through_r1.turn_id)
            assert len(deltas(app1, watch, through_r1.turn_id)) == WORDS + 1
        strictly_increasing(app1, watch)
        await holds_stored_sequence(app1, watch, app2, session.id)


async def cluster_secret(url: str) -> str:
    db = await asyncpg.connect(url)
    try:
        return bytes(await db.fetchval("SELECT secret FROM cluster_secret WHERE id = 1")).hex()
    finally:
        await db.close()


async def test_a_subscriber_that_does_not_read_is_dropped_and_watchers_lose_no_persisted_event(
    cluster: Replicas,
) -> None:
    """A feed nobody reads: the owner queues at most --live-relay-queue frames for it, then closes it 4008.

    A raw subscriber (the test, with the cluster secret) stops reading while the node streams 20 MB
    of deltas; the owner drops it instead of buffering them. A watcher on r1 meanwhile holds
    exactly the stored sequence.
    """
    count, size = 300, 64 * 1024
    async with (
        await RawNode.connect(cluster[0].node_url, "live-3") as node,
        await AppSocket.open(cluster[1].app_url) as app1,
    ):
        session = await app1.open_session("live-3")
        watch = await watching(app1, session.id)
        url = feed_url(cluster[0].http, session.id)
        async with connect(
            url, additional_headers={CLUSTER_HEADER: await cluster_secret(cluster.url)}, max_queue=1, max_size=None
        ) as stalled:
            [subscribed] = decode_frames(await stalled.recv(decode=False))
            assert subscribed.kind is FrameKind.SUBSCRIBED
            turn = await run(app1, session.id, "flood")
            await node.wait_for(lambda item: item.case == "run_turn_request")
            await node.emit(session.id, turn.turn_id, turn_started=event_pb2.TurnStarted())
            for index in range(count):
                piece = event_pb2.MessageDelta(message_id="m1", text=f"{index:04d}" + "x" * size)
                await node.emit(session.id, turn.turn_id, message_delta=piece)
            await node.end_turn(session.id, turn.turn_id)
            await app1.turn_ended(watch, turn.turn_id, timeout=60)
            received = 0
            code = None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(30):
                    try:
                        while True:
                            frames = decode_frames(await stalled.recv(decode=False))
                            received += sum(frame.kind is FrameKind.DELTA for frame in frames)
                    except ConnectionClosed as closed:
                        code = closed.rcvd.code if closed.rcvd is not None else None
        assert code == CLOSE_LAGGED
        assert received < count
        print(f"\nstalled subscriber: {received} of {count} deltas of {size // 1024} KiB before it was dropped")
        await holds_stored_sequence(app1, watch, app1, session.id)
        events = await stored(app1, session.id)
        assert [e.event.turn_ended.stop_reason for e in events if e.event.HasField("turn_ended")] == ["completed"]


def test_the_relay_bounds_are_options_of_serve(capsys: pytest.CaptureFixture[str]) -> None:
    """--live-relay-queue and --live-relay-sessions reach the settings (1024 and 1000 by default); 0, negative
    or non-numbers are refused with what is expected."""
    parser = build_parser()
    default = with_replica_options(Settings(access_key="k"), parser.parse_args(["serve"]))
    assert (default.live_relay_queue, default.live_relay_sessions) == (1024, 1000)
    args = parser.parse_args(["serve", "--live-relay-queue", "16", "--live-relay-sessions", "2"])
    chosen = with_replica_options(Settings(access_key="k"), args)
    assert (chosen.live_relay_queue, chosen.live_relay_sessions) == (16, 2)
    for flag in ("--live-relay-queue", "--live-relay-sessions"):
        for refused in ("0", "-3", "many", "1000001"):
            with pytest.raises(SystemExit):
                parser.parse_args(["serve", flag, refused])
            assert f"expected a whole number from 1 to 1000000, got '{refused}'" in capsys.readouterr().err
