"""The scan model, without I/O: the status machine, the task template, progress from events.

Used by :mod:`aophub.hub.scans` (the scheduler); see there for the lifecycle.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping

from google.protobuf import timestamp_pb2

from aop import content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.access.scopes import ACCESS_KEY_NAME
from aophub.hub.event_log import Delivery
from aophub.hub.turns import IllegalTransition
from aophub.protocol.codec import unpack
from aophub.protocol.errors import Code, HubError
from aophub.store.base import ScanRecord
from aophub.v1 import scan_pb2

__all__ = [
    "CANCELED",
    "COMPLETED",
    "FAILED",
    "QUEUED",
    "RUNNING",
    "TERMINAL",
    "ScanErrorCode",
    "delivered_event",
    "describe",
    "internal_error",
    "message_text",
    "note_event",
    "position",
    "render_task",
    "scan_error",
    "scan_record",
    "status_name",
    "timestamp",
    "transition",
]

QUEUED = scan_pb2.SCAN_STATUS_QUEUED
RUNNING = scan_pb2.SCAN_STATUS_RUNNING
COMPLETED = scan_pb2.SCAN_STATUS_COMPLETED
FAILED = scan_pb2.SCAN_STATUS_FAILED
CANCELED = scan_pb2.SCAN_STATUS_CANCELED
TERMINAL = frozenset({COMPLETED, FAILED, CANCELED})
_TRANSITIONS: Mapping[int, frozenset[int]] = {
    QUEUED: frozenset({RUNNING, CANCELED}),
    RUNNING: frozenset({COMPLETED, FAILED, CANCELED}),
}


class ScanErrorCode(enum.StrEnum):
    """Codes of ``Scan.error`` set by the scheduler (a failed turn's own code is kept as it is)."""

    TIMEOUT = "timeout"
    HUB_RESTARTED = "hub_restarted"
    CANCELED = "canceled"
    START_FAILED = "start_failed"
    INVALID_MODE = "invalid_mode"
    INTERNAL = "internal"


def status_name(status: int) -> str:
    try:
        return scan_pb2.ScanStatus.Name(status).removeprefix("SCAN_STATUS_")
    except ValueError:
        return str(status)


def transition(scan: scan_pb2.Scan, status: int) -> None:
    """Move ``scan`` to ``status``, or raise :class:`IllegalTransition`."""
    if status not in _TRANSITIONS.get(scan.status, frozenset()):
        raise IllegalTransition(f"scan {scan.id}: {status_name(scan.status)} -> {status_name(status)}")
    scan.status = status  # type: ignore[assignment]


_PLACEHOLDER = re.compile(r"\{(target|options\.([^{}]+))\}")


def render_task(template: str, target: str, options: Mapping[str, str]) -> str:
    """The task text: ``{target}`` and ``{options.NAME}`` replaced in one pass.

    Replaced text is not scanned again, so a target containing ``{options.x}``
    stays as it is. Raises ``INVALID_ARGUMENT`` naming every option the
    template uses and ``options`` lacks.
    """
    missing = sorted({name for name in _option_names(template) if name not in options})
    if missing:
        raise HubError(Code.INVALID_ARGUMENT, f"the mode's task needs option(s) {', '.join(missing)}")

    def value(match: re.Match[str]) -> str:
        return target if match.group(1) == "target" else options[match.group(2)]

    return _PLACEHOLDER.sub(value, template)


def _option_names(template: str) -> list[str]:
    return [match.group(2) for match in _PLACEHOLDER.finditer(template) if match.group(2) is not None]


def describe(event: event_pb2.Event) -> str:
    """A short description of what ``event`` shows the agent doing, for ``ScanProgress.last_activity``."""
    kind = event.WhichOneof("payload")
    if kind == "message":
        return "assistant message" if event.message.role == "assistant" else f"{event.message.role or 'user'} message"
    if kind == "tool_call":
        return f"tool {event.tool_call.name}"
    if kind == "tool_result":
        return f"tool {event.tool_result.name} {'failed' if event.tool_result.is_error else 'done'}"
    if kind == "turn_ended":
        return f"turn ended: {event.turn_ended.stop_reason}"
    if kind == "session_ended":
        return "session closed"
    if kind == "status":
        return f"status: {event.status.state}"
    if kind == "error":
        return f"error: {event.error.code}"
    return (kind or "event").replace("_", " ")


def note_event(progress: scan_pb2.ScanProgress, cursor: int, event: event_pb2.Event) -> None:
    """Account for one persisted event (``cursor`` is its cursor: dense from 1, so also the count)."""
    progress.events = max(progress.events, cursor)
    kind = event.WhichOneof("payload")
    if kind == "tool_call":
        progress.tool_calls += 1
    elif kind == "message" and event.message.role == "assistant":
        progress.steps += 1
    progress.last_activity = describe(event)
    if event.HasField("emitted_at"):
        progress.last_event_at.CopyFrom(event.emitted_at)


def message_text(message: content_pb2.Message) -> str:
    return "".join(part.text.text for part in message.content if part.WhichOneof("value") == "text")


def delivered_event(delivery: Delivery) -> event_pb2.Event:
    """The event inside a delivery's pre-encoded payload field."""
    envelope = envelope_pb2.Envelope.FromString(delivery.payload_field)
    return unpack(envelope, protocol_pb2.ProtocolMessage).event


def timestamp(seconds: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromNanoseconds(int(seconds * 1e9))
    return stamp


def position(scan: scan_pb2.Scan) -> tuple[float, str]:
    """The scan's place in the newest-first order, ``(created_at, id)``, as stored and as paged."""
    return scan.created_at.ToNanoseconds() / 1e9, scan.id


def scan_record(scan: scan_pb2.Scan) -> ScanRecord:
    stored = scan_pb2.Scan()
    stored.CopyFrom(scan)
    stored.queue_position = 0  # derived from the live queue on every read
    return ScanRecord(
        id=scan.id,
        status=scan.status,
        created_at=position(scan)[0],
        data=stored.SerializeToString(deterministic=True),
        owner=scan_owner(scan),
    )


def scan_owner(scan: scan_pb2.Scan) -> str:
    """The token name that submitted ``scan`` (scans stored before scans had owners: the access key's)."""
    return scan.owner or ACCESS_KEY_NAME


def internal_error() -> event_pb2.ProtocolError:
    return scan_error(ScanErrorCode.INTERNAL, "the scan failed unexpectedly; the hub logged the details")


def scan_error(code: str, message: str, *, retryable: bool = False) -> event_pb2.ProtocolError:
    return event_pb2.ProtocolError(code=code, message=message, retryable=retryable)
