"""A raw reference-style agent node that serves slash commands, written from AOP-nodes 9.7 alone (no SDK).

:class:`CommandNode` is a :class:`~tests.support.reference_dispatch.ReferenceAgentNode` that
also does what 9.2.1 and 9.7.4 to 9.7.6 say of a reference agent node's commands:

- right after ``agent_accepted`` it sends its catalog, ``CommandProtocolMessage{catalog}`` of its
  generation (``aiscan.command`` for G2, ``cyber.command`` for G3), with an empty ``reply_to``;
- a command-namespace ``request`` (reply_to = the hub's task id for every answer):
  - without a line: ``protocol_error{INVALID_ARGUMENT}``;
  - for a session it does not have: ``protocol_error{COMMAND_FAILED, session "<id>" is not open}``;
  - a line starting with neither ``/`` nor ``!``: ``COMMAND_FAILED`` (``direct execution requires
    a command``);
  - a verb outside :attr:`CommandNode.verbs`: ``COMMAND_FAILED`` (``command "<verb>" is not a
    Runtime command``);
  - otherwise the output event ``message{id: "command-<n>", role: "assistant"}`` with the
    ``aiscan.agent.CommandDetail{line, presentation}`` extension, no ``turn_id``, the node name as
    emitter, then ``CommandProtocolMessage{result{command: <line>, presentation, content}}``;
- any other case of the namespace: ``protocol_error{INVALID_ARGUMENT}`` (9.9.1).

While :attr:`CommandNode.answer_commands` is false it records requests and answers nothing.
"""

from __future__ import annotations

import contextlib
from typing import Any, Self

from google.protobuf import empty_pb2
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from aiscan.agent import detail_pb2
from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aop import content_pb2, event_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message, pack
from aophub.protocol.node_namespaces import COMMAND, NAMESPACES, Generation
from cyber.command import protocol_pb2 as cyber_command_pb2

from .raw_node import Received
from .reference_dispatch import ReferenceAgentNode, not_open

__all__ = ["CATALOG", "COMMAND_MODULES", "CommandNode", "command_request"]

COMMAND_MODULES: dict[Generation, Any] = {Generation.G2: aiscan_command_pb2, Generation.G3: cyber_command_pb2}
# An agent node's catalog (9.2.2): runtime verbs, a shell pseudo-command, a skill.
CATALOG = [
    ("/status", "/status", "Show LLM, tool, scanner and skill health"),
    ("/clear", "/clear", "Start a new empty context"),
    ("!nmap", "!nmap <target>", "Port scan a target"),
    ("/skill:triage", "/skill:triage", "Triage a finding"),
]


def command_request(item: Received) -> tuple[Generation, Any] | None:
    """The generation and decoded ``CommandProtocolMessage`` of an envelope the hub sent, if it is one."""
    spoken = NAMESPACES.get(item.envelope.payload.type_url.removeprefix(TYPE_URL_PREFIX))
    if spoken is None or spoken.namespace is not COMMAND:
        return None
    message = spoken.message()
    message.ParseFromString(item.envelope.payload.value)
    return spoken.generation, message


