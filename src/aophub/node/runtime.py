"""The node side of AOP: answer the hub, run turns FIFO per session, honour cancels.

A :class:`NodeRuntime` receives the hub's envelopes (:meth:`NodeRuntime.receive`)
and sends its answers and events through ``send``; the transport (a WebSocket
to a remote hub, or the in-process link of the built-in node) only carries
envelopes. The runtime guarantees the turn lifecycle: it answers
``run_turn_response`` at once (``rejected`` ``INVALID_ARGUMENT`` if the turn's
``aophub.v1.TurnOptions`` do not decode), sends exactly one ``turn_started`` and
one ``turn_ended`` per accepted turn, and runs a session's turns one after another.

It serves slash commands too (AOP-nodes 9.7.4 to 9.7.6, :mod:`aophub.node.commands`):
:meth:`NodeRuntime.send_catalog` lists them after acceptance, in ``aiscan.command``; a
command request of either generation is answered in that generation. A command waits in its
session's queue behind the running turn; its output is the event ``message{id: "command-<n>",
role: "assistant"}`` with an ``aiscan.agent.CommandDetail`` extension and no ``turn_id``,
followed by ``result`` (reply_to = the hub's task id); a refusal is
``protocol_error{COMMAND_FAILED}`` and no event.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import socket
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from aiscan.agent import detail_pb2
from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.ids import new_id
from aophub.node.commands import CommandFailed, CommandOutput, NodeCommands, command_name
from aophub.node.turn import EmitEvent, Turn, TurnFailed
from aophub.node.workspace import TerminalLink, WorkspaceServices
from aophub.protocol.codec import core_message, pack, payload_name, unpack
from aophub.protocol.command_scopes import COMMAND_SCOPES_CAPABILITY
from aophub.protocol.error_mapping import to_rejection
from aophub.protocol.errors import Code, HubError
from aophub.protocol.extensions import turn_options
from aophub.protocol.node_namespaces import COMMAND, NAMESPACES, Generation, NamespaceName, message_class
from aophub.v1 import agent_pb2, interaction_pb2, subagent_pb2

__all__ = [
    "COMMAND_SCOPES_CAPABILITY",
    "INTERACTIONS_CAPABILITY",
    "SUBAGENTS_CAPABILITY",
    "Agent",
    "NodeRuntime",
    "Send",
    "SessionAware",
    "SubagentParent",
    "SubagentRequest",
    "counted_turn",
    "runtime_info",
]

log = logging.getLogger(__name__)

Send = Callable[[envelope_pb2.Envelope], Awaitable[None]]
_INTERACTION_NAME = interaction_pb2.InteractionProtocolMessage.DESCRIPTOR.full_name
_CORE_NAME = protocol_pb2.ProtocolMessage.DESCRIPTOR.full_name
_FILE_NAME = file_pb2.ProtocolMessage.DESCRIPTOR.full_name
_EXEC_NAME = exec_pb2.ProtocolMessage.DESCRIPTOR.full_name
_PTY_NAME = pty_pb2.ProtocolMessage.DESCRIPTOR.full_name
_SUBAGENT_NAME = subagent_pb2.SubagentProtocolMessage.DESCRIPTOR.full_name
# Announced in AgentHello and echoed in AgentAccepted when both sides speak
# aophub.v1.InteractionProtocolMessage on the node channel.
INTERACTIONS_CAPABILITY = "aophub.interactions"
# The same for aophub.v1.SubagentProtocolMessage: the hub runs subagents its agents spawn.
SUBAGENTS_CAPABILITY = "aophub.subagents"
# How long a node waits for the hub's answer to a subagent request.
SUBAGENT_REQUEST_TIMEOUT = 30.0
# Sends a request of SubagentProtocolMessage (spawn, list, cancel) to the hub and returns its answer.
SubagentRequest = Callable[[subagent_pb2.SubagentProtocolMessage], Awaitable[subagent_pb2.SubagentAnswer]]


@runtime_checkable
class SubagentParent(Protocol):
    """An agent that spawns subagents: it is given the runtime's way to ask the hub, and told when one ended."""

    def bind_subagents(self, request: SubagentRequest | None) -> None:
        """``request`` asks the hub; ``None`` while this connection's hub runs no subagents."""

    def subagent_finished(self, subagent: subagent_pb2.Subagent) -> None:
        """A subagent of a session open on this node ended; its final update is stored in the parent session."""


