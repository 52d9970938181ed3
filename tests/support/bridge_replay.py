"""One replay harness for the bridge conformance scenarios (bridges.md 1.12): data files, not code per scenario.

:func:`replay` runs one scenario (a JSON object from ``tests/scenarios/bridges``) against a fresh
hub with the built-in agent on the scripted fake provider, either over real WebSockets
(``transport="websocket"``) or without a socket (``"direct"``): the client's frames are handed to
the bridge's connection object in process and its frames read back, so the translator and its
I/O half are checked apart from the Starlette adapter. The access key ``K`` of the scenarios is
the test hub's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from aop import chat_pb2
from aophub.access.authenticator import Authenticator
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Scope
from aophub.bridges.acr.session import AcrConnection, AgentCliState
from aophub.bridges.frame import authenticate_bridge
from aophub.bridges.hub_client import HubClient, WatchEnded
from aophub.bridges.zclaw.adapter import ZclawBridge
from aophub.bridges.zclaw.session import ZclawConnection, ZclawState, resolve_agent
from aophub.config import ConfigStore
from aophub.hub.application import NamespaceHandler
from aophub.protocol.mux import NamespaceRouter
from aophub.rpc.interactions import InteractionServiceImpl
from aophub.rpc.interceptors import calling_as
from aophub.rpc.sessions import SessionServiceImpl
from aophub.transport.app import answer_interaction
from aophub.transport.application_ws import PerConnectionBounds
from aophub.v1 import interaction_pb2, session_pb2

from .fake_openai import Chunk, FakeOpenAI, FinishChunk, Reply, Stall, Text, UsageChunk, fake_openai, tool_calls
from .interactions import configure
from .server import TOKEN, RunningHub, running_hub

__all__ = ["SCENARIOS", "Scenario", "load_scenarios", "match", "replay", "scenario_hub"]

SCENARIOS = Path(__file__).parent.parent / "scenarios" / "bridges"
RECV_TIMEOUT = 15.0
# The bridges a scenario's hub enables on its port (transport "websocket").
BRIDGES = ("agent-cli", "zclaw")


@dataclass
class Scenario:
    id: str
    given: dict[str, Any]
    steps: list[dict[str, Any]]


def load_scenarios(prefix: str) -> list[Scenario]:
    """Every scenario file whose id starts with ``prefix``, in name order."""
    found = []
    for path in sorted(SCENARIOS.glob(f"{prefix}*.json")):
        data = json.loads(path.read_text())
        found.append(Scenario(data["id"], data.get("given", {}), data["steps"]))
    return found


# -- templates (1.12) -------------------------------------------------------------------------


class Mismatch(AssertionError):
    pass


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00)$")


def match(template: Any, value: Any, saved: dict[str, Any], where: str = "$") -> None:
    """Raise :class:`Mismatch` unless ``value`` matches ``template``; ``$save:NAME`` stores into ``saved``."""
    if isinstance(template, str):
        _match_text(template, value, saved, where)
        return
    if isinstance(template, dict):
        if set(template) == {"$json"}:
            _check(isinstance(value, str), where, template, value)
            try:
                parsed = json.loads(value)
            except ValueError:
                raise Mismatch(f"{where}: {value!r} is not JSON") from None
            match(template["$json"], parsed, saved, where + "<json>")
            return
        if set(template) == {"$prefix"}:
            _check(isinstance(value, str) and value.startswith(template["$prefix"]), where, template, value)
            return
        if set(template) == {"$each"}:
            _check(isinstance(value, list) and len(value) > 0, where, template, value)
            for index, item in enumerate(value):
                match(template["$each"], item, saved, f"{where}[{index}]")
            return
        _check(isinstance(value, dict), where, template, value)
        keys = {key for key in template if key != "$more"}
        if not template.get("$more"):
            _check(set(value) == keys, where, f"keys {sorted(keys)}", f"keys {sorted(value)}")
        for key in (key for key in template if key != "$more"):  # in the template's order: clear reports
            _check(key in value, where, f"key {key!r}", value)
            match(template[key], value[key], saved, f"{where}.{key}")
        return
    if isinstance(template, list):
        _check(isinstance(value, list) and len(value) == len(template), where, template, value)
        for index, (item_template, item) in enumerate(zip(template, value, strict=True)):
            match(item_template, item, saved, f"{where}[{index}]")
        return
    _check(value == template and type(value) is type(template), where, template, value)


_KINDS = {
    "$str": lambda value: isinstance(value, str),
    "$chunk": lambda value: isinstance(value, str) and value != "",
    "$int": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "$bool": lambda value: isinstance(value, bool),
    "$iso": lambda value: isinstance(value, str) and bool(_ISO.match(value)),
}


def _match_text(template: str, value: Any, saved: dict[str, Any], where: str) -> None:
    if template == "$any":
        return
    if template in _KINDS:
        _check(_KINDS[template](value), where, template, value)
    elif template.startswith("$save:"):
        saved[template[6:]] = value
    else:
        _check(value == substitute(template, saved), where, template, value)


def _check(ok: bool, where: str, template: Any, value: Any) -> None:
    if not ok:
        raise Mismatch(f"{where}: expected {template!r}, got {value!r}")


def substitute(value: Any, saved: dict[str, Any]) -> Any:
    """``${NAME}`` replaced by saved values; the scenarios' access key ``K`` by the test hub's."""
    if isinstance(value, str):
        text = re.sub(r"\$\{(\w+)\}", lambda found: str(saved[found.group(1)]), value)
        return text
    if isinstance(value, dict):
        return {key: substitute(item, saved) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, saved) for item in value]
    return value


def _key(text: str) -> str:
    """The scenarios' access key ``K`` as the test hub's, in a URL or a header value."""
    return re.sub(r"(token=)K(&|$)", rf"\g<1>{TOKEN}\2", text).replace("Bearer K", f"Bearer {TOKEN}")


# -- the fake provider's script ----------------------------------------------------------------


def reply(spec: dict[str, Any]) -> Reply:
    """A scenario's model reply (1.12) as the fake provider's script."""
    usage = spec.get("usage")
    if "tool_calls" in spec:
        return tool_calls(*(tuple(call) for call in spec["tool_calls"]), usage=tuple(usage) if usage else None)
    words = spec["answer"].split(" ")
    pieces = [word + " " for word in words[:-1]] + [words[-1]]
    chunks: list[Chunk] = []
    for index, piece in enumerate(pieces):
        if index == spec.get("stall_after_words"):
            chunks.append(Stall(float(spec.get("stall_s", 0))))
        chunks.append(Text(piece))
    chunks.append(FinishChunk("stop"))
    if usage:
        chunks.append(UsageChunk(*usage))
    return Reply(chunks)


# -- replay -------------------------------------------------------------------------------------


class DirectSocket:
    """A bridged connection without a socket: text frames in and out of a bridge's connection object."""

    def __init__(self, client: HubClient) -> None:
        self.frames: asyncio.Queue[str] = asyncio.Queue()
        self.client = client
        self.connection: AcrConnection | ZclawConnection | None = None

    async def send_frame(self, frame: dict[str, Any]) -> None:
        self.frames.put_nowait(json.dumps(frame))

    async def send(self, text: str) -> None:
        assert self.connection is not None
        await self.connection.receive(text)

    async def recv(self) -> str:
        return await self.frames.get()

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()
        await self.client.close()


