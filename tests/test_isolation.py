"""The exec sandbox's configuration, probe and bubblewrap command line (aophub.agent.isolation).

What the sandbox stops is in tests/test_sandbox_escape.py; these check the pieces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aophub.agent.isolation import (
    DEFAULT_CPU_SECONDS,
    DEFAULT_MAX_FILE_MIB,
    DEFAULT_MAX_PROCESSES,
    DEFAULT_MEMORY_MIB,
    DEFAULT_MIN_FREE_MIB,
    DEFAULT_TMP_MIB,
    Isolation,
    Probe,
    ProcessCgroup,
    SandboxState,
    probe,
    sandbox_argv,
)
from aophub.v1 import config_pb2

FOUND = Probe(True, bubblewrap="/usr/bin/bwrap", prlimit="/usr/bin/prlimit")


def test_settings_zero_and_empty_mean_the_defaults() -> None:
    """Unset sandbox settings give the documented defaults: network off, no unsandboxed commands."""
    assert Isolation.from_settings(config_pb2.SandboxSettings()) == Isolation(
        bubblewrap="bwrap",
        network=False,
        allow_unsandboxed=False,
        cpu_seconds=DEFAULT_CPU_SECONDS,
        memory_mib=DEFAULT_MEMORY_MIB,
        max_processes=DEFAULT_MAX_PROCESSES,
        tmp_mib=DEFAULT_TMP_MIB,
        max_file_mib=DEFAULT_MAX_FILE_MIB,
        min_free_mib=DEFAULT_MIN_FREE_MIB,
    )
    assert (DEFAULT_CPU_SECONDS, DEFAULT_MEMORY_MIB, DEFAULT_MAX_PROCESSES) == (120, 4096, 256)
    assert (DEFAULT_TMP_MIB, DEFAULT_MAX_FILE_MIB, DEFAULT_MIN_FREE_MIB) == (64, 1024, 256)


def test_settings_are_taken_as_given() -> None:
    """Each sandbox setting reaches the isolation."""
    settings = config_pb2.SandboxSettings(
        bubblewrap="/opt/bwrap",
        network=True,
        allow_unsandboxed=True,
        cpu_seconds=5,
        memory_mib=64,
        max_processes=8,
        tmp_mib=2,
        max_file_mib=3,
        min_free_mib=4,
    )
    assert Isolation.from_settings(settings) == Isolation("/opt/bwrap", True, True, 5, 64, 8, 2, 3, 4)


@pytest.mark.parametrize(
    "name", ["cpu_seconds", "memory_mib", "max_processes", "tmp_mib", "max_file_mib", "min_free_mib"]
)
def test_limits_must_be_positive(name: str) -> None:
    """A limit of zero or less is refused with a message naming it."""
    with pytest.raises(ValueError, match=f"the sandbox's {name} must be positive, not 0"):
        Isolation(**{name: 0})  # type: ignore[arg-type]


def test_a_missing_bubblewrap_is_reported(tmp_path: Path) -> None:
    """A bubblewrap program that does not exist: not usable, and the reason names it."""
    missing = str(tmp_path / "bwrap")
    assert probe(missing) == Probe(False, f"bubblewrap ({missing!r}) is not installed")


def test_a_bubblewrap_that_cannot_make_a_sandbox_is_reported(tmp_path: Path) -> None:
    """A program that exits non-zero (as bwrap does without user namespaces): not usable, with its message."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    found = probe(str(fake))
    assert not found.usable
    assert found.reason == (
        f"{fake} cannot make a sandbox here (user namespaces may be disabled): "
        "bwrap: No permissions to create new namespace"
    )


@pytest.mark.parametrize(
    ("allow_unsandboxed", "state"), [(False, SandboxState.EXEC_REFUSED), (True, SandboxState.UNSANDBOXED)]
)
def test_state_without_bubblewrap(tmp_path: Path, allow_unsandboxed: bool, state: SandboxState) -> None:
    """Without bubblewrap, exec is refused unless unsandboxed commands are allowed; the reason says why."""
    isolation = Isolation(bubblewrap=str(tmp_path / "bwrap"), allow_unsandboxed=allow_unsandboxed)
    assert isolation.state() == (state, f"bubblewrap ({str(tmp_path / 'bwrap')!r}) is not installed")


