"""Namespace routing (aophub.protocol.mux)."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from aop import chat_pb2, protocol_pb2
from aop.tool import protocol_pb2 as tool_pb2
from aophub.protocol.mux import NamespaceRouter
from aophub.v1 import scan_pb2


def test_route_finds_the_registered_handler() -> None:
    """Each registered namespace routes, by its full name, to its own type and handler."""
    router: NamespaceRouter[str] = NamespaceRouter()
    router.register(protocol_pb2.ProtocolMessage, "core")
    router.register(tool_pb2.ProtocolMessage, "tool")
    router.register(scan_pb2.ScanProtocolMessage, "scan")
    assert router.route("aop.ProtocolMessage") == (protocol_pb2.ProtocolMessage, "core")
    assert router.route("aop.tool.ProtocolMessage") == (tool_pb2.ProtocolMessage, "tool")
    assert router.route("aophub.v1.ScanProtocolMessage") == (scan_pb2.ScanProtocolMessage, "scan")
    assert "aop.tool.ProtocolMessage" in repr(router)


@pytest.mark.parametrize(
    "name", ["aop.file.ProtocolMessage", "aop.Session", "", "ProtocolMessage", "aop.protocolmessage"]
)
def test_unknown_name_routes_nowhere(name: str) -> None:
    """A name that was not registered routes to None."""
    router: NamespaceRouter[str] = NamespaceRouter()
    router.register(protocol_pb2.ProtocolMessage, "core")
    assert router.route(name) is None


@pytest.mark.parametrize("message_type", [chat_pb2.Session, chat_pb2.RunTurnRequest, protocol_pb2.AgentHello])
def test_non_namespace_type_is_refused(message_type: type[Message]) -> None:
    """Registering a message that is not a <namespace>.ProtocolMessage raises ValueError."""
    router: NamespaceRouter[str] = NamespaceRouter()
    with pytest.raises(ValueError, match="not a namespace"):
        router.register(message_type, "handler")
    assert router.route(message_type.DESCRIPTOR.full_name) is None


def test_same_namespace_twice_is_refused() -> None:
    """A second registration of a namespace raises ValueError and keeps the first handler."""
    router: NamespaceRouter[str] = NamespaceRouter()
    router.register(tool_pb2.ProtocolMessage, "first")
    with pytest.raises(ValueError, match="already registered"):
        router.register(tool_pb2.ProtocolMessage, "second")
    assert router.route("aop.tool.ProtocolMessage") == (tool_pb2.ProtocolMessage, "first")
