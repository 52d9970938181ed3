"""The opt-in LLM configuration push (AOP-nodes 9.6, 9.6.6 [stricter], 9.0.5.2, 9.1.3; checklist 9.10 item 12).

Each test names the rule it checks. The node is :class:`~tests.support.reference_node.ReferenceNode`:
raw envelopes over a real WebSocket, no SDK. It sends its command catalog right after
``agent_accepted`` (9.2.1) and answers a reload push as 9.6.3 and 9.6.4 say.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import any_pb2

from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aiscan.reload import protocol_pb2 as aiscan_reload_pb2
from aop import content_pb2, envelope_pb2, protocol_pb2
from aophub.cli import build_parser
from aophub.config import ConfigError, ConfigStore
from aophub.hub.llm_push import LlmPushRecord, PushState
from aophub.protocol.codec import TYPE_URL_PREFIX, core_message
from aophub.v1 import agent_pb2, config_pb2, system_pb2

from .support.raw_node import Received
from .support.reference_node import ReferenceNode, applied
from .support.rpc import Rpc, rpc_clients
from .support.server import RunningHub, running_hub

SECRET = "sk-test-9f8e7d6c5b4a-never-in-a-log"
OTHER_SECRET = "sk-test-1a2b3c4d5e6f-also-never-logged"
_FOREIGN_URL = TYPE_URL_PREFIX + "example.v1.ProtocolMessage"
LISTED = ("scanner-1", "scanner-2", "scanner-g3")


def profile(profile_id: str = "main", *, model: str = "gpt-test", api_key: str = SECRET) -> config_pb2.LlmProfile:
    return config_pb2.LlmProfile(
        id=profile_id,
        name=f"profile {profile_id}",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url="http://127.0.0.1:9/v1",
        api_key=api_key,
        model=model,
        max_tokens=4096,
        context_window=128000,
        timeout_seconds=90,
        images=True,
    )


def configured(data_dir: Path, **config: Any) -> Path:
    """Write a configuration with an active profile ``main`` (and ``config``) into ``data_dir``."""
    ConfigStore(data_dir, environ={}).save(
        config_pb2.Config(profiles=[profile(), profile("spare", model="gpt-spare")], active_profile_id="main", **config)
    )
    return data_dir


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[RunningHub]:
    """A hub with an active profile that pushes it to the nodes in :data:`LISTED` (``--llm-push-node``)."""
    async with running_hub(configured(tmp_path), llm_push_nodes=LISTED, config_poll_interval=0.05) as running:
        yield running


@pytest.fixture
async def rpc(hub: RunningHub) -> AsyncIterator[Rpc]:
    async with rpc_clients(hub.http) as clients:
        yield clients


async def reference_node(
    hub: RunningHub, node_id: str, generation: str = "aiscan", *, pipelined: bool = False
) -> ReferenceNode:
    """Dial and do what a reference agent node does on a new connection: hello, then its catalog (9.1.2, 9.2.1).

    ``pipelined``: the catalog goes out right behind the hello, before the acceptance has arrived.
    """
    node = await ReferenceNode.dial(hub.node_url, node_id)
    node.generation = generation
    hello = protocol_pb2.AgentHello(
        node_id=node_id,
        name="aiscan-1a2b3c4d",
        capabilities=["repl", "pty", "tmux", "ioa", "file", "exec", "sco"],
        tools=[content_pb2.ToolDefinition(type="function", name=name) for name in ("read", "write", "bash")],
    )
    node.hello_id = await node.send(core_message(agent_hello=hello), envelope_id="hello:m3x1k2p0:1")
    if not pipelined:
        await node.wait_for(lambda item: item.case == "agent_accepted")
    await node.send_catalog("/status", "/clear")
    accepted = await node.wait_for(lambda item: item.case == "agent_accepted")
    assert accepted.envelope.reply_to == node.hello_id
    return node


async def barrier(node: ReferenceNode) -> None:
    """Send a payload in a namespace no hub speaks and wait for its refusal: the hub has handled (and
    answered, if it ever would) everything the node sent before."""
    envelope_id = f"barrier-{uuid.uuid4().hex}"
    envelope = envelope_pb2.Envelope(id=envelope_id, payload=any_pb2.Any(type_url=_FOREIGN_URL))
    await node.send_frame(envelope.SerializeToString())
    await node.wait_for(lambda item: item.case == "protocol_error" and item.envelope.reply_to == envelope_id)


async def pushes(node: ReferenceNode, count: int) -> list[Received]:
    """Once the node has received ``count`` reload pushes: all of them."""
    await node.wait_for(lambda _item: len(node.reload_pushes) >= count)
    return node.reload_pushes


async def agent_when(rpc: Rpc, node_id: str, condition: Callable[[agent_pb2.Agent], bool]) -> agent_pb2.Agent:
    """The node's agent listing once ``condition`` holds."""
    async with asyncio.timeout(10):
        while True:
            response = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest(include_offline=True))
            agent = next((a for a in response.agents if a.node_id == node_id), None)
            if agent is not None and condition(agent):
                return agent
            await asyncio.sleep(0.02)  # polling the condition, not waiting for time to pass


