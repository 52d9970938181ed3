"""End-to-end: SessionService over the real server, with the generated clients.

Sessions are opened and turns run on the application channel (``AppSocket``); a node on the
real node socket (``RawNode``) holds turns open for as long as a test needs them running.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.code import Code
from google.protobuf import any_pb2

from aop import chat_pb2, content_pb2, event_pb2
from aophub.protocol.codec import pack
from aophub.rpc.sessions import HUB_COMMANDS
from aophub.v1 import agent_pb2, interaction_pb2, session_pb2

from .support.interactions import interaction_event
from .support.lifecycle import checked_hub
from .support.raw_node import RawNode
from .support.rpc import Rpc, assert_rejected, connect_error, finish_turn, rpc_clients
from .support.server import RunningHub, running_hub
from .support.wire import AppSocket

OPEN = session_pb2.SESSION_STATE_OPEN
CLOSED = session_pb2.SESSION_STATE_CLOSED


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with checked_hub(tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


@pytest.fixture
async def node(hub: RunningHub) -> AsyncIterator[RawNode]:
    async with await RawNode.connect(hub.node_url, "remote", capabilities=("chat", "aophub.interactions")) as raw:
        yield raw


def request_id() -> str:
    return uuid.uuid4().hex


async def listed(rpc: Rpc, **fields: object) -> list[str]:
    """Ids of one ListSessions page."""
    response = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(**fields))  # type: ignore[arg-type]
    return [session.id for session in response.sessions]


async def get(rpc: Rpc, session_id: str) -> session_pb2.SessionInfo:
    return (await rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id=session_id))).session


async def all_events(rpc: Rpc, session_id: str) -> list[chat_pb2.EventDelivery]:
    response = await rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session_id))
    return list(response.events)


def kinds(events: list[chat_pb2.EventDelivery]) -> list[str]:
    return [delivery.event.WhichOneof("payload") or "" for delivery in events]


async def close(app: AppSocket, session_id: str) -> None:
    reply = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session_id))
    assert reply.close_session_response.WhichOneof("outcome") == "accepted", reply


async def ask(node: RawNode, session_id: str, turn_id: str, interaction_id: str) -> None:
    """The node opens an approval interaction in its running turn."""
    call = content_pb2.ToolCall(id=f"call-{interaction_id}", name="exec")
    interaction = interaction_pb2.Interaction(
        id=interaction_id,
        session_id=session_id,
        turn_id=turn_id,
        kind=interaction_pb2.INTERACTION_KIND_APPROVAL,
        call=call,
    )
    await node.send(interaction_pb2.InteractionProtocolMessage(requested=interaction))


# -- ListSessions --------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_sessions_are_listed_newest_updated_first(hub: RunningHub, app: AppSocket, codec: str) -> None:
    """A session where something happened moves to the top of the list."""
    first, second, third = [await app.open_session() for _ in range(3)]
    async with rpc_clients(hub.http, codec=codec) as rpc:
        assert await listed(rpc) == [third.id, second.id, first.id]
        await finish_turn(app, first.id)
        assert await listed(rpc) == [first.id, third.id, second.id]
        response = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest())
    infos = list(response.sessions)
    assert [info.updated_at.ToNanoseconds() for info in infos] == sorted(
        (info.updated_at.ToNanoseconds() for info in infos), reverse=True
    )
    assert infos[0].title == "hello"  # from the first input
    assert all(info.state == OPEN and info.node_id == "local" for info in infos)
    assert response.next_page_token == ""


async def test_pages_follow_next_page_token(app: AppSocket, rpc: Rpc) -> None:
    """page_size pages the list; the tokens walk it once, in order, and the last page has none."""
    opened = [(await app.open_session()).id for _ in range(7)]
    pages: list[list[str]] = []
    token = ""
    while True:
        response = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(page_size=3, page_token=token))
        pages.append([session.id for session in response.sessions])
        token = response.next_page_token
        if not token:
            break
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [session_id for page in pages for session_id in page] == opened[::-1]


async def test_title_contains_finds_sessions_by_part_of_their_title(app: AppSocket, rpc: Rpc) -> None:
    """title_contains matches a part of the title in either case; % and _ are plain characters."""
    titles = ["Deploy the API", "api keys rotation", "50% off", "50 off", "a_b", "axb", "weekly notes"]
    ids = {title: (await app.open_session(title=title)).id for title in titles}

    async def found(text: str) -> set[str]:
        return set(await listed(rpc, title_contains=text))

    assert await found("API") == {ids["Deploy the API"], ids["api keys rotation"]}
    assert await found("dEpLoY") == {ids["Deploy the API"]}
    assert await found("50%") == {ids["50% off"]}
    assert await found("%") == {ids["50% off"]}
    assert await found("a_b") == {ids["a_b"]}
    assert await found("_") == {ids["a_b"]}
    assert await found("nothing like it") == set()
    assert await found("") == set(ids.values())


async def test_a_title_search_pages_with_tokens_bound_to_its_query(app: AppSocket, rpc: Rpc) -> None:
    """Paging a search walks exactly its matches; its token is refused with other filters, clearly."""
    opened = [(await app.open_session(title=f"{'report' if i % 2 else 'chat'} {i}")).id for i in range(9)]
    matches = [session_id for i, session_id in enumerate(opened) if i % 2][::-1]
    walked: list[str] = []
    token = ""
    tokens: list[str] = []
    while True:
        request = session_pb2.ListSessionsRequest(page_size=3, page_token=token, title_contains="REPORT")
        response = await rpc.sessions.list_sessions(request)
        walked += [session.id for session in response.sessions]
        token = response.next_page_token
        if not token:
            break
        tokens.append(token)
    assert walked == matches
    # The same token asked again gives the same page (stable for its query).
    assert await listed(rpc, page_size=3, page_token=tokens[0], title_contains="REPORT") == matches[3:6]
    for other in (
        {"title_contains": "report"},  # another text, even in another case
        {},
        {"title_contains": "REPORT", "include_closed": True},
        {"title_contains": "REPORT", "node_id": "local"},
    ):
        error = await connect_error(
            rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(page_token=tokens[0], **other)),
            Code.INVALID_ARGUMENT,
        )
        assert "page_token belongs to a listing with other filters" in error.message
    # And an unfiltered listing's token does not continue a search.
    plain = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(page_size=2))
    refused = session_pb2.ListSessionsRequest(page_token=plain.next_page_token, title_contains="report")
    await connect_error(rpc.sessions.list_sessions(refused), Code.INVALID_ARGUMENT)


async def test_a_title_search_longer_than_a_title_is_invalid_argument(app: AppSocket, rpc: Rpc) -> None:
    """Past 500 characters (the longest title) or with a NUL, a search is refused, saying why."""
    longest = await app.open_session(title="t" * 500)
    assert await listed(rpc, title_contains="t" * 500) == [longest.id]
    error = await connect_error(
        rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(title_contains="t" * 501)), Code.INVALID_ARGUMENT
    )
    assert error.message == "title_contains is 501 characters long; titles, and so searches, are at most 500"
    error = await connect_error(
        rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(title_contains="a\x00b")), Code.INVALID_ARGUMENT
    )
    assert "NUL" in error.message


async def test_page_size_defaults_to_100_and_stops_at_500(tmp_path: Path) -> None:
    """page_size 0 means 100 and anything above 500 means 500; both pages continue with a token."""
    async with running_hub(tmp_path) as hub, rpc_clients(hub.http) as rpc:
        requests = [chat_pb2.OpenSessionRequest(node_id="local") for _ in range(501)]
        opened = await asyncio.gather(*(hub.runtime.hub.open_session(request_id(), r) for r in requests))
        assert all(response.WhichOneof("outcome") == "accepted" for response in opened)
        default = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest())
        assert len(default.sessions) == 100
        assert default.next_page_token
        biggest = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(page_size=10_000))
        assert len(biggest.sessions) == 500
        rest = await rpc.sessions.list_sessions(session_pb2.ListSessionsRequest(page_token=biggest.next_page_token))
        assert len(rest.sessions) == 1
        assert rest.next_page_token == ""
        every = {session.id for session in [*biggest.sessions, *rest.sessions]}
        assert every == {response.accepted.id for response in opened}


async def test_closed_archived_and_node_filters(app: AppSocket, rpc: Rpc, node: RawNode) -> None:
    """Closed and archived sessions are listed only when asked for; node_id keeps one node's sessions."""
    kept, shut, hidden = [(await app.open_session()).id for _ in range(3)]
    remote = (await app.open_session("remote")).id
    await close(app, shut)
    update = session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=hidden, archived=True)
    assert (await rpc.sessions.update_session(update)).WhichOneof("outcome") == "accepted"
    assert await listed(rpc) == [remote, kept]
    assert set(await listed(rpc, include_closed=True)) == {kept, shut, remote}
    assert set(await listed(rpc, include_archived=True)) == {kept, hidden, remote}
    assert set(await listed(rpc, include_closed=True, include_archived=True)) == {kept, shut, hidden, remote}
    assert await listed(rpc, node_id="remote") == [remote]
    assert set(await listed(rpc, node_id="local", include_closed=True)) == {kept, shut}
    assert await listed(rpc, node_id="nobody") == []


