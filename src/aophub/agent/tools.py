"""The built-in agent's tools: read_file, write_file, edit_file, list_dir and exec.

``ToolBox.definitions`` is what the agent offers the model; ``ToolBox.call``
runs one call from the model and never raises for anything the model did:
bad JSON, wrong arguments, unknown tools, refused paths and commands and
filesystem errors all come back as an ``is_error`` outcome with a message the
model can act on. Every call, refused ones included, gets one audit line.

Paths are relative to the workspace and go through ``Workspace.resolve``;
files are opened and replaced through the workspace, which follows no symlink
that appeared meanwhile and refuses files with more than one hard link and the
hub's own files (configuration, access key, database, audit log).
``read_file`` also reads the ``read_only`` folders, by a path starting with their
prefix (``builtin:skills/...``: the built-in skills, :mod:`aophub.agent.skills`),
confined to each folder the same way.
File contents are UTF-8 text. ``read_file`` windows are in lines (``offset``
is the 1-based first line, ``limit`` the number of lines); files over
``max_read_bytes`` are refused rather than cut, and the message says how to
read a part with ``exec``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aop import content_pb2, value_pb2
from aophub.agent.audit import AuditLog
from aophub.agent.commands import run_command
from aophub.agent.isolation import Isolation, SandboxState
from aophub.agent.sandbox import ExecPolicy, SandboxError, Workspace

__all__ = [
    "DEFAULT_MAX_EDIT_BYTES",
    "DEFAULT_MAX_LIST_ENTRIES",
    "DEFAULT_MAX_READ_BYTES",
    "TOOL_NAMES",
    "ToolBox",
    "ToolOutcome",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_EDIT_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_LIST_ENTRIES = 1000
# How much of a file is sniffed for NUL bytes before decoding.
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call gives back to the model: the result text, whether it failed, how long it took."""

    text: str
    is_error: bool
    duration_ms: int


class _ToolFailure(Exception):
    """An expected failure of a tool; the message is shown to the model."""


@dataclass(frozen=True)
class _Param:
    name: str
    kind: type[str] | type[int]
    description: str
    required: bool = True
    minimum: int | None = None

    def schema(self) -> dict[str, object]:
        schema: dict[str, object] = {
            "type": "string" if self.kind is str else "integer",
            "description": self.description,
        }
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        return schema

    def check(self, tool: str, value: object) -> None:
        expected = "a string" if self.kind is str else "an integer"
        # bool is an int in Python but not in JSON.
        if not isinstance(value, self.kind) or isinstance(value, bool):
            raise _ToolFailure(f"invalid arguments for {tool}: {self.name!r} must be {expected}")
        if self.minimum is not None and isinstance(value, int) and value < self.minimum:
            raise _ToolFailure(f"invalid arguments for {tool}: {self.name!r} must be at least {self.minimum}")


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    params: tuple[_Param, ...]
    run: Callable[[Mapping[str, Any]], Awaitable[str]]

    def definition(self) -> content_pb2.ToolDefinition:
        schema = {
            "type": "object",
            "properties": {param.name: param.schema() for param in self.params},
            "required": [param.name for param in self.params if param.required],
            "additionalProperties": False,
        }
        return content_pb2.ToolDefinition(
            type="function",
            name=self.name,
            description=self.description,
            input_schema=value_pb2.EncodedValue(data=json.dumps(schema).encode(), media_type="application/json"),
        )

    def validate(self, arguments: object) -> Mapping[str, Any]:
        if not isinstance(arguments, dict):
            raise _ToolFailure(f"invalid arguments for {self.name}: expected a JSON object")
        known = {param.name for param in self.params}
        extra = sorted(set(arguments) - known)
        if extra:
            raise _ToolFailure(
                f"invalid arguments for {self.name}: unexpected {', '.join(map(repr, extra))}; "
                f"it takes {', '.join(map(repr, sorted(known)))}"
            )
        for param in self.params:
            if param.name in arguments:
                param.check(self.name, arguments[param.name])
            elif param.required:
                raise _ToolFailure(f"invalid arguments for {self.name}: {param.name!r} is required")
        return arguments


_PATH = _Param("path", str, "Path relative to the workspace root.")

TOOL_NAMES = ("read_file", "write_file", "edit_file", "list_dir", "exec")