def options(argv: list[str]) -> list[str]:
    """bubblewrap's part of ``argv``: everything before ``--``."""
    return argv[: argv.index("--")]


def test_the_command_runs_confined_and_limited(tmp_path: Path) -> None:
    """Namespaces, nobody without capabilities, the workspace the only read-write bind, limits, PID 1 reported."""
    isolation = Isolation(cpu_seconds=7, memory_mib=10, max_processes=9, tmp_mib=3, max_file_mib=5)
    argv = sandbox_argv(
        ["/bin/sh", "-c", "true"], workspace=tmp_path, hidden=(), isolation=isolation, found=FOUND, info_fd=9
    )
    bubblewrap = options(argv)
    assert bubblewrap[0] == "/usr/bin/bwrap"
    for option in ("--die-with-parent", "--new-session", "--unshare-user", "--unshare-pid", "--as-pid-1"):
        assert option in bubblewrap
    assert {"--unshare-ipc", "--unshare-uts", "--unshare-net", "--remount-ro"} <= set(bubblewrap)
    assert " ".join(bubblewrap).count("--bind ") == 1
    assert f"--bind {tmp_path} {tmp_path}" in " ".join(bubblewrap)
    assert "--uid 65534 --gid 65534 --cap-drop ALL" in " ".join(bubblewrap)
    assert f"--proc /proc --ro-bind /proc/sys /proc/sys --size {3 * 1024 * 1024} --tmpfs /tmp" in " ".join(bubblewrap)
    assert "--info-fd 9" in " ".join(bubblewrap)
    assert "/etc/shadow" not in bubblewrap
    assert argv[len(bubblewrap) :] == [
        "--",
        "/usr/bin/prlimit",
        "--cpu=7",
        f"--as={10 * 1024 * 1024}",
        "--nproc=9",
        f"--fsize={5 * 1024 * 1024}",
        "--core=0",
        "/bin/sh",
        "-c",
        "true",
    ]


def test_network_on_keeps_the_hosts_network(tmp_path: Path) -> None:
    """With network allowed there is no new network namespace."""
    argv = sandbox_argv(["true"], workspace=tmp_path, hidden=(), isolation=Isolation(network=True), found=FOUND)
    assert "--unshare-net" not in options(argv)


def test_hub_files_in_the_workspace_are_covered(tmp_path: Path) -> None:
    """The directory holding a hub file below the workspace is emptied; a file at its top is /dev/null; others stay."""
    data = tmp_path / ".aophub" / "state"
    data.mkdir(parents=True)
    (data / "aophub.db").write_text("")
    (tmp_path / "config.yaml").write_text("")
    hidden = [data / "aophub.db", data / "access_key", tmp_path / "config.yaml", tmp_path / "not-there", Path("/etc/x")]
    argv = " ".join(
        options(sandbox_argv(["true"], workspace=tmp_path, hidden=hidden, isolation=Isolation(), found=FOUND))
    )
    assert f"--tmpfs {tmp_path / '.aophub'} --remount-ro {tmp_path / '.aophub'}" in argv
    assert f"--ro-bind /dev/null {tmp_path / 'config.yaml'}" in argv
    assert "not-there" not in argv
    assert "/etc/x" not in argv


@pytest.mark.skipif(Isolation().probe().cgroups is None, reason="no pids cgroup can be made here (not root)")
def test_a_new_commands_cgroup_never_removes_one_not_yet_entered() -> None:
    """Two commands (or terminals) starting together: the second's clean-up must leave the first's cgroup."""
    parent = Isolation().probe().cgroups
    assert parent is not None
    first = ProcessCgroup(parent, 8)
    second = ProcessCgroup(parent, 8)
    try:
        assert first.path.is_dir()
        assert second.path.is_dir()
    finally:
        first.close()
        second.close()
    assert not first.path.exists()
