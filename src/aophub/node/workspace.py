"""A node's workspace services: ``aop.file``, ``aop.exec`` and ``aop.pty`` (AOP-workspace 8.2, 8.3, 8.5).

The node SDK serves these namespaces through three hooks, gathered in :class:`WorkspaceServices`
and handed to :class:`~aophub.node.runtime.NodeRuntime` (or ``serve_agent(..., workspace=...)``):

- a :class:`FileService` answers every ``aop.file`` request with a ``file.Result``, or raises
  :class:`~aophub.protocol.errors.HubError` with the code the node answers (``FILE_OPERATION_FAILED``
  for an OS error or a confinement refusal, ``OPERATION_FAILED`` for an operation it does not offer);
- an :class:`ExecService` runs one ``exec.request``, streaming its output, until it ends, times
  out or is canceled (``EXEC_FAILED`` when it cannot run);
- a :class:`TerminalService` gives each hub connection a :class:`TerminalLink` that takes the
  connection's ``aop.pty`` messages (:mod:`aophub.node.terminals` is the real one).

A namespace whose hook is ``None`` is refused ``UNSUPPORTED_NAMESPACE``, as every namespace a node
does not speak (AOP-nodes 9.9.1). :class:`ConfinedFiles` and :class:`SandboxedExec` are the
services of a directory: every path confined to it (8.2.12, stricter), commands in the bubblewrap
sandbox of the agent's own ``exec`` tool (:mod:`aophub.agent.commands`).
"""

from __future__ import annotations

import asyncio
import errno
import mimetypes
import os
import re
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aop.exec import protocol_pb2 as exec_pb2
from aop.file import protocol_pb2 as file_pb2
from aop.pty import protocol_pb2 as pty_pb2
from aophub.agent.commands import stream_command
from aophub.agent.sandbox import ExecPolicy, SandboxError, Workspace
from aophub.hub.uploads import sniff_media_type
from aophub.protocol.errors import Code, HubError

__all__ = [
    "DEFAULT_MAX_EXEC_TIMEOUT",
    "DEFAULT_NODE_UPLOAD_BYTES",
    "MAX_READ_BYTES",
    "ConfinedFiles",
    "ExecOutput",
    "ExecService",
    "FileService",
    "SandboxedExec",
    "SendPty",
    "TerminalLink",
    "TerminalService",
    "WorkspaceServices",
    "media_type_of",
]

# The most one chunked read returns (8.2.9).
MAX_READ_BYTES = 1024 * 1024
# The largest upload a node stores (8.2.6, stricter); the hub's cap is the same by default.
DEFAULT_NODE_UPLOAD_BYTES = 25 * 1024 * 1024
# The longest an exec may run, whatever it asks (8.3.7, stricter): the hub's own bound on a call.
DEFAULT_MAX_EXEC_TIMEOUT = 600.0
# Stream sizes of exec output: at most this many bytes per exec.output (8.3.3, stricter).
EXEC_CHUNK_BYTES = 64 * 1024
UPLOADS_DIRECTORY = "uploads"

ExecOutput = Callable[[exec_pb2.Output], Awaitable[None]]
SendPty = Callable[[pty_pb2.ProtocolMessage], Awaitable[None]]


class FileService(Protocol):
    """Serves ``aop.file`` requests (read, write, list, mkdir, upload)."""

    async def file(self, message: file_pb2.ProtocolMessage) -> file_pb2.Result:
        """The request's result; raise ``HubError`` with the code to answer instead."""
        ...


class ExecService(Protocol):
    """Runs ``exec.request``\\ s."""

    async def exec(self, request: exec_pb2.Request, output: ExecOutput, canceled: asyncio.Event) -> exec_pb2.Result:
        """Run ``request``, sending its output through ``output``; stop when ``canceled`` is set.

        Return the ``exec.Result``; raise ``HubError`` (``EXEC_FAILED``) when it cannot run."""
        ...


