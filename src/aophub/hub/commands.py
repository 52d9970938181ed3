"""Slash commands (AOP-nodes 9.7): what the hub does with a command line an app sends for a session.

An app sends ``CommandProtocolMessage{request{session_id, line}}`` on the application
channel, or calls ``SessionService.RunCommand``; both end in :meth:`SessionCommands.run`:

1. an unknown session is refused (``NOT_FOUND``, worded as every other unknown session);
2. the line is stored in the session as a user ``message`` under the hub's emitter, before
   anything else, even when it is then refused;
3. the verb (the word after a leading ``/``, lower-cased) decides: ``/help`` (the session's
   menu, :func:`session_menu`) and ``/agents`` (the connected nodes) are run by the hub as a
   system ``message``; the verbs in :data:`REFUSED` are refused (``FAILED_PRECONDITION``:
   they have their own request); everything else, ``!`` lines and plain text included, is
   forwarded to the session's node (``UNAVAILABLE`` when it is offline), unless the node's
   catalog declares a scope for it that the caller lacks (``PERMISSION_DENIED``, naming the
   scope; :mod:`aophub.protocol.command_scopes`);
4. a forwarded command is sent after the session is open on the node's connection (9.3.2), as
   ``CommandProtocolMessage{request}`` in the node's generation (9.0.5.2; G2 for a node that
   never spoke the namespace), with a fresh task id as envelope id. The receipt
   (:class:`CommandReceipt`, ``operation_id`` = that task id) is returned once it is sent; the
   node's answer is awaited in the background, at most ``timeout`` seconds. Its ``result``
   completes the task (the node's output comes as an event of the session, routed by "session
   open on this node"); a ``protocol_error`` (``COMMAND_FAILED``, or ``UNSUPPORTED_NAMESPACE``
   from a node that serves no commands), no answer in time, or the node leaving becomes an
   ``error`` event in the session with the node's (or the hub's) text.

A session has at most ``max_pending`` forwarded commands awaiting their node's answer;
another is refused ``RESOURCE_EXHAUSTED``. Commands are not journaled (9.7.2): a repeated
request runs the command again. The caller maps refusals to its wire: the application
channel answers every one ``COMMAND_FAILED`` with the same text (9.7.1), the RPC a Connect code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from google.protobuf.message import Message

from aop import content_pb2, event_pb2, protocol_pb2
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope
from aophub.hub.live_session import LiveSession, LiveSessions
from aophub.hub.node_requests import NodeRequests
from aophub.hub.nodes import NodeGone, NodeHandle, NodeRegistry
from aophub.hub.request_checks import check_id
from aophub.ids import IdGenerator
from aophub.protocol.command_scopes import declared_scopes
from aophub.protocol.errors import Code, HubError
from aophub.protocol.node_namespaces import COMMAND, NAMESPACES, Generation, message_class
from aophub.v1 import agent_pb2

__all__ = [
    "COMMAND_TIMEOUT",
    "HUB_COMMANDS",
    "MAX_LINE_BYTES",
    "MAX_PENDING_COMMANDS",
    "REFUSED",
    "CommandReceipt",
    "SessionCommands",
    "session_menu",
    "verb_of",
]

log = logging.getLogger(__name__)

# How long the hub waits for a node's answer to a forwarded command (a node runs a session's
# commands behind its running turn, 9.4.4), and how many may wait at once per session.
COMMAND_TIMEOUT = 600.0
MAX_PENDING_COMMANDS = 16
# A command line is stored as one event: bounded well below any frame, so every page of the
# session's history stays deliverable.
MAX_LINE_BYTES = 64 * 1024

HUB_COMMANDS = (
    # The hub's own verbs come first in every menu (AOP-nodes 9.7.8).
    agent_pb2.Command(name="help", description="List the commands of this session", source="hub"),
    agent_pb2.Command(name="agents", description="List the connected nodes", source="hub"),
)

# Verbs the hub refuses: each has its own request (AOP-nodes 9.7.1, 9.7.7). A forwarded /clear
# would rotate the session on a reference node (9.8); ResetSession gives a fresh one instead.
REFUSED = {
    "clear": "clear requires ResetSession",
    "stop": "stop requires CancelTurn",
    "exit": "exit requires CloseSession",
    "quit": "exit requires CloseSession",
    "continue": "continue requires RunTurn",
    "followup": "followup requires RunTurn",
    "scan": "scan is not available through chat: use ScanService.SubmitScan",
}


@dataclass(frozen=True)
class CommandReceipt:
    """A command the hub ran or forwarded: its task id and session (state "running")."""

    operation_id: str
    session_id: str


def verb_of(line: str) -> str:
    """The command's verb: the word after a leading ``/``, lower-cased; ``""`` for any other line."""
    if not line.startswith("/"):
        return ""
    words = line[1:].split(maxsplit=1)
    return words[0].lower() if words else ""


def session_menu(node: NodeHandle | None) -> list[agent_pb2.Command]:
    """A session's command menu: the hub's verbs, then its node's catalog (none while it is offline)."""
    return [*HUB_COMMANDS, *(node.commands if node is not None else ())]


