"""The built-in agent's sandbox: a workspace directory and a policy for shell commands.

``Workspace.resolve`` is the only way a tool turns a model-supplied path into a
filesystem path: relative paths only, resolved through every symlink, and
refused unless the result lies inside the workspace's real root.
``Workspace.open_file``, ``open_directory`` and ``replace_file`` then reach
that path without following any symlink that appeared since, and refuse files
with more than one hard link and the hub's own files (by device and inode).

``ExecPolicy`` says which commands ``exec`` runs (``aophub.agent.commands``
runs them) and how they are confined (``aophub.agent.isolation``). Its deny
and allow patterns are a second line against accidents, not the boundary:
that is the bubblewrap sandbox.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aophub.agent.isolation import Isolation
from aophub.v1 import config_pb2

__all__ = [
    "DEFAULT_DENY_PATTERNS",
    "DEFAULT_EXEC_TIMEOUT",
    "DEFAULT_OUTPUT_CAP",
    "MAX_COMMAND_BYTES",
    "ExecPolicy",
    "SandboxError",
    "Workspace",
]

DEFAULT_EXEC_TIMEOUT = 60.0
DEFAULT_OUTPUT_CAP = 65536
# Linux refuses a longer single exec argument (MAX_ARG_STRLEN); refusing it
# up front also bounds the time the deny patterns take.
MAX_COMMAND_BYTES = 128 * 1024


class SandboxError(Exception):
    """A path or command the sandbox refuses; the message says why and is safe to show the model."""


class Workspace:
    """The directory the built-in agent's tools are confined to.

    ``root`` must be an existing directory; it is resolved once, through any
    symlinks, and every path is checked against that real root. ``protected``
    are files the tools must never open, whatever name reaches them (the hub's
    configuration, access key, database, audit log): they are recognised by
    device and inode. The hub replaces its configuration when it rewrites it,
    and a hard link to the old version has one link and is no longer the
    configuration: so every version seen (at construction, at each file
    access and at each ``remember_protected``) stays refused while any name
    still reaches it. The workspace holds an ``O_PATH`` descriptor of each such
    version, so its inode number cannot pass to a new, innocent file.
    """

    def __init__(self, root: Path, *, protected: Sequence[Path] = ()) -> None:
        real = os.path.realpath(root)
        if not os.path.isdir(real):
            raise SandboxError(f"workspace {str(root)!r} is not a directory")
        self._root = real
        self._protected = tuple(protected)
        # (device, inode) of every version of a protected file still linked somewhere -> an O_PATH descriptor.
        self._held: dict[tuple[int, int], int] = {}
        weakref.finalize(self, _close_all, self._held)
        self.remember_protected()

    def __repr__(self) -> str:
        return f"<Workspace {self._root}>"

    @property
    def protected(self) -> tuple[Path, ...]:
        """The hub's files the tools must never reach (commands do not see them either)."""
        return self._protected

    @property
    def root(self) -> Path:
        """The real (symlink-free, absolute) workspace directory."""
        return Path(self._root)

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """Return the real path ``path`` (relative to the workspace) names, or raise ``SandboxError``.

        Refused: empty paths, NUL bytes, absolute and ``~`` paths, and any path
        whose real location (every symlink followed, also for a target that does
        not exist yet) lies outside the workspace, including symlink loops.
        ``..`` is allowed while it stays inside. The result contains no symlink
        and no ``..``; callers operate on it, never on ``path``. With
        ``must_exist`` the target must exist.
        """
        if not isinstance(path, str):
            raise SandboxError("the path must be a string")
        if not path.strip():
            raise SandboxError("empty path: give a path relative to the workspace, such as '.' or 'src/main.py'")
        if "\x00" in path:
            raise SandboxError("the path contains a NUL byte")
        try:
            os.fsencode(path)
        except UnicodeEncodeError:
            raise SandboxError("the path is not valid text") from None
        if path.startswith("~"):
            raise SandboxError(f"{path!r} refused: '~' paths are not allowed; give a path relative to the workspace")
        if os.path.isabs(path):
            raise SandboxError(f"absolute path {path!r} refused: give a path relative to the workspace")
        real = os.path.realpath(os.path.join(self._root, path))
        if os.path.commonpath([self._root, real]) != self._root:
            raise SandboxError(f"{path!r} refused: it leads outside the workspace")
        # realpath gives up on a symlink loop and returns the rest of the path
        # unresolved: a symlink (or "..") left in the result means a loop.
        if os.path.normpath(real) != real or self._has_symlink(real):
            raise SandboxError(f"{path!r} refused: too many levels of symbolic links")
        if must_exist and not os.path.lexists(real):
            raise SandboxError(f"{path!r} does not exist")
        return Path(real)

    def _has_symlink(self, real: str) -> bool:
        prefix = self._root
        for part in Path(os.path.relpath(real, self._root)).parts:
            prefix = os.path.join(prefix, part)
            if os.path.islink(prefix):
                return True
        return False

    # Opening files. ``resolve`` checks a path; between that check and the open
    # a command may swap a directory for a symlink or link a file in. So files
    # are opened from the root one component at a time with O_NOFOLLOW, and
    # what was opened is checked with fstat: a file with more than one hard
    # link may be an alias of a file anywhere on the same filesystem, and a
    # protected file is refused under any name.

    def open_directory(self, real: Path, *, create: bool = False) -> int:
        """Open the directory ``real`` (a ``resolve`` result) through no symlink; the caller closes the descriptor.

        With ``create`` missing directories are made. Raises ``SandboxError``
        when a component is now a symlink, ``OSError`` when it is missing or
        not a directory.
        """
        fd = os.open(self._root, _DIRECTORY_FLAGS)
        try:
            current = self._root
            for part in self._parts(real):
                current = os.path.join(current, part)
                inner = self._open_component(fd, part, current, create=create)
                os.close(fd)
                fd = inner
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_file(self, real: Path) -> tuple[int, os.stat_result]:
        """Open ``real`` (a ``resolve`` result) for reading: its descriptor, which the caller closes, and its fstat.

        Never blocks on a FIFO and follows no symlink. Raises ``SandboxError``
        for a file with more than one hard link or a protected file, and when a
        component changed into a symlink since ``resolve``.
        """
        if os.fspath(real) == self._root:
            fd = self.open_directory(real)
        else:
            parent = self.open_directory(real.parent)
            try:
                fd = self._open_component(parent, real.name, os.fspath(real), flags=_READ_FLAGS)
            finally:
                os.close(parent)
        try:
            info = os.fstat(fd)
            self._check_opened(info, real)
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def replace_file(self, real: Path, data: bytes) -> None:
        """Write ``data`` to ``real`` (a ``resolve`` result) atomically; missing parent directories are made.

        The data goes to a temporary file in the same directory, then one
        rename puts it in place: a reader sees the old content or the new. A
        replaced file keeps its permissions; a new one gets 0644. An existing
        file with more than one hard link or a protected file is refused
        (``SandboxError``), as is a directory (``IsADirectoryError``).
        """
        if os.fspath(real) == self._root:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(real))
        parent = self.open_directory(real.parent, create=True)
        try:
            self._replace_in(parent, real, data)
        finally:
            os.close(parent)

    def create_file(self, real: Path, data: bytes) -> None:
        """Write ``data`` to the new file ``real`` (a ``resolve`` result); missing parent directories are made.

        Raises ``FileExistsError`` when a file (or anything) of that name exists, so that concurrent
        callers never overwrite each other. A reader sees the whole file or none: the data goes to a
        temporary file first, which is then linked under its name (which fails if the name is taken).
        """
        if os.fspath(real) == self._root:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fspath(real))
        parent = self.open_directory(real.parent, create=True)
        try:
            if self._is_protected_name(os.fstat(parent), real.name):
                raise self._protected_error(real)
            temporary = f".{real.name}.{secrets.token_hex(4)}.tmp"
            fd = os.open(temporary, _NEW_FILE_FLAGS, _NEW_FILE_MODE, dir_fd=parent)
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.link(temporary, real.name, src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary, dir_fd=parent)
        finally:
            os.close(parent)

    def _replace_in(self, parent: int, real: Path, data: bytes) -> None:
        name = real.name
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            if self._is_protected_name(os.fstat(parent), name):
                raise self._protected_error(real) from None
            mode = _NEW_FILE_MODE
        else:
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(real))
            if stat.S_ISLNK(info.st_mode):
                raise self._changed(real)
            self._check_opened(info, real)
            mode = stat.S_IMODE(info.st_mode)
        temporary = f".{name}.{secrets.token_hex(4)}.tmp"
        fd = os.open(temporary, _NEW_FILE_FLAGS, 0o600, dir_fd=parent)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=parent)
            raise

    def _parts(self, real: Path) -> tuple[str, ...]:
        text = os.fspath(real)
        if not os.path.isabs(text) or os.path.commonpath([self._root, text]) != self._root:
            raise SandboxError(f"{text!r} refused: it leads outside the workspace")
        return Path(os.path.relpath(text, self._root)).parts

    def _open_component(self, directory: int, name: str, full: str, *, flags: int = 0, create: bool = False) -> int:
        """Open ``name`` in ``directory`` without following a symlink (a directory unless ``flags`` are given)."""
        try:
            try:
                return os.open(name, flags or _DIRECTORY_FLAGS, dir_fd=directory)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=directory)
                return os.open(name, _DIRECTORY_FLAGS, dir_fd=directory)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_symlink(directory, name):
                raise self._changed(Path(full)) from None
            raise OSError(exc.errno, exc.strerror, full) from None

    def _changed(self, real: Path) -> SandboxError:
        return SandboxError(f"{self.display(real)!r} refused: it changed while in use (a symlink appeared in its path)")

    def _check_opened(self, info: os.stat_result, real: Path) -> None:
        if (info.st_dev, info.st_ino) in self._protected_ids():
            raise self._protected_error(real)
        if not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1:
            raise SandboxError(
                f"{self.display(real)!r} refused: it has {info.st_nlink} hard links "
                "(the file tools refuse files with more than one)"
            )

    def _protected_error(self, real: Path) -> SandboxError:
        return SandboxError(
            f"{self.display(real)!r} refused: it is one of the hub's own files "
            "(configuration, access key, database or audit log)"
        )

    def _is_protected_name(self, directory: os.stat_result, name: str) -> bool:
        """True when ``name`` in ``directory`` is where a protected file lives (or would be created)."""
        for path in self._protected:
            if path.name != name:
                continue
            try:
                if os.path.samestat(directory, os.stat(path.parent)):
                    return True
            except OSError:
                continue
        return False

    def remember_protected(self) -> None:
        """Note each protected file as it is now (call it around commands); forget versions no name reaches."""
        for path in self._protected:
            try:
                # O_PATH: no read access needed, and closing it never drops the hub's own SQLite locks.
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) in self._held:
                os.close(fd)
            else:
                self._held[info.st_dev, info.st_ino] = fd
        for key, fd in list(self._held.items()):
            if os.fstat(fd).st_nlink == 0:
                del self._held[key]
                os.close(fd)

    def _protected_ids(self) -> Collection[tuple[int, int]]:
        self.remember_protected()
        return self._held.keys()

    def display(self, path: Path | str) -> str:
        """``path`` relative to the workspace root, for messages ("." for the root itself)."""
        text = os.fspath(path)
        if os.path.isabs(text) and os.path.commonpath([self._root, text]) == self._root:
            return os.path.relpath(text, self._root)
        return text