Socket = ClientConnection | DirectSocket
_ZCLAW_WS = re.compile(r"^/bridge/zclaw/api/agents/([^/]+)/ws$")


@dataclass
class Replay:
    """One scenario's run. ``transport`` "websocket": real WebSockets and HTTP to the hub's port.
    "direct": no socket at all: upgrades are decided and connections built in process by the same
    functions the adapters call (the hub's credential check, the agent lookup), frames handed to
    the bridge's connection objects, and HTTP requests sent through an ASGI transport to the
    bridge's own routes. The hub of a direct replay has no bridge enabled on its port, so a step
    that used a socket by mistake would get 404."""

    hub: RunningHub
    fake: FakeOpenAI
    transport: str = "websocket"
    saved: dict[str, Any] = field(default_factory=dict)
    sockets: dict[str, Socket] = field(default_factory=dict)
    last: str = "c"
    state: AgentCliState = field(default_factory=AgentCliState)
    zclaw: ZclawState = field(default_factory=ZclawState)

    def __post_init__(self) -> None:
        self.zclaw.approvals = self.hub.settings.bridge_approvals
        self.namespaces: NamespaceRouter[NamespaceHandler] = NamespaceRouter()
        self.namespaces.register(interaction_pb2.InteractionProtocolMessage, answer_interaction)
        self.authenticator = Authenticator(self.hub.settings.access_key, tokens=self.hub.runtime.tokens.book)

    def socket(self, step: dict[str, Any]) -> Socket:
        return self.sockets[step.get("on", self.last)]

    async def run(self, index: int, step: dict[str, Any]) -> None:
        if "ws" in step or "ws_refused" in step:
            await self._connect(index, step)
        elif "http" in step:
            await self._http(index, step)
        elif "check" in step:
            self._check_model(index, step["check"])
        elif "hub" in step:
            await self._hub(index, step["hub"])
        else:
            await self._frames(index, step)

    async def _connect(self, index: int, step: dict[str, Any]) -> None:
        path = _key(substitute(step.get("ws", step.get("ws_refused")), self.saved))
        headers = {key: _key(value) for key, value in step.get("headers", {}).items()}
        opened: Socket | int
        if self.transport == "direct":
            opened = await self._open_direct(path, headers)
        else:
            try:
                opened = await connect(f"ws://127.0.0.1:{self.hub.port}{path}", additional_headers=headers)
            except InvalidStatus as refused:
                opened = refused.response.status_code
        if "ws" in step:
            assert not isinstance(opened, int), f"step {index}: upgrade refused with HTTP {opened}"
            name = step.get("as", "c")
            self.sockets[name] = opened
            self.last = name
        else:
            if not isinstance(opened, int):
                await opened.close()
                raise AssertionError(f"step {index}: the upgrade was accepted, expected HTTP {step['status']}")
            assert opened == step["status"], f"step {index}: HTTP {opened}, expected {step['status']}"

    async def _open_direct(self, path: str, headers: dict[str, str]) -> DirectSocket | int:
        """An upgrade decided in process: the bridge's credential check, then its own refusals."""
        split = urlsplit(path)
        scope = {
            "type": "websocket",
            "path": split.path,
            "query_string": split.query.encode(),
            "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", self.hub.port),
            "scheme": "ws",
        }
        auth = authenticate_bridge(HTTPConnection(scope), self.authenticator, Scope.READ, query_token=True)
        if auth.principal is None:
            return auth.status
        query = dict(parse_qsl(split.query))
        client = HubClient(self.hub.runtime.hub, auth.principal, self.namespaces)
        socket = DirectSocket(client)
        zclaw = _ZCLAW_WS.match(split.path)
        if zclaw is not None:
            status, node_id = resolve_agent(self.hub.runtime.hub, zclaw.group(1))
            if status != 200:
                await client.close()
                return 400
            connection = ZclawConnection(client, socket.send_frame, node_id=node_id, state=self.zclaw)
            socket.connection = connection
            await connection.greet(zclaw.group(1))
            return socket
        assert split.path == "/bridge/agent-cli/ws", f"no bridge serves {split.path}"
        socket.connection = AcrConnection(
            client,
            socket.send_frame,
            node_id=query.get("node", "local"),
            binding=query.get("session", "default"),
            waiting=self.state,
        )
        return socket

    async def _http(self, index: int, step: dict[str, Any]) -> None:
        """An HTTP request (1.12): its status, optional header templates and JSON body template."""
        request = substitute(step["http"], self.saved)
        headers = {key: _key(value) for key, value in request.get("headers", {}).items()}
        path = _key(request["path"])
        if self.transport == "direct":
            bridge = ZclawBridge(
                self.hub.runtime.hub,
                self.authenticator,
                self.namespaces,
                self.zclaw,
                PerConnectionBounds(),
                enabled=lambda: True,
                not_enabled=lambda path: JSONResponse({}, status_code=404),
                max_body_bytes=self.hub.settings.max_frame_bytes,
            )
            app = Starlette(routes=bridge.routes("/bridge/zclaw"))
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 1))
            base = "http://bridge"
        else:
            transport, base = None, self.hub.http
        async with httpx.AsyncClient(transport=transport, base_url=base, timeout=RECV_TIMEOUT) as http:
            kwargs: dict[str, Any] = {"headers": headers}
            if "json" in request:
                kwargs["json"] = request["json"]
            response = await http.request(request["method"], path, **kwargs)
        where = f"step {index}"
        assert response.status_code == step["status"], f"{where}: HTTP {response.status_code}: {response.text}"
        for name, template in step.get("headers", {}).items():
            match(template, response.headers.get(name), self.saved, f"{where} header {name}")
        if "json" in step:
            match(step["json"], response.json(), self.saved, where)

    async def _frames(self, index: int, step: dict[str, Any]) -> None:
        if "send" in step:
            await self.socket(step).send(json.dumps(substitute(step["send"], self.saved)))
        elif "send_raw" in step:
            await self.socket(step).send(step["send_raw"])
        elif "recv" in step:
            match(step["recv"], await self._next(step), self.saved, f"step {index}")
        elif "recv_chunks" in step:
            await self._chunks(index, step)
        elif "recv_none" in step:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(float(step["recv_none"])):
                    extra = await self.socket(step).recv()
                    raise Mismatch(f"step {index}: expected no frame, got {extra!r}")
        elif "close" in step:
            await self.sockets.pop(step["close"]).close()
        elif "wait_s" in step:
            await asyncio.sleep(float(step["wait_s"]))  # only where timing is the subject (1.12)
        else:
            raise AssertionError(f"step {index}: unknown step {step}")

    async def _next(self, step: dict[str, Any]) -> Any:
        async with asyncio.timeout(RECV_TIMEOUT):
            return json.loads(await self.socket(step).recv())

    async def _chunks(self, index: int, step: dict[str, Any]) -> None:
        spec = step["recv_chunks"]
        joined = ""
        while len(joined) < len(spec["joined"]):
            value = await self._next(step)
            saved: dict[str, Any] = {}
            match(spec["frame"], value, saved, f"step {index}")
            joined += _chunk_of(spec["frame"], value)
        assert joined == spec["joined"], f"step {index}: chunks joined {joined!r}, expected {spec['joined']!r}"

    def _check_model(self, index: int, check: dict[str, Any]) -> None:
        requests = self.fake.chat_requests
        if "model_calls" in check:
            assert len(requests) == check["model_calls"], f"step {index}: {len(requests)} model calls"
        if "model_request" in check:
            messages = json.dumps(requests[check["model_request"] - 1].messages)
            if "messages_exclude" in check:
                assert check["messages_exclude"] not in messages, f"step {index}: {messages}"
            if "messages_include" in check:
                assert check["messages_include"] in messages, f"step {index}: {messages}"

    async def _hub(self, index: int, action: dict[str, Any]) -> None:
        hub = self.hub.runtime.hub
        with calling_as(ACCESS_KEY_PRINCIPAL):
            if "expect_interactions" in action:
                listed = await InteractionServiceImpl(hub).list_interactions(
                    interaction_pb2.ListInteractionsRequest(include_resolved=True), None
                )
                found = [_dict(item) for item in listed.interactions]
                _match_all(action["expect_interactions"], found, self.saved, f"step {index}")
            elif "expect_sessions" in action:
                sessions = await SessionServiceImpl(hub).list_sessions(
                    session_pb2.ListSessionsRequest(include_closed=True), None
                )
                found = [_dict(item) for item in sessions.sessions]
                _match_all(action["expect_sessions"], found, self.saved, f"step {index}")
            elif "answer_pending_approval" in action:
                await self._answer_approval(index, action["answer_pending_approval"])
            elif "wait_pending_approval" in action:
                async with asyncio.timeout(RECV_TIMEOUT):
                    await self._wait_pending_approval()
            elif "cancel_running_turn" in action:
                running = list(hub.dispatched())
                assert len(running) == 1, f"step {index}: running turns {running}"
                ((session_id, turn_id),) = running
                request = chat_pb2.CancelTurnRequest(
                    session_id=session_id, turn_id=turn_id, reason="canceled elsewhere"
                )
                response = await hub.cancel_turn(f"cancel-{index}", request)
                assert response.WhichOneof("outcome") == "accepted", f"step {index}: {response}"
            else:
                raise AssertionError(f"step {index}: hub action {action} is not supported by this harness")

    async def _wait_pending_approval(self) -> None:
        """Until an approval is PENDING: watched in the history of every open session, as an admin client."""
        hub = self.hub.runtime.hub
        with calling_as(ACCESS_KEY_PRINCIPAL):
            listed = await SessionServiceImpl(hub).list_sessions(session_pb2.ListSessionsRequest(), None)
        client = HubClient(hub, ACCESS_KEY_PRINCIPAL, self.namespaces)

        async def pending_in(session_id: str) -> None:
            async with client.watch(session_id, "") as events:
                while True:
                    item = await events.get()
                    assert not isinstance(item, WatchEnded), item
                    event = item[1]
                    if event.WhichOneof("payload") != "extension":
                        continue
                    interaction = interaction_pb2.Interaction()
                    if event.extension.Unpack(interaction) and (
                        interaction.state == interaction_pb2.INTERACTION_STATE_PENDING
                        and interaction.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
                    ):
                        return

        watches = [asyncio.ensure_future(pending_in(session.id)) for session in listed.sessions]
        try:
            assert watches, "no open session to wait in"
            done, _ = await asyncio.wait(watches, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
            await client.close()

    async def _pending_approvals(self) -> list[interaction_pb2.Interaction]:
        service = InteractionServiceImpl(self.hub.runtime.hub)
        listed = await service.list_interactions(interaction_pb2.ListInteractionsRequest(), None)
        return [
            item
            for item in listed.interactions
            if item.kind == interaction_pb2.INTERACTION_KIND_APPROVAL
            and item.state == interaction_pb2.INTERACTION_STATE_PENDING
        ]

    async def _answer_approval(self, index: int, answer: dict[str, Any]) -> None:
        """Answer the one pending approval as another client would (InteractionService, as the admin)."""
        service = InteractionServiceImpl(self.hub.runtime.hub)
        pending = await self._pending_approvals()
        assert len(pending) == 1, f"step {index}: pending approvals {pending}"
        request = interaction_pb2.AnswerInteractionRequest(request_id=f"answer-{index}", interaction_id=pending[0].id)
        request.answer.approval.approved = bool(answer.get("approved", True))
        request.answer.approval.reason = str(answer.get("reason", ""))
        response = await service.answer_interaction(request, None)
        assert response.WhichOneof("outcome") == "accepted", f"step {index}: {response}"


def _dict(message: Any) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def _match_all(templates: list[Any], values: list[Any], saved: dict[str, Any], where: str) -> None:
    """Each template matches a different value, in any order, and nothing is left over."""
    assert len(templates) == len(values), f"{where}: expected {len(templates)} items, got {values}"
    left = list(values)
    for template in templates:
        for value in left:
            try:
                match(template, value, dict(saved), where)
            except Mismatch:
                continue
            left.remove(value)
            break
        else:
            raise Mismatch(f"{where}: nothing matches {template!r} in {left!r}")


def _chunk_of(template: Any, value: Any) -> str:
    """The value where the template says ``$chunk``."""
    if template == "$chunk":
        return str(value)
    if isinstance(template, dict):
        for key, item in template.items():
            found = _chunk_of(item, value.get(key) if isinstance(value, dict) else None)
            if found:
                return found
    return ""


@contextlib.asynccontextmanager
async def scenario_hub(
    data_dir: Path, scenario: Scenario, **overrides: Any
) -> AsyncIterator[tuple[RunningHub, FakeOpenAI]]:
    """A fresh hub for ``scenario``: its given model script, agent settings and workspace (1.12)."""
    given = scenario.given
    async with fake_openai(api_key="sk-test") as fake:
        agent = given.get("agent", {})
        configure(data_dir, fake, ask_before_tools=bool(agent.get("ask_before_tools", False)))
        if "max_turns" in agent:
            store = ConfigStore(data_dir, environ={})
            store.load()
            config = store.config
            config.agent.max_turns = int(agent["max_turns"])
            store.save(config)
        workspace = data_dir / "workspace"
        workspace.mkdir(exist_ok=True)
        for name, text in given.get("workspace", {}).items():
            (workspace / name).write_text(text)
        fake.script(*(reply(item) for item in given.get("model", [])))
        bridge = given.get("bridge", {})
        if "approvals" in bridge:
            overrides.setdefault("bridge_approvals", bridge["approvals"])
        overrides.setdefault("bridges", BRIDGES)
        async with running_hub(data_dir, **overrides) as hub:
            yield hub, fake


async def replay(data_dir: Path, scenario: Scenario, transport: str = "websocket", **overrides: Any) -> None:
    """Run every step of ``scenario`` against a fresh hub, over real WebSockets or ``"direct"`` (no socket).

    ``overrides`` replace :class:`Settings` fields of the hub (e.g. ``database_url``). A direct
    replay's hub enables no bridge on its port (see :class:`Replay`).
    """
    if transport == "direct":
        overrides["bridges"] = ()
    async with scenario_hub(data_dir, scenario, **overrides) as (hub, fake):
        run = Replay(hub, fake, transport)
        try:
            for index, step in enumerate(scenario.steps):
                await run.run(index, step)
        finally:
            for socket in run.sockets.values():
                await socket.close()
