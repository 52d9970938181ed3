"""The exec tool's sandbox: each command in its own bubblewrap namespaces, with limits.

``Isolation`` is how commands are confined (from the configuration's sandbox
settings); ``sandbox_argv`` is the bubblewrap command line that runs one
command that way:

- new user, PID, IPC, UTS and cgroup namespaces, and a new network namespace
  (no network at all, not even the host's loopback) unless ``network`` is on;
- the command runs as ``nobody`` inside, with no capabilities;
- an empty read-only root with read-only binds of /usr and the /bin, /sbin
  and /lib* it needs, and of the /etc files a shell and common tools read
  (no /etc/shadow, no private keys); a fresh /proc of the new PID namespace
  (its /proc/sys read-only); a minimal /dev; an empty /tmp;
- the workspace, at its own path, as the only writable place; the hub's data
  directory and files are not there (when the workspace contains them they
  are hidden under an empty directory or /dev/null);
- limits on CPU seconds, address space and file size per process, and on the
  number of processes (``prlimit`` inside the sandbox; when the hub runs as root
  the kernel does not apply a process limit to it, so a ``pids`` cgroup does);
  a /tmp of at most ``tmp_mib``; and no command starts while the workspace's
  filesystem has less than ``min_free_mib`` free (``disk_refusal``);
- ``--die-with-parent``: the sandbox dies with the hub.

The command itself (its shell) is PID 1 of the namespace (``--as-pid-1``, no
init of bubblewrap's in between): when it dies, the kernel kills everything
else in the namespace before bubblewrap, its parent, can reap it, and
bubblewrap exits only after that. (With bubblewrap's own init, bubblewrap
exits as soon as the command has, leaving its init and whatever still runs to
die a moment later and the init a zombie for the system's init to reap.)

``probe`` runs ``true`` in such a sandbox once per bubblewrap program and says
whether it works and, if not, why. Linux only.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aophub.v1 import config_pb2

__all__ = [
    "DEFAULT_BUBBLEWRAP",
    "DEFAULT_CPU_SECONDS",
    "DEFAULT_MAX_FILE_MIB",
    "DEFAULT_MAX_PROCESSES",
    "DEFAULT_MEMORY_MIB",
    "DEFAULT_MIN_FREE_MIB",
    "DEFAULT_TMP_MIB",
    "SANDBOX_UID",
    "Isolation",
    "Probe",
    "ProcessCgroup",
    "SandboxState",
    "probe",
    "sandbox_argv",
]

DEFAULT_BUBBLEWRAP = "bwrap"
DEFAULT_CPU_SECONDS = 120
DEFAULT_MEMORY_MIB = 4096
DEFAULT_MAX_PROCESSES = 256
DEFAULT_TMP_MIB = 64
DEFAULT_MAX_FILE_MIB = 1024
DEFAULT_MIN_FREE_MIB = 256
# The overflow uid: what the command runs as inside the sandbox.
SANDBOX_UID = 65534

# System directories bound read-only (or recreated as the same symlink, on merged-/usr systems).
_SYSTEM_DIRECTORIES = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
# What of /etc a shell and common tools read; nothing secret (no shadow, no private keys).
_ETC_ENTRIES = (
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "debian_version",
    "gai.conf",
    "gitconfig",
    "group",
    "host.conf",
    "hostname",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "locale.conf",
    "localtime",
    "lsb-release",
    "magic",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "pki/ca-trust",
    "pki/tls/certs",
    "profile",
    "profile.d",
    "protocols",
    "python3",
    "resolv.conf",
    "services",
    "shells",
    "ssl/certs",
    "ssl/openssl.cnf",
    "terminfo",
    "timezone",
)
# Seconds the probe may take.
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Isolation:
    """How exec commands are confined; the defaults are the documented ones.

    ``bubblewrap`` is the program (a path or a name on PATH). Without a working
    bubblewrap, commands are refused unless ``allow_unsandboxed``. ``cpu_seconds``
    and ``memory_mib`` (address space) bound each process of a command,
    ``max_processes`` the processes and threads it runs at once, ``tmp_mib``
    its /tmp (memory), ``max_file_mib`` each file it writes; ``min_free_mib``
    is the free space the workspace's filesystem must have for a command to start.
    """

    bubblewrap: str = DEFAULT_BUBBLEWRAP
    network: bool = False
    allow_unsandboxed: bool = False
    cpu_seconds: int = DEFAULT_CPU_SECONDS
    memory_mib: int = DEFAULT_MEMORY_MIB
    max_processes: int = DEFAULT_MAX_PROCESSES
    tmp_mib: int = DEFAULT_TMP_MIB
    max_file_mib: int = DEFAULT_MAX_FILE_MIB
    min_free_mib: int = DEFAULT_MIN_FREE_MIB

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "memory_mib", "max_processes", "tmp_mib", "max_file_mib", "min_free_mib"):
            if getattr(self, name) <= 0:
                raise ValueError(f"the sandbox's {name} must be positive, not {getattr(self, name)}")

    @classmethod
    def from_settings(cls, settings: config_pb2.SandboxSettings) -> Isolation:
        """The isolation ``settings`` ask for; empty and 0 mean the defaults."""
        return cls(
            bubblewrap=settings.bubblewrap or DEFAULT_BUBBLEWRAP,
            network=settings.network,
            allow_unsandboxed=settings.allow_unsandboxed,
            cpu_seconds=settings.cpu_seconds or DEFAULT_CPU_SECONDS,
            memory_mib=settings.memory_mib or DEFAULT_MEMORY_MIB,
            max_processes=settings.max_processes or DEFAULT_MAX_PROCESSES,
            tmp_mib=settings.tmp_mib or DEFAULT_TMP_MIB,
            max_file_mib=settings.max_file_mib or DEFAULT_MAX_FILE_MIB,
            min_free_mib=settings.min_free_mib or DEFAULT_MIN_FREE_MIB,
        )

    def disk_refusal(self, workspace: Path) -> str:
        """Why no command may start in ``workspace`` now (its filesystem is nearly full), or "".

        A command that fills the disk would leave the hub's own database without room; this
        keeps ``min_free_mib`` for it. A running command can still write until its other limits
        (file size, CPU time, timeout) stop it.
        """
        stats = os.statvfs(workspace)
        free_mib = stats.f_bavail * stats.f_frsize // (1024 * 1024)
        if free_mib >= self.min_free_mib:
            return ""
        return (
            f"the workspace's disk has {free_mib} MiB free, below sandbox.min_free_mib ({self.min_free_mib} MiB): "
            "delete files in the workspace, or ask the hub's operator to make room or lower the setting"
        )

    def probe(self) -> Probe:
        """Whether commands can run sandboxed here (probed once per bubblewrap program)."""
        return probe(self.bubblewrap)

    def state(self) -> tuple[SandboxState, str]:
        """How commands run here, and why not sandboxed (or what the sandbox does not enforce); "" if all is."""
        found = self.probe()
        if found.usable:
            return SandboxState.ENFORCED, found.caveat
        if self.allow_unsandboxed:
            return SandboxState.UNSANDBOXED, found.reason
        return SandboxState.EXEC_REFUSED, found.reason


class SandboxState(enum.Enum):
    """How the exec tool runs commands."""

    ENFORCED = "enforced"  # in the bubblewrap sandbox
    UNSANDBOXED = "unsandboxed"  # bubblewrap cannot run; the configuration allows commands without it
    EXEC_REFUSED = "exec refused"  # bubblewrap cannot run; commands are refused


@dataclass(frozen=True)
class Probe:
    """What ``probe`` found: the programs to use, or why the sandbox cannot run.

    ``bubblewrap`` and ``prlimit`` are absolute paths when ``usable``.
    ``cgroups`` is where per-command ``pids`` cgroups are made when the hub
    runs as root (``None`` otherwise, or when none can be made: ``caveat`` says
    so). ``reason`` says why the sandbox is not usable.
    """

    usable: bool
    reason: str = ""
    bubblewrap: str = ""
    prlimit: str = ""
    cgroups: Path | None = None
    caveat: str = ""


def sandbox_argv(
    argv: Sequence[str],
    *,
    workspace: Path,
    hidden: Sequence[Path],
    isolation: Isolation,
    found: Probe,
    info_fd: int | None = None,
    cwd: Path | None = None,
    new_session: bool = True,
) -> list[str]:
    """The bubblewrap command line that runs ``argv`` confined, in the real directory ``workspace``.

    ``cwd`` (a real directory inside ``workspace``; default the workspace) is where it starts.
    ``new_session=False`` keeps the caller's session, so that a terminal given as the
    command's standard streams stays its controlling terminal (job control, Ctrl-C): only for a
    pseudo-terminal made for the sandbox alone, since a process can push input into its
    controlling terminal (``TIOCSTI``), which for a shared terminal reaches whoever reads it next.

    ``hidden`` are files that must not be seen even when they lie inside the
    workspace (the hub's own files): the directory holding one, when it is
    below the workspace, is replaced by an empty one; a file directly in the
    workspace by an empty file. With ``info_fd`` bubblewrap writes a JSON object
    with the sandbox's first process (``child-pid``) there.
    """
    root = Path("/")
    args = [
        found.bubblewrap,
        "--die-with-parent",
        *(["--new-session"] if new_session else []),
        "--unshare-user",
        "--unshare-pid",
        "--as-pid-1",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        *([] if isolation.network else ["--unshare-net"]),
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--cap-drop",
        "ALL",
        "--hostname",
        "aophub-sandbox",
    ]
    for name in _SYSTEM_DIRECTORIES:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in _ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # bubblewrap leaves /proc/sys writable; sysctls are global and a sandbox of a root hub could set them.
    args += ["--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    args += ["--size", str(isolation.tmp_mib * 1024 * 1024), "--tmpfs", "/tmp"]
    args += ["--bind", str(workspace), str(workspace)]
    for path in _masks(workspace, hidden):
        if path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--remount-ro", "/", "--chdir", str(cwd or workspace)]
    if info_fd is not None:
        args += ["--info-fd", str(info_fd)]
    limits = [
        found.prlimit,
        f"--cpu={isolation.cpu_seconds}",
        f"--as={isolation.memory_mib * 1024 * 1024}",
        f"--nproc={isolation.max_processes}",
        f"--fsize={isolation.max_file_mib * 1024 * 1024}",
        "--core=0",
    ]
    return [*args, "--", *limits, *argv]


def _masks(workspace: Path, hidden: Sequence[Path]) -> list[Path]:
    """What to cover so that no ``hidden`` file inside ``workspace`` shows: its directory, or itself."""
    masks: set[Path] = set()
    for path in hidden:
        real = Path(os.path.realpath(path))
        if not real.is_relative_to(workspace) or real == workspace:
            continue
        directory = real.parent
        if directory != workspace:
            # The outermost directory below the workspace that holds it.
            masks.add(workspace / directory.relative_to(workspace).parts[0])
        elif real.exists():
            masks.add(real)
    # A file inside a masked directory needs nothing of its own.
    return sorted(path for path in masks if not any(path != other and path.is_relative_to(other) for other in masks))


# The cgroups of this process not closed yet: empty until their command has entered them, and never
# removed by another command's clean-up meanwhile.
_OPEN_CGROUPS: set[Path] = set()


class ProcessCgroup:
    """A fresh ``pids`` cgroup under ``parent`` for one command: ``argv`` enters it, ``close`` removes it.

    A cgroup still holding a process cannot be removed (a process stuck in the
    kernel), and a hub killed mid-command removes nothing; each new cgroup
    first removes the empty ones left by this hub and by hubs no longer running
    (the hub's pid is in the name), so none piles up.
    """

    def __init__(self, parent: Path, max_processes: int) -> None:
        for earlier in parent.glob("aophub-exec-*-*"):
            owner = earlier.name.split("-")[2]
            mine = owner == str(os.getpid())
            if (mine and earlier not in _OPEN_CGROUPS) or (not mine and not os.path.exists(f"/proc/{owner}")):
                with contextlib.suppress(OSError):
                    earlier.rmdir()
        self.path = parent / f"aophub-exec-{os.getpid()}-{secrets.token_hex(6)}"
        self.path.mkdir()
        _OPEN_CGROUPS.add(self.path)
        try:
            # bubblewrap and the sandbox's first process count too.
            (self.path / "pids.max").write_text(f"{max_processes + 2}\n")
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"<ProcessCgroup {self.path}>"

    def argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the cgroup (children inherit it)."""
        return ["/bin/sh", "-c", 'echo 0 > "$1" && shift && exec "$@"', "sh", str(self.path / "cgroup.procs"), *argv]

    def close(self) -> None:
        """Remove the cgroup (it is empty once the sandbox has exited)."""
        _OPEN_CGROUPS.discard(self.path)
        with contextlib.suppress(OSError):
            self.path.rmdir()


@functools.cache
def probe(bubblewrap: str) -> Probe:
    """Run ``true`` in a sandbox with ``bubblewrap``; cached, so each program is probed once per process."""
    program = shutil.which(bubblewrap)
    if program is None:
        return Probe(False, f"bubblewrap ({bubblewrap!r}) is not installed")
    prlimit = shutil.which("prlimit", path="/usr/bin:/bin")
    if prlimit is None:
        return Probe(False, "prlimit (util-linux) is not installed in /usr/bin")
    cgroups, caveat = (_pids_cgroup_parent(), "") if os.geteuid() == 0 else (None, "")
    if os.geteuid() == 0 and cgroups is None:
        caveat = "the hub runs as root and cannot make a pids cgroup: the process limit is not enforced"
    found = Probe(True, bubblewrap=program, prlimit=prlimit, cgroups=cgroups, caveat=caveat)
    with tempfile.TemporaryDirectory(prefix="aophub-probe-") as directory:
        argv = sandbox_argv(["/bin/true"], workspace=Path(directory), hidden=(), isolation=Isolation(), found=found)
        try:
            result = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT, cwd="/", check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Probe(False, f"{program} cannot run: {exc}")
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        why = detail[-1] if detail else f"exit status {result.returncode}"
        return Probe(False, f"{program} cannot make a sandbox here (user namespaces may be disabled): {why}")
    return found


def _pids_cgroup_parent() -> Path | None:
    """A writable cgroup directory with the ``pids`` controller where per-command cgroups can be made."""
    try:
        with open("/proc/self/cgroup") as file:
            memberships = [line.rstrip("\n").split(":", 2) for line in file]
        with open("/proc/self/mounts") as file:
            mounts = [line.split() for line in file]
    except OSError:
        return None
    for _device, mountpoint, fstype, options, *_ in mounts:
        if fstype == "cgroup" and "pids" in options.split(","):
            own = next((path for _, controllers, path in memberships if "pids" in controllers.split(",")), None)
        elif fstype == "cgroup2":
            own = next((path for hierarchy, _, path in memberships if hierarchy == "0"), None)
        else:
            continue
        if own is None:
            continue
        candidate = Path(mountpoint) / own.lstrip("/")
        if fstype == "cgroup2":
            try:
                if "pids" not in (candidate / "cgroup.subtree_control").read_text().split():
                    continue
            except OSError:
                continue
        if os.access(candidate, os.W_OK) and _can_make_cgroup(candidate):
            return candidate
    return None


def _can_make_cgroup(parent: Path) -> bool:
    try:
        cgroup = ProcessCgroup(parent, 1)
    except OSError:
        return False
    cgroup.close()
    return True