_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not hang.
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# A new file's permissions; a replaced file keeps its own.
_NEW_FILE_MODE = 0o644


def _close_all(descriptors: dict[tuple[int, int], int]) -> None:
    for fd in descriptors.values():
        os.close(fd)
    descriptors.clear()


def _is_symlink(directory: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


# A command word position: the start, after an operator, a subshell or
# substitution opener, a quote, or a wrapper such as sudo/env/xargs/if/then,
# then an optional directory prefix (/bin/rm, ./rm).
_START = r"""(?:^|[;&|(){}`\n]|\$\(|\b(?:(?:ba|z|da)?sh|eval)\s+(?:-\w+\s+)*["']?)"""
_WRAPPER = (
    r"(?:\s*(?:\w+=\S*|sudo|doas|env|exec|command|builtin|nohup|nice|time|xargs|timeout\s+\S+"
    r"|if|then|else|elif|do|while|until|!)(?:\s+-\S+)*)*"
)
_CMD = _START + _WRAPPER + r"\s*(?:[\w.~-]*/)*"
# The end of a word.
_END = r"""(?=$|[\s;&|)"'`])"""
# Targets whose recursive removal or permission change wrecks the machine or the home directory.
_ROOT_TARGET = r"""["']?(?:/|/\*|~|~/|~/\*|\$HOME|\$\{HOME\}|\$HOME/\*?|\.\.|\.\./|\.\./\*)["']?""" + _END
_RECURSIVE = r"(?=[^;&|\n]*\s(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)" + _END + ")"
_BLOCK_DEVICE = r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|loop|md|dm-)"
_SHELL = r"(?<![\w./-])(?:[\w./-]*/)?(?:ba|z|da|k|fi|c|tc)?sh\b"

