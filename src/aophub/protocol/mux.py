"""Namespace routing: payload full name -> handler.

Only messages named ``<namespace>.ProtocolMessage`` or a product's
``<Something>ProtocolMessage`` are routable namespaces (AOP section 2), and a
namespace can be registered once.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from google.protobuf.message import Message

__all__ = ["NamespaceRouter"]

H = TypeVar("H")


class NamespaceRouter(Generic[H]):
    """Maps namespace message types to handlers."""

    def __init__(self) -> None:
        self._handlers: dict[str, tuple[type[Message], H]] = {}

    def __repr__(self) -> str:
        return f"<NamespaceRouter {sorted(self._handlers)}>"

    def register(self, message_type: type[Message], handler: H) -> None:
        """Route payloads of ``message_type`` to ``handler``; a second registration is an error."""
        name = message_type.DESCRIPTOR.full_name
        if not name.endswith("ProtocolMessage"):
            raise ValueError(f"{name} is not a namespace: its name must end in ProtocolMessage")
        if name in self._handlers:
            raise ValueError(f"namespace {name} is already registered")
        self._handlers[name] = (message_type, handler)

    def route(self, name: str) -> tuple[type[Message], H] | None:
        """The message type and handler for payload ``name``, or ``None``."""
        return self._handlers.get(name)
