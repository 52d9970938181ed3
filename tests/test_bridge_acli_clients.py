"""Issue 19's done-when for Agent CLI: clients written as the Agent CLI Remote document shows them
(Python ``websockets``, Node ``ws``), with no credential and the document's URL shape
``ws://127.0.0.1:<port>``, talk to ``aophub serve --bridge agent-cli=<its address>`` with the
loopback principal: they chat with the echo agent, are interrupted, and resume after a dropped
connection without a repeated turn.

bridges.md does not reproduce the document's example code, so these clients are ours, written from
its description (the same requests, the same one-socket flow).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from .support.server import ROOT, TOKEN, HubProcess
from .support.wire import AppSocket, kinds, stored

LONG_TEXT = " ".join(f"word{index}" for index in range(60))
ECHO = f"echo: {LONG_TEXT}"
NODE_CLIENT = ROOT / "tests" / "clients" / "agent_cli_client.cjs"
NODE_MODULES = ROOT / "clients" / "ts" / "node_modules"


def _hub(data_dir: Path) -> HubProcess:
    """``aophub serve`` with the echo agent, the Agent CLI root mount on its own address and a loopback principal."""
    command = ["token", "create", "--name", "scripts", "--scope", "app", "--data-dir", str(data_dir)]
    created = subprocess.run(
        [sys.executable, "-m", "aophub", *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    with socket.socket() as probe:  # the root mount names the hub's own address, so the port is chosen here
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bridge = ["--port", str(port), "--bridge", f"agent-cli=127.0.0.1:{port}", "--bridge-anonymous", "agent-cli=scripts"]
    return HubProcess(data_dir, *bridge, "--echo-delay", "0.05")


class DocumentClient:
    """The document's Python client: ``websockets.connect(uri)``, ``json.dumps`` out, ``json.loads`` in."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.websocket: ClientConnection | None = None

    async def connect(self) -> None:
        self.websocket = await connect(self.uri)

    async def send(self, request: dict[str, Any]) -> None:
        assert self.websocket is not None
        await self.websocket.send(json.dumps(request))

    async def recv(self) -> dict[str, Any]:
        assert self.websocket is not None
        async with asyncio.timeout(20):
            response: dict[str, Any] = json.loads(await self.websocket.recv())
        return response

    async def streamed(self, request_id: str, stop_after_chunks: int = 0) -> tuple[str, dict[str, Any] | None]:
        text, chunks = "", 0
        while True:
            frame = await self.recv()
            if frame["request_id"] != request_id:
                continue
            if "Stream" in frame["response"]:
                text += frame["response"]["Stream"]
                chunks += 1
                if chunks == stop_after_chunks:
                    return text, None
            else:
                return text, frame["response"]["Complete"]

    async def close(self) -> None:
        if self.websocket is not None:
            await self.websocket.close()
            self.websocket = None


async def _turns_started(hub: HubProcess) -> list[str]:
    """Every turn_started of every session, read back over native AOP."""
    async with httpx.AsyncClient(base_url=hub.http, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        listed = await http.post("/aophub.v1.SessionService/ListSessions", json={"include_closed": True})
    found = []
    async with await AppSocket.open(hub.app_url) as app:
        for session in listed.json().get("sessions", []):
            found += [kind for kind in kinds(await stored(app, session["id"])) if kind == "turn_started"]
    return found


@pytest.mark.timeout(90)
async def test_the_documents_python_client_chats_is_interrupted_and_resumes(tmp_path: Path) -> None:
    hub = _hub(tmp_path).start()
    try:
        uri = f"ws://127.0.0.1:{hub.port}"
        client = DocumentClient(uri)
        await client.connect()
        await client.send({"request_id": "test_001", "input": {"Text": "Hello"}, "": False, "use_tools": True})
        response = await client.recv()
        assert response == {
            "request_id": "test_001",
            "response": {"Text": "echo: Hello"},
            "error": None,
            "token_usage": response["token_usage"],
        }

        await client.send({"request_id": "stream_001", "input": {"Text": LONG_TEXT}, "": True, "use_tools": True})
        await client.streamed("stream_001", stop_after_chunks=1)
        await client.send({"request_id": "interrupt_001", "input": "Interrupt"})
        _, complete = await client.streamed("stream_001")
        assert complete is not None
        assert complete["interrupted"] is True
        await client.close()

        request = {"request_id": "resume_001", "input": {"Text": LONG_TEXT}, "": True, "use_tools": True}
        dropped = DocumentClient(uri)
        await dropped.connect()
        await dropped.send(request)
        before, _ = await dropped.streamed("resume_001", stop_after_chunks=1)
        assert dropped.websocket is not None
        dropped.websocket.transport.abort()  # the connection drops mid-answer, without a close handshake
        retry = DocumentClient(uri)
        await retry.connect()
        await retry.send(request)
        text, complete = await retry.streamed("resume_001")
        await retry.close()
        assert before
        assert ECHO.startswith(before)
        assert text == ECHO  # the whole answer, once
        assert complete is not None
        assert complete["interrupted"] is False
        assert len(await _turns_started(hub)) == 3  # chat, interrupted, resumed: the retry ran no turn
    finally:
        hub.terminate()


@pytest.mark.timeout(90)
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(not (NODE_MODULES / "ws").is_dir(), reason="clients/ts/node_modules is missing (make install)")
async def test_the_documents_node_client_chats_is_interrupted_and_resumes(tmp_path: Path) -> None:
    hub = _hub(tmp_path).start()
    try:
        node = await asyncio.create_subprocess_exec(
            "node",
            str(NODE_CLIENT),
            str(hub.port),
            LONG_TEXT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
        )
        async with asyncio.timeout(60):
            out, err = await node.communicate()
        assert node.returncode == 0, err.decode()
        flows = {line["flow"]: line for line in map(json.loads, out.decode().splitlines())}
        assert flows["chat"]["frame"]["response"] == {"Text": "echo: Hello"}
        assert flows["chat"]["frame"]["error"] is None
        assert flows["interrupt"]["complete"]["interrupted"] is True
        assert ECHO.startswith(flows["resume"]["before"])
        assert flows["resume"]["text"] == ECHO
        assert flows["resume"]["complete"]["interrupted"] is False
        assert len(await _turns_started(hub)) == 3
    finally:
        hub.terminate()
