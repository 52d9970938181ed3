"""Raw helpers for the workspace namespaces (AOP-workspace 8): build and read ``aop.pty``/``aop.file`` envelopes.

Written from section 8 alone: messages are built from the generated classes and matched by type
URL and ``reply_to``, with nothing of the hub's own code in between.
"""

from __future__ import annotations

import json
from pathlib import Path

from google.protobuf.message import Message

from aop import envelope_pb2
from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2

from .raw_node import RawNode, Received
from .wire import AppSocket

__all__ = [
    "EXEC_URL",
    "FILE_URL",
    "PTY_URL",
    "app_pty",
    "audit_lines",
    "decode_pty",
    "node_file",
    "node_pty",
    "pty",
    "pty_frames",
]

PREFIX = "type.googleapis.com/"
PTY_URL = PREFIX + pty_pb2.ProtocolMessage.DESCRIPTOR.full_name
FILE_URL = PREFIX + file_pb2.ProtocolMessage.DESCRIPTOR.full_name
EXEC_URL = PREFIX + exec_pb2.ProtocolMessage.DESCRIPTOR.full_name


def pty(**case: Message) -> pty_pb2.ProtocolMessage:
    """An ``aop.pty.ProtocolMessage`` with one case, e.g. ``pty(open=Open(stream_id=..., node_id=...))``."""
    return pty_pb2.ProtocolMessage(**case)  # type: ignore[arg-type]


def decode_pty(envelope: envelope_pb2.Envelope) -> pty_pb2.ProtocolMessage:
    assert envelope.payload.type_url == PTY_URL, envelope
    return pty_pb2.ProtocolMessage.FromString(envelope.payload.value)


async def app_pty(
    app: AppSocket, stream_id: str, case: str | None = None, timeout: float = 10.0
) -> tuple[envelope_pb2.Envelope, pty_pb2.ProtocolMessage]:
    """The next pty envelope for ``stream_id`` (by ``reply_to``), of ``case`` if given; taken from the inbox."""

    def matches(envelope: envelope_pb2.Envelope, _message: object) -> bool:
        if envelope.reply_to != stream_id or envelope.payload.type_url != PTY_URL:
            return False
        return case is None or decode_pty(envelope).WhichOneof("message") == case

    envelope, _ = await app.wait_for(matches, timeout)
    return envelope, decode_pty(envelope)


def pty_frames(app: AppSocket, stream_id: str) -> list[pty_pb2.ProtocolMessage]:
    """Every pty message received for ``stream_id`` so far, in order."""
    return [
        decode_pty(envelope)
        for envelope, _ in app.received
        if envelope.reply_to == stream_id and envelope.payload.type_url == PTY_URL
    ]


async def node_pty(
    node: RawNode, case: str, stream_id: str = "", index: int = 0, timeout: float = 10.0
) -> tuple[Received, pty_pb2.ProtocolMessage]:
    """The ``index``-th pty message of ``case`` (for ``stream_id`` if given) the hub sent the node."""
    count = 0

    def nth(item: Received) -> bool:
        nonlocal count
        if item.envelope.payload.type_url != PTY_URL:
            return False
        message = decode_pty(item.envelope)
        if message.WhichOneof("message") != case:
            return False
        if stream_id and getattr(message, case).stream_id != stream_id:
            return False
        count += 1
        return count > index

    item = await node.wait_for(nth, timeout)
    return item, decode_pty(item.envelope)


async def node_file(node: RawNode, timeout: float = 10.0) -> tuple[Received, file_pb2.ProtocolMessage]:
    """The first ``aop.file`` message the hub sent the node."""
    item = await node.wait_for(lambda item: item.envelope.payload.type_url == FILE_URL, timeout)
    return item, file_pb2.ProtocolMessage.FromString(item.envelope.payload.value)


def audit_lines(data_dir: Path, kind: str = "workspace") -> list[dict[str, object]]:
    """The audit log's entries of ``kind``."""
    path = data_dir / "audit.jsonl"
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    return [entry for entry in entries if entry.get("kind") == kind]