def in_state(state: int) -> Callable[[agent_pb2.Agent], bool]:
    return lambda agent: agent.llm_push.state == state


def fields(data: bytes) -> list[tuple[int, bytes]]:
    """The top-level fields of a protobuf message's bytes: (number, value), value raw for a varint."""
    found: list[tuple[int, bytes]] = []
    at = 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(data):
        key = varint()
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            start = at
            varint()
            found.append((number, data[start:at]))
        elif wire_type == 2:
            size = varint()
            found.append((number, data[at : at + size]))
            at += size
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            found.append((number, data[at : at + size]))
            at += size
        else:
            raise AssertionError(f"unexpected wire type {wire_type}")
    return found


def only(values: list[tuple[int, bytes]], number: int) -> bytes:
    matching = [value for field, value in values if field == number]
    assert len(matching) == 1, values
    return matching[0]


async def update(rpc: Rpc, config: config_pb2.Config) -> None:
    response = await rpc.config.update_config(
        config_pb2.UpdateConfigRequest(request_id=uuid.uuid4().hex, config=config)
    )
    assert response.WhichOneof("outcome") == "accepted", response


async def stored_config(hub: RunningHub) -> config_pb2.Config:
    return hub.runtime.config.stored


# -- 9.6.6: opt-in; the list decides ---------------------------------------------------------------


async def test_no_push_by_default(tmp_path: Path) -> None:
    """9.6.6: with no node listed, no node receives a push, whatever it sends."""
    async with running_hub(configured(tmp_path)) as hub, await reference_node(hub, "scanner-1") as node:
        await barrier(node)
        handle = hub.runtime.hub.nodes.get("scanner-1")
        assert handle is not None
        assert handle.generation is not None
        assert node.reload_pushes == []
        assert [item for item in node.received if "reload" in item.envelope.payload.type_url] == []
        assert handle.llm_push is None


async def test_an_unlisted_node_gets_no_push(hub: RunningHub, rpc: Rpc) -> None:
    """9.6.6: only node ids on the operator's list receive the push, also after a provider change."""
    async with await reference_node(hub, "intruder") as node, await reference_node(hub, "scanner-1") as listed:
        await pushes(listed, 1)
        await barrier(node)
        config = await stored_config(hub)
        config.profiles[0].model = "gpt-changed"
        await update(rpc, config)
        await pushes(listed, 2)
        await barrier(node)
        assert node.reload_pushes == []
        agent = await agent_when(rpc, "intruder", lambda agent: agent.online)
        assert agent.llm_push == agent_pb2.LlmPush()