class CommandNode(ReferenceAgentNode):
    """A reference agent node with slash commands; see the module docstring."""

    def __init__(self, socket: ClientConnection, node_id: str) -> None:
        super().__init__(socket, node_id)
        self.generation = Generation.G2
        # Verb -> the text its output holds.
        self.verbs: dict[str, str] = {"status": "LLM: ok\ntools: 4", "help": "/status /clear"}
        self.answer_commands = True
        # Every command-namespace message the hub sent: (envelope, generation, message).
        self.commands: list[tuple[Received, Generation, Any]] = []
        self._command_outputs = 0

    @classmethod
    async def serve(
        cls,
        url: str,
        node_id: str,
        generation: Generation = Generation.G2,
        catalog: list[tuple[str, str, str]] = CATALOG,
    ) -> Self:
        """Dial, say hello, wait for ``agent_accepted``, then send the catalog (9.2.1)."""
        node = await cls.dial(url, node_id)
        node.generation = generation
        try:
            await node.hello(("chat",))
            module = COMMAND_MODULES[generation]
            specs = [module.CommandSpec(name=name, usage=usage, description=text) for name, usage, text in catalog]
            await node.send(module.CommandProtocolMessage(catalog=module.CommandCatalog(commands=specs)))
        except BaseException:
            await node.close()
            raise
        return node

    async def __aenter__(self) -> Self:
        return self

    async def _answer(self, item: Received) -> None:
        command = command_request(item)
        if command is None:
            await super()._answer(item)
            return
        generation, message = command
        self.commands.append((item, generation, message))
        if not self.answer_commands:
            return
        with contextlib.suppress(ConnectionClosed):
            await self.answer_command(item.envelope.id, generation, message)

    async def answer_command(self, task_id: str, generation: Generation, message: Any) -> None:
        """Answer one command-namespace message of the hub as a reference node does (module docstring)."""
        if message.WhichOneof("message") != "request":
            await self.fail(task_id, "INVALID_ARGUMENT", "command request is required")
            return
        request = message.request
        line = request.line.strip()
        if not line:
            await self.fail(task_id, "INVALID_ARGUMENT", "command line is required")
            return
        if request.session_id not in self.sessions:
            await self.fail(task_id, "COMMAND_FAILED", not_open(request.session_id))
            return
        if not line.startswith(("/", "!")):
            await self.fail(task_id, "COMMAND_FAILED", "direct execution requires a command")
            return
        verb = line[1:].split()[0].lower()
        if verb not in self.verbs:
            await self.fail(task_id, "COMMAND_FAILED", f'command "{verb}" is not a Runtime command')
            return
        text = self.verbs[verb]
        content = [content_pb2.Content(text=content_pb2.TextContent(text=text))]
        self._command_outputs += 1
        output = content_pb2.Message(id=f"command-{self._command_outputs}", role="assistant", content=content)
        # A runtime event (9.5.5: ``runtime-<seq>``), under the node's current id for the session.
        session_id = self.sessions[request.session_id]
        seq = self.process.seq[session_id] = self.process.seq.get(session_id, 0) + 1
        event = event_pb2.Event(
            id=f"runtime-{seq}", seq=seq, session_id=session_id, emitter=self.process.name, message=output
        )
        event.extensions.append(pack(detail_pb2.CommandDetail(line=line, presentation="preformatted")))
        await self.send(core_message(event=event))
        module = COMMAND_MODULES[generation]
        result = module.CommandResult(command=line, presentation="preformatted", content=content)
        await self.send(module.CommandProtocolMessage(result=result), reply_to=task_id)

    async def fail(self, task_id: str, code: str, text: str) -> None:
        """Answer a command with ``protocol_error{code, text}`` (reply_to = the task id), no event."""
        error = event_pb2.ProtocolError(code=code, message=text)
        await self.send(core_message(protocol_error=error), reply_to=task_id)

    async def command(self, index: int = 0) -> tuple[Received, Generation, Any]:
        """The ``index``-th (0-based) command-namespace message the hub sent, once it has arrived."""
        seen = 0

        def nth(item: Received) -> bool:
            nonlocal seen
            if command_request(item) is None:
                return False
            seen += 1
            return seen > index

        item = await self.wait_for(nth)
        decoded = command_request(item)
        assert decoded is not None
        return (item, *decoded)

    async def barrier(self) -> None:
        """Return once the hub has handled everything this node sent before.

        Sends a payload of a namespace the node channel does not speak and waits for the hub's
        in-band refusal (AOP-nodes 9.1.6): the hub reads a node's envelopes in order.
        """
        probe = await self.send(empty_pb2.Empty())
        await self.wait_for(lambda item: item.envelope.reply_to == probe and item.case == "protocol_error")
