"""End-to-end: slash commands on the application channel and over RPC (AOP-nodes 9.7), raw frames only.

The app is a raw WebSocket client (``tests.support.wire``) sending
``aiscan.command.CommandProtocolMessage{request}`` (or ``cyber.command...``); the node is a raw
reference-style agent node (``tests.support.reference_commands``, no SDK). Each row of the 9.7.1
table, the receipt of a forwarded command (9.7.2, 9.7.3), the output event (9.7.6), the node's
``COMMAND_FAILED`` (9.7.5), an offline node, a node of the third generation (9.0.5.2), the
bound on commands waiting for a node, and ``SessionService.RunCommand``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from connectrpc.code import Code as ConnectCode

from aiscan.agent import detail_pb2
from aop import chat_pb2, event_pb2, protocol_pb2
from aophub.hub.commands import verb_of
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.protocol.command_scopes import COMMAND_SCOPES_CAPABILITY
from aophub.protocol.node_namespaces import Generation
from aophub.v1 import agent_pb2, session_pb2

from .support.command_client import protocol_error, receipt, send_command, texts, until_stored
from .support.lifecycle import checked_hub
from .support.reference_commands import COMMAND_MODULES, CommandNode
from .support.reference_node import ReferenceNode
from .support.rpc import Rpc, connect_error, rpc_clients
from .support.server import RunningHub
from .support.spread import SERVES, serving
from .support.wire import AppSocket, run, stored

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=SERVES)
async def hub(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunningHub]:
    async with serving(request, tmp_path) as running:
        yield running


@pytest.fixture
async def app(hub: RunningHub) -> AsyncIterator[AppSocket]:
    async with await AppSocket.open(hub.app_url) as socket:
        yield socket


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


def test_the_verb_is_the_word_after_a_leading_slash_lower_cased() -> None:
    """9.7.1 (4): only a leading "/" makes a verb; shell lines and plain text have none (and are forwarded)."""
    assert [verb_of(line) for line in ("/HELP me", "/skill:Triage x", "/", "!ls", "hello /help", "")] == [
        "help",
        "skill:triage",
        "",
        "",
        "",
        "",
    ]


async def test_a_case_other_than_request_is_unsupported(app: AppSocket) -> None:
    """9.7.1 (1): a CommandProtocolMessage that is not a request gets UNSUPPORTED_MESSAGE."""
    module = COMMAND_MODULES[Generation.G2]
    sent = await app.send(module.CommandProtocolMessage(receipt=module.CommandReceipt(operation_id="x")))
    envelope, _ = await app.wait_for(lambda e, _m: e.reply_to == sent)
    assert protocol_error(envelope).code == "UNSUPPORTED_MESSAGE"


async def test_an_unknown_session_is_command_failed_worded_as_every_unknown_session(app: AppSocket) -> None:
    """9.7.1 (2): COMMAND_FAILED, with the text every other unknown-session answer has."""
    _, envelope = await send_command(app, "no-such-session", "/help")
    error = protocol_error(envelope)
    assert (error.code, error.message) == ("COMMAND_FAILED", "session no-such-session not found")
    reply = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id="no-such-session"))
    assert reply.protocol_error.message == error.message


async def test_help_lists_the_session_menu_after_storing_the_line(hub: RunningHub, app: AppSocket) -> None:
    """9.7.1 (3) and /help: the line is stored as the hub's user message, then the menu as a system message."""
    async with await CommandNode.serve(hub.node_url, "ref") as node:
        session = await app.open_session("ref")
        sent, envelope = await send_command(app, session.id, "/HELP")
        answer = receipt(envelope)
        assert envelope.reply_to == sent
        assert (answer.session_id, answer.state) == (session.id, "running")
        assert answer.operation_id
        events = await stored(app, session.id)
        user = [d.event for d in events if d.event.HasField("message") and d.event.message.role == "user"]
        assert [(e.emitter, e.turn_id) for e in user] == [("hub", "")]
        assert texts(events, "user") == ["/HELP"]
        (menu,) = texts(events, "system")
        assert menu.splitlines()[1:] == [
            "  /help  List the commands of this session  (hub)",
            "  /agents  List the connected nodes  (hub)",
            "  /status  Show LLM, tool, scanner and skill health  (ref)",
            "  /clear  Start a new empty context  (ref)",
            "  !nmap <target>  Port scan a target  (ref)",
            "  /skill:triage  Triage a finding  (ref)",
        ]
        await node.barrier()  # whatever the hub sent the node before has arrived
        assert node.commands == []  # run by the hub, never forwarded