def _typed(command: agent_pb2.Command) -> str:
    """A menu entry as typed: verbs with their ``/``, shell pseudo-commands with their ``!``."""
    name = command.name if command.name.startswith("!") else "/" + command.name
    return f"{name} {command.usage}" if command.usage else name


class SessionCommands:
    """Runs and forwards sessions' command lines; see the module docstring."""

    def __init__(
        self,
        sessions: LiveSessions,
        nodes: NodeRegistry,
        *,
        node_requests: NodeRequests,
        spawn: Callable[[Awaitable[None]], None],
        ids: IdGenerator,
        timeout: float = COMMAND_TIMEOUT,
        max_pending: int = MAX_PENDING_COMMANDS,
    ) -> None:
        self._sessions = sessions
        self._nodes = nodes
        self._node_requests = node_requests
        self._spawn = spawn
        self._ids = ids
        self.timeout = timeout
        self.max_pending = max_pending
        # Session id -> forwarded commands awaiting their node's answer.
        self._pending: dict[str, int] = {}
        # The nodes online on other hub replicas, for /agents (set by aophub.cluster.replica).
        self.nodes_elsewhere: Callable[[], Iterable[agent_pb2.Agent]] = tuple

    def __repr__(self) -> str:
        return f"<SessionCommands pending={sum(self._pending.values())} timeout={self.timeout:g}>"

    def pending(self, session_id: str) -> int:
        """Forwarded commands of the session still awaiting their node's answer."""
        return self._pending.get(session_id, 0)

    async def run(self, session_id: str, line: str, caller: Principal = ACCESS_KEY_PRINCIPAL) -> CommandReceipt:
        """Run or forward one command line of a session (see the module docstring); its receipt.

        Raises :class:`HubError`: ``INVALID_ARGUMENT`` (no session id, no line, a line over
        :data:`MAX_LINE_BYTES`), ``NOT_FOUND`` (also a session ``caller`` may not see),
        ``FAILED_PRECONDITION`` (a closed session, a refused verb, a node refusing the open),
        ``PERMISSION_DENIED`` (``caller`` lacks a scope the node declares for the command),
        ``UNAVAILABLE`` (the node is offline or leaves), ``RESOURCE_EXHAUSTED``.
        """
        if not session_id:
            raise HubError(Code.INVALID_ARGUMENT, "session_id is required")
        check_id("session_id", session_id)
        if not line.strip():
            raise HubError(Code.INVALID_ARGUMENT, "line is required: a command such as /help")
        if len(line) > MAX_LINE_BYTES // 4 and (size := len(line.encode())) > MAX_LINE_BYTES:
            raise HubError(
                Code.INVALID_ARGUMENT, f"line is {size} bytes long; a command line is at most {MAX_LINE_BYTES}"
            )
        session = await self._sessions.require(session_id, caller)
        if session.closed:
            raise HubError(Code.FAILED_PRECONDITION, f"session {session_id} is closed")
        message = content_pb2.Message(id=self._ids("msg"), role="user", content=[_text(line)])
        await session.log.publish(self._sessions.event(session, message=message))
        verb = verb_of(line)
        node = self._nodes.get(session.record.node_id)
        if verb == "help":
            await self._say(session, self._help(node))
            return CommandReceipt(self._ids("cmd"), session.id)
        if verb == "agents":
            await self._say(session, self._agents())
            return CommandReceipt(self._ids("cmd"), session.id)
        refusal = REFUSED.get(verb)
        if refusal is not None:
            raise HubError(Code.FAILED_PRECONDITION, refusal)
        if node is None:
            raise HubError(Code.UNAVAILABLE, f"node {session.record.node_id} is offline", retryable=True)
        _check_command_scopes(node, line, caller)
        return await self._forward(session, node, line)

    # -- run by the hub -------------------------------------------------------------

    @staticmethod
    def _help(node: NodeHandle | None) -> str:
        lines = ["Commands of this session:"]
        lines += [f"  {_typed(command)}  {command.description}  ({command.source})" for command in session_menu(node)]
        if node is None:
            lines.append("(the session's node is offline: its commands are listed once it is back)")
        return "\n".join(lines)

    def _agents(self) -> str:
        """The nodes connected to this hub and, over replicas, to the others, by id."""
        nodes = {node.node_id: (node.hello, node.status) for node in self._nodes.all()}
        for agent in self.nodes_elsewhere():
            nodes.setdefault(agent.node_id, (agent.hello, agent.status))
        if not nodes:
            return "No node is connected."
        lines = ["Connected nodes:"]
        for node_id, (hello, status) in sorted(nodes.items()):
            lines.append(f"  {node_id}  {hello.name or node_id}  ({status.model or 'no model reported'})")
        return "\n".join(lines)

    async def _say(self, session: LiveSession, text: str) -> None:
        """Store a system message of the hub in the session."""
        message = content_pb2.Message(id=self._ids("msg"), role="system", content=[_text(text)])
        await session.log.publish(self._sessions.event(session, message=message))

    # -- forwarded to the node ------------------------------------------------------

    async def _forward(self, session: LiveSession, node: NodeHandle, line: str) -> CommandReceipt:
        if self.pending(session.id) >= self.max_pending:
            raise HubError(
                Code.RESOURCE_EXHAUSTED,
                f"session {session.id} already has {self.max_pending} commands waiting for node {node.node_id}"
                " (aophub serve --max-pending-commands); wait for their output",
                retryable=True,
            )
        self._pending[session.id] = self.pending(session.id) + 1  # taken before any await: the bound holds
        task_id = self._ids("cmd")
        try:
            try:
                refusal = await self._node_requests.ensure_open(node, session.reopen_request())
            except NodeGone:
                raise HubError(Code.UNAVAILABLE, f"node {node.node_id} is offline", retryable=True) from None
            if refusal is not None:
                raise HubError(Code.FAILED_PRECONDITION, f"node {node.node_id}: {refusal}")
            generation = node.generation or Generation.G2
            request = message_class(COMMAND, generation)(request={"session_id": session.id, "line": line})
            try:
                answer = node.expect(task_id)
                await node.send(task_id, request)
                # The node runs it in the session's queue: a turn sent meanwhile waits behind it (9.4.4, 9.8.5).
                node.operation_on_node(session.id, task_id, running=True)
            except NodeGone:
                node.forget(task_id)
                raise HubError(Code.UNAVAILABLE, f"node {node.node_id} is offline", retryable=True) from None
        except BaseException:
            self._release(session.id)
            raise
        log.info("session %s: command %s forwarded to node %s", session.id, task_id, node.node_id)
        self._spawn(self._outcome(session.id, node, task_id, answer))
        return CommandReceipt(task_id, session.id)

    async def _outcome(self, session_id: str, node: NodeHandle, task_id: str, answer: asyncio.Future[Message]) -> None:
        """Wait for the node's answer to a forwarded command; a failure becomes an ``error`` event.

        The command's slot in the session's bound frees once that is done (or the hub stops).
        """
        try:
            await self._settle(session_id, node, task_id, answer)
        finally:
            self._release(session_id)

    async def _settle(self, session_id: str, node: NodeHandle, task_id: str, answer: asyncio.Future[Message]) -> None:
        failure: event_pb2.ProtocolError | None
        try:
            outcome: Message = await node.answer(answer, self.timeout)
        except TimeoutError:
            failure = event_pb2.ProtocolError(
                message=f"node {node.node_id} did not finish the command within {self.timeout:g} s"
            )
        except NodeGone:
            failure = event_pb2.ProtocolError(message=f"node {node.node_id} left before the command finished")
        else:
            failure = _failure(outcome)
        finally:
            node.forget(task_id)
            node.operation_on_node(session_id, task_id, running=False)
        if failure is None:
            return
        log.info("session %s: command %s failed on node %s: %s", session_id, task_id, node.node_id, failure.message)
        session = await self._sessions.get(session_id)
        if session is not None and not session.closed:  # nothing follows a session's session_ended
            await session.log.publish(self._sessions.event(session, error=failure))

    def _release(self, session_id: str) -> None:
        left = self.pending(session_id) - 1
        if left > 0:
            self._pending[session_id] = left
        else:
            self._pending.pop(session_id, None)