async def test_a_listed_node_gets_one_push_after_acceptance_carrying_llm_only(hub: RunningHub, rpc: Rpc) -> None:
    """9.1.3, 9.6.6: exactly one push per connection, after agent_accepted, with llm only and one provider."""
    async with await reference_node(hub, "scanner-1", pipelined=True) as node:
        (push,) = await pushes(node, 1)
        # Acceptance first: the node reads exactly one envelope after its hello (9.1.3).
        assert node.received[0].case == "agent_accepted"
        assert node.received.index(push) > 0
        assert push.envelope.payload.type_url == TYPE_URL_PREFIX + "aiscan.reload.ReloadProtocolMessage"
        assert push.envelope.id
        assert push.envelope.reply_to == ""
        # The raw bytes: ReloadProtocolMessage{10 request{1 config{1 llm}}}, nothing else.
        message = fields(push.envelope.payload.value)
        assert [number for number, _ in message] == [10]
        request = fields(only(message, 10))
        assert [number for number, _ in request] == [1]
        config = fields(only(request, 1))
        assert [number for number, _ in config] == [1], "DistributeConfig fields 2-7 must stay unset"
        llm = fields(only(config, 1))
        assert sorted(number for number, _ in llm) == [1, 2], "active_profile and exactly one provider"
        assert only(llm, 1) == b"main"
        # Decoded with the listing: the active profile, as the node reads it (9.6.2).
        pushed = node.reload_request(push).config.llm
        assert pushed.active_profile == "main"
        (provider,) = pushed.providers
        assert (provider.id, provider.name, provider.provider) == ("main", "profile main", "openai")
        assert (provider.base_url, provider.api_key, provider.model) == ("http://127.0.0.1:9/v1", SECRET, "gpt-test")
        assert (provider.max_tokens, provider.context_window, provider.timeout) == (4096, 128000, 90)
        assert provider.HasField("images")
        assert provider.images
        assert provider.proxy == ""

        agent = await agent_when(rpc, "scanner-1", in_state(agent_pb2.LLM_PUSH_STATE_OK))
        assert (agent.llm_push.provider, agent.llm_push.model) == ("openai", "gpt-test")
        assert (agent.llm_push.profile_id, agent.llm_push.error) == ("main", "")
        assert agent.llm_push.api_key_configured
        assert agent.llm_push.HasField("pushed_at")
        # Another catalog, a status, an unrelated configuration change: still one push.
        await node.send_catalog("/status")
        await node.status(protocol_pb2.AgentStatus(provider="openai", model="gpt-test"))
        settings = await stored_config(hub)
        settings.agent.max_turns = 7
        await update(rpc, settings)
        await barrier(node)
        assert len(node.reload_pushes) == 1


async def test_a_reconnect_is_pushed_again(hub: RunningHub) -> None:
    """9.6.6: once per connection: the node's next connection gets its own push."""
    async with await reference_node(hub, "scanner-1") as node:
        await pushes(node, 1)
    async with await reference_node(hub, "scanner-1") as again:
        await pushes(again, 1)


async def test_a_node_without_a_catalog_gets_no_push(hub: RunningHub) -> None:
    """9.0.5.2: a node that has sent no command-namespace message has no generation, and gets no push."""
    async with await ReferenceNode.connect(hub.node_url, "scanner-2") as node:
        await barrier(node)
        assert node.reload_pushes == []
        await node.send_catalog("/status")
        await pushes(node, 1)


async def test_a_g3_node_gets_its_push_in_cyber_reload(hub: RunningHub, rpc: Rpc) -> None:
    """9.0.5.2: a node whose catalog came in cyber.command is pushed in cyber.reload."""
    async with await reference_node(hub, "scanner-g3", "cyber") as node:
        (push,) = await pushes(node, 1)
        assert push.envelope.payload.type_url == TYPE_URL_PREFIX + "cyber.reload.ReloadProtocolMessage"
        assert node.reload_request(push).config.llm.providers[0].api_key == SECRET
        agent = await agent_when(rpc, "scanner-g3", in_state(agent_pb2.LLM_PUSH_STATE_OK))
        assert agent.llm_push.model == "gpt-test"
        assert node.error_replies == []  # the node never met a namespace it does not register