async def test_agents_lists_the_connected_nodes(hub: RunningHub, app: AppSocket) -> None:
    """/agents: a system message listing every connected node (over replicas also those connected to
    another replica, once that replica has published them: milliseconds, so asked again until then)."""
    async with await CommandNode.serve(hub.node_url, "ref"):
        session = await app.open_session("local")
        for _attempt in range(100):
            _, envelope = await send_command(app, session.id, "/agents")
            receipt(envelope)
            listing = texts(await stored(app, session.id), "system")[-1]
            listed = [line.split()[0] for line in listing.splitlines()[1:]]
            if "ref" in listed:
                break
            await asyncio.sleep(0.02)
        assert listed == ["local", "ref"]


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ("/clear", "clear requires ResetSession"),
        ("/stop", "stop requires CancelTurn"),
        ("/exit", "exit requires CloseSession"),
        ("/quit", "exit requires CloseSession"),
        ("/continue", "continue requires RunTurn"),
        ("/followup and then?", "followup requires RunTurn"),
        ("/scan example.com", "scan is not available through chat: use ScanService.SubmitScan"),
    ],
)
async def test_refused_verbs_are_command_failed_and_stored(
    hub: RunningHub, app: AppSocket, line: str, text: str
) -> None:
    """9.7.1 table: these verbs are refused by the hub (the line is stored first), never forwarded."""
    async with await CommandNode.serve(hub.node_url, "ref") as node:
        session = await app.open_session("ref")
        _, envelope = await send_command(app, session.id, line)
        error = protocol_error(envelope)
        assert (error.code, error.message) == ("COMMAND_FAILED", text)
        assert texts(await stored(app, session.id), "user") == [line]
        await node.barrier()
        assert node.commands == []


async def test_a_forwarded_command_opens_first_then_answers_the_receipt(hub: RunningHub, app: AppSocket) -> None:
    """9.3.2, 9.7.2, 9.7.3: open on the connection, the request with envelope id = task id, the receipt
    (operation id = task id, reply_to = the app's envelope id), and the node's output stored (9.7.6)."""
    async with await CommandNode.serve(hub.node_url, "ref"):
        session = await app.open_session("ref")
    # The node restarted meanwhile (its sessions are gone): the hub must open again before the command.
    async with await CommandNode.serve(hub.node_url, "ref") as node:
        sent, envelope = await send_command(app, session.id, "/status")
        answer = receipt(envelope)
        assert envelope.reply_to == sent
        (forwarded, generation, message) = await node.command()
        assert generation is Generation.G2
        assert forwarded.envelope.id == answer.operation_id
        assert (message.request.session_id, message.request.line) == (session.id, "/status")
        (opened,) = [item for item in node.received if item.case == "open_session_request"]
        assert opened.envelope.id == f"open:{session.id}"
        assert node.received.index(opened) < node.received.index(forwarded)
        output = await until_stored(app, session.id, lambda e: e.message.id == "command-1")
        assert (output.message.role, output.turn_id, output.emitter) == ("assistant", "", "raw ref")
        assert not output.id.startswith("runtime-")  # the hub's own id (9.5.5)
        (detail,) = output.extensions
        assert detail_pb2.CommandDetail.FromString(detail.value) == detail_pb2.CommandDetail(
            line="/status", presentation="preformatted"
        )
        assert texts(await stored(app, session.id), "user") == ["/status"]


@pytest.mark.parametrize("line", ["/compact keep the plan", "/skill:triage CVE-1", "!nmap example.com", "/STATUS"])
async def test_every_other_line_is_forwarded_as_typed(hub: RunningHub, app: AppSocket, line: str) -> None:
    """9.7.1, 9.7.7: /compact, /skill:..., shell lines and node verbs reach the node unchanged."""
    async with await CommandNode.serve(hub.node_url, "ref") as node:
        session = await app.open_session("ref")
        receipt((await send_command(app, session.id, line))[1])
        (_, _, message) = await node.command()
        assert message.request.line == line