class ToolBox:
    """The built-in tools over ``workspace``, running commands under ``policy``, auditing to ``audit``.

    With ``enabled`` false, ``definitions`` is empty and every call is refused
    (and audited). File operations run in a worker thread so they do not hold up
    the event loop.
    """

    def __init__(
        self,
        workspace: Workspace,
        policy: ExecPolicy,
        audit: AuditLog,
        *,
        enabled: bool = True,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_edit_bytes: int = DEFAULT_MAX_EDIT_BYTES,
        max_list_entries: int = DEFAULT_MAX_LIST_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
        read_only: Mapping[str, Workspace] | None = None,
    ) -> None:
        self.workspace = workspace
        # Path prefix -> a folder read_file also reads (paths after the prefix), e.g. the built-in skills.
        self.read_only = dict(read_only or {})
        self.policy = policy
        self.audit = audit
        self.enabled = enabled
        self.max_read_bytes = max_read_bytes
        self.max_edit_bytes = max_edit_bytes
        self.max_list_entries = max_list_entries
        self._clock = clock
        tools = (
            _Tool(
                "read_file",
                "Read a UTF-8 text file in the workspace. Returns its text exactly; with offset and limit only "
                "those lines, followed by a note saying which lines were shown. Files over "
                f"{max_read_bytes} bytes and binary files are refused.",
                (
                    _PATH,
                    _Param("offset", int, "First line to return, counting from 1. Default 1.", False, 1),
                    _Param("limit", int, "Most lines to return. Default: all.", False, 1),
                ),
                self._read_file,
            ),
            _Tool(
                "write_file",
                "Create or replace a text file in the workspace with the given content, atomically. "
                "Missing parent directories are created.",
                (_PATH, _Param("content", str, "The complete new content of the file.")),
                self._write_file,
            ),
            _Tool(
                "edit_file",
                "Replace one exact occurrence of old_text with new_text in a text file in the workspace. "
                "old_text must appear exactly once: include enough surrounding lines to make it unique.",
                (
                    _PATH,
                    _Param("old_text", str, "The exact text to replace, whitespace included; not empty."),
                    _Param("new_text", str, "The replacement text."),
                ),
                self._edit_file,
            ),
            _Tool(
                "list_dir",
                "List a directory in the workspace: one line per entry, sorted by name, as "
                "'<type>\\t<size in bytes or ->\\t<name>' with type file, dir, symlink or other; "
                f"at most {max_list_entries} entries.",
                (_Param("path", str, "Directory relative to the workspace root. Default '.'.", False),),
                self._list_dir,
            ),
            _Tool(
                "exec",
                "Run a shell command (/bin/sh -c) in the workspace root and return its exit code and combined "
                f"stdout and stderr (at most {policy.output_cap} bytes). It is killed after {policy.timeout:g} "
                "seconds; it gets no input; background processes are killed when it ends; "
                f"some dangerous commands are refused.{_sandbox_note(policy.isolation)}",
                (_Param("command", str, "The shell command."),),
                self._exec,
            ),
        )
        self._tools = {tool.name: tool for tool in tools}

    def __repr__(self) -> str:
        return f"<ToolBox {self.workspace.root} enabled={self.enabled}>"

    def definitions(self) -> list[content_pb2.ToolDefinition]:
        """The tools to offer the model; empty when tools are disabled."""
        if not self.enabled:
            return []
        return [tool.definition() for tool in self._tools.values()]

    async def call(
        self, name: str, arguments: bytes, *, session_id: str = "", turn_id: str = "", call_id: str = ""
    ) -> ToolOutcome:
        """Run tool ``name`` with ``arguments`` (JSON object bytes; empty means ``{}``) and audit the call.

        Never raises for a bad call; raises ``OSError`` only when the audit log
        cannot be written. A cancelled call is audited as an error, then the
        cancellation propagates.
        """
        started = self._clock()
        parsed = _parse(arguments)
        ids = (session_id, turn_id, call_id)
        try:
            try:
                if parsed.error is not None:
                    raise _ToolFailure(parsed.error)
                text, is_error = await self._dispatch(name, parsed.value), False
            except _ToolFailure as exc:
                text, is_error = str(exc), True
        except asyncio.CancelledError:
            self._record(name, parsed, "canceled", is_error=True, duration_ms=self._since(started), ids=ids)
            raise
        duration_ms = self._since(started)
        self._record(name, parsed, text, is_error=is_error, duration_ms=duration_ms, ids=ids)
        return ToolOutcome(text=text, is_error=is_error, duration_ms=duration_ms)

    def record(
        self,
        name: str,
        arguments: bytes,
        text: str,
        *,
        is_error: bool,
        duration_ms: int = 0,
        kind: str = "function",
        session_id: str = "",
        turn_id: str = "",
        call_id: str = "",
    ) -> None:
        """Audit a call answered without ``call``: refused or denied before it ran, abandoned, or a client tool.

        ``text`` is the result the model got. Raises ``OSError`` when the audit
        log cannot be written.
        """
        self._record(
            name,
            _parse(arguments),
            text,
            is_error=is_error,
            duration_ms=duration_ms,
            ids=(session_id, turn_id, call_id),
            kind=kind,
        )

    def _since(self, started: float) -> int:
        return max(0, int((self._clock() - started) * 1000))

    def _record(
        self,
        name: str,
        parsed: _Arguments,
        text: str,
        *,
        is_error: bool,
        duration_ms: int,
        ids: tuple[str, str, str],
        kind: str = "function",
    ) -> None:
        session_id, turn_id, call_id = ids
        self.audit.record(
            tool=name,
            arguments=parsed.value,
            raw_arguments=parsed.raw,
            is_error=is_error,
            duration_ms=duration_ms,
            output=text,
            session_id=session_id,
            turn_id=turn_id,
            call_id=call_id,
            kind=kind,
        )

    async def _dispatch(self, name: str, arguments: object) -> str:
        """Run the tool; every expected failure comes out as ``_ToolFailure``."""
        if not self.enabled:
            raise _ToolFailure("tools are disabled on this hub")
        tool = self._tools.get(name)
        if tool is None:
            raise _ToolFailure(f"unknown tool {name!r}; the tools are {', '.join(self._tools)}")
        valid = tool.validate(arguments)
        try:
            return await tool.run(valid)
        except SandboxError as exc:
            raise _ToolFailure(str(exc)) from None
        except OSError as exc:
            raise _ToolFailure(self._describe(exc, name)) from None
        except _ToolFailure:
            raise
        except Exception:
            log.exception("tool %s failed", name)
            raise _ToolFailure(f"{name} failed with an internal error") from None

    def _describe(self, exc: OSError, tool: str) -> str:
        reason = exc.strerror or type(exc).__name__
        if isinstance(exc.filename, str | bytes):
            return f"{tool} failed: {reason}: {self.workspace.display(os.fsdecode(exc.filename))}"
        return f"{tool} failed: {reason}"

    # The tools. Each takes validated arguments and returns the text for the
    # model, or raises _ToolFailure, SandboxError or OSError.

    async def _read_file(self, arguments: Mapping[str, Any]) -> str:
        return await asyncio.to_thread(
            self._read_file_sync, arguments["path"], arguments.get("offset", 1), arguments.get("limit")
        )

    def _read_file_sync(self, path: str, offset: int, limit: int | None) -> str:
        workspace, relative = self.workspace, path
        for prefix, folder in self.read_only.items():
            if path.startswith(prefix):
                workspace, relative = folder, path.removeprefix(prefix)
        target = workspace.resolve(relative, must_exist=True)
        text = self._load_text(target, path, self.max_read_bytes, "read_file", workspace)
        lines = _split_newlines(text)
        if not lines:
            return "[empty file]"
        if offset > len(lines):
            raise _ToolFailure(f"offset {offset} is past the end of {path!r}, which has {len(lines)} lines")
        end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
        shown = "".join(lines[offset - 1 : end])
        if offset == 1 and end == len(lines):
            return shown
        note = f"[lines {offset}-{end} of {len(lines)}"
        note += f"; use offset={end + 1} to continue]" if end < len(lines) else "]"
        return shown + ("" if shown.endswith("\n") else "\n") + note

    async def _write_file(self, arguments: Mapping[str, Any]) -> str:
        return await asyncio.to_thread(self._write_file_sync, arguments["path"], arguments["content"])

    def _write_file_sync(self, path: str, content: str) -> str:
        target = self.workspace.resolve(path)
        if target.is_dir():
            raise _ToolFailure(f"{path!r} is a directory")
        data = _encode(content, "content")
        self.workspace.replace_file(target, data)
        return f"wrote {len(data)} bytes to {self.workspace.display(target)}"

    async def _edit_file(self, arguments: Mapping[str, Any]) -> str:
        return await asyncio.to_thread(
            self._edit_file_sync, arguments["path"], arguments["old_text"], arguments["new_text"]
        )

    def _edit_file_sync(self, path: str, old_text: str, new_text: str) -> str:
        if not old_text:
            raise _ToolFailure("old_text is empty; give the exact text to replace (use write_file to create a file)")
        target = self.workspace.resolve(path, must_exist=True)
        text = self._load_text(target, path, self.max_edit_bytes, "edit_file")
        count = text.count(old_text)
        if count == 0:
            raise _ToolFailure(f"old_text was not found in {path!r}; read the file and copy the text exactly")
        if count > 1:
            raise _ToolFailure(
                f"old_text appears {count} times in {path!r}; include more surrounding text so it appears once"
            )
        self.workspace.replace_file(target, _encode(text.replace(old_text, new_text, 1), "the edited text"))
        return f"edited {self.workspace.display(target)}: replaced 1 occurrence"

    async def _list_dir(self, arguments: Mapping[str, Any]) -> str:
        return await asyncio.to_thread(self._list_dir_sync, arguments.get("path", "."))

    def _list_dir_sync(self, path: str) -> str:
        target = self.workspace.resolve(path, must_exist=True)
        if not target.is_dir():
            raise _ToolFailure(f"{path!r} is not a directory")
        fd = self.workspace.open_directory(target)
        try:
            with os.scandir(fd) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
            lines = [_describe_entry(entry) for entry in entries[: self.max_list_entries]]
        finally:
            os.close(fd)
        if not entries:
            return "[empty directory]"
        if len(entries) > self.max_list_entries:
            lines.append(f"[{len(entries) - self.max_list_entries} more entries not shown]")
        return "\n".join(lines) + "\n"

    async def _exec(self, arguments: Mapping[str, Any]) -> str:
        # A command may link the hub's files; remembering them before and after
        # keeps a link to a version the hub replaces later refused.
        self.workspace.remember_protected()
        try:
            result = await run_command(arguments["command"], self.workspace, self.policy)
        finally:
            self.workspace.remember_protected()
        if result.timed_out:
            raise _ToolFailure(
                f"the command timed out after {self.policy.timeout:g} seconds and was killed; "
                f"its output so far:\n{result.output}"
            )
        return f"exit code: {result.exit_code}\n{result.output}"

    def _load_text(self, target: Path, path: str, cap: int, tool: str, workspace: Workspace | None = None) -> str:
        fd, info = (workspace or self.workspace).open_file(target)
        try:
            if stat.S_ISDIR(info.st_mode):
                raise _ToolFailure(f"{path!r} is a directory; use list_dir")
            if not stat.S_ISREG(info.st_mode):
                raise _ToolFailure(f"{path!r} is not a regular file")
            chunks: list[bytes] = []
            remaining = cap + 1
            while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
                chunks.append(chunk)
                remaining -= len(chunk)
            data = b"".join(chunks)
        finally:
            os.close(fd)
        if len(data) > cap:
            raise _ToolFailure(
                f"{path!r} is {max(info.st_size, len(data))} bytes, over the {cap}-byte limit of {tool}; "
                "use exec with head, tail, sed -n or grep to work with part of it"
            )
        if b"\x00" in data[:_SNIFF_BYTES]:
            raise _ToolFailure(f"{path!r} is a binary file; {tool} handles text only")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _ToolFailure(f"{path!r} is not UTF-8 text; {tool} handles text only") from None