class TerminalLink(Protocol):
    """One hub connection's view of the node's terminals: the stream bindings live here (8.5.1)."""

    async def receive(self, message: pty_pb2.ProtocolMessage) -> None:
        """Handle one ``aop.pty`` message from the hub."""
        ...

    async def close(self) -> None:
        """The connection ended: drop its bindings (the terminals keep running)."""
        ...


class TerminalService(Protocol):
    """The node's terminals, which outlive its hub connections."""

    def connect(self, send: SendPty) -> TerminalLink:
        """A link for a new hub connection; ``send`` carries its pty messages to the hub."""
        ...

    async def close(self) -> None:
        """The node shuts down: end every terminal."""
        ...


@dataclass
class WorkspaceServices:
    """The workspace namespaces a node serves; ``None`` refuses one with ``UNSUPPORTED_NAMESPACE``."""

    files: FileService | None = None
    exec: ExecService | None = None
    terminals: TerminalService | None = None

    def capabilities(self) -> list[str]:
        """The capability strings of the namespaces served (informational, 8.1.4)."""
        served = (("file", self.files), ("exec", self.exec), ("pty", self.terminals))
        return [name for name, service in served if service is not None]


def media_type_of(name: str, data: bytes) -> str:
    """From the extension (8.2.9), else from the bytes, else ``application/octet-stream``."""
    guessed, _ = mimetypes.guess_type(name)
    if guessed:
        return guessed + ("; charset=utf-8" if guessed.startswith("text/") else "")
    return sniff_media_type(data)  # the same sniff the hub applies to uploads


_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f/\\]")
_SAFE_ID = re.compile(r"[A-Za-z0-9._:@-]{1,200}")


