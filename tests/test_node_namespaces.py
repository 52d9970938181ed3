"""The reference nodes' command and reload namespaces without a server (AOP-nodes 9.0, 9.0.5, 9.2.2)."""

from __future__ import annotations

import pytest

from aiscan.command import protocol_pb2 as aiscan_command_pb2
from aiscan.config import config_pb2 as aiscan_config_pb2
from aop import envelope_pb2, protocol_pb2
from aophub.hub import node_commands
from aophub.hub.llm_push import LlmPusher
from aophub.hub.nodes import NodeHandle, NodeRegistry
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.protocol.errors import Code, HubError
from aophub.protocol.node_namespaces import COMMAND, NAMESPACES, RELOAD, Generation
from cyber.command import protocol_pb2 as cyber_command_pb2


class _Link:
    async def send(self, envelope: envelope_pb2.Envelope) -> None:
        raise AssertionError("nothing is sent to the node")

    async def close(self, reason: str) -> None:
        raise AssertionError("the node is not closed")


def handle() -> NodeHandle:
    return NodeHandle(protocol_pb2.AgentHello(node_id="ref"), _Link(), connected_at=0.0)


def no_pushes() -> LlmPusher:
    """The LLM push of a hub whose operator listed no node: nothing is ever pushed."""

    def spawn(coroutine: object) -> None:
        raise AssertionError("nothing is pushed")

    return LlmPusher(NodeRegistry(), None, spawn=spawn, clock=lambda: 0.0, ids=lambda prefix: f"{prefix}-1")


def test_each_pair_of_names_is_one_namespace() -> None:
    """9.0.5.1: the four type URLs, two per namespace, one per generation."""
    assert {name: (spoken.namespace, spoken.generation) for name, spoken in NAMESPACES.items()} == {
        "aiscan.command.CommandProtocolMessage": (COMMAND, Generation.G2),
        "cyber.command.CommandProtocolMessage": (COMMAND, Generation.G3),
        "aiscan.reload.ReloadProtocolMessage": (RELOAD, Generation.G2),
        "cyber.reload.ReloadProtocolMessage": (RELOAD, Generation.G3),
    }
    assert not node_commands.speaks("aiscan.agent.AgentRunOptions")


def test_a_catalog_becomes_the_node_commands() -> None:
    """Verbs lose their '/', shell entries keep their '!', a usage repeating the name keeps its arguments."""
    catalog = cyber_command_pb2.CommandCatalog(
        commands=[
            cyber_command_pb2.CommandSpec(name="/compact", usage="/compact [focus]", description="Compact"),
            cyber_command_pb2.CommandSpec(name="!nmap", usage="!nmap <target>", description="Scan"),
            cyber_command_pb2.CommandSpec(name="/status", usage="/status", description="Health"),
            cyber_command_pb2.CommandSpec(name="/x", usage="see the manual", description=""),
        ]
    )
    commands = node_commands.catalog_commands(catalog, "ref")
    assert [(c.name, c.usage, c.description, c.source) for c in commands] == [
        ("compact", "[focus]", "Compact", "ref"),
        ("!nmap", "<target>", "Scan", "ref"),
        ("status", "", "Health", "ref"),
        ("x", "see the manual", "", "ref"),
    ]


def test_an_undecodable_command_payload_is_invalid() -> None:
    """A payload in a registered namespace that does not decode is INVALID_PAYLOAD and sets no generation."""
    node = handle()
    name = aiscan_command_pb2.CommandProtocolMessage.DESCRIPTOR.full_name
    envelope = envelope_pb2.Envelope(id="e1")
    envelope.payload.type_url = TYPE_URL_PREFIX + name
    envelope.payload.value = b"\xff\xff\xff"
    with pytest.raises(HubError) as raised:
        node_commands.receive(node, envelope, name, no_pushes())
    assert raised.value.code == Code.INVALID_PAYLOAD
    assert node.generation is None


def test_a_reload_message_sets_no_generation() -> None:
    """9.0.5.2: only the command namespace decides the generation."""
    node = handle()
    name = "cyber.reload.ReloadProtocolMessage"
    envelope = envelope_pb2.Envelope(id="e1", payload=pack(NAMESPACES[name].message()))
    node_commands.receive(node, envelope, name, no_pushes())
    assert node.generation is None


def test_the_product_settings_of_a_config_survive_as_unknown_fields() -> None:
    """9.0.3/9.6.6: DistributeConfig defines only llm; fields 2-7 are never set by the hub, and kept if parsed."""
    llm = aiscan_config_pb2.LLMConfig(active_profile="default")
    # Field 7 (agent), length-delimited, holding one string field: what a reference hub would set.
    foreign = aiscan_config_pb2.DistributeConfig(llm=llm).SerializeToString() + b"\x3a\x03\x0a\x01x"
    parsed = aiscan_config_pb2.DistributeConfig.FromString(foreign)
    assert parsed.llm.active_profile == "default"
    assert parsed.SerializeToString() == foreign
    assert aiscan_config_pb2.DistributeConfig(llm=llm).SerializeToString() == b"\x0a\x09\x0a\x07default"
