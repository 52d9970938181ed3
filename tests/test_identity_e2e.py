"""End-to-end: issue 12's "Done when", as a new user does it with the real commands and sockets.

A new user creates, with ``aophub token create`` on the stopped hub's data directory, an ``app``
token for a phone and a ``node`` token for a laptop. The hub starts; the laptop runs ``aophub
node`` with its token (from a file); the phone opens a session on the laptop's node and a turn
is served there. The phone's token cannot reach the admin plane (ConfigService, TokenService:
403) nor anyone else's session (refused as an unknown session).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import httpx
from google.protobuf.message import Message

from aop import chat_pb2
from aophub.v1 import agent_pb2, config_pb2, session_pb2, token_pb2

from .support.lifecycle import checked_hub
from .support.remote import ChildProcess, aophub_node, node_connected, offline_environment
from .support.rpc import finish_turn
from .support.server import ROOT, TOKEN
from .support.wire import AppSocket


async def token_create(data_dir: Path, *args: str) -> str:
    """``aophub token create ARGS --data-dir DATA_DIR`` in a subprocess; the secret it prints."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "aophub", "token", "create", *args, "--data-dir", str(data_dir)),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=offline_environment(),
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip()


async def call(http: httpx.AsyncClient, secret: str, path: str, request: Message) -> httpx.Response:
    """A Connect unary call with ``secret`` as the bearer credential."""
    headers = {"content-type": "application/proto", "authorization": f"Bearer {secret}"}
    return await http.post(f"/aophub.v1.{path}", content=request.SerializeToString(), headers=headers)


async def test_a_phone_and_a_laptop_of_a_new_user(tmp_path: Path) -> None:
    """The laptop's node serves the phone's turn; the phone reaches neither the admin plane nor others' sessions."""
    hub_dir = tmp_path / "hub"
    phone = await token_create(hub_dir, "--name", "phone", "--scope", "app", "--expires", "30d")
    laptop = await token_create(hub_dir, "--name", "laptop", "--scope", "node", "--node-id", "laptop")
    key_file = tmp_path / "laptop.key"
    key_file.write_text(f"{laptop}\n")
    os.chmod(key_file, 0o600)
    command = aophub_node("", "laptop", tmp_path / "node", "--echo-delay", "0")
    async with checked_hub(hub_dir) as hub, httpx.AsyncClient(base_url=hub.http) as http:
        command[command.index("--server") + 1] = hub.http
        token_at = command.index("--token")
        command[token_at : token_at + 2] = ["--token-file", str(key_file)]
        # Someone else's session: the operator's, opened with the access key.
        async with await AppSocket.open(hub.app_url, TOKEN) as operator:
            others = await operator.open_session(title="the operator's")
        async with ChildProcess(command, env=offline_environment()):
            await node_connected(hub.runtime, "laptop")
            async with await AppSocket.open(hub.app_url, phone) as app:
                session = await app.open_session("laptop", title="from the phone")
                await finish_turn(app, session.id, "hello laptop")
                events = await app.call(list_events_request=chat_pb2.ListEventsRequest(session_id=session.id))
                said = [
                    part.text.text
                    for delivery in events.list_events_response.events
                    if delivery.event.message.role == "assistant"
                    for part in delivery.event.message.content
                ]
                assert said == ["echo: hello laptop"], said
                # Not someone else's session: refused as a session that does not exist.
                watch = await app.watch(others.id)
                _, refused = await app.wait_for(lambda e, m: e.reply_to == watch and m.HasField("protocol_error"))
                assert (refused.protocol_error.code, refused.protocol_error.message) == (
                    "NOT_FOUND",
                    f"session {others.id} not found",
                )
            agents = agent_pb2.ListAgentsResponse.FromString(
                (await call(http, phone, "AgentService/ListAgents", agent_pb2.ListAgentsRequest())).content
            )
            assert {agent.node_id: agent.token_name for agent in agents.agents}["laptop"] == "laptop"
        # Not the admin plane.
        for path, request in [
            ("ConfigService/GetConfig", config_pb2.GetConfigRequest()),
            ("TokenService/ListTokens", token_pb2.ListTokensRequest()),
            ("TokenService/CreateToken", token_pb2.CreateTokenRequest(name="mine", scopes=["admin"])),
        ]:
            denied = await call(http, phone, path, request)
            assert denied.status_code == 403, (path, denied.status_code, denied.text)
            assert "lacks the admin scope" in denied.json()["message"], denied.text
        # Nor another session in the lists.
        listed = session_pb2.ListSessionsResponse.FromString(
            (await call(http, phone, "SessionService/ListSessions", session_pb2.ListSessionsRequest())).content
        )
        assert [listed_session.id for listed_session in listed.sessions] == [session.id]