# -- GetSession ----------------------------------------------------------------------


async def test_get_session_shows_what_is_live(app: AppSocket, rpc: Rpc, node: RawNode) -> None:
    """The running turn, the queue behind it, pending interactions, event count and last cursor."""
    session = await app.open_session("remote", title="live")
    idle = await get(rpc, session.id)
    assert (idle.id, idle.node_id, idle.title, idle.state) == (session.id, "remote", "live", OPEN)
    assert (idle.running_turn_id, idle.queued_turns, idle.pending_interactions) == ("", 0, 0)
    assert (idle.event_count, idle.last_cursor) == (1, "1")  # session_started
    first = (await app.run_turn(session.id, "first")).accepted.turn_id
    second = (await app.run_turn(session.id, "second")).accepted.turn_id
    await node.request("run_turn_request")
    watch = await app.watch(session.id)
    await ask(node, session.id, first, "int-live")
    await interaction_event(app, watch, interaction_pb2.INTERACTION_STATE_PENDING)
    busy = await get(rpc, session.id)
    events = await all_events(rpc, session.id)
    assert (busy.running_turn_id, busy.queued_turns, busy.pending_interactions) == (first, 1, 1)
    assert busy.event_count == len(events)
    assert busy.last_cursor == events[-1].cursor
    assert busy.updated_at.ToNanoseconds() >= idle.updated_at.ToNanoseconds()
    await node.end_turn(session.id, first)
    await app.turn_ended(watch, first)
    await node.request("run_turn_request", index=1)
    running = await get(rpc, session.id)
    assert (running.running_turn_id, running.queued_turns, running.pending_interactions) == (second, 0, 0)
    await node.end_turn(session.id, second)
    await app.turn_ended(watch, second)
    done = await get(rpc, session.id)
    assert (done.running_turn_id, done.queued_turns) == ("", 0)
    assert done.event_count == len(await all_events(rpc, session.id))


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_get_session_of_an_unknown_id_is_not_found(hub: RunningHub, codec: str) -> None:
    """An unknown session is NOT_FOUND; an empty id is INVALID_ARGUMENT."""
    async with rpc_clients(hub.http, codec=codec) as rpc:
        error = await connect_error(
            rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id="ses-nope")), Code.NOT_FOUND
        )
        assert "ses-nope" in error.message
        await connect_error(rpc.sessions.get_session(session_pb2.GetSessionRequest()), Code.INVALID_ARGUMENT)


