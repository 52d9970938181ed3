"""The node SDK serving slash commands (aophub.node.commands, aophub.node.runtime), fed envelope by envelope.

AOP-nodes 9.2.1 (the catalog after acceptance), 9.7.4 (what a node refuses), 9.7.5 (result or
COMMAND_FAILED, reply_to = the task id), 9.7.6 (the output event), 9.0.5.2 (answers in the
request's generation) and 9.4.4 (a command waits behind the session's running turn).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from aiscan.agent import detail_pb2
from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aop import chat_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.node import CommandCall, CommandFailed, CommandOutput, NodeCommands, NodeRuntime
from aophub.node.commands import command_name
from aophub.node.turn import Turn
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack
from aophub.v1 import agent_pb2
from cyber.command import protocol_pb2 as cyber_command_pb2

TIMEOUT = 5.0
SESSION = "ses_1"


class GatedAgent:
    """Runs each turn until :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(model="gated")

    async def run_turn(self, turn: Turn) -> str:
        self.started.set()
        await self.release.wait()
        return "completed"


class Wire:
    """What a runtime sent: envelopes, and events when they are emitted directly."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()

    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        self.sent.put_nowait(envelope)

    async def next(self) -> envelope_pb2.Envelope:
        return await asyncio.wait_for(self.sent.get(), TIMEOUT)


def deploy_commands() -> NodeCommands:
    commands = NodeCommands()

    @commands.command("/deploy", usage="<env>", description="Deploy the service")
    async def deploy(call: CommandCall) -> str:
        if not call.args:
            raise CommandFailed("usage: /deploy <env>")
        return f"deployed {call.session_id} to {call.args}"

    async def logs(call: CommandCall) -> CommandOutput:
        return CommandOutput("line 1\nline 2", "preformatted")

    async def quiet(call: CommandCall) -> None:
        return None

    commands.add("!logs", logs, description="Show the logs")
    commands.add("/quiet", quiet)
    return commands


async def started(agent: Any = None, commands: NodeCommands | None = None) -> tuple[NodeRuntime, Wire]:
    """A runtime with the session open (its open answered and drained)."""
    wire = Wire()
    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), agent or GatedAgent(), wire.send, commands=commands)
    open_request = chat_pb2.OpenSessionRequest(session_id=SESSION, node_id="node")
    await runtime.receive(
        envelope_pb2.Envelope(id="open", payload=pack(core_message(open_session_request=open_request)))
    )
    await wire.next()
    return runtime, wire


def command_envelope(task_id: str, line: str, module: Any = aiscan_command_pb2, session_id: str = SESSION) -> Any:
    request = module.CommandProtocolMessage(request=module.CommandRequest(session_id=session_id, line=line))
    return envelope_pb2.Envelope(id=task_id, payload=pack(request))


def protocol_error(envelope: envelope_pb2.Envelope) -> event_pb2.ProtocolError:
    message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
    assert message.WhichOneof("message") == "protocol_error", message
    return message.protocol_error


def test_command_name_is_the_first_word() -> None:
    """Verbs lower-cased, ``!`` names as typed; a line that names no command gives ""."""
    assert command_name("/Title  Release notes") == "/title"
    assert command_name("!Logs -f") == "!Logs"
    assert [command_name(line) for line in ("hello", "/", "!", "", "  ")] == ["", "", "", "", ""]


def test_names_are_checked() -> None:
    """A malformed name, /help (always served) or a second registration is a ValueError."""
    commands = deploy_commands()

    async def nothing(call: CommandCall) -> None:
        return None

    for name in ("deploy", "/two words", "/Upper", "/help", "/deploy"):
        with pytest.raises(ValueError, match="command"):
            commands.add(name, nothing)


async def test_the_catalog_lists_the_commands_but_help_in_the_second_generation() -> None:
    """9.2.1: one CommandProtocolMessage{catalog} (aiscan.command), empty reply_to; /help is served, not listed."""
    wire = Wire()
    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), GatedAgent(), wire.send, commands=deploy_commands())
    await runtime.send_catalog()
    envelope = await wire.next()
    assert envelope.payload.type_url == TYPE_URL_PREFIX + "aiscan.command.CommandProtocolMessage"
    assert envelope.reply_to == ""
    catalog = aiscan_command_pb2.CommandProtocolMessage.FromString(envelope.payload.value).catalog
    assert [(spec.name, spec.usage, spec.description) for spec in catalog.commands] == [
        ("/deploy", "/deploy <env>", "Deploy the service"),
        ("!logs", "!logs", "Show the logs"),
        ("/quiet", "/quiet", ""),
    ]


@pytest.mark.parametrize(("module", "namespace"), [(aiscan_command_pb2, "aiscan"), (cyber_command_pb2, "cyber")])
async def test_a_command_gives_its_output_event_then_the_result(module: Any, namespace: str) -> None:
    """9.7.5, 9.7.6: message{command-<n>, assistant} with CommandDetail and no turn_id, then result
    (reply_to = the task id) in the request's generation."""
    runtime, wire = await started(commands=deploy_commands())
    try:
        for n, (line, text, presentation) in enumerate(
            [("/DEPLOY  prod", f"deployed {SESSION} to prod", "plain"), ("!logs", "line 1\nline 2", "preformatted")],
            start=1,
        ):
            await runtime.receive(command_envelope(f"task-{n}", line, module))
            event = protocol_pb2.ProtocolMessage.FromString((await wire.next()).payload.value).event
            assert (event.session_id, event.turn_id, event.emitter) == (SESSION, "", "node")
            assert (event.message.id, event.message.role, event.message.content[0].text.text) == (
                f"command-{n}",
                "assistant",
                text,
            )
            (detail,) = event.extensions
            assert detail.type_url == TYPE_URL_PREFIX + "aiscan.agent.CommandDetail"
            assert detail_pb2.CommandDetail.FromString(detail.value) == detail_pb2.CommandDetail(
                line=line, presentation=presentation
            )
            answer = await wire.next()
            assert answer.reply_to == f"task-{n}"
            assert answer.payload.type_url == f"{TYPE_URL_PREFIX}{namespace}.command.CommandProtocolMessage"
            result = module.CommandProtocolMessage.FromString(answer.payload.value).result
            assert (result.command, result.presentation, result.content[0].text.text) == (line, presentation, text)
        await runtime.receive(command_envelope("task-3", "/quiet", module))  # no output: the result only
        answer = await wire.next()
        assert module.CommandProtocolMessage.FromString(answer.payload.value).result.command == "/quiet"
    finally:
        await runtime.stop()