# -- 9.6.4, 9.6.6: failures are shown, and not pushed again until the provider changes --------------


def refusing(request: Any) -> Any:
    return aiscan_reload_pb2.ReloadResult(ok=False, error="provider probe failed: 401 Unauthorized")


@pytest.mark.parametrize("answer", ["ok false", "OPERATION_FAILED"])
async def test_a_failed_push_is_shown_and_not_repeated_until_the_provider_changes(
    hub: RunningHub, rpc: Rpc, answer: str
) -> None:
    """9.6.4, 9.6.6: result{ok: false} or protocol_error{OPERATION_FAILED} is shown; no re-push on this
    connection until the operator changes the provider; then one."""
    async with await ReferenceNode.dial(hub.node_url, "scanner-1") as node:
        node.reload_answer = refusing if answer == "ok false" else lambda request: "OPERATION_FAILED"
        await node.hello(("repl",))
        await node.send_catalog("/status")
        await pushes(node, 1)
        agent = await agent_when(rpc, "scanner-1", in_state(agent_pb2.LLM_PUSH_STATE_FAILED))
        expected = "provider probe failed: 401 Unauthorized" if answer == "ok false" else "config reload request"
        assert expected in agent.llm_push.error
        # Not the provider: no push. (An edit that changes nothing, another catalog, other settings.)
        config = await stored_config(hub)
        config.agent.max_turns = 9
        await update(rpc, config)
        await node.send_catalog("/status", "/clear")
        await barrier(node)
        assert len(node.reload_pushes) == 1
        # The provider: one push, whose success shows.
        node.reload_answer = applied
        config.profiles[0].api_key = OTHER_SECRET
        await update(rpc, config)
        second = (await pushes(node, 2))[1]
        assert node.reload_request(second).config.llm.providers[0].api_key == OTHER_SECRET
        agent = await agent_when(rpc, "scanner-1", in_state(agent_pb2.LLM_PUSH_STATE_OK))
        assert agent.llm_push.error == ""


async def test_a_node_that_does_not_speak_the_reload_namespace_is_not_pushed_again(hub: RunningHub, rpc: Rpc) -> None:
    """9.0.5.2: a node that answers a push with UNSUPPORTED_NAMESPACE serves no pushes of that generation."""
    async with await ReferenceNode.dial(hub.node_url, "scanner-1") as node:
        node.generation = "cyber"  # it registers cyber.reload only: an aiscan push is foreign to it
        await node.hello(("repl",))
        catalog = aiscan_command_pb2.CommandCatalog(commands=[aiscan_command_pb2.CommandSpec(name="/status")])
        await node.send(aiscan_command_pb2.CommandProtocolMessage(catalog=catalog))  # so its generation is G2
        await node.wait_for(lambda item: item.envelope.payload.type_url.endswith("aiscan.reload.ReloadProtocolMessage"))
        agent = await agent_when(rpc, "scanner-1", in_state(agent_pb2.LLM_PUSH_STATE_FAILED))
        assert "UNSUPPORTED_NAMESPACE" in agent.llm_push.error
        config = await stored_config(hub)
        config.profiles[0].model = "gpt-other"
        await update(rpc, config)
        await barrier(node)
        foreign = [item for item in node.received if "reload" in item.envelope.payload.type_url]
        assert len(foreign) == 1


