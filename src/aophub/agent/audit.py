"""The audit log of the built-in agent's tool calls: one JSON object per line.

Each line records one call, refused ones included::

    {"time": "2025-01-02T03:04:05.678Z", "session_id": "...", "turn_id": "...",
     "call_id": "...", "tool": "exec", "kind": "function", "arguments": {"command": "ls"},
     "is_error": false, "duration_ms": 12, "summary": "exit code: 0\\n..."}

``arguments`` is the parsed JSON of the call (``null`` when it was not JSON;
the text then goes in ``raw_arguments``); strings in it longer than
``max_string_chars`` are shortened so one ``write_file`` cannot bloat the log.
``kind`` is ``function`` for the agent's own tools and ``client`` for a tool
the application implements. ``summary`` is the first 200 characters of the
result the model got: the tool's output, or why the call was not run (unknown
tool, bad arguments, denied by the user, the turn canceled).

The hub's relay of the remote workspace (uploads, terminal open/attach/kill/close; AOP-workspace
8.6.2) writes to the same log, one line per :class:`~aophub.hub.workspace_audit.WorkspaceAction`
with ``"kind": "workspace"``::

    {"time": "...", "kind": "workspace", "operation": "pty.open", "node_id": "laptop",
     "stream_id": "...", "peer": "203.0.113.7:52114", "token": "phone", "outcome": "forwarded"}
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the hub hands its actions in; the agent does not depend on the hub
    from aophub.hub.workspace_audit import WorkspaceAction

__all__ = ["SUMMARY_CHARS", "AuditLog"]

SUMMARY_CHARS = 200


def _utc_now() -> datetime:
    return datetime.now(UTC)


class AuditLog:
    """Appends tool-call records to ``path`` (mode 0600, parent directories created on first write).

    ``record`` writes each line with a single ``write`` on an ``O_APPEND``
    descriptor, synchronously, so calls from one event loop never interleave
    and lines from several processes do not mix. It raises ``OSError`` when the
    log cannot be written: an unaudited tool call is a failure, not a detail.
    """

    def __init__(self, path: Path, *, clock: Callable[[], datetime] = _utc_now, max_string_chars: int = 4096) -> None:
        self.path = path
        self._clock = clock
        self._max_string_chars = max_string_chars

    def __repr__(self) -> str:
        return f"<AuditLog {self.path}>"

    def record(
        self,
        *,
        tool: str,
        arguments: object,
        is_error: bool,
        duration_ms: int,
        output: str,
        session_id: str = "",
        turn_id: str = "",
        call_id: str = "",
        raw_arguments: str | None = None,
        kind: str = "function",
    ) -> None:
        """Append one line for a call of ``tool`` whose result text was ``output``."""
        entry: dict[str, object] = {
            "time": self._clock().astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "session_id": session_id,
            "turn_id": turn_id,
            "call_id": call_id,
            "tool": tool,
            "kind": kind,
        }
        try:
            entry["arguments"] = self._shorten(arguments)
        except RecursionError:
            entry["arguments"] = "[too deeply nested to record]"
        if raw_arguments is not None:
            entry["raw_arguments"] = self._shorten(raw_arguments)
        entry |= {"is_error": is_error, "duration_ms": duration_ms, "summary": output[:SUMMARY_CHARS]}
        self._append(self._encode(entry))

    def record_workspace(self, action: WorkspaceAction) -> None:
        """Append one line for a workspace operation the hub relayed (empty fields left out)."""
        entry: dict[str, object] = {
            "time": self._clock().astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "kind": "workspace",
            "operation": action.operation,
            "node_id": action.node_id,
        }
        for key in ("stream_id", "envelope_id", "session_id", "peer", "token"):
            value = getattr(action, key)
            if value:
                entry[key] = self._shorten(value)
        entry["outcome"] = self._shorten(action.outcome)
        if action.detail:
            entry["detail"] = self._shorten(action.detail)
        self._append(self._encode(entry))

    def _encode(self, entry: dict[str, object]) -> bytes:
        # ensure_ascii keeps the line valid UTF-8 even for lone surrogates in the input.
        try:
            text = json.dumps(entry, ensure_ascii=True, separators=(",", ":"))
        except RecursionError:
            entry["arguments"] = "[too deeply nested to record]"
            text = json.dumps(entry, ensure_ascii=True, separators=(",", ":"))
        return (text + "\n").encode("ascii")

    def _append(self, line: bytes) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)  # an existing log keeps no wider permissions
            view = memoryview(line)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)

    def _shorten(self, value: object) -> object:
        if isinstance(value, str):
            if len(value) > self._max_string_chars:
                return f"{value[: self._max_string_chars]}... [{len(value) - self._max_string_chars} more characters]"
            return value
        if isinstance(value, dict):
            return {key: self._shorten(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._shorten(item) for item in value]
        return value
