"""A fake ZCLAW server (bridges.md 3.1, as observed on ZCLAW 0.4.0), started by the tests, scriptable.

``GET /api/health`` and ``GET /api/agents`` (the agents given), and ``/api/agents/{id}/ws`` for
each agent (another or malformed id: HTTP 400). On connect it sends ``connected``; ``ping`` gets
``pong``. Every other client frame is put in :attr:`FakeZclawServer.received` as
``(agent id, frame)``; :meth:`send` answers on that agent's socket.

With ``echo=True`` it answers ``message`` frames itself in the documented order: ``typing`` start,
``agents_updated``, ``phase`` streaming, ``text_delta`` per word of ``echo: <content>`` (``delay``
seconds apart), ``phase`` done, ``typing`` stop, ``response`` with usage. Like the real server, it
cannot be interrupted: an answer always runs to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

__all__ = ["FakeZclawServer", "fake_zclaw_server"]

Frame = dict[str, Any]
_WS_PATH = re.compile(r"^/api/agents/([^/]+)/ws$")


def _json(status: int, body: Any) -> Response:
    data = json.dumps(body).encode()
    headers = Headers([("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return Response(status, "OK" if status == 200 else "Bad Request", headers, data)


class FakeZclawServer:
    def __init__(self, agents: list[Frame] | None = None, *, echo: bool = False, delay: float = 0.0) -> None:
        self.agents = agents or [
            {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, "fake-zclaw-agent-1")),
                "name": "Researcher",
                "model_provider": "anthropic",
                "model_name": "claude-test",
                "state": "Running",
            }
        ]
        self.echo = echo
        self.delay = delay
        self.received: asyncio.Queue[tuple[str, Frame]] = asyncio.Queue()
        self.sockets: dict[str, ServerConnection] = {}
        self.connected: dict[str, asyncio.Event] = {agent["id"]: asyncio.Event() for agent in self.agents}
        # The agent id of each WebSocket that closed, in order.
        self.disconnected: asyncio.Queue[str] = asyncio.Queue()
        self.agent_list_reads = 0
        # Every frame in ("in") and out ("out"), in the order they passed.
        self.transcript: list[tuple[str, Frame]] = []
        self._server: Server | None = None
        self._answers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def add_agent(self, agent: Frame) -> None:
        """A new agent, listed from the next ``GET /api/agents`` on."""
        self.agents.append(agent)
        self.connected[agent["id"]] = asyncio.Event()

    @property
    def first_agent(self) -> str:
        return str(self.agents[0]["id"])

    async def start(self) -> FakeZclawServer:
        self._server = await serve(self._serve, "127.0.0.1", 0, process_request=self._http)
        return self

    async def stop(self) -> None:
        for task in self._answers:
            task.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/api/health":
            return _json(200, {"status": "ok", "version": "0.4.0"})
        if path == "/api/agents":
            self.agent_list_reads += 1
            return _json(200, self.agents)
        if path == "/api/hands":
            return _json(200, [])
        found = _WS_PATH.match(path)
        if (
            found is None
            or found.group(1) not in self.connected
            or "upgrade" not in request.headers.get("Connection", "").lower()
        ):
            return _json(400, {"error": "Invalid agent ID"})
        return None

    async def _serve(self, socket: ServerConnection) -> None:
        assert socket.request is not None
        found = _WS_PATH.match(socket.request.path.split("?", 1)[0])
        assert found is not None
        agent_id = found.group(1)
        self.sockets[agent_id] = socket
        await socket.send(json.dumps({"type": "connected", "agent_id": agent_id}))
        self.connected[agent_id].set()
        with contextlib.suppress(ConnectionClosed):
            async for message in socket:
                try:
                    frame = json.loads(message)
                except ValueError:
                    continue
                self.transcript.append(("in", frame))
                if isinstance(frame, dict) and frame.get("type") == "ping":
                    await socket.send(json.dumps({"type": "pong"}))
                elif self.echo and isinstance(frame, dict) and frame.get("type") == "message":
                    task = asyncio.create_task(self._answer(agent_id, str(frame.get("content", ""))))
                    self._answers.add(task)
                    task.add_done_callback(self._answers.discard)
                else:
                    self.received.put_nowait((agent_id, frame))
        if self.sockets.get(agent_id) is socket:
            del self.sockets[agent_id]
            self.connected[agent_id].clear()
        self.disconnected.put_nowait(agent_id)

    async def _answer(self, agent_id: str, content: str) -> None:
        words = f"echo: {content}".split(" ")
        await self.send({"type": "typing", "state": "start"}, agent_id)
        await self.send({"type": "agents_updated", "agents": self.agents}, agent_id)
        await self.send({"type": "phase", "phase": "streaming"}, agent_id)
        for index, word in enumerate(words):
            await self.send({"type": "text_delta", "content": word if index == 0 else " " + word}, agent_id)
            if self.delay:
                await asyncio.sleep(self.delay)
        await self.send({"type": "phase", "phase": "done"}, agent_id)
        await self.send({"type": "typing", "state": "stop"}, agent_id)
        answer = {"type": "response", "content": " ".join(words)}
        await self.send({**answer, "input_tokens": len(content.split()), "output_tokens": len(words)}, agent_id)

    async def send(self, frame: Frame, agent_id: str | None = None) -> None:
        """Send one frame on an agent's socket (default: the first agent's)."""
        self.transcript.append(("out", frame))
        await self.sockets[agent_id or self.first_agent].send(json.dumps(frame))

    async def next_message(self, timeout: float = 10.0) -> tuple[str, Frame]:
        """``(agent id, frame)`` of the next frame a client sent (that the server did not answer itself)."""
        async with asyncio.timeout(timeout):
            return await self.received.get()


@contextlib.asynccontextmanager
async def fake_zclaw_server(agents: list[Frame] | None = None, **options: Any) -> AsyncIterator[FakeZclawServer]:
    server = await FakeZclawServer(agents, **options).start()
    try:
        yield server
    finally:
        await server.stop()