async def test_help_is_served_by_every_node() -> None:
    """/help lists the node's commands, with no commands registered too."""
    runtime, wire = await started()
    try:
        await runtime.receive(command_envelope("task", "/help"))
        event = protocol_pb2.ProtocolMessage.FromString((await wire.next()).payload.value).event
        assert event.message.content[0].text.text == "Commands of this node:\n/help  List these commands"
    finally:
        await runtime.stop()


@pytest.mark.parametrize(
    ("line", "session_id", "code", "text"),
    [
        ("/deploy", SESSION, "COMMAND_FAILED", "usage: /deploy <env>"),
        ("/status", SESSION, "COMMAND_FAILED", "/status is not a command of this node; /help lists its commands"),
        ("deploy prod", SESSION, "COMMAND_FAILED", "direct execution requires a command"),
        ("/deploy prod", "ses_other", "COMMAND_FAILED", 'session "ses_other" is not open'),
        ("  ", SESSION, "INVALID_ARGUMENT", "command request without a line"),
    ],
)
async def test_refusals_are_protocol_errors_without_an_event(line: str, session_id: str, code: str, text: str) -> None:
    """9.7.4, 9.7.5, 9.3.4: refusals are protocol_error{code, text}, reply_to = the task id, and no event."""
    runtime, wire = await started(commands=deploy_commands())
    try:
        await runtime.receive(command_envelope("task", line, session_id=session_id))
        answer = await wire.next()
        assert answer.reply_to == "task"
        error = protocol_error(answer)
        assert (error.code, error.message) == (code, text)
        assert wire.sent.empty()
    finally:
        await runtime.stop()


def scoped_commands() -> NodeCommands:
    commands = NodeCommands()

    async def rotate(call: CommandCall) -> str:
        return "rotated"

    async def skills(call: CommandCall) -> str:
        return f"skills {call.args}".strip()

    commands.add("/rotate", rotate, scope="admin")
    commands.add("/skills", skills, subcommand_scopes={"enable": "admin"})
    return commands