def runtime_info() -> protocol_pb2.AgentRuntimeInfo:
    """Where this process runs, for ``AgentHello.runtime``."""
    return protocol_pb2.AgentRuntimeInfo(
        hostname=socket.gethostname(),
        username=os.environ.get("USER", ""),
        working_dir=os.getcwd(),
        os=platform.system().lower(),
        arch=platform.machine(),
        pid=os.getpid(),
    )


class Agent(Protocol):
    """An agent: reports its status and runs turns."""

    def status(self) -> protocol_pb2.AgentStatus:
        """What the node reports as ``agent_status`` (provider, model, ...)."""
        ...

    async def run_turn(self, turn: Turn) -> str:
        """Do the turn's work through ``turn``; return the stop reason (e.g. "completed")."""
        ...


@runtime_checkable
class SessionAware(Protocol):
    """An agent that is told when the hub opens and closes sessions on it (optional, besides :class:`Agent`).

    A node bridge to an agent server with one conversation uses it to refuse a second session and
    to clear the server's context when its session closes.
    """

    async def open_session(self, request: chat_pb2.OpenSessionRequest) -> None:
        """Accept the open, or raise ``HubError`` (e.g. ``FAILED_PRECONDITION``) to refuse it."""
        ...

    async def close_session(self, session_id: str) -> None:
        """The hub closed ``session_id`` on this node (its turns are canceled already)."""
        ...


@dataclass(frozen=True)
class _QueuedCommand:
    """A command request waiting in its session's queue: the hub's task id, the generation it came in."""

    task_id: str
    generation: Generation
    session_id: str
    line: str


@dataclass(eq=False)
class _SessionWorker:
    """Runs one session's turns and commands in order; it exists only while one of them runs or waits."""

    queue: deque[Turn | _QueuedCommand] = field(default_factory=deque)
    current: Turn | None = None
    task: asyncio.Task[None] | None = None
    running: asyncio.Task[str] | None = None


def counted_turn(stats: protocol_pb2.AgentStats, input_tokens: int, output_tokens: int) -> protocol_pb2.AgentStats:
    """New counters: ``stats`` plus one ended turn and its tokens.

    MEMORY: a new message each time, never ``stats`` changed in place. Setting a string field
    of a protobuf (upb) message, or ``CopyFrom`` into it, allocates in the message's arena,
    which frees nothing until the message itself goes: a long-lived message updated once
    per turn grows for as long as the process runs (about 16 bytes per update).
    """
    return protocol_pb2.AgentStats(
        turns=stats.turns + 1,
        input_tokens=stats.input_tokens + input_tokens,
        output_tokens=stats.output_tokens + output_tokens,
        total_tokens=stats.total_tokens + input_tokens + output_tokens,
        last_event="turn.ended",
    )


