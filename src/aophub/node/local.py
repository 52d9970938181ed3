"""The built-in node: an agent running inside the hub process.

It speaks to the hub through the same envelope interface as a remote node,
over an in-process link instead of a WebSocket: the hub's envelopes reach it in
order through a queue, as a socket would; its own envelopes go straight to the
hub. The events of its turns (most of what it sends) skip the envelope: they
are handed to the hub as they are, which saves encoding and decoding each one.
"""

from __future__ import annotations

import asyncio
import logging

from aop import envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.hub import Hub
from aophub.hub.nodes import NodeGone, NodeHandle
from aophub.node.commands import CommandCall, CommandFailed, NodeCommands
from aophub.node.runtime import INTERACTIONS_CAPABILITY, SUBAGENTS_CAPABILITY, Agent, NodeRuntime, runtime_info
from aophub.node.workspace import WorkspaceServices
from aophub.protocol.command_scopes import COMMAND_SCOPES_CAPABILITY
from aophub.protocol.errors import HubError

__all__ = ["LOCAL_NODE_ID", "LocalNode"]

log = logging.getLogger(__name__)

LOCAL_NODE_ID = "local"


class LocalNode:
    """Runs ``agent`` as node ``node_id`` attached to ``hub`` in this process."""

    def __init__(
        self,
        hub: Hub,
        agent: Agent,
        *,
        node_id: str = LOCAL_NODE_ID,
        name: str = "Built-in agent",
        commands: NodeCommands | None = None,
        workspace: WorkspaceServices | None = None,
    ) -> None:
        """``commands``: the agent's slash commands; the node adds ``/title`` (it renames the hub's session).
        ``workspace``: the file, exec and terminal services it serves (:mod:`aophub.node.workspace`)."""
        self.hub = hub
        self.workspace = workspace
        served = workspace.capabilities() if workspace is not None else []
        self.hello = protocol_pb2.AgentHello(
            node_id=node_id,
            name=name,
            capabilities=["chat", INTERACTIONS_CAPABILITY, SUBAGENTS_CAPABILITY, COMMAND_SCOPES_CAPABILITY, *served],
            runtime=runtime_info(),
        )
        commands = commands or NodeCommands()
        commands.add("/title", self._title, usage="<title>", description="Rename the session")
        self.runtime = NodeRuntime(
            self.hello, agent, self._to_hub, emit=self._event_to_hub, commands=commands, workspace=workspace
        )
        self.runtime.interactions = True  # the hub in this process speaks them
        self.runtime.subagents = True  # and runs subagents (aophub.hub.subagents)
        self.runtime.command_scopes = True  # and checks the scopes of its commands
        self._inbox: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
        self._handle: NodeHandle | None = None
        self._worker: asyncio.Task[None] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"<LocalNode {self.hello.node_id} attached={self._handle is not None}>"

    async def start(self) -> None:
        """Attach to the hub and announce the agent's status."""
        self._worker = asyncio.create_task(self._work())
        self._handle = await self.hub.attach_node(self.hello, self, built_in=True)
        await self.runtime.send_catalog()
        await self.runtime.announce()

    async def announce(self) -> None:
        """Report the agent's status again (after a configuration change)."""
        if self._handle is not None:
            await self.runtime.announce()

    async def stop(self) -> None:
        self._closed = True
        await self.runtime.stop()
        if self.workspace is not None and self.workspace.terminals is not None:
            await self.workspace.terminals.close()  # kill_cause "shutdown" (AOP-workspace 8.5.14)
        if self._worker is not None:
            self._worker.cancel()
        if self._handle is not None:
            await self.hub.detach_node(self._handle)

    async def _title(self, call: CommandCall) -> str:
        """``/title <title>``: rename the session, as ``UpdateSession`` does."""
        if not call.args:
            raise CommandFailed("usage: /title <title>")
        try:
            await self.hub.update_session(call.session_id, title=call.args, archived=None)
        except HubError as error:
            raise CommandFailed(error.message) from None
        return f"Title set to: {call.args}"

    # NodeLink: the hub sends to the node.
    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        if self._closed:
            raise NodeGone(self.hello.node_id)
        self._inbox.put_nowait(envelope)

    async def close(self, reason: str) -> None:
        log.info("built-in node %s closed: %s", self.hello.node_id, reason)
        self._closed = True

    async def _work(self) -> None:
        while True:
            envelope = await self._inbox.get()
            try:
                await self.runtime.receive(envelope)
            except Exception:
                log.exception("built-in node failed to handle an envelope")

    async def _to_hub(self, envelope: envelope_pb2.Envelope) -> None:
        if self._handle is not None and not self._closed:
            await self.hub.node_message(self._handle, envelope)

    async def _event_to_hub(self, event: event_pb2.Event) -> None:
        if self._handle is not None and not self._closed:
            await self.hub.node_event(self._handle, event)