def upload_name(filename: str) -> str:
    """The stored name: the base name with separators and control characters removed; ``upload`` if empty."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1]
    name = _UNSAFE_NAME.sub("", base).strip()
    return "upload" if name in ("", ".", "..") else name


def _numbered(name: str, n: int) -> str:
    """``notes.txt`` -> ``notes-<n>.txt``."""
    stem, dot, suffix = name.partition(".") if not name.startswith(".") else (name, "", "")
    return f"{stem}-{n}{dot}{suffix}"


class ConfinedFiles:
    """``aop.file`` served inside one workspace directory (8.2.6, 8.2.9 to 8.2.12, stricter).

    ``workspace`` gives the :class:`Workspace` in effect (a callable, so a configuration change
    applies from the next request). Relative paths resolve against its root; absolute paths are
    accepted only inside it; every symlink is followed and the real path must stay inside; files
    with more than one hard link, the hub's own files, devices, FIFOs and sockets are refused. Every
    refusal and OS error is ``FILE_OPERATION_FAILED`` with a message naming the rule, never a real
    path outside the root. Uploads land in ``uploads/<session_id>/<name>``, numbered instead of
    overwriting, at most ``max_upload_bytes``; ``uploads=False`` refuses them ``OPERATION_FAILED``.
    """

    def __init__(
        self,
        workspace: Callable[[], Workspace],
        *,
        uploads: bool = True,
        max_upload_bytes: int = DEFAULT_NODE_UPLOAD_BYTES,
    ) -> None:
        if max_upload_bytes <= 0:
            raise ValueError(f"max_upload_bytes must be positive, not {max_upload_bytes}")
        self._workspace = workspace
        self._uploads = uploads
        self._max_upload_bytes = max_upload_bytes

    def __repr__(self) -> str:
        return f"<ConfinedFiles uploads={self._uploads}>"

    async def file(self, message: file_pb2.ProtocolMessage) -> file_pb2.Result:
        case = message.WhichOneof("message")
        workspace = self._workspace()
        try:
            if case == "read_request":
                return await asyncio.to_thread(self._read, workspace, message.read_request)
            if case == "write_request":
                return await asyncio.to_thread(self._write, workspace, message.write_request)
            if case == "list_request":
                return await asyncio.to_thread(self._list, workspace, message.list_request)
            if case == "mkdir_request":
                return await asyncio.to_thread(self._mkdir, workspace, message.mkdir_request)
            if case == "upload_request":
                if not self._uploads:
                    raise HubError(Code.OPERATION_FAILED, "this node does not accept uploads")
                return await asyncio.to_thread(self._upload, workspace, message.upload_request)
        except SandboxError as refusal:
            raise HubError(Code.FILE_OPERATION_FAILED, str(refusal)) from None
        except OSError as error:
            raise HubError(Code.FILE_OPERATION_FAILED, _os_error(workspace, error)) from None
        raise HubError(Code.OPERATION_FAILED, f"unsupported file message: {case or 'none'}")

    @staticmethod
    def resolve(workspace: Workspace, path: str, *, must_exist: bool = False) -> Path:
        """``path`` (relative, or absolute inside the root) as a real path inside the workspace."""
        if not path:
            raise SandboxError("path required")
        if os.path.isabs(path):
            lexical = os.path.normpath(path)
            root = os.fspath(workspace.root)
            if os.path.commonpath([root, lexical]) != root:
                raise SandboxError("absolute path refused: it is outside the workspace")
            path = os.path.relpath(lexical, root)
        return workspace.resolve(path, must_exist=must_exist)

    def _read(self, workspace: Workspace, request: file_pb2.ReadRequest) -> file_pb2.Result:
        if request.offset < 0 or request.limit < 0:
            raise SandboxError("offset and limit must not be negative")
        real = self.resolve(workspace, request.path, must_exist=True)
        fd, info = workspace.open_file(real)
        try:
            if stat.S_ISDIR(info.st_mode):
                raise SandboxError(f"{request.path!r} is a directory")
            if not stat.S_ISREG(info.st_mode):
                raise SandboxError(f"{request.path!r} refused: device files, FIFOs and sockets are not read")
            size = info.st_size
            if request.limit == 0:  # the whole file, from byte 0 (the old form)
                offset, data = 0, _read_all(fd, size)
            else:
                offset = request.offset
                if offset > size:
                    raise SandboxError(f"offset {offset} is past the end of {request.path!r} ({size} bytes)")
                data = os.pread(fd, min(request.limit, MAX_READ_BYTES), offset)
        finally:
            os.close(fd)
        return file_pb2.Result(
            path=request.path,
            filename=real.name,
            size=size,
            data=data,
            media_type=media_type_of(real.name, data),
            offset=offset,
            eof=offset + len(data) >= size,
        )

    def _write(self, workspace: Workspace, request: file_pb2.WriteRequest) -> file_pb2.Result:
        real = self.resolve(workspace, request.path)
        _refuse_special(real, request.path)
        workspace.replace_file(real, request.data)
        return file_pb2.Result(path=request.path, size=len(request.data))

    def _list(self, workspace: Workspace, request: file_pb2.ListRequest) -> file_pb2.Result:
        path = request.path or "."
        real = self.resolve(workspace, path, must_exist=True)
        fd = workspace.open_directory(real)
        try:
            entries = []
            for name in sorted(os.listdir(fd)):
                try:
                    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # removed while listed
                entries.append(file_pb2.Entry(name=name, is_directory=stat.S_ISDIR(info.st_mode), size=info.st_size))
        finally:
            os.close(fd)
        return file_pb2.Result(path=path, entries=entries)

    def _mkdir(self, workspace: Workspace, request: file_pb2.MkdirRequest) -> file_pb2.Result:
        real = self.resolve(workspace, request.path)
        os.close(workspace.open_directory(real, create=True))
        return file_pb2.Result(path=request.path)

    def _upload(self, workspace: Workspace, request: file_pb2.UploadRequest) -> file_pb2.Result:
        if not _SAFE_ID.fullmatch(request.session_id) or request.session_id in (".", ".."):
            raise SandboxError("the upload names no usable session id")
        if len(request.data) > self._max_upload_bytes:
            raise SandboxError(
                f"the upload is {len(request.data)} bytes; this node stores at most {self._max_upload_bytes}"
            )
        name = upload_name(request.filename)
        directory = workspace.resolve(os.path.join(UPLOADS_DIRECTORY, request.session_id))
        for n in range(1000):
            stored = name if n == 0 else _numbered(name, n)
            real = workspace.resolve(os.path.join(UPLOADS_DIRECTORY, request.session_id, stored))
            if real.parent != directory:
                raise SandboxError("the upload's name is not usable")
            try:
                workspace.create_file(real, request.data)
            except FileExistsError:
                continue
            return file_pb2.Result(
                path=os.fspath(real),
                filename=stored,
                size=len(request.data),
                media_type=media_type_of(stored, request.data),
            )
        raise SandboxError(f"too many uploads named {name!r} in this session")


def _read_all(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while True:
        chunk = os.pread(fd, max(size - offset, MAX_READ_BYTES), offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _refuse_special(real: Path, given: str) -> None:
    try:
        info = os.lstat(real)
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise SandboxError(f"{given!r} refused: device files, FIFOs and sockets are not written")


def _os_error(workspace: Workspace, error: OSError) -> str:
    """The OS error text (8.1.5) with the path shown relative to the workspace."""
    text = error.strerror or os.strerror(error.errno or errno.EIO)
    if error.filename:
        return f"{workspace.display(os.fsdecode(error.filename))}: {text}"
    return text


class SandboxedExec:
    """``aop.exec`` run in the bubblewrap sandbox of the agent's ``exec`` tool (8.3, stricter 8.3.7).

    ``workspace`` and ``policy`` give what is in effect (callables: a configuration change applies
    from the next request). The deny and allow patterns apply; ``cwd`` must resolve inside the
    workspace; a request's ``timeout_seconds`` of 0 gets the policy's timeout, and none may exceed
    ``max_timeout``; each stream is cut at the policy's output cap with a truncation marker; on
    timeout or cancel the whole sandbox (every process of the command) is killed. ``enabled``
    (a callable) off refuses every request ``OPERATION_FAILED``.
    """

    def __init__(
        self,
        workspace: Callable[[], Workspace],
        policy: Callable[[], ExecPolicy],
        *,
        enabled: Callable[[], bool] = lambda: True,
        max_timeout: float = DEFAULT_MAX_EXEC_TIMEOUT,
    ) -> None:
        self._workspace = workspace
        self._policy = policy
        self._enabled = enabled
        self._max_timeout = max_timeout

    def __repr__(self) -> str:
        return f"<SandboxedExec max_timeout={self._max_timeout}>"

    async def exec(self, request: exec_pb2.Request, output: ExecOutput, canceled: asyncio.Event) -> exec_pb2.Result:
        if not self._enabled():
            raise HubError(Code.OPERATION_FAILED, "exec is off on this node (see its terminal and exec settings)")
        workspace, policy = self._workspace(), self._policy()
        try:
            cwd = ConfinedFiles.resolve(workspace, request.cwd, must_exist=True) if request.cwd else None
            if cwd is not None and not cwd.is_dir():
                raise SandboxError(f"cwd {request.cwd!r} is not a directory")
            timeout = min(float(request.timeout_seconds or policy.timeout), self._max_timeout)

            async def sink(stream: int, data: bytes) -> None:
                await output(
                    exec_pb2.Output(stream=exec_pb2.STREAM_STDOUT if stream == 1 else exec_pb2.STREAM_STDERR, data=data)
                )

            ended = await stream_command(
                request.command,
                workspace,
                policy,
                sink,
                timeout=timeout,
                canceled=canceled,
                cwd=cwd,
                env=dict(request.env),
                chunk=EXEC_CHUNK_BYTES,
            )
        except (SandboxError, OSError) as error:
            raise HubError(
                Code.EXEC_FAILED, str(error) if isinstance(error, SandboxError) else _os_error(workspace, error)
            ) from None
        return exec_pb2.Result(exit_code=ended.exit_code, state=ended.state, kill_cause=ended.kill_cause)