# -- UpdateSession -------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_update_session_sets_title_and_archive_flag(hub: RunningHub, app: AppSocket, codec: str) -> None:
    """Each field changes only when set; an archived session is hidden from the default list, still readable."""
    session = await app.open_session(title="before")
    async with rpc_clients(hub.http, codec=codec) as rpc:
        renamed = await rpc.sessions.update_session(
            session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=session.id, title="after")
        )
        assert (renamed.accepted.title, renamed.accepted.archived) == ("after", False)
        archived = await rpc.sessions.update_session(
            session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=session.id, archived=True)
        )
        assert (archived.accepted.title, archived.accepted.archived) == ("after", True)
        assert await listed(rpc) == []
        assert await listed(rpc, include_archived=True) == [session.id]
        assert (await get(rpc, session.id)).archived
        cleared = await rpc.sessions.update_session(
            session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=session.id, title="", archived=False)
        )
        assert (cleared.accepted.title, cleared.accepted.archived) == ("", False)
        assert await listed(rpc) == [session.id]


async def test_update_session_of_an_unknown_id_is_rejected(rpc: Rpc) -> None:
    """Updating a session that does not exist is a NOT_FOUND rejection."""
    unknown = session_pb2.UpdateSessionRequest(request_id=request_id(), session_id="ses-nope", title="x")
    assert_rejected(await rpc.sessions.update_session(unknown), "NOT_FOUND")