class NodeRuntime:
    """Protocol logic of a node, independent of its transport."""

    def __init__(
        self,
        hello: protocol_pb2.AgentHello,
        agent: Agent,
        send: Send,
        *,
        emit: EmitEvent | None = None,
        commands: NodeCommands | None = None,
        workspace: WorkspaceServices | None = None,
    ) -> None:
        """``send`` carries envelopes to the hub; ``emit`` (default: an ``event`` envelope through ``send``)
        carries the events of turns, so an in-process link can hand them over without encoding them
        (the hub then owns the event: the node must not use it afterwards). ``commands``: the slash
        commands served besides ``/help``. ``workspace``: the ``aop.file``, ``aop.exec`` and
        ``aop.pty`` services (:mod:`aophub.node.workspace`); a namespace without one is refused
        ``UNSUPPORTED_NAMESPACE``."""
        self.hello = hello
        self.agent = agent
        self.commands = commands or NodeCommands()
        # Numbers the command output messages, "command-<n>" (AOP-nodes 9.7.6).
        self._command_outputs = 0
        self._send = send
        self._emit = emit or self._emit_envelope
        # What a session keeps between turns is how it was opened; a worker only while turns run or wait.
        self._opened: dict[str, chat_pb2.OpenSessionRequest] = {}
        self._sessions: dict[str, _SessionWorker] = {}
        self._asked: dict[str, asyncio.Future[interaction_pb2.Interaction]] = {}
        self.stats = protocol_pb2.AgentStats()
        # Set once the hub accepted INTERACTIONS_CAPABILITY.
        self.interactions = False
        # Set once the hub accepted COMMAND_SCOPES_CAPABILITY: it checks the scopes the commands declare.
        self.command_scopes = False
        # Requests to the hub in SubagentProtocolMessage awaiting its answer, by envelope id.
        self._subagent_requests: dict[str, asyncio.Future[subagent_pb2.SubagentAnswer]] = {}
        self._subagents = False
        self.workspace = workspace or WorkspaceServices()
        # File requests and execs running, by the hub's envelope id; an exec's cancel event.
        self._operations: dict[str, asyncio.Task[None]] = {}
        self._cancels: dict[str, asyncio.Event] = {}
        self._terminal_link: TerminalLink | None = None
        # Paths uploaded per session since its last turn, told to the agent with the next one.
        self._uploaded: dict[str, list[str]] = {}

    def __repr__(self) -> str:
        return f"<NodeRuntime {self.hello.node_id} sessions={len(self._opened)} workers={len(self._sessions)}>"

    @property
    def sessions(self) -> int:
        """Sessions opened on this node and not closed."""
        return len(self._opened)

    @property
    def workers(self) -> int:
        """Sessions with a turn running or queued."""
        return len(self._sessions)

    async def idle(self) -> None:
        """Wait until no session has a turn running or queued."""
        while self._sessions:
            tasks = [worker.task for worker in self._sessions.values() if worker.task is not None]
            await asyncio.wait(tasks)

    async def _reply(self, reply_to: str, message: protocol_pb2.ProtocolMessage) -> None:
        await self._send(envelope_pb2.Envelope(id=new_id("node"), reply_to=reply_to, payload=pack(message)))

    async def _emit_envelope(self, event: event_pb2.Event) -> None:
        envelope = envelope_pb2.Envelope(
            id=new_id("node"), reply_to=event.turn_id, payload=pack(core_message(event=event))
        )
        await self._send(envelope)

    async def send_catalog(self) -> None:
        """List the node's commands, ``CommandProtocolMessage{catalog}`` in ``aiscan.command`` (AOP-nodes 9.2.1);
        then, when the hub checks scopes (:attr:`command_scopes`), as ``aophub.v1.CommandCatalog``
        with their scopes (:mod:`aophub.protocol.command_scopes`).

        Send it right after the hub accepted the hello, before :meth:`announce`.
        """
        message_type = message_class(COMMAND, Generation.G2)
        specs = [
            {"name": name, "usage": usage, "description": description}
            for name, usage, description in self.commands.catalog()
        ]
        catalog = message_type(catalog={"commands": specs})
        await self._send(envelope_pb2.Envelope(id=new_id("node"), payload=pack(catalog)))
        if self.command_scopes:
            listed = event_pb2.Event(id=new_id("evt"), emitter=self.hello.node_id)
            listed.extension.CopyFrom(pack(agent_pb2.CommandCatalog(commands=self.commands.listing())))
            await self._send(envelope_pb2.Envelope(id=new_id("node"), payload=pack(core_message(event=listed))))

    async def announce(self) -> None:
        """Send the agent's status and counters (after the hub accepted the hello)."""
        await self._send(
            envelope_pb2.Envelope(id=new_id("node"), payload=pack(core_message(agent_status=self.agent.status())))
        )
        await self._send(envelope_pb2.Envelope(id=new_id("node"), payload=pack(core_message(agent_stats=self.stats))))

    @property
    def subagents(self) -> bool:
        """Whether the hub runs subagents for this connection (it accepted SUBAGENTS_CAPABILITY)."""
        return self._subagents

    @subagents.setter
    def subagents(self, spoken: bool) -> None:
        self._subagents = spoken
        if isinstance(self.agent, SubagentParent):
            self.agent.bind_subagents(self.subagent_request if spoken else None)

    async def subagent_request(self, message: subagent_pb2.SubagentProtocolMessage) -> subagent_pb2.SubagentAnswer:
        """Send a spawn, list or cancel request to the hub and wait (bounded) for its answer."""
        envelope_id = new_id("node")
        future: asyncio.Future[subagent_pb2.SubagentAnswer] = asyncio.get_running_loop().create_future()
        self._subagent_requests[envelope_id] = future
        try:
            await self._send(envelope_pb2.Envelope(id=envelope_id, payload=pack(message)))
            async with asyncio.timeout(SUBAGENT_REQUEST_TIMEOUT):
                return await future
        except TimeoutError:
            refused = subagent_pb2.SubagentAnswer()
            refused.rejected.CopyFrom(
                to_rejection(HubError(Code.UNAVAILABLE, "the hub did not answer in time", retryable=True))
            )
            return refused
        finally:
            self._subagent_requests.pop(envelope_id, None)

    async def _spawn(self, request: subagent_pb2.SpawnSubagentRequest) -> subagent_pb2.SubagentAnswer:
        return await self.subagent_request(subagent_pb2.SubagentProtocolMessage(spawn_request=request))

    def _hub_answer(self, envelope: envelope_pb2.Envelope, name: str) -> None:
        """The hub's answer in a product namespace of the node channel: an interaction's or a subagent's."""
        if name == _INTERACTION_NAME:
            self._resolved(unpack(envelope, interaction_pb2.InteractionProtocolMessage).resolved)
        else:
            self._subagent_message(envelope.reply_to, unpack(envelope, subagent_pb2.SubagentProtocolMessage))

    def _subagent_message(self, reply_to: str, message: subagent_pb2.SubagentProtocolMessage) -> None:
        case = message.WhichOneof("message")
        if case == "answer":
            future = self._subagent_requests.get(reply_to)
            if future is not None and not future.done():
                future.set_result(message.answer)
        elif case == "finished" and isinstance(self.agent, SubagentParent):
            self.agent.subagent_finished(message.finished)

    async def _ask(self, interaction: interaction_pb2.Interaction) -> interaction_pb2.Interaction:
        future: asyncio.Future[interaction_pb2.Interaction] = asyncio.get_running_loop().create_future()
        self._asked[interaction.id] = future
        try:
            message = interaction_pb2.InteractionProtocolMessage(requested=interaction)
            await self._send(envelope_pb2.Envelope(id=new_id("node"), payload=pack(message)))
            return await future
        finally:
            self._asked.pop(interaction.id, None)

    def _resolved(self, resolved: interaction_pb2.Interaction) -> None:
        future = self._asked.get(resolved.id)
        if future is not None and not future.done():
            future.set_result(resolved)

    async def receive(self, envelope: envelope_pb2.Envelope) -> None:
        """Handle one envelope from the hub.

        The payload's type URL decides how it is read: ``aop.ProtocolMessage``,
        ``aophub.v1.InteractionProtocolMessage``, or the command namespace of either generation
        (``aiscan.command`` / ``cyber.command``). Anything else is answered in-band with a
        ``protocol_error`` whose ``reply_to`` is the envelope's id (AOP-nodes 9.9.1): another
        namespace with ``UNSUPPORTED_NAMESPACE``, a type URL that is not canonical or a payload
        that does not decode with ``INVALID_PAYLOAD``. A ``protocol_error`` from the hub is never
        answered (9.1.7).
        """
        try:
            name = payload_name(envelope)
            if name in (_INTERACTION_NAME, _SUBAGENT_NAME):
                self._hub_answer(envelope, name)
                return
            if name in (_FILE_NAME, _EXEC_NAME, _PTY_NAME):
                await self._workspace_request(envelope, name)
                return
            spoken = NAMESPACES.get(name)
            if spoken is not None and spoken.namespace is COMMAND:
                await self._command_request(envelope, spoken)
                return
            if name != _CORE_NAME:
                raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken by this node")
            message = unpack(envelope, protocol_pb2.ProtocolMessage)
        except HubError as error:
            log.info("node %s refuses envelope %s: %s", self.hello.node_id, envelope.id, error.message)
            refusal = event_pb2.ProtocolError(code=error.code, message=error.message)
            await self._reply(envelope.id, core_message(protocol_error=refusal))
            return
        case = message.WhichOneof("message")
        if case == "open_session_request":
            await self._open_session(envelope.id, message.open_session_request)
        elif case == "run_turn_request":
            await self._accept_turn(envelope.id, message.run_turn_request)
        elif case == "cancel_turn_request":
            await self._cancel_turn(envelope.id, message.cancel_turn_request)
        elif case == "close_session_request":
            await self._close_requested(envelope.id, message.close_session_request)
        elif case == "cancel_operation":
            self._cancel_operation(message.cancel_operation.target_id)
        elif case == "protocol_error":
            # Never answered: an answer could start an error exchange (AOP-nodes 9.1.7).
            log.info("node %s: the hub reports %s", self.hello.node_id, message.protocol_error.message)
        else:
            log.info("node %s ignores %s", self.hello.node_id, case)

    async def _open_session(self, envelope_id: str, request: chat_pb2.OpenSessionRequest) -> None:
        """Accept the open, unless a :class:`SessionAware` agent refuses it."""
        if isinstance(self.agent, SessionAware):
            try:
                await self.agent.open_session(request)
            except HubError as error:
                refused = chat_pb2.OpenSessionResponse(rejected=to_rejection(error))
                await self._reply(envelope_id, core_message(open_session_response=refused))
                return
        opened = self._opened[request.session_id] = chat_pb2.OpenSessionRequest()
        opened.CopyFrom(request)  # its own message: not one holding the whole envelope
        session = chat_pb2.Session(id=request.session_id, state="open", node_id=self.hello.node_id, title=request.title)
        await self._reply(
            envelope_id, core_message(open_session_response=chat_pb2.OpenSessionResponse(accepted=session))
        )

    async def _close_requested(self, envelope_id: str, close: chat_pb2.CloseSessionRequest) -> None:
        """Close the session (its turns end), tell a :class:`SessionAware` agent, and confirm."""
        await self._close_session(close.session_id)
        if isinstance(self.agent, SessionAware):
            await self.agent.close_session(close.session_id)
        session = chat_pb2.Session(id=close.session_id, state="closed", node_id=self.hello.node_id)
        await self._reply(
            envelope_id, core_message(close_session_response=chat_pb2.CloseSessionResponse(accepted=session))
        )

    def _cancel_operation(self, target_id: str) -> None:
        """An exec stops (killed/canceled, AOP-workspace 8.3.5); an unknown target is ignored, and an
        upload or file request runs to its end (8.2.4)."""
        canceled = self._cancels.get(target_id)
        if canceled is not None:
            canceled.set()

    def _worker(self, session_id: str) -> _SessionWorker:
        """The session's worker; a new one starts with the caller's turn (queue it before the next await)."""
        worker = self._sessions.get(session_id)
        if worker is None:
            worker = self._sessions[session_id] = _SessionWorker()
            worker.task = asyncio.create_task(self._work(session_id, worker))
        return worker

    async def _accept_turn(self, envelope_id: str, request: chat_pb2.RunTurnRequest) -> None:
        """Queue the turn on its session's worker and accept it; refuse it if its TurnOptions do not decode."""
        try:
            options = turn_options(request)
        except HubError as error:
            refused = chat_pb2.RunTurnResponse(rejected=to_rejection(error))
            await self._reply(envelope_id, core_message(run_turn_response=refused))
            return
        receipt = chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state="running")
        ask = self._ask if self.interactions else None
        opened = self._opened.get(request.session_id) or chat_pb2.OpenSessionRequest()
        spawn = self._spawn if self._subagents else None
        turn = Turn(request, options, self._emit, emitter=self.hello.node_id, ask=ask, session=opened, spawn=spawn)
        turn.uploads = self._uploaded.pop(request.session_id, [])
        self._worker(request.session_id).queue.append(turn)
        await self._reply(envelope_id, core_message(run_turn_response=chat_pb2.RunTurnResponse(accepted=receipt)))

    async def _work(self, session_id: str, worker: _SessionWorker) -> None:
        """Run the session's turns and commands in order until none is left, then let the worker go."""
        try:
            while worker.queue:
                turn = worker.queue.popleft()
                if isinstance(turn, _QueuedCommand):
                    try:
                        await self._run_command(turn)
                    except Exception:
                        log.warning("node %s: command %s could not be answered", self.hello.node_id, turn.task_id)
                    continue
                if turn.canceled.is_set():
                    continue
                worker.current = turn
                try:
                    await self._run(worker, turn)
                except Exception:
                    # Telling the hub failed (its connection is gone, or it refused the event): the hub
                    # ends the turn itself when the node goes; this session's next turns still run.
                    log.warning(
                        "node %s: turn %s could not be reported", self.hello.node_id, turn.turn_id, exc_info=True
                    )
                finally:
                    worker.current = None
        finally:
            # No await between the empty queue and here: a turn accepted later starts a new worker.
            if self._sessions.get(session_id) is worker:
                del self._sessions[session_id]

    async def _run(self, worker: _SessionWorker, turn: Turn) -> None:
        started = turn.event()
        started.turn_started.SetInParent()
        await self._emit(started)
        ended = turn.event()
        worker.running = asyncio.create_task(self.agent.run_turn(turn))
        try:
            ended.turn_ended.stop_reason = await worker.running
        except asyncio.CancelledError:
            # A canceled turn reports its end; a worker cancelled itself (session closed, node
            # stopping) ends silently, as asked, instead of writing to a closing connection.
            worker_task = asyncio.current_task()
            if not turn.canceled.is_set() or (worker_task is not None and worker_task.cancelling()):
                raise
            ended.turn_ended.stop_reason = "canceled"
        except TurnFailed as failure:
            ended.turn_ended.stop_reason = "error"
            ended.turn_ended.error.CopyFrom(
                event_pb2.ProtocolError(code=failure.code, message=failure.message, retryable=failure.retryable)
            )
        except Exception as error:
            log.exception("turn %s failed", turn.turn_id)
            ended.turn_ended.stop_reason = "error"
            ended.turn_ended.error.CopyFrom(
                event_pb2.ProtocolError(code="agent_error", message=f"{type(error).__name__}: {error}")
            )
        finally:
            worker.running = None
        ended.turn_ended.usage.CopyFrom(
            event_pb2.TokenUsage(
                input_tokens=turn.input_tokens,
                output_tokens=turn.output_tokens,
                total_tokens=turn.input_tokens + turn.output_tokens,
            )
        )
        ended.turn_ended.context_tokens = turn.context_tokens
        await self._emit(ended)
        self.stats = counted_turn(self.stats, turn.input_tokens, turn.output_tokens)
        await self._send(envelope_pb2.Envelope(id=new_id("node"), payload=pack(core_message(agent_stats=self.stats))))

    # -- slash commands (AOP-nodes 9.7.4 to 9.7.6) -----------------------------------------

    async def _command_request(self, envelope: envelope_pb2.Envelope, spoken: NamespaceName) -> None:
        """Check a command-namespace message and queue its command; raises ``HubError`` when it does not decode."""
        message: Any = unpack(envelope, spoken.message)
        task_id = envelope.id
        if message.WhichOneof("message") != "request":
            await self._refuse(task_id, Code.INVALID_ARGUMENT, "this node takes only command requests")
            return
        request = message.request
        line = request.line.strip()
        if not line:
            await self._refuse(task_id, Code.INVALID_ARGUMENT, "command request without a line")
            return
        if request.session_id not in self._opened:
            await self._refuse(task_id, Code.COMMAND_FAILED, f'session "{request.session_id}" is not open')
            return
        name = command_name(line)
        if not name:
            await self._refuse(task_id, Code.COMMAND_FAILED, "direct execution requires a command")
            return
        if not self.commands.serves(name):
            await self._refuse(
                task_id, Code.COMMAND_FAILED, f"{name} is not a command of this node; /help lists its commands"
            )
            return
        if not self.command_scopes and self.commands.declares_scopes(line):
            # Nobody checked who sent it: the hub did not accept COMMAND_SCOPES_CAPABILITY.
            await self._refuse(
                task_id, Code.COMMAND_FAILED, f"{name} needs a scope this node's hub does not check: refused"
            )
            return
        command = _QueuedCommand(task_id, spoken.generation, request.session_id, line)
        self._worker(request.session_id).queue.append(command)

    async def _run_command(self, command: _QueuedCommand) -> None:
        """Run a queued command: its output event and ``result``, or ``COMMAND_FAILED``."""
        try:
            output = await self.commands.run(command.session_id, command.line)
        except CommandFailed as failure:
            await self._refuse(command.task_id, Code.COMMAND_FAILED, failure.text)
            return
        except Exception as error:
            log.exception("command %r failed", command.line)
            await self._refuse(command.task_id, Code.COMMAND_FAILED, f"{type(error).__name__}: {error}")
            return
        output = output or CommandOutput("")
        content = [content_pb2.Content(text=content_pb2.TextContent(text=output.text))] if output.text else []
        if content:
            self._command_outputs += 1
            event = event_pb2.Event(id=new_id("evt"), session_id=command.session_id, emitter=self.hello.node_id)
            event.emitted_at.GetCurrentTime()
            event.message.CopyFrom(
                content_pb2.Message(id=f"command-{self._command_outputs}", role="assistant", content=content)
            )
            event.extensions.append(pack(detail_pb2.CommandDetail(line=command.line, presentation=output.presentation)))
            event.extensions.extend(output.extensions)
            await self._emit(event)
        result = message_class(COMMAND, command.generation)(
            result={"command": command.line, "presentation": output.presentation, "content": content}
        )
        await self._send(envelope_pb2.Envelope(id=new_id("node"), reply_to=command.task_id, payload=pack(result)))

    async def _refuse(self, reply_to: str, code: Code, text: str) -> None:
        """Answer with ``protocol_error{code, text}``."""
        await self._reply(reply_to, core_message(protocol_error=event_pb2.ProtocolError(code=code, message=text)))

    async def _cancel_turn(self, envelope_id: str, request: chat_pb2.CancelTurnRequest) -> None:
        worker = self._sessions.get(request.session_id)
        found = False
        if worker is not None:
            if worker.current is not None and worker.current.turn_id == request.turn_id:
                found = True
                worker.current.canceled.set()
                if worker.running is not None:
                    worker.running.cancel()
            else:
                for queued in worker.queue:
                    if isinstance(queued, Turn) and queued.turn_id == request.turn_id:
                        queued.canceled.set()
                        found = True
        receipt = chat_pb2.TurnReceipt(session_id=request.session_id, turn_id=request.turn_id, state="canceled")
        response = (
            chat_pb2.CancelTurnResponse(accepted=receipt)
            if found
            else chat_pb2.CancelTurnResponse(
                rejected=chat_pb2.Rejection(code="NOT_FOUND", message=f"turn {request.turn_id} is not running")
            )
        )
        await self._reply(envelope_id, core_message(cancel_turn_response=response))

    async def _close_session(self, session_id: str) -> None:
        self._opened.pop(session_id, None)
        worker = self._sessions.pop(session_id, None)
        if worker is None:
            return
        if worker.current is not None:
            worker.current.canceled.set()
        for task in (worker.running, worker.task):
            if task is not None:
                task.cancel()

    async def stop(self) -> None:
        """Cancel every turn and worker, and every exec and file request; drop the terminal streams
        (the terminals keep running, AOP-workspace 8.5.1)."""
        for session_id in list(self._sessions) + list(self._opened):
            await self._close_session(session_id)
        for task in list(self._operations.values()):
            task.cancel()
        await asyncio.gather(*self._operations.values(), return_exceptions=True)
        if self._terminal_link is not None:
            await self._terminal_link.close()
            self._terminal_link = None

    # -- the workspace namespaces (AOP-workspace 8.2, 8.3, 8.5) ------------------------------------

    async def _workspace_request(self, envelope: envelope_pb2.Envelope, name: str) -> None:
        """Hand a file, exec or pty message to its service; raises ``HubError`` when it is not served or
        does not decode. File requests and execs run concurrently: their replies may come in any
        order (8.2.13); pty messages are handled in the order they come."""
        services = self.workspace
        if name == _PTY_NAME:
            if services.terminals is None:
                raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken by this node")
            message = unpack(envelope, pty_pb2.ProtocolMessage)
            if self._terminal_link is None:
                self._terminal_link = services.terminals.connect(self._send_pty)
            await self._terminal_link.receive(message)
            return
        if name == _FILE_NAME:
            if services.files is None:
                raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken by this node")
            request = unpack(envelope, file_pb2.ProtocolMessage)
            self._operate(envelope.id, self._file_request(envelope.id, request))
            return
        if services.exec is None:
            raise HubError(Code.UNSUPPORTED_NAMESPACE, f"namespace {name} is not spoken by this node")
        command = unpack(envelope, exec_pb2.ProtocolMessage)
        if command.WhichOneof("message") != "request":
            await self._refuse(envelope.id, Code.OPERATION_FAILED, "this node takes only exec requests")
        elif not command.request.command.strip():
            await self._refuse(envelope.id, Code.INVALID_ARGUMENT, "exec request without a command")
        else:
            self._cancels[envelope.id] = asyncio.Event()
            self._operate(envelope.id, self._exec_request(envelope.id, command.request))

    def _operate(self, envelope_id: str, work: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await work
            except HubError as error:
                await self._refuse(envelope_id, Code(error.code), error.message)
            finally:
                self._cancels.pop(envelope_id, None)
                if self._operations.get(envelope_id) is task:
                    del self._operations[envelope_id]

        task = asyncio.create_task(run())
        self._operations[envelope_id] = task

    async def _send_pty(self, message: pty_pb2.ProtocolMessage) -> None:
        await self._send(envelope_pb2.Envelope(id=new_id("node"), payload=pack(message)))

    async def _file_request(self, envelope_id: str, request: file_pb2.ProtocolMessage) -> None:
        assert self.workspace.files is not None
        result = await self.workspace.files.file(request)
        if request.WhichOneof("message") == "upload_request":
            self._uploaded.setdefault(request.upload_request.session_id, []).append(result.path)
        reply = envelope_pb2.Envelope(
            id=new_id("node"), reply_to=envelope_id, payload=pack(file_pb2.ProtocolMessage(result=result))
        )
        await self._send(reply)

    async def _exec_request(self, envelope_id: str, request: exec_pb2.Request) -> None:
        assert self.workspace.exec is not None

        async def output(chunk: exec_pb2.Output) -> None:
            message = exec_pb2.ProtocolMessage(output=chunk)
            await self._send(envelope_pb2.Envelope(id=new_id("node"), reply_to=envelope_id, payload=pack(message)))

        result = await self.workspace.exec.exec(request, output, self._cancels[envelope_id])
        message = exec_pb2.ProtocolMessage(result=result)
        await self._send(envelope_pb2.Envelope(id=new_id("node"), reply_to=envelope_id, payload=pack(message)))
