"""A fake Agent CLI Remote server (bridges.md 2.1, protocol v1.7.0), started by the tests, scriptable.

One WebSocket at ``/``; every message is a JSON text frame: ``RemoteRequest`` in, ``RemoteResponse``
out. Each request is read with the client bridge's parser
(:func:`aophub.bridges.acr.translator.parse_request`), so what a node bridge sends must be a valid
``RemoteRequest`` of v1.7.0; one that is not gets the documented ``"Failed to parse request: ..."``
error frame (and is recorded in :attr:`rejected`). It answers ``GetCommands`` with
:attr:`FakeAgentCliServer.commands` and ``ClearContext`` with ``Text ""`` by itself. Everything else
the client sends is put in :attr:`received` (and ``ClearContext`` too, so a test can see it);
:meth:`next_request` takes it and :meth:`send` answers.

With ``echo=True`` it also answers like a tiny agent: a ``Text`` input streams ``echo: <text>`` word
by word (``Stream`` frames, ``delay`` seconds apart) and ends with ``Complete`` and usage; an
``Interrupt`` stops the running answer with ``Complete{interrupted: true}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from aophub.bridges.acr.translator import ParseFailure, parse_request

__all__ = ["FakeAgentCliServer", "fake_agent_cli_server", "response"]

Frame = dict[str, Any]


def response(request_id: str, content: Any, *, error: str | None = None, token_usage: Any = None) -> Frame:
    """One ``RemoteResponse``."""
    return {"request_id": request_id, "response": content, "error": error, "token_usage": token_usage}


def _variant(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        return str(next(iter(value)))
    return ""


class FakeAgentCliServer:
    def __init__(self, *, echo: bool = False, delay: float = 0.0, commands: list[Frame] | None = None) -> None:
        self.echo = echo
        self.delay = delay
        self.commands = commands if commands is not None else [{"name": "model", "description": "Show the model"}]
        self.received: asyncio.Queue[Frame] = asyncio.Queue()
        self.log: list[Frame] = []
        self.rejected: list[str] = []
        # Every frame in ("in") and out ("out"), in the order they passed.
        self.transcript: list[tuple[str, Frame]] = []
        self.connections = 0
        self.connected = asyncio.Event()
        self._socket: ServerConnection | None = None
        self._server: Server | None = None
        self._answers: dict[str, asyncio.Task[None]] = {}

    @property
    def url(self) -> str:
        assert self._server is not None
        port = next(iter(self._server.sockets)).getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    async def start(self) -> FakeAgentCliServer:
        self._server = await serve(self._serve, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        for task in self._answers.values():
            task.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, socket: ServerConnection) -> None:
        self._socket = socket
        self.connections += 1
        self.connected.set()
        with contextlib.suppress(ConnectionClosed):
            async for message in socket:
                try:
                    parse_request(str(message))
                except ParseFailure as failure:
                    self.rejected.append(str(message))
                    answer = response(
                        failure.request_id, {"Text": ""}, error=f"Failed to parse request: {failure.detail}"
                    )
                    await self.send(answer)
                    continue
                frame = json.loads(message)
                self.log.append(frame)
                self.transcript.append(("in", frame))
                await self._handle(frame)
        if self._socket is socket:
            self._socket = None
            self.connected.clear()

    async def _handle(self, frame: Frame) -> None:
        request_id = str(frame.get("request_id", ""))
        kind = _variant(frame.get("input"))
        if kind == "GetCommands":
            text = json.dumps({"commands": self.commands, "count": len(self.commands)})
            await self.send(response(request_id, {"Text": text}))
            return
        if kind == "ClearContext":
            await self.send(response(request_id, {"Text": ""}))
        if self.echo and kind in ("Text", "Interrupt"):
            self._echo(request_id, kind, frame)
            return
        self.received.put_nowait(frame)

    def _echo(self, request_id: str, kind: str, frame: Frame) -> None:
        if kind == "Interrupt":
            for running in self._answers.values():
                running.cancel()
            return
        self._answers[request_id] = asyncio.create_task(self._answer(request_id, str(frame["input"]["Text"])))

    async def _answer(self, request_id: str, text: str) -> None:
        words = f"echo: {text}".split(" ")
        try:
            for index, word in enumerate(words):
                await self.send(response(request_id, {"Stream": word if index == 0 else " " + word}))
                if self.delay:
                    await asyncio.sleep(self.delay)
            usage = {"prompt_tokens": len(text.split()), "completion_tokens": len(words), "total_tokens": 0}
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            await self.send(response(request_id, {"Complete": {"token_usage": usage, "interrupted": False}}))
        except asyncio.CancelledError:
            await self.send(response(request_id, {"Complete": {"token_usage": None, "interrupted": True}}))
        finally:
            self._answers.pop(request_id, None)

    async def send(self, frame: Frame) -> None:
        """Send one frame to the connected client."""
        assert self._socket is not None, "no client is connected"
        self.transcript.append(("out", frame))
        await self._socket.send(json.dumps(frame))

    async def next_request(self, timeout: float = 10.0) -> Frame:
        """The next frame the client sent (that was not answered by the server itself)."""
        async with asyncio.timeout(timeout):
            return await self.received.get()

    async def drop_connection(self) -> None:
        """Close the client's connection (as a restarting agent server would)."""
        if self._socket is not None:
            await self._socket.close()


@contextlib.asynccontextmanager
async def fake_agent_cli_server(**options: Any) -> AsyncIterator[FakeAgentCliServer]:
    server = await FakeAgentCliServer(**options).start()
    try:
        yield server
    finally:
        await server.stop()