DEFAULT_DENY_PATTERNS: tuple[str, ...] = (
    # rm -r / rm -rf on /, /*, ~, $HOME or ..
    _CMD + r"rm(?=\s)" + _RECURSIVE + r"[^;&|\n]*\s" + _ROOT_TARGET,
    r"--no-preserve-root\b",
    # making or wiping filesystems
    _CMD + r"(?:mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs)" + _END,
    # dd onto a device (of=/dev/null and friends are fine)
    _CMD + r"dd\s[^;&|\n]*\bof=/dev/(?!(?:null|zero|stdout|stderr)" + _END + ")",
    # writing to a block device
    r"(?:>|\btee\s+(?:-\S+\s+)*)\s*" + _BLOCK_DEVICE,
    # redirecting into system directories
    r">>?\s*/(?:etc|boot|bin|sbin|usr|lib\d*|sys|proc)/",
    # moving files onto /dev/null replaces the device
    _CMD + r"mv\s[^;&|\n]*\s/dev/null" + _END,
    # powering off or rebooting
    _CMD + r"(?:shutdown|reboot|halt|poweroff)" + _END,
    _CMD + r"(?:systemctl|init|telinit)\s+(?:poweroff|reboot|halt|kexec|0|6)" + _END,
    # fork bombs such as :(){ :|:& };:
    r"(?<![\w:])(?P<name>[\w:]+)\s*\(\)\s*\{\s*(?P=name)\s*\|\s*(?P=name)?\s*&",
    # recursive chmod/chown/chgrp on /, ~ or ..
    _CMD + r"(?:chmod|chown|chgrp)(?=\s)" + _RECURSIVE + r"[^;&|\n]*\s" + _ROOT_TARGET,
    # find / -delete
    _CMD + r"find\s+[\"']?(?:/|~|\.\.)[\"']?(?=\s)[^;&|\n]*\s-delete\b",
    # downloading a script straight into a shell
    r"\b(?:curl|wget)\b(?:(?!\b(?:curl|wget)\b)[^;&\n])*\|\s*(?:(?:sudo|env)\s+)?" + _SHELL,
    _SHELL + r"\s+(?:-\S+\s+)*(?:<\(|[\"']?\$\()\s*(?:curl|wget)\b",
    # privilege escalation
    _CMD + r"(?:sudo|doas|su|pkexec)" + _END,
    # killing every process
    _CMD + r"kill\s+(?:-\S+\s+)+-1(?=\s*$|\s*[;&|)])",
)