async def test_command_failed_from_the_node_becomes_an_error_event(hub: RunningHub, app: AppSocket) -> None:
    """9.7.5, 9.7.6: the node's COMMAND_FAILED is an error event with an empty code and the node's text."""
    async with await CommandNode.serve(hub.node_url, "ref"):
        session = await app.open_session("ref")
        _, envelope = await send_command(app, session.id, "/deploy now")
        receipt(envelope)  # forwarded: the receipt comes whatever the node answers
        error = await until_stored(app, session.id, lambda e: e.HasField("error"))
        assert (error.error.code, error.error.message) == ("", 'command "deploy" is not a Runtime command')
        _, envelope = await send_command(app, session.id, "list the files")  # plain text is forwarded too
        receipt(envelope)
        second = await until_stored(
            app, session.id, lambda e: e.HasField("error") and e.error.message != error.error.message
        )
        assert second.error.message == "direct execution requires a command"


async def test_a_node_that_serves_no_commands_gives_an_error_event(hub: RunningHub, app: AppSocket) -> None:
    """A node answering UNSUPPORTED_NAMESPACE: the session gets an error event with its code and text."""
    async with await ReferenceNode.connect(hub.node_url, "plain"):
        session = await app.open_session("plain")
        _, envelope = await send_command(app, session.id, "/status")
        receipt(envelope)
        error = await until_stored(app, session.id, lambda e: e.HasField("error"))
        assert error.error.code == "UNSUPPORTED_NAMESPACE"
        assert "aiscan.command.CommandProtocolMessage" in error.error.message


async def test_an_offline_node_is_command_failed(hub: RunningHub, app: AppSocket) -> None:
    """9.7.1: the session's node is not connected: COMMAND_FAILED (the line is stored all the same)."""
    async with await CommandNode.serve(hub.node_url, "ref") as node:
        session = await app.open_session("ref")
    await node.closed()
    while hub.runtime.hub.nodes.get("ref") is not None:
        await hub.runtime.hub.nodes.get("ref").wait_gone(1.0)  # type: ignore[union-attr]
    _, envelope = await send_command(app, session.id, "/status")
    error = protocol_error(envelope)
    assert (error.code, error.message, error.retryable) == ("COMMAND_FAILED", "node ref is offline", True)
    _, envelope = await send_command(app, session.id, "/help")  # the hub's own verbs still run
    receipt(envelope)
    (menu,) = texts(await stored(app, session.id), "system")
    assert "(ref)" not in menu


async def test_a_third_generation_node_gets_cyber_command(hub: RunningHub, app: AppSocket) -> None:
    """9.0.5.2: a G3 node gets its request in cyber.command; a G3 app gets its receipt in cyber.command."""
    async with await CommandNode.serve(hub.node_url, "g3", Generation.G3) as node:
        session = await app.open_session("g3")
        _, envelope = await send_command(app, session.id, "/status", Generation.G3)
        answer = receipt(envelope, Generation.G3)
        (forwarded, generation, _) = await node.command()
        assert generation is Generation.G3
        assert forwarded.envelope.payload.type_url == TYPE_URL_PREFIX + "cyber.command.CommandProtocolMessage"
        assert forwarded.envelope.id == answer.operation_id
        await until_stored(app, session.id, lambda e: e.message.id == "command-1")


async def test_a_node_that_never_spoke_the_namespace_gets_the_second_generation(
    hub: RunningHub, app: AppSocket
) -> None:
    """9.0.5.2: commands for a node that sent no command-namespace message default to G2."""
    async with await CommandNode.connect(hub.node_url, "quiet") as node:  # no catalog sent
        session = await app.open_session("quiet")
        _, envelope = await send_command(app, session.id, "/status")
        receipt(envelope)
        (forwarded, generation, _) = await node.command()
        assert generation is Generation.G2
        assert forwarded.envelope.payload.type_url == TYPE_URL_PREFIX + "aiscan.command.CommandProtocolMessage"
        await until_stored(app, session.id, lambda e: e.message.id == "command-1")


def reference_catalog(*verbs: str) -> Any:
    module = COMMAND_MODULES[Generation.G2]
    specs = [module.CommandSpec(name=f"/{verb}", description=f"does {verb}") for verb in verbs]
    return module.CommandProtocolMessage(catalog=module.CommandCatalog(commands=specs))