def test_an_unanswered_push_counts_as_failed_after_the_bound() -> None:
    """9.6.5: nothing waits for the answer; one not there after the bound shows as failed (a late one still counts)."""
    record = LlmPushRecord(
        envelope_id="push-1",
        fingerprint=b"f",
        profile_id="main",
        provider="openai",
        model="gpt-test",
        api_key_configured=True,
        sent_at=100.0,
        answer_by=130.0,
    )
    assert record.state_at(129.9) == (PushState.PENDING, "")
    state, error = record.state_at(130.0)
    assert state is PushState.FAILED
    assert "no answer within 30 s" in error
    record.answered(ok=True, provider="openai", model="gpt-test", error="")
    assert record.state_at(1000.0) == (PushState.OK, "")


# -- 9.6.6: a provider change re-pushes to every listed node connected ------------------------------


async def test_a_provider_change_repushes_to_every_connected_listed_node(hub: RunningHub, rpc: Rpc) -> None:
    """9.6.1, 9.6.6: UpdateConfig, ActivateProfile and a hand edit of config.yaml each push the new profile once."""
    async with (
        await reference_node(hub, "scanner-1") as first,
        await reference_node(hub, "scanner-g3", "cyber") as second,
    ):
        nodes = (first, second)
        for node in nodes:
            await pushes(node, 1)
        activated = await rpc.config.activate_profile(
            config_pb2.ActivateProfileRequest(request_id=uuid.uuid4().hex, profile_id="spare")
        )
        assert activated.WhichOneof("outcome") == "accepted", activated
        for node in nodes:
            push = (await pushes(node, 2))[1]
            assert node.reload_request(push).config.llm.active_profile == "spare"
            assert [p.id for p in node.reload_request(push).config.llm.providers] == ["spare"]
        await agent_when(rpc, "scanner-g3", lambda agent: agent.llm_push.model == "gpt-spare")

        path = hub.runtime.config.path
        path.write_text(path.read_text().replace("gpt-spare", "gpt-edited"))
        for node in nodes:
            push = (await pushes(node, 3))[2]
            assert node.reload_request(push).config.llm.providers[0].model == "gpt-edited"
        await agent_when(rpc, "scanner-1", lambda agent: agent.llm_push.model == "gpt-edited")

        # Switching to the echo model leaves nothing to push.
        echo = await rpc.config.activate_profile(config_pb2.ActivateProfileRequest(request_id=uuid.uuid4().hex))
        assert echo.WhichOneof("outcome") == "accepted", echo
        for node in nodes:
            await barrier(node)
            assert len(node.reload_pushes) == 3


async def test_the_config_file_list_adds_nodes_and_applies_at_once(tmp_path: Path) -> None:
    """9.6.6: the file's llm_push.node_ids is the operator's list too; a node it adds is pushed at once."""
    data_dir = configured(tmp_path, llm_push=config_pb2.LlmPushSettings(node_ids=["from-file"]))
    async with (
        running_hub(data_dir) as hub,
        rpc_clients(hub.http) as rpc,
        await reference_node(hub, "from-file") as listed,
        await reference_node(hub, "later") as later,
    ):
        await pushes(listed, 1)
        await barrier(later)
        assert later.reload_pushes == []
        config = await stored_config(hub)
        config.llm_push.node_ids.append("later")
        await update(rpc, config)
        await pushes(later, 1)
        view = await rpc.config.get_config(config_pb2.GetConfigRequest())
        assert list(view.config.llm_push.node_ids) == ["from-file", "later"]
        await barrier(listed)
        assert len(listed.reload_pushes) == 1  # its provider did not change


@pytest.mark.parametrize(
    ("node_ids", "violation"),
    [([""], "llm_push.node_ids[0]"), (["a", "a"], "llm_push.node_ids[1]"), (["x" * 257], "llm_push.node_ids[0]")],
)
def test_a_bad_push_list_is_refused_naming_the_entry(tmp_path: Path, node_ids: list[str], violation: str) -> None:
    """The list's entries are node ids: non-empty, at most 256 bytes, each once."""
    with pytest.raises(ConfigError) as refused:
        configured(tmp_path, llm_push=config_pb2.LlmPushSettings(node_ids=node_ids))
    assert [v.field for v in refused.value.violations] == [violation]