async def test_update_session_refuses_an_overlong_title(app: AppSocket, rpc: Rpc) -> None:
    """A title over 500 characters is an INVALID_ARGUMENT rejection and changes nothing."""
    session = await app.open_session(title="kept")
    long = session_pb2.UpdateSessionRequest(request_id=request_id(), session_id=session.id, title="x" * 501)
    assert_rejected(await rpc.sessions.update_session(long), "INVALID_ARGUMENT")
    assert (await get(rpc, session.id)).title == "kept"


# -- ResetSession --------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_reset_opens_a_new_session_and_closes_the_old_one(hub: RunningHub, app: AppSocket, codec: str) -> None:
    """The new session is open on the same node with the same title; the old one ends once, with "reset"."""
    old = await app.open_session(title="chat")
    await finish_turn(app, old.id)
    async with rpc_clients(hub.http, codec=codec) as rpc:
        response = await rpc.sessions.reset_session(
            session_pb2.ResetSessionRequest(request_id=request_id(), session_id=old.id)
        )
        reset = response.accepted
        assert (reset.new_session.node_id, reset.new_session.state, reset.new_session.title) == ("local", OPEN, "chat")
        assert reset.new_session.id != old.id
        assert (reset.closed_session.id, reset.closed_session.state) == (old.id, CLOSED)
        assert reset.closed_session.close_reason == "reset"
        events = await all_events(rpc, old.id)
        ended = [delivery.event.session_ended for delivery in events if delivery.event.HasField("session_ended")]
        assert [end.reason for end in ended] == ["reset"]
        assert kinds(events)[-1] == "session_ended"
        assert kinds(await all_events(rpc, reset.new_session.id)) == ["session_started"]
        assert await listed(rpc) == [reset.new_session.id]
        assert (await get(rpc, old.id)).close_reason == "reset"
    await finish_turn(app, reset.new_session.id)


async def test_reset_ends_a_running_turn_first(app: AppSocket, rpc: Rpc, node: RawNode) -> None:
    """A turn still running in the old session ends canceled before its session_ended; the node is told."""
    old = await app.open_session("remote")
    turn_id = (await app.run_turn(old.id)).accepted.turn_id
    await node.request("run_turn_request")
    response = await rpc.sessions.reset_session(
        session_pb2.ResetSessionRequest(request_id=request_id(), session_id=old.id)
    )
    assert response.accepted.new_session.node_id == "remote"
    events = await all_events(rpc, old.id)
    assert kinds(events)[-2:] == ["turn_ended", "session_ended"]
    assert events[-2].event.turn_id == turn_id
    assert events[-2].event.turn_ended.stop_reason == "canceled"
    assert (await node.request("cancel_turn_request")).message.cancel_turn_request.turn_id == turn_id
    assert (await node.request("close_session_request")).message.close_session_request.session_id == old.id


async def test_reset_of_a_closed_or_unknown_session_is_rejected(app: AppSocket, rpc: Rpc) -> None:
    """Resetting a closed session is FAILED_PRECONDITION, an unknown one NOT_FOUND; nothing is opened."""
    session = await app.open_session()
    await close(app, session.id)
    closed = session_pb2.ResetSessionRequest(request_id=request_id(), session_id=session.id)
    assert_rejected(await rpc.sessions.reset_session(closed), "FAILED_PRECONDITION")
    unknown = session_pb2.ResetSessionRequest(request_id=request_id(), session_id="ses-nope")
    assert_rejected(await rpc.sessions.reset_session(unknown), "NOT_FOUND")
    assert await listed(rpc, include_closed=True) == [session.id]