async def test_a_node_that_declares_scopes_gets_no_command_before_its_scoped_catalog(
    hub: RunningHub, app: AppSocket, rpc: Rpc
) -> None:
    """aophub.command-scopes: commands are refused (retryable) until the aophub.v1.CommandCatalog comes;
    the reference catalog does not replace it, and a command its scope allows is forwarded."""
    async with await CommandNode.dial(hub.node_url, "scoped") as node:
        accepted = await node.hello(("chat", COMMAND_SCOPES_CAPABILITY))
        assert COMMAND_SCOPES_CAPABILITY in accepted.capabilities
        await node.send(reference_catalog("status"))  # the reference catalog: it fixes the generation only
        session = await app.open_session("scoped")
        error = protocol_error((await send_command(app, session.id, "/status"))[1])
        assert (error.code, error.message, error.retryable) == (
            "COMMAND_FAILED",
            "node scoped has not listed its commands yet; try again",
            True,
        )
        listed = agent_pb2.CommandCatalog(
            commands=[agent_pb2.Command(name="status", required_scope="admin", subcommand_scopes={"x": "read"})]
        )
        await node.send_event(event_pb2.Event(extension=pack(listed)))
        await node.barrier()
        receipt((await send_command(app, session.id, "/status"))[1])  # the access key holds admin
        (_, _, message) = await node.command()
        assert message.request.line == "/status"
        await node.send(reference_catalog("status", "other"))  # a later reference catalog changes nothing
        await node.barrier()
        menu = await rpc.sessions.list_commands(session_pb2.ListCommandsRequest(session_id=session.id))
        assert [(c.name, c.required_scope, dict(c.subcommand_scopes)) for c in menu.commands][2:] == [
            ("status", "admin", {"x": "read"})
        ]


async def test_commands_waiting_for_a_node_are_bounded_per_session(tmp_path: Path) -> None:
    """--max-pending-commands: one more command than may wait is refused; the bound frees as answers come."""
    async with (
        checked_hub(tmp_path, max_pending_commands=2) as hub,
        await AppSocket.open(hub.app_url) as app,
        await CommandNode.serve(hub.node_url, "slow") as node,
    ):
        node.answer_commands = False
        session = await app.open_session("slow")
        for _ in range(2):
            receipt((await send_command(app, session.id, "/status"))[1])
        error = protocol_error((await send_command(app, session.id, "/status"))[1])
        assert (error.code, error.retryable) == ("COMMAND_FAILED", True)
        assert "already has 2 commands waiting" in error.message
        other = await app.open_session("slow")
        receipt((await send_command(app, other.id, "/status"))[1])  # another session has its own bound
        item, generation, message = await node.command()
        await node.answer_command(item.envelope.id, generation, message)
        while hub.runtime.hub.commands.pending(session.id) != 1:  # its slot frees once the answer is handled
            await node.barrier()
        receipt((await send_command(app, session.id, "/status"))[1])


async def test_a_node_that_does_not_answer_in_time_gives_an_error_event(tmp_path: Path) -> None:
    """--command-timeout: no answer in time is an error event in the session, and the slot frees."""
    async with (
        checked_hub(tmp_path, command_timeout=0.2) as hub,
        await AppSocket.open(hub.app_url) as app,
        await CommandNode.serve(hub.node_url, "mute") as node,
    ):
        node.answer_commands = False
        session = await app.open_session("mute")
        receipt((await send_command(app, session.id, "/status"))[1])
        error = await until_stored(app, session.id, lambda e: e.HasField("error"))
        assert error.error.message == "node mute did not finish the command within 0.2 s"
        assert hub.runtime.hub.commands.pending(session.id) == 0


async def test_an_answer_after_the_session_closed_adds_nothing(hub: RunningHub, app: AppSocket) -> None:
    """A command still waiting when its session closes: the node's late refusal is not stored after session_ended."""
    async with await CommandNode.serve(hub.node_url, "late") as node:
        node.answer_commands = False
        session = await app.open_session("late")
        receipt((await send_command(app, session.id, "/status"))[1])
        closed = await app.call(close_session_request=chat_pb2.CloseSessionRequest(session_id=session.id))
        assert closed.close_session_response.HasField("accepted")
        item, generation, message = await node.command()
        await node.answer_command(item.envelope.id, generation, message)  # not open any more: COMMAND_FAILED
        while hub.runtime.hub.commands.pending(session.id):  # its slot frees once the answer is handled
            await node.barrier()
        kinds = [d.event.WhichOneof("payload") for d in await stored(app, session.id)]
        assert kinds[-1] == "session_ended"
        assert "error" not in kinds