# -- 9.6.6: the key is never logged, and never shown ---------------------------------------------------


async def test_the_api_key_is_never_logged_nor_shown(
    hub: RunningHub, rpc: Rpc, caplog: pytest.LogCaptureFixture
) -> None:
    """9.6.6: a push and its result at DEBUG log no api_key; the management plane says only that one is configured."""
    caplog.set_level(logging.DEBUG)
    async with await reference_node(hub, "scanner-1") as node:
        await pushes(node, 1)
        await agent_when(rpc, "scanner-1", in_state(agent_pb2.LLM_PUSH_STATE_OK))
        config = await stored_config(hub)
        config.profiles[0].api_key = OTHER_SECRET
        await update(rpc, config)
        await pushes(node, 2)
        agent = await agent_when(
            rpc,
            "scanner-1",
            lambda agent: agent.llm_push.state == agent_pb2.LLM_PUSH_STATE_OK and agent.llm_push.api_key_configured,
        )
        listing = await rpc.agents.list_agents(agent_pb2.ListAgentsRequest(include_offline=True))
        view = await rpc.config.get_config(config_pb2.GetConfigRequest())
        status = await rpc.system.get_status(system_pb2.GetStatusRequest())
    assert agent.llm_push.api_key_configured
    assert "pushed" in caplog.text  # the push itself is logged
    for secret in (SECRET, OTHER_SECRET):
        assert secret not in caplog.text
        for shown in (listing, view, status):
            assert secret.encode() not in shown.SerializeToString()


def key_traces(key: str) -> list[str]:
    """How (a part of) ``key`` would show in a log: as text, or as the hex of its bytes (frame dumps)."""
    data = key.encode()
    parts = [data[i : i + 4] for i in range(len(data) - 3)]
    return [key] + [part.hex(" ") for part in parts] + [part.hex() for part in parts]


async def test_the_api_key_is_not_in_the_websocket_frames_debug_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """9.6.6: even with the server's own loggers at DEBUG, no frame dump shows (a part of) the pushed key.

    The profile is minimal, so that the key is near the end of the push frame, where a dump that
    shows a frame's beginning and end would reach it.
    """
    minimal = config_pb2.LlmProfile(
        id="main",
        provider=config_pb2.PROVIDER_KIND_OPENAI_COMPATIBLE,
        base_url="http://h/v1",
        api_key=SECRET,
        model="m",
    )
    ConfigStore(tmp_path, environ={}).save(config_pb2.Config(profiles=[minimal], active_profile_id="main"))
    async with running_hub(tmp_path, llm_push_nodes=("scanner-1",)) as hub:
        caplog.set_level(logging.DEBUG)
        logging.getLogger("uvicorn.error").setLevel(logging.DEBUG)  # as `aophub serve --log-level debug`
        async with await reference_node(hub, "scanner-1") as node:
            (push,) = await pushes(node, 1)
            assert node.reload_request(push).config.llm.providers[0].api_key == SECRET
            await barrier(node)
    # What the hub logged (the test's own client logs what it receives, as a node would).
    logged = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("websockets.client"))
    leaked = [trace for trace in key_traces(SECRET) if trace in logged]
    assert leaked == []


# -- the operator setting -----------------------------------------------------------------------------


def test_serve_takes_the_push_list_and_its_help_says_what_it_means(capsys: pytest.CaptureFixture[str]) -> None:
    """`aophub serve --llm-push-node ID` (repeatable); --help says who receives the key (whoever may take the id)."""
    args = build_parser().parse_args(["serve", "--llm-push-node", "a", "--llm-push-node", "b"])
    assert args.llm_push_node == ["a", "b"]
    assert build_parser().parse_args(["serve"]).llm_push_node == []
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--llm-push-node" in text
    assert "Whoever may connect as a listed id receives the API key" in text
    assert "every holder of the admin access key" in text
    assert "Default: no push at all" in text