async def test_reset_when_the_node_is_offline_is_unavailable(hub: RunningHub, app: AppSocket, rpc: Rpc) -> None:
    """Without its node a session cannot be reset: UNAVAILABLE (retryable), and the old session stays open."""
    async with await RawNode.connect(hub.node_url, "remote") as node:
        session = await app.open_session("remote")
    await node.closed()
    reset = session_pb2.ResetSessionRequest(request_id=request_id(), session_id=session.id)
    rejected = assert_rejected(await rpc.sessions.reset_session(reset), "UNAVAILABLE")
    assert rejected.retryable
    assert (await get(rpc, session.id)).state == OPEN


# -- DeleteSession -------------------------------------------------------------------


async def test_delete_cascades_to_events_turns_and_interactions(
    hub: RunningHub, app: AppSocket, rpc: Rpc, node: RawNode
) -> None:
    """Everything the session owned is gone; its node is told to cancel and close; it is NOT_FOUND after."""
    store = hub.runtime.store
    session = await app.open_session("remote")
    turn_id = (await app.run_turn(session.id)).accepted.turn_id
    await node.request("run_turn_request")
    watch = await app.watch(session.id)
    await ask(node, session.id, turn_id, "int-doomed")
    await interaction_event(app, watch, interaction_pb2.INTERACTION_STATE_PENDING)
    count = (await get(rpc, session.id)).event_count
    response = await rpc.sessions.delete_session(
        session_pb2.DeleteSessionRequest(request_id=request_id(), session_id=session.id)
    )
    assert response.accepted == session_pb2.SessionDeleted(session_id=session.id, events_deleted=count)
    assert await store.get_session(session.id) is None
    assert await store.read_events(session.id, 0, 1000) == []
    assert await store.get_turn(session.id, turn_id) is None
    assert await store.list_interactions(session_id=session.id) == []
    assert await store.get_interaction("int-doomed") is None
    assert (await node.request("cancel_turn_request")).message.cancel_turn_request.turn_id == turn_id
    assert (await node.request("close_session_request")).message.close_session_request.session_id == session.id
    for call in (
        rpc.sessions.get_session(session_pb2.GetSessionRequest(session_id=session.id)),
        rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id)),
        rpc.interactions.list_interactions(interaction_pb2.ListInteractionsRequest(session_id=session.id)),
    ):
        await connect_error(call, Code.NOT_FOUND)
    assert await listed(rpc, include_closed=True, include_archived=True) == []
    again = session_pb2.DeleteSessionRequest(request_id=request_id(), session_id=session.id)
    assert_rejected(await rpc.sessions.delete_session(again), "NOT_FOUND")


async def test_delete_ends_the_watches_of_the_session(app: AppSocket, rpc: Rpc) -> None:
    """A watcher of a deleted session gets a NOT_FOUND ProtocolError and nothing more; the session cannot be watched."""
    session = await app.open_session()
    watch = await app.watch(session.id)
    await app.wait_for(lambda e, m: e.reply_to == watch and m.event.HasField("session_started"))
    response = await rpc.sessions.delete_session(
        session_pb2.DeleteSessionRequest(request_id=request_id(), session_id=session.id)
    )
    assert response.WhichOneof("outcome") == "accepted"
    _, error = await app.wait_for(lambda e, m: e.reply_to == watch and m.HasField("protocol_error"))
    assert error.protocol_error.code == "NOT_FOUND"
    rewatch = await app.watch(session.id)
    _, again = await app.wait_for(lambda e, m: e.reply_to == rewatch)
    assert again.protocol_error.code == "NOT_FOUND"
    # Nothing reached the first watch after its error: its operation has ended.
    deliveries = [m for e, m in app.received if e.reply_to == watch]
    assert [m.WhichOneof("message") for m in deliveries] == ["event", "protocol_error"]
    other = await app.open_session()
    await finish_turn(app, other.id)  # the connection still serves everything else


async def test_delete_of_an_unknown_session_is_rejected(rpc: Rpc) -> None:
    """Deleting a session that never existed is a NOT_FOUND rejection."""
    unknown = session_pb2.DeleteSessionRequest(request_id=request_id(), session_id="ses-nope")
    assert_rejected(await rpc.sessions.delete_session(unknown), "NOT_FOUND")


# -- ListCommands --------------------------------------------------------------------


