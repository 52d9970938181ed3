"""Terminals on a node: one real pseudo-terminal per ``aop.pty`` session (AOP-workspace 8.5).

:class:`Terminals` owns the node's PTY sessions, which outlive hub connections (8.5.14); each
connection gets a :class:`TerminalStreams` (``Terminals.connect``) holding its stream bindings
(8.5.1), which go with the connection. Every session is a process on its own pseudo-terminal
(``os.openpty``; the terminal is its controlling terminal, so job control and Ctrl-C work), sized
with ``TIOCSWINSZ``. Its output goes to a scrollback ring of ``scrollback_bytes`` (2 MiB by
default, 8.5.13); each bound stream sends from its own position in that output, and every
``output`` carries the real ``offset`` of its first byte (stricter than the reference's 0,
8.5.10): a client that attaches again drops what it already has and loses nothing, as long as
what it missed is within the replay (``replay_bytes``, 64 KiB by default, 8.5.3). A stream that
falls behind never loses bytes: the session stops reading its terminal until the stream catches up
(the program then blocks on its writes, as on a terminal paused with Ctrl-S). All output reaches a
stream before its ``closed`` (stricter, 8.5.7).

How the process starts is the ``launch`` hook: :func:`plain_launch` runs it as the node's user in
a directory; the built-in node runs it in the bubblewrap sandbox (:func:`sandboxed_launch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import struct
import termios
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import timestamp_pb2

from aop.pty import protocol_pb2 as pty_pb2
from aophub.agent.commands import scrubbed_environment
from aophub.agent.isolation import Isolation, ProcessCgroup, sandbox_argv
from aophub.agent.sandbox import SandboxError, Workspace
from aophub.ids import new_id
from aophub.node.workspace import SendPty

__all__ = [
    "DEFAULT_MAX_TERMINALS",
    "DEFAULT_REPLAY_BYTES",
    "DEFAULT_SCROLLBACK_BYTES",
    "Launch",
    "Launched",
    "TerminalSettings",
    "TerminalStreams",
    "Terminals",
    "plain_launch",
    "sandboxed_launch",
    "signal_groups",
]

log = logging.getLogger(__name__)

DEFAULT_SCROLLBACK_BYTES = 2 * 1024 * 1024
DEFAULT_REPLAY_BYTES = 64 * 1024
DEFAULT_MAX_TERMINALS = 64
# Ended sessions stay listed (8.5.14); only the latest this many, so memory stays bounded.
MAX_ENDED_TERMINALS = 32
LIFETIME = 24 * 3600.0
KILL_GRACE = 5.0
_CHUNK = 64 * 1024
# Typed input waiting for a terminal that does not read it; past it the input is refused (pty.error).
_MAX_PENDING_INPUT = 1024 * 1024
_NAMES = {"shell": "remote-shell", "command": "remote-command", "repl": "remote-repl"}
_TERMINAL_ENV = {"TERM": "xterm-256color", "COLORTERM": "truecolor"}


@dataclass(frozen=True)
class TerminalSettings:
    """What the node allows: ``enabled`` off answers ``open`` and ``attach`` with ``pty.error``."""

    enabled: bool = True
    scrollback_bytes: int = DEFAULT_SCROLLBACK_BYTES
    replay_bytes: int = DEFAULT_REPLAY_BYTES
    max_terminals: int = DEFAULT_MAX_TERMINALS
    lifetime: float = LIFETIME

    def __post_init__(self) -> None:
        for name in ("scrollback_bytes", "replay_bytes", "max_terminals", "lifetime"):
            if getattr(self, name) <= 0:
                raise ValueError(f"the terminals' {name} must be positive, not {getattr(self, name)}")


@dataclass
class Launched:
    """A started terminal process; ``cleanup`` runs once it has exited."""

    process: asyncio.subprocess.Process
    cleanup: Callable[[], None] = lambda: None


def signal_groups(leader: int, master: int) -> set[int]:
    """The process groups a terminal's kill signals: its leader's, and the terminal's foreground job.

    A terminal no session has adopted yet (its shell is still starting) has no foreground group:
    ``tcgetpgrp`` then answers 0, and ``killpg(0, ...)`` would signal the hub's own process group.
    Only a real group other than the hub's is added.
    """
    groups = {leader}
    with contextlib.suppress(OSError):
        foreground = os.tcgetpgrp(master)
        if foreground > 0 and foreground != os.getpgrp():
            groups.add(foreground)
    return groups


# Start ``argv`` with the pseudo-terminal ``tty`` as its controlling terminal and standard streams.
Launch = Callable[[Sequence[str], int], Awaitable[Launched]]


# The terminal becomes the controlling terminal of the new session when its leader opens it (Linux does
# that for a session leader without one); the leader then becomes the program. No preexec_fn: uvloop,
# which serves the hub, does not run one.
_ADOPT_TERMINAL = 'exec 0<>"$1" 1>&0 2>&0; shift; exec "$@"'


async def _start(argv: Sequence[str], tty: int, cwd: Path, env: Mapping[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        "/bin/sh",
        "-c",
        _ADOPT_TERMINAL,
        "sh",
        os.ttyname(tty),
        *argv,
        stdin=tty,
        stdout=tty,
        stderr=tty,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


def plain_launch(directory: Path, env: Mapping[str, str] | None = None) -> Launch:
    """Run terminals as the node's user in ``directory``, with the node's environment (the reference's way)."""

    async def launch(argv: Sequence[str], tty: int) -> Launched:
        environment = dict(os.environ if env is None else env) | _TERMINAL_ENV
        return Launched(await _start(argv, tty, directory, environment))

    return launch


def sandboxed_launch(workspace: Callable[[], Workspace], isolation: Callable[[], Isolation]) -> Launch:
    """Run terminals in the bubblewrap sandbox of the agent's ``exec`` tool (:mod:`aophub.agent.isolation`).

    The same namespaces, read-only system, writable workspace, no network (unless configured) and
    limits per process; only ``--new-session`` is left out, so that the terminal stays the shell's
    controlling terminal (see ``sandbox_argv``): the terminal is made for this sandbox alone. The
    CPU-time limit applies to each process, so a long-lived shell is killed after
    ``sandbox.cpu_seconds`` of CPU, not of wall time. Where the sandbox cannot run, terminals are
    refused unless ``sandbox.allow_unsandboxed``; then they run as the hub's user in the workspace.
    """

    async def launch(argv: Sequence[str], tty: int) -> Launched:
        root, confinement = workspace(), isolation()
        found = confinement.probe()
        environment = scrubbed_environment(root) | _TERMINAL_ENV
        if refusal := confinement.disk_refusal(root.root):
            raise SandboxError(refusal)
        if not found.usable:
            if not confinement.allow_unsandboxed:
                raise SandboxError(f"terminals run only in the sandbox, and {found.reason}")
            return Launched(await _start(argv, tty, root.root, environment))
        command = sandbox_argv(
            argv, workspace=root.root, hidden=root.protected, isolation=confinement, found=found, new_session=False
        )
        cgroup = ProcessCgroup(found.cgroups, confinement.max_processes) if found.cgroups is not None else None
        if cgroup is not None:
            command = cgroup.argv(command)
        environment["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        try:
            process = await _start(command, tty, root.root, environment)
        except BaseException:
            if cgroup is not None:
                cgroup.close()
            raise
        return Launched(process, cgroup.close if cgroup is not None else lambda: None)

    return launch


def _now() -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.GetCurrentTime()
    return stamp


def _shell() -> str:
    """The first of bash or sh (8.5.2)."""
    for candidate in ("/bin/bash", "/usr/bin/bash"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("bash") or "/bin/sh"


def _duration(seconds: float) -> str:
    """Go's duration text, as the reference's kill cause: ``24h0m0s``."""
    whole = int(seconds)
    return f"{whole // 3600}h{whole % 3600 // 60}m{whole % 60}s"


class _Session:
    """One terminal: its process, its pseudo-terminal and its output."""

    def __init__(
        self, kind: str, *, name: str, command: str, launched: Launched, master: int, settings: TerminalSettings
    ) -> None:
        self.id = new_id("pty")
        self.kind = kind
        self.name = name
        self.command = command
        self.launched = launched
        self.process = launched.process
        self.master = master
        self.capacity = settings.scrollback_bytes
        self.replay = min(settings.replay_bytes, settings.scrollback_bytes)
        self.started_at = _now()
        self.last_activity_at = _now()
        self.ended_at: timestamp_pb2.Timestamp | None = None
        self.activity_seq = 0
        self.exit_code = 0
        self.state = "running"
        self.kill_cause = ""
        self.buffer = bytearray()
        self.start = 0  # offset of buffer[0] in the session's output
        self.readers: set[_Binding] = set()
        self._changed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._reading = False
        self._eof = asyncio.Event()
        self._input = bytearray()
        self._writing = False
        self._killer: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()
        os.set_blocking(master, False)
        self._resume()
        self._lifetime = self._loop.call_later(
            settings.lifetime, self.kill, f"timeout after {_duration(settings.lifetime)}"
        )
        self.ended = asyncio.Event()
        self._watcher = asyncio.create_task(self._watch())

    def __repr__(self) -> str:
        return f"<terminal {self.id} {self.kind} {self.state} {self.total} bytes>"

    @property
    def total(self) -> int:
        """Bytes of output so far: the offset the next byte gets."""
        return self.start + len(self.buffer)

    @property
    def running(self) -> bool:
        return self.state == "running"

    def describe(self) -> pty_pb2.Session:
        session = pty_pb2.Session(
            id=self.id,
            kind=self.kind,
            name=self.name,
            command=self.command,
            pid=self.process.pid,
            started_at=self.started_at,
            last_activity_at=self.last_activity_at,
            activity_seq=self.activity_seq,
            output_bytes=self.total,
            exit_code=self.exit_code,
            state=self.state,
            kill_cause=self.kill_cause,
        )
        if self.ended_at is not None:
            session.ended_at.CopyFrom(self.ended_at)
        return session

    # -- output ------------------------------------------------------------------------------

    def read(self, position: int) -> tuple[int, bytes]:
        """Output from ``position`` (or the oldest kept, if that is gone), at most one chunk: (offset, bytes)."""
        offset = max(position, self.start)
        begin = offset - self.start
        return offset, bytes(self.buffer[begin : begin + _CHUNK])

    async def changed(self) -> None:
        """Wait until there is new output or the session ended."""
        await asyncio.shield(self._changed)

    def _notify(self) -> None:
        if not self._changed.done():
            self._changed.set_result(None)
        self._changed = self._loop.create_future()

    def _lagging(self) -> bool:
        """True when one more read could push out output a bound stream has not sent yet."""
        floor = self.total + _CHUNK - self.capacity
        return any(reader.position < floor for reader in self.readers)

    def advanced(self) -> None:
        """A stream sent some output: read the terminal again if it was paused for that stream."""
        if not self._reading and not self._eof.is_set() and not self._lagging():
            self._resume()

    def _resume(self) -> None:
        self._reading = True
        self._loop.add_reader(self.master, self._on_readable)

    def _pause(self) -> None:
        self._reading = False
        self._loop.remove_reader(self.master)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.master, _CHUNK)
        except BlockingIOError:
            return
        except OSError:  # EIO: every process holding the terminal is gone
            data = b""
        if not data:
            self._pause()
            self._eof.set()
            self._notify()
            return
        self.buffer += data
        excess = len(self.buffer) - self.capacity
        if excess > 0:
            del self.buffer[:excess]
            self.start += excess
        self._touch()
        self._notify()
        if self._lagging():
            self._pause()

    def _touch(self) -> None:
        self.activity_seq += 1
        self.last_activity_at = _now()

    # -- input, size, end ----------------------------------------------------------------------

    def write(self, data: bytes) -> bool:
        """Queue typed bytes; False when too much input is waiting already."""
        if len(self._input) + len(data) > _MAX_PENDING_INPUT:
            return False
        self._input += data
        if not self._writing:
            self._on_writable()
        return True

    def _on_writable(self) -> None:
        while self._input:
            try:
                written = os.write(self.master, self._input)
            except BlockingIOError:
                break
            except OSError:
                self._input.clear()
                break
            del self._input[:written]
        if self._input and not self._writing:
            self._writing = True
            self._loop.add_writer(self.master, self._on_writable)
        elif not self._input and self._writing:
            self._writing = False
            self._loop.remove_writer(self.master)

    def resize(self, cols: int, rows: int) -> None:
        if cols <= 0 or rows <= 0 or not self.running:
            return
        with contextlib.suppress(OSError):
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            self._touch()

    def kill(self, cause: str) -> None:
        """SIGHUP and SIGTERM to its process group (and the terminal's foreground job), SIGKILL after 5 s."""
        if not self.running or self.kill_cause:
            return
        self.kill_cause = cause
        self._touch()
        groups = signal_groups(self.process.pid, self.master)
        for group in groups:
            for signum in (signal.SIGHUP, signal.SIGCONT, signal.SIGTERM):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(group, signum)
        self._killer = self._loop.call_later(KILL_GRACE, self._kill_now, groups)

    def _kill_now(self, groups: set[int]) -> None:
        for group in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)

    async def _watch(self) -> None:
        """Wait for the process to end, then for the rest of its output; then the session has ended."""
        returncode = await self.process.wait()
        # Whatever it wrote before it ended is still to be read; a stream that lags holds the
        # reading back (it resumes as the stream sends), and a process it left holding the
        # terminal must not hold the end for ever.
        while not self._eof.is_set():
            try:
                async with asyncio.timeout(1.0):
                    await self._eof.wait()
            except TimeoutError:
                if self._reading:
                    break
        if self._reading:
            self._pause()
        with contextlib.suppress(OSError):
            while data := os.read(self.master, _CHUNK):  # what a lagging stream did not let it read
                self.buffer += data
        if self._writing:
            self._loop.remove_writer(self.master)
        os.close(self.master)
        self.launched.cleanup()
        self._lifetime.cancel()
        if self._killer is not None:
            self._killer.cancel()
        if returncode >= 0:
            self.exit_code = returncode
        else:
            self.exit_code = 128 - returncode
        self.state = "killed" if self.kill_cause else "completed"
        self.ended_at = _now()
        self._touch()
        self.ended.set()
        self._notify()


@dataclass(eq=False)
class _Binding:
    """A stream bound to a session: where it is in the output, and the task sending it."""

    stream_id: str
    session: _Session
    position: int
    task: asyncio.Task[None] | None = field(default=None, repr=False)


class Terminals:
    """The node's terminal sessions; see the module docstring.

    ``settings`` is read at each ``open`` and ``attach`` (a callable: a configuration change applies
    at once). ``launch`` starts a session's process (default: :func:`plain_launch` in the current
    directory).
    """

    def __init__(
        self, settings: Callable[[], TerminalSettings] = TerminalSettings, launch: Launch | None = None
    ) -> None:
        self._settings = settings
        self._launch = launch or plain_launch(Path.cwd())
        self._sessions: dict[str, _Session] = {}

    def __repr__(self) -> str:
        return f"<Terminals {len(self._sessions)}>"

    def connect(self, send: SendPty) -> TerminalStreams:
        return TerminalStreams(self, send)

    def sessions(self) -> list[_Session]:
        """Every session, ended ones too, by start time."""
        return sorted(self._sessions.values(), key=lambda s: (s.started_at.seconds, s.started_at.nanos))

    def find(self, key: str) -> _Session | None:
        """By id, then by name (8.5.3)."""
        found = self._sessions.get(key)
        if found is not None:
            return found
        return next((session for session in self.sessions() if session.name == key), None)

    def singleton(self, kind: str, name: str) -> _Session | None:
        running = [session for session in self.sessions() if session.running and session.kind == kind]
        return next((s for s in running if s.name == name), running[0] if running else None)

    async def start(self, kind: str, name: str, command: str, cols: int, rows: int) -> _Session:
        """A new session; raises ``SandboxError`` or ``OSError`` when it cannot start."""
        settings = self._settings()
        if sum(session.running for session in self._sessions.values()) >= settings.max_terminals:
            raise SandboxError(f"too many terminals: at most {settings.max_terminals} run at once on this node")
        argv = [_shell()] if kind == "shell" else ["/bin/sh", "-c", command]
        master, tty = os.openpty()
        try:
            if cols > 0 and rows > 0:
                fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            launched = await self._launch(argv, tty)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(tty)
        session = _Session(kind, name=name, command=command, launched=launched, master=master, settings=settings)
        self._sessions[session.id] = session
        self._forget_ended()
        return session

    def _forget_ended(self) -> None:
        ended = [s for s in self.sessions() if s.ended.is_set() and not s.readers]
        for session in ended[: max(0, len(ended) - MAX_ENDED_TERMINALS)]:
            del self._sessions[session.id]

    async def close(self) -> None:
        """The node shuts down: end every session (``kill_cause: "shutdown"``) and wait for them."""
        for session in self._sessions.values():
            session.kill("shutdown")
        waits = [session.ended.wait() for session in self._sessions.values()]
        if waits:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(KILL_GRACE + 2):
                    await asyncio.gather(*waits)


class TerminalStreams:
    """One hub connection's streams (8.5.1 to 8.5.11)."""

    def __init__(self, terminals: Terminals, send: SendPty) -> None:
        self._terminals = terminals
        self._send = send
        self._bound: dict[str, _Binding] = {}

    def __repr__(self) -> str:
        return f"<TerminalStreams {len(self._bound)} bound>"

    async def _error(self, stream_id: str, text: str) -> None:
        await self._send(pty_pb2.ProtocolMessage(error=pty_pb2.Error(stream_id=stream_id, message=text)))

    async def receive(self, message: pty_pb2.ProtocolMessage) -> None:
        case = message.WhichOneof("message")
        body = getattr(message, case) if case else None
        stream_id: str = body.stream_id if body is not None else ""
        if case == "open":
            await self._open(message.open)
        elif case == "attach":
            await self._attach(message.attach)
        elif case == "input":
            binding = self._bound.get(stream_id)
            if binding is None:
                await self._error(stream_id, "pty session_id required")
            elif binding.session.running and not binding.session.write(message.input.data):
                await self._error(stream_id, "input overrun: the terminal is not reading its input")
        elif case == "resize":
            binding = self._bound.get(stream_id)
            if binding is not None:
                binding.session.resize(message.resize.cols, message.resize.rows)
        elif case == "list":
            sessions = [session.describe() for session in self._terminals.sessions()]
            await self._send(pty_pb2.ProtocolMessage(sessions=pty_pb2.Sessions(stream_id=stream_id, sessions=sessions)))
        elif case == "detach":
            await self._unbind(stream_id)
            await self._send(pty_pb2.ProtocolMessage(detached=pty_pb2.Detached(stream_id=stream_id)))
        elif case in ("kill", "close"):
            binding = self._bound.get(stream_id)
            if binding is not None:
                binding.session.kill("killed by user")
        else:
            await self._error(stream_id, "unsupported pty message")

    async def _open(self, request: pty_pb2.Open) -> None:
        if not request.stream_id:
            await self._error("", "pty stream_id required")
            return
        kind = request.kind.lower() or ("command" if request.command else "shell")
        name = request.name or _NAMES.get(kind, f"remote-{kind}")
        settings = self._terminals._settings()
        if not settings.enabled:
            await self._error(request.stream_id, "terminals are off on this node")
            return
        if request.singleton:
            found = self._terminals.singleton(kind, name)
            if found is not None:
                await self._bind_existing(request.stream_id, found, request.cols, request.rows)
                return
        if kind not in ("shell", "command"):
            await self._error(request.stream_id, f"unsupported pty kind: {kind}")
            return
        await self._unbind(request.stream_id)
        try:
            session = await self._terminals.start(kind, name, request.command, request.cols, request.rows)
        except Exception as error:  # SandboxError, OSError, SubprocessError: the stream says why
            await self._error(request.stream_id, f"cannot start the terminal: {error}")
            return
        await self._send(
            pty_pb2.ProtocolMessage(opened=pty_pb2.Opened(stream_id=request.stream_id, session=session.describe()))
        )
        self._bind(request.stream_id, session, 0)

    async def _attach(self, request: pty_pb2.Attach) -> None:
        if not self._terminals._settings().enabled:
            await self._error(request.stream_id, "terminals are off on this node")
            return
        if not request.session_id:
            await self._error(request.stream_id, "pty session_id required")
            return
        session = self._terminals.find(request.session_id)
        if session is None:
            await self._error(request.stream_id, f"no such session: {request.session_id}")
            return
        await self._bind_existing(request.stream_id, session, request.cols, request.rows)

    async def _bind_existing(self, stream_id: str, session: _Session, cols: int, rows: int) -> None:
        """``attached``, then the last ``replay`` bytes and live output from there; then the size (8.5.3)."""
        await self._unbind(stream_id)
        await self._send(
            pty_pb2.ProtocolMessage(attached=pty_pb2.Attached(stream_id=stream_id, session=session.describe()))
        )
        self._bind(stream_id, session, max(session.start, session.total - session.replay))
        session.resize(cols, rows)

    def _bind(self, stream_id: str, session: _Session, position: int) -> None:
        binding = _Binding(stream_id, session, position)
        session.readers.add(binding)
        self._bound[stream_id] = binding
        binding.task = asyncio.create_task(self._pump(binding))

    async def _pump(self, binding: _Binding) -> None:
        """Send the session's output to the stream from its position on; ``closed`` once it has ended."""
        session = binding.session
        try:
            while True:
                offset, data = session.read(binding.position)
                if data:
                    output = pty_pb2.Output(stream_id=binding.stream_id, data=data, offset=offset)
                    await self._send(pty_pb2.ProtocolMessage(output=output))
                    binding.position = offset + len(data)
                    session.advanced()
                    continue
                if session.ended.is_set():
                    break
                await session.changed()
        except Exception:
            log.info("terminal stream %s: the hub connection is gone", binding.stream_id)
            self._drop(binding)
            return
        self._drop(binding)
        closed = pty_pb2.Closed(stream_id=binding.stream_id, session=session.describe())
        with contextlib.suppress(Exception):
            await self._send(pty_pb2.ProtocolMessage(closed=closed))

    def _drop(self, binding: _Binding) -> None:
        binding.session.readers.discard(binding)
        if self._bound.get(binding.stream_id) is binding:
            del self._bound[binding.stream_id]
        binding.session.advanced()

    async def _unbind(self, stream_id: str) -> None:
        """Silently unbind the stream (8.5.1): its sending stops; the session keeps running."""
        binding = self._bound.pop(stream_id, None)
        if binding is None:
            return
        # First, with no wait before it: the session no longer waits for this stream's position
        # (a stream left among its readers would hold back its output for every other stream).
        self._drop(binding)
        task = binding.task
        if task is not None and task is not asyncio.current_task() and not task.done():
            task.cancel()
            # Wait for the sending to stop without taking the caller's own cancellation for the
            # stream's: a caller cancelled meanwhile ends cancelled (it used to carry on and answer
            # ``detached`` on a connection that took nothing more, a task that never ended).
            await asyncio.wait({task})

    async def close(self) -> None:
        for stream_id in list(self._bound):
            await self._unbind(stream_id)