async def test_run_command_rpc(hub: RunningHub, app: AppSocket, rpc: Rpc) -> None:
    """SessionService.RunCommand: the same semantics, refusals as Connect codes."""
    async with await CommandNode.serve(hub.node_url, "ref") as node:
        session = await app.open_session("ref")
        response = await rpc.sessions.run_command(session_pb2.RunCommandRequest(session_id=session.id, line="/status"))
        assert (response.session_id, response.state) == (session.id, "running")
        assert (await node.command())[0].envelope.id == response.operation_id
        await until_stored(app, session.id, lambda e: e.message.id == "command-1")
        help_response = await rpc.sessions.run_command(
            session_pb2.RunCommandRequest(session_id=session.id, line="/help")
        )
        assert help_response.operation_id
        failure = await connect_error(
            rpc.sessions.run_command(session_pb2.RunCommandRequest(session_id=session.id, line="/clear")),
            ConnectCode.FAILED_PRECONDITION,
        )
        assert failure.message == "clear requires ResetSession"
        await connect_error(
            rpc.sessions.run_command(session_pb2.RunCommandRequest(session_id="nope", line="/help")),
            ConnectCode.NOT_FOUND,
        )
        await connect_error(
            rpc.sessions.run_command(session_pb2.RunCommandRequest(session_id=session.id, line="  ")),
            ConnectCode.INVALID_ARGUMENT,
        )
        too_long = await connect_error(
            rpc.sessions.run_command(session_pb2.RunCommandRequest(session_id=session.id, line="!" + "x" * 65536)),
            ConnectCode.INVALID_ARGUMENT,
        )
        assert too_long.message == "line is 65537 bytes long; a command line is at most 65536"
        assert texts(await stored(app, session.id), "user") == ["/status", "/help", "/clear"]


class QueueingCommandNode(CommandNode):
    """A command node whose session queue holds runs behind an unanswered command (AOP-nodes 9.4.4): such a
    run is accepted at once and starts only when :meth:`finish_command` has answered the command."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.queued: list[tuple[str, chat_pb2.RunTurnRequest]] = []

    async def _run(self, envelope_id: str, request: chat_pb2.RunTurnRequest) -> None:
        if self.answer_commands or not self.commands:
            await super()._run(envelope_id, request)
            return
        self.queued.append((envelope_id, request))
        receipt = chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state="running")
        answer = protocol_pb2.ProtocolMessage(run_turn_response=chat_pb2.RunTurnResponse(accepted=receipt))
        await self.send(answer, reply_to=envelope_id)

    async def finish_command(self) -> None:
        """Answer the command, then run what waited behind it."""
        item, generation, message = await self.command()
        await self.answer_command(item.envelope.id, generation, message)
        self.answer_commands = True
        for envelope_id, request in self.queued:
            await super()._run(envelope_id, request)


async def test_a_turn_queued_behind_a_running_command_is_not_failed_by_the_start_timeout(tmp_path: Path) -> None:
    """9.8.5 counts a forwarded command as the node's running operation of the session: a turn waiting behind
    it on the node, longer than --turn-start-timeout, is not ended agent_run_failed and completes later."""
    start_wait = 0.3
    async with (
        checked_hub(tmp_path, turn_start_timeout=start_wait) as hub,
        await AppSocket.open(hub.app_url) as app,
        await QueueingCommandNode.serve(hub.node_url, "queue") as node,
    ):
        node.answer_commands = False
        session = await app.open_session("queue")
        watch = await app.watch(session.id)
        receipt((await send_command(app, session.id, "/status"))[1])
        await node.command()
        queued = await run(app, session.id)
        with pytest.raises(TimeoutError):
            await app.turn_ended(watch, queued.turn_id, timeout=start_wait * 4)
        await node.finish_command()
        ended = (await app.turn_ended(watch, queued.turn_id)).event.turn_ended
        assert ended.stop_reason == "completed", ended