def _check_command_scopes(node: NodeHandle, line: str, caller: Principal) -> None:
    """Raise unless ``caller`` holds every scope ``node``'s catalog declares for ``line``
    (:mod:`aophub.protocol.command_scopes`; a scope the hub does not know counts as admin).

    ``UNAVAILABLE`` (retryable) while a node that declares scopes has not listed its commands yet;
    ``PERMISSION_DENIED`` naming the missing scope.
    """
    if node.scoped_catalog_due:
        raise HubError(
            Code.UNAVAILABLE, f"node {node.node_id} has not listed its commands yet; try again", retryable=True
        )
    for declared in declared_scopes(node.commands, line):
        try:
            need = Scope(declared)
        except ValueError:
            need = Scope.ADMIN
        caller.require(need, f"{line.split(maxsplit=1)[0]} on node {node.node_id}")


def _failure(outcome: Message) -> event_pb2.ProtocolError | None:
    """The session's ``error`` for a node's answer to a command; ``None`` for a ``result``.

    ``COMMAND_FAILED`` keeps only the node's text (an empty code, as the reference hub stores
    it, 9.7.6); any other protocol error keeps its code too.
    """
    if isinstance(outcome, protocol_pb2.ProtocolMessage):
        if outcome.WhichOneof("message") == "protocol_error":
            error = outcome.protocol_error
            code = "" if error.code == Code.COMMAND_FAILED else error.code
            return event_pb2.ProtocolError(code=code, message=error.message or "the node refused the command")
        return event_pb2.ProtocolError(message=f"the node answered the command with {outcome.WhichOneof('message')}")
    spoken = NAMESPACES.get(outcome.DESCRIPTOR.full_name)
    if spoken is not None and spoken.namespace is COMMAND and outcome.WhichOneof("message") == "result":
        return None
    return event_pb2.ProtocolError(message=f"the node answered the command with {outcome.DESCRIPTOR.full_name}")


def _text(text: str) -> content_pb2.Content:
    return content_pb2.Content(text=content_pb2.TextContent(text=text))