@dataclass(frozen=True)
class _Arguments:
    """A call's arguments: the parsed JSON, or the raw text and why it could not be parsed."""

    value: object = None
    raw: str | None = None
    error: str | None = None


def _parse(arguments: bytes) -> _Arguments:
    """Parse JSON ``arguments``; empty means ``{}``."""
    text = arguments.decode("utf-8", errors="replace")
    if not text.strip():
        return _Arguments({})
    try:
        return _Arguments(json.loads(text))
    except (ValueError, RecursionError) as exc:
        return _Arguments(raw=text, error=f"the arguments are not valid JSON: {exc}")


def _sandbox_note(isolation: Isolation) -> str:
    """What the model should know of the sandbox exec runs in (nothing when there is none)."""
    if isolation.state()[0] is not SandboxState.ENFORCED:
        return ""
    return (
        " It runs in a sandbox: the workspace (and an empty /tmp) is the only writable place, and nothing "
        f"outside the workspace and the system directories is visible{'' if isolation.network else '; no network'}."
    )


def _split_newlines(text: str) -> list[str]:
    """Lines ending at "\\n" only, each keeping it (str.splitlines also splits at "\\r", "\\f" and more)."""
    lines = text.split("\n")
    result = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        result.append(lines[-1])
    return result


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise _ToolFailure(f"{what} is not valid Unicode text (it contains a lone surrogate)") from None


def _describe_entry(entry: os.DirEntry[str]) -> str:
    name = entry.name if entry.name.isprintable() else json.dumps(entry.name)
    if entry.is_symlink():
        return f"symlink\t-\t{name}"
    if entry.is_dir(follow_symlinks=False):
        return f"dir\t-\t{name}/"
    if entry.is_file(follow_symlinks=False):
        return f"file\t{entry.stat(follow_symlinks=False).st_size}\t{name}"
    return f"other\t-\t{name}"