@dataclass(frozen=True)
class ExecPolicy:
    """Which shell commands ``run_command`` accepts, and its limits.

    A command matching any deny pattern (``re.search``) is refused. When
    allow patterns are given, the whole command (stripped) must match one of
    them (``re.fullmatch``: ``git( .*)?`` allows ``git status`` but not
    ``git status; rm x``). ``timeout`` is in seconds, ``output_cap`` in bytes.
    ``isolation`` is the sandbox commands run in.
    """

    deny_patterns: Sequence[str] = DEFAULT_DENY_PATTERNS
    allow_patterns: Sequence[str] = ()
    timeout: float = DEFAULT_EXEC_TIMEOUT
    output_cap: int = DEFAULT_OUTPUT_CAP
    isolation: Isolation = field(default_factory=Isolation)
    _deny: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _allow: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise SandboxError(f"the exec timeout must be positive, not {self.timeout}")
        if self.output_cap <= 0:
            raise SandboxError(f"the output cap must be positive, not {self.output_cap}")
        object.__setattr__(self, "deny_patterns", tuple(self.deny_patterns))
        object.__setattr__(self, "allow_patterns", tuple(self.allow_patterns))
        object.__setattr__(self, "_deny", tuple(_compile(p, "deny") for p in self.deny_patterns))
        object.__setattr__(self, "_allow", tuple(_compile(p, "allow") for p in self.allow_patterns))

    @classmethod
    def from_settings(cls, settings: config_pb2.SandboxSettings) -> ExecPolicy:
        """The policy of ``settings``: the default deny patterns plus the configured ones, 0 meaning the default."""
        return cls(
            deny_patterns=(*DEFAULT_DENY_PATTERNS, *settings.deny_patterns),
            allow_patterns=tuple(settings.allow_patterns),
            timeout=float(settings.exec_timeout_seconds or DEFAULT_EXEC_TIMEOUT),
            output_cap=settings.output_cap_bytes or DEFAULT_OUTPUT_CAP,
            isolation=Isolation.from_settings(settings),
        )

    def check(self, command: str) -> None:
        """Return if ``command`` may run; otherwise raise ``SandboxError`` naming the pattern that refused it."""
        if not command.strip():
            raise SandboxError("empty command")
        if "\x00" in command:
            raise SandboxError("the command contains a NUL byte")
        try:
            encoded = os.fsencode(command)
        except UnicodeEncodeError:
            raise SandboxError("the command is not valid text") from None
        if len(encoded) >= MAX_COMMAND_BYTES:
            raise SandboxError(
                f"the command is {MAX_COMMAND_BYTES} bytes or longer; write a script with write_file and run that"
            )
        for pattern in self._deny:
            if pattern.search(command):
                raise SandboxError(f"command refused: it matches the deny pattern {pattern.pattern!r}")
        if self._allow and not any(pattern.fullmatch(command.strip()) for pattern in self._allow):
            raise SandboxError("command refused: it matches none of the allow patterns")


def _compile(pattern: str, kind: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise SandboxError(f"invalid {kind} pattern {pattern!r}: {exc}") from None