async def test_list_commands_without_a_session_is_the_hub_catalog(rpc: Rpc) -> None:
    """Without session_id: the hub's own verbs, /help and /agents (AOP-nodes 9.7.8), each with source "hub"."""
    response = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest())
    assert list(response.commands) == list(HUB_COMMANDS)
    assert [command.name for command in response.commands] == ["help", "agents"]
    assert {command.source for command in response.commands} == {"hub"}


async def test_list_commands_adds_the_catalog_the_node_published(app: AppSocket, rpc: Rpc, node: RawNode) -> None:
    """A node's CommandCatalog event (no session_id) is listed after the hub's commands, with the node as source."""
    catalog = agent_pb2.CommandCatalog(
        commands=[
            agent_pb2.Command(name="deploy", description="Deploy the service", usage="<env>"),
            agent_pb2.Command(name="status", description="Show the status", source="remote"),
        ]
    )
    await node.send_event(event_pb2.Event(id="catalog-1", extension=pack(catalog)))
    session = await app.open_session("remote")  # answered after the catalog: the hub has it
    local = await app.open_session()
    response = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
    names = [command.name for command in response.commands]
    assert names == [command.name for command in HUB_COMMANDS] + ["deploy", "status"]
    assert [command.source for command in response.commands[-2:]] == ["remote", "remote"]
    assert response.commands[-2].usage == "<env>"
    on_local = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=local.id))
    assert list(on_local.commands)[: len(HUB_COMMANDS)] == list(HUB_COMMANDS)
    # The built-in node's own catalog (its commands run instead of reaching the model).
    assert [(command.name, command.source) for command in on_local.commands[len(HUB_COMMANDS) :]] == [
        ("reset", "local"),
        ("summarize", "local"),
        ("memory", "local"),
        ("skills", "local"),
        ("status", "local"),
        ("subagents", "local"),
        ("title", "local"),
    ]
    agents = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest())
    remote = next(agent for agent in agents.agents if agent.node_id == "remote")
    assert [command.name for command in remote.commands] == ["deploy", "status"]
    await connect_error(
        rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id="ses-nope")), Code.NOT_FOUND
    )


# -- ListEvents ----------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["binary", "json"])
async def test_list_events_equals_the_application_channel(hub: RunningHub, app: AppSocket, codec: str) -> None:
    """ListEvents over RPC answers exactly what list_events_request answers on the WebSocket, page by page."""
    session = await app.open_session()
    await finish_turn(app, session.id, "one two three")
    async with rpc_clients(hub.http, codec=codec) as rpc:
        for after_cursor, limit in [("", 0), ("", 2), ("2", 3), ("4", 1000), ("999", 0)]:
            request = chat_pb2.ListEventsRequest(session_id=session.id, after_cursor=after_cursor, limit=limit)
            over_rpc = await rpc.sessions.list_events(request)
            over_ws = (await app.call(list_events_request=request)).list_events_response
            assert over_rpc.SerializeToString(deterministic=True) == over_ws.SerializeToString(deterministic=True)
        everything = await rpc.sessions.list_events(chat_pb2.ListEventsRequest(session_id=session.id))
    assert kinds(list(everything.events))[:3] == ["session_started", "message", "turn_started"]
    assert kinds(list(everything.events))[-1] == "turn_ended"
    assert [delivery.cursor for delivery in everything.events] == [
        str(cursor) for cursor in range(1, len(everything.events) + 1)
    ]
    assert everything.next_cursor == everything.events[-1].cursor


async def test_a_catalog_that_does_not_decode_is_answered_in_band(hub: RunningHub, rpc: Rpc) -> None:
    """A CommandCatalog payload that does not decode gets INVALID_PAYLOAD in-band; the node stays (AOP-nodes 9.1.6)."""
    async with await RawNode.connect(hub.node_url, "broken") as broken:
        garbage = any_pb2.Any(type_url=pack(agent_pb2.CommandCatalog()).type_url, value=b"\xff\xff\xff")
        await broken.send_event(event_pb2.Event(id="catalog-1", extension=garbage))
        refused = await broken.wait_for(lambda item: item.case == "protocol_error")
        assert refused.message.protocol_error.code == "INVALID_PAYLOAD"
        assert "CommandCatalog" in refused.message.protocol_error.message
        assert hub.runtime.hub.nodes.get("broken") is not None
    response = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest())
    assert list(response.commands) == list(HUB_COMMANDS)