def test_a_subcommand_is_one_word() -> None:
    """subcommand_scopes keys are single words: anything else is a ValueError."""

    async def nothing(call: CommandCall) -> None:
        return None

    for word in ("two words", "", " enable"):
        with pytest.raises(ValueError, match="subcommand"):
            NodeCommands().add("/x", nothing, subcommand_scopes={word: "admin"})


async def test_with_a_hub_that_checks_scopes_the_scoped_catalog_follows_the_reference_one() -> None:
    """command_scopes: after the aiscan catalog, an event carrying aophub.v1.CommandCatalog with the scopes."""
    wire = Wire()
    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), GatedAgent(), wire.send, commands=scoped_commands())
    runtime.command_scopes = True
    await runtime.send_catalog()
    assert (await wire.next()).payload.type_url == TYPE_URL_PREFIX + "aiscan.command.CommandProtocolMessage"
    event = protocol_pb2.ProtocolMessage.FromString((await wire.next()).payload.value).event
    assert (event.session_id, event.emitter) == ("", "node")
    listed = agent_pb2.CommandCatalog.FromString(event.extension.value)
    assert [(c.name, c.required_scope, dict(c.subcommand_scopes)) for c in listed.commands] == [
        ("rotate", "admin", {}),
        ("skills", "", {"enable": "admin"}),
    ]


@pytest.mark.parametrize(("line", "refused"), [("/rotate", True), ("/skills ENABLE x", True), ("/skills", False)])
async def test_without_a_hub_that_checks_scopes_the_node_refuses_its_scoped_commands(line: str, refused: bool) -> None:
    """A hub that did not accept aophub.command-scopes checked nobody: a scoped command is COMMAND_FAILED."""
    runtime, wire = await started(commands=scoped_commands())
    try:
        await runtime.receive(command_envelope("task", line))
        answer = await wire.next()
        if refused:
            error = protocol_error(answer)
            assert (error.code, error.message) == (
                "COMMAND_FAILED",
                f"{line.split(maxsplit=1)[0].lower()} needs a scope this node's hub does not check: refused",
            )
        else:
            assert protocol_pb2.ProtocolMessage.FromString(answer.payload.value).event.message.content
    finally:
        await runtime.stop()


async def test_a_case_other_than_request_is_invalid_argument() -> None:
    """9.9.1: a command-namespace message other than request gets INVALID_ARGUMENT."""
    runtime, wire = await started()
    try:
        receipt = aiscan_command_pb2.CommandProtocolMessage(receipt=aiscan_command_pb2.CommandReceipt())
        await runtime.receive(envelope_pb2.Envelope(id="odd", payload=pack(receipt)))
        answer = await wire.next()
        assert (answer.reply_to, protocol_error(answer).code) == ("odd", "INVALID_ARGUMENT")
    finally:
        await runtime.stop()


async def test_a_command_waits_behind_the_running_turn() -> None:
    """9.4.4: a session's commands and turns share its queue; the command runs once the turn has ended."""
    agent = GatedAgent()
    runtime, wire = await started(agent, deploy_commands())
    try:
        run = chat_pb2.RunTurnRequest(session_id=SESSION, turn_id="turn-1")
        run.input.content.add().text.text = "hi"
        await runtime.receive(envelope_pb2.Envelope(id="turn-1", payload=pack(core_message(run_turn_request=run))))
        await asyncio.wait_for(agent.started.wait(), TIMEOUT)
        await runtime.receive(command_envelope("task", "/deploy prod"))
        kinds: list[str] = []
        agent.release.set()
        while len(kinds) < 6:
            envelope = await wire.next()
            message = protocol_pb2.ProtocolMessage()
            if envelope.payload.type_url.endswith("aop.ProtocolMessage"):
                message.ParseFromString(envelope.payload.value)
                case = message.WhichOneof("message")
                kinds.append(f"event:{message.event.WhichOneof('payload')}" if case == "event" else str(case))
            else:
                kinds.append("result")
        assert kinds == [
            "run_turn_response",
            "event:turn_started",
            "event:turn_ended",
            "agent_stats",
            "event:message",
            "result",
        ]
    finally:
        await runtime.stop()
