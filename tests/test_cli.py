"""End-to-end: ``aophub serve`` as a user runs it (a child process): access key, banner, health."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from aophub.cli import build_parser, with_command_options, with_workspace_options
from aophub.config import CONFIG_FILE
from aophub.settings import Settings
from aophub.transport.addresses import reachable_hosts

from .support.server import ROOT, HubProcess
from .support.wire import AppSocket, protocol_error, wait_cursor

ENV_KEY = "key-from-env"
FLAG_KEY = "key-from-flag"
FILE_FLAG_KEY = "key-from-token-file"
DASH_KEY = "-key-that-looks-like-an-option"


def environment(**variables: str) -> dict[str, str]:
    """This process's environment without ``AOPHUB_TOKEN``, plus ``variables``."""
    return {**{k: v for k, v in os.environ.items() if k != "AOPHUB_TOKEN"}, **variables}


def authenticated(hub: HubProcess, key: str) -> bool:
    """Whether the running hub accepts ``key`` as a bearer token."""
    response = httpx.get(f"{hub.http}/api/auth/session", headers={"Authorization": f"Bearer {key}"}, timeout=10)
    response.raise_for_status()
    answer = response.json()
    assert isinstance(answer["authenticated"], bool)
    return answer["authenticated"]


def printed_key(hub: HubProcess) -> str:
    return hub.wait_for_output(r"access key: (\S+)").group(1)


def test_without_a_key_one_is_generated_printed_stored_and_reused(tmp_path: Path) -> None:
    """No --token and no $AOPHUB_TOKEN: a new key is printed with the URLs, stored 0600, and reused on restart."""
    data_dir = tmp_path / "data"
    with HubProcess(data_dir, token=None, env=environment()) as hub:
        key = printed_key(hub)
        assert "new, stored in" in hub.wait_for_output(r"access key: .*").group(0)
        hub.wait_for_output(rf"application endpoint: ws://127\.0\.0\.1:{hub.port}/api/aop/application/ws")
        hub.wait_for_output(rf"node endpoint: +ws://127\.0\.0\.1:{hub.port}/api/aop/node/ws")
        hub.wait_for_output(rf"health: +http://127\.0\.0\.1:{hub.port}/health")
        hub.wait_for_output(rf"web console: +http://127\.0\.0\.1:{hub.port}/ +\(log in with the access key\)")
        key_file = data_dir / "access_key"
        assert key_file.read_text().strip() == key
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert authenticated(hub, key)
        assert not authenticated(hub, key + "x")
        assert hub.terminate() == 0

    with HubProcess(data_dir, token=None, env=environment()) as again:
        assert printed_key(again) == key
        assert "new," not in again.wait_for_output(r"access key: .*").group(0)
        assert authenticated(again, key)
        assert again.terminate() == 0
    assert (data_dir / "access_key").read_text().strip() == key


def test_flag_wins_over_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    """--token beats $AOPHUB_TOKEN, which beats the key stored in the data dir; the key is not printed then."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "access_key").write_text("key-from-file\n")

    printed: list[str] = []
    with HubProcess(data_dir, token=FLAG_KEY, env=environment(AOPHUB_TOKEN=ENV_KEY)) as hub:
        assert hub.wait_for_output(r"access key: (.*)").group(1) == "from --token"
        assert authenticated(hub, FLAG_KEY)
        assert not authenticated(hub, ENV_KEY)
        assert not authenticated(hub, "key-from-file")
        assert hub.terminate() == 0
        printed += hub.output

    with HubProcess(data_dir, token=None, env=environment(AOPHUB_TOKEN=ENV_KEY)) as hub:
        assert hub.wait_for_output(r"access key: (.*)").group(1) == "from $AOPHUB_TOKEN"
        assert authenticated(hub, ENV_KEY)
        assert not authenticated(hub, "key-from-file")
        assert hub.terminate() == 0
        printed += hub.output

    assert (data_dir / "access_key").read_text() == "key-from-file\n"
    assert not any(FLAG_KEY in line or ENV_KEY in line for line in printed)


def test_health_needs_no_auth_and_port_zero_prints_the_real_port(tmp_path: Path) -> None:
    """--port 0 binds a free port and prints it; GET /health there is {"status": "ok"} without credentials."""
    with HubProcess(tmp_path / "data") as hub:
        assert hub.port > 0
        banner = hub.wait_for_output(r"listening on (http://\S+)").group(1)
        assert banner == f"http://127.0.0.1:{hub.port}"
        response = httpx.get(f"{banner}/health", timeout=10)
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}
        denied = httpx.get(f"{banner}/api/auth/session", timeout=10)
        assert denied.json() == {"authenticated": False}
        assert hub.terminate() == 0


def test_an_invalid_configuration_file_stops_serve_with_what_is_wrong(tmp_path: Path) -> None:
    """A config.yaml that does not validate: `aophub serve` exits 2 naming the file and the field, no traceback."""
    (tmp_path / CONFIG_FILE).write_text("agent:\n  max_turns: 100000\n")
    result = subprocess.run(
        [sys.executable, "-m", "aophub", "serve", "--data-dir", str(tmp_path), "--token", FLAG_KEY, "--port", "0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 2
    assert str(tmp_path / CONFIG_FILE) in result.stderr
    assert "agent.max_turns: must be at most 1000" in result.stderr
    assert "Traceback" not in result.stderr


def test_token_file_keeps_the_key_out_of_the_process_list(tmp_path: Path) -> None:
    """--token-file: the hub takes the key from the file; /proc/PID/cmdline shows the path, never the key."""
    key_file = tmp_path / "key"
    key_file.write_text(FILE_FLAG_KEY + "\n")
    with HubProcess(tmp_path / "data", "--token-file", str(key_file), token=None, env=environment()) as hub:
        assert hub.process is not None
        assert hub.wait_for_output(r"access key: (.*)").group(1) == f"from --token-file {key_file}"
        assert authenticated(hub, FILE_FLAG_KEY)
        command_line = Path(f"/proc/{hub.process.pid}/cmdline").read_bytes()
        assert str(key_file).encode() in command_line
        assert FILE_FLAG_KEY.encode() not in command_line
        assert hub.terminate() == 0
        assert not any(FILE_FLAG_KEY in line for line in hub.output)


def test_a_missing_token_file_is_a_clear_error(tmp_path: Path) -> None:
    """--token-file naming no file: exit 2 at once with the path in the message, no traceback."""
    missing = tmp_path / "nowhere"
    result = subprocess.run(
        [sys.executable, "-m", "aophub", "serve", "--data-dir", str(tmp_path / "data"), "--token-file", str(missing)],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 2
    assert f"cannot read --token-file {missing}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["serve", "node"])
def test_help_says_the_token_flag_is_visible_and_what_to_prefer(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`aophub serve|node --help`: --token is visible to other users; $AOPHUB_TOKEN and --token-file are preferred."""
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--token-file" in text
    assert "visible to other users" in text
    assert "$AOPHUB_TOKEN" in text


@pytest.mark.parametrize(
    ("source", "key"),
    [
        ("generated", ""),
        ("env", ENV_KEY),
        ("token-file", FILE_FLAG_KEY),
        ("file", DASH_KEY),
        ("env", DASH_KEY),
        ("token-file", DASH_KEY),
    ],
)
def test_the_banners_try_command_works_as_printed(tmp_path: Path, source: str, key: str) -> None:
    """The `try:` line names this venv's python, the real address and the real key source, and runs a turn as is,
    also with a key that starts with "-" (which a command line would take for an option)."""
    data_dir = tmp_path / "data"
    key_file = tmp_path / "key"
    key_file.write_text(key)
    if source == "file":
        data_dir.mkdir()
        (data_dir / "access_key").write_text(key)
    extra = ("--token-file", str(key_file)) if source == "token-file" else ()
    env = environment(AOPHUB_TOKEN=key) if source == "env" else environment()
    with HubProcess(data_dir, *extra, token=None, env=env) as hub:
        command = hub.wait_for_output(r"  try: +(.*)").group(1)
        for placeholder in ("HOST", "PORT", "KEY"):
            assert placeholder not in command.split(), command
        program = shlex.split(command)[0]
        assert Path(ROOT, program).absolute() == Path(sys.executable).absolute(), command
        assert f"--server http://127.0.0.1:{hub.port} " in command
        result = subprocess.run(
            ["bash", "-c", command], check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0, (command, result)
        assert "echo: hello" in result.stdout
        assert hub.terminate() == 0


def test_a_wildcard_host_prints_the_interfaces_addresses_not_the_wildcard(tmp_path: Path) -> None:
    """--host 0.0.0.0: the banner lists reachable addresses (loopback first, the others after), never 0.0.0.0."""
    with HubProcess(tmp_path / "data", "--host", "0.0.0.0") as hub:
        first = hub.wait_for_output(r"aophub \S+ listening on (.*)").group(0)
        banner = "".join(hub.output)
        assert "0.0.0.0" not in banner
        expected = [f"http://{address}:{hub.port}" for address in reachable_hosts("0.0.0.0")]
        assert all(url in first for url in expected), first
        assert httpx.get(f"{expected[-1]}/health", timeout=10).json() == {"status": "ok"}
        assert hub.terminate() == 0


def test_a_page_budget_not_below_the_frame_limit_is_refused(tmp_path: Path) -> None:
    """--max-page-bytes at or above --max-frame-bytes (or not positive) stops serve with a clear message."""
    for page_bytes in ["1000", "0"]:
        result = subprocess.run(
            [
                *(sys.executable, "-m", "aophub", "serve", "--data-dir", str(tmp_path), "--token", "k"),
                *("--max-frame-bytes", "1000", "--max-page-bytes", page_bytes),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        assert result.returncode == 2
        assert "--max-page-bytes must be positive and below --max-frame-bytes" in result.stderr


async def test_connection_bounds_are_options_of_serve(tmp_path: Path) -> None:
    """--max-watches (and the outbound bounds beside it) reach the hub."""
    with HubProcess(tmp_path / "data", "--max-watches", "1", "--max-outbound-bytes", "65536") as hub:
        async with await AppSocket.open(hub.app_url) as app:
            session = await app.open_session()
            first = await app.watch(session.id)
            await wait_cursor(app, first, "1")
            second = await app.watch(session.id)
            error = protocol_error(await app.reply(second))
            assert (error.code, "most watches it may (1," in error.message) == ("RESOURCE_EXHAUSTED", True)


def test_a_connection_bound_below_one_is_refused_before_start() -> None:
    """--outbound-stall-seconds 0 (like --max-watches 0) exits with status 2 and says why."""
    refused = subprocess.run(
        [sys.executable, "-m", "aophub", "serve", "--outbound-stall-seconds", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "--outbound-stall-seconds: must be at least 1, not 0" in refused.stderr


def test_the_turn_start_timeout_is_an_option_of_serve(capsys: pytest.CaptureFixture[str]) -> None:
    """--turn-start-timeout (AOP-nodes 9.8.5) takes positive seconds; 60 by default."""
    parser = build_parser()
    assert parser.parse_args(["serve"]).turn_start_timeout == 60.0
    assert parser.parse_args(["serve", "--turn-start-timeout", "2.5"]).turn_start_timeout == 2.5
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--turn-start-timeout", "0"])
    assert "expected a positive number of seconds, got '0'" in capsys.readouterr().err


def test_slash_command_bounds_are_options_of_serve(capsys: pytest.CaptureFixture[str]) -> None:
    """--command-timeout and --max-pending-commands reach the settings; defaults 600 s and 16; 0 is refused."""
    parser = build_parser()
    defaults = with_command_options(Settings(access_key="k"), parser.parse_args(["serve"]))
    assert (defaults.command_timeout, defaults.max_pending_commands) == (600.0, 16)
    args = parser.parse_args(["serve", "--command-timeout", "2.5", "--max-pending-commands", "3"])
    settings = with_command_options(Settings(access_key="k"), args)
    assert (settings.command_timeout, settings.max_pending_commands) == (2.5, 3)
    for refused in (["--command-timeout", "0"], ["--max-pending-commands", "0"]):
        with pytest.raises(SystemExit) as exit_status:
            parser.parse_args(["serve", *refused])
        assert exit_status.value.code == 2
        assert refused[0] in capsys.readouterr().err


def test_remote_workspace_bounds_are_options_of_serve(capsys: pytest.CaptureFixture[str]) -> None:
    """--max-upload-bytes, --upload-timeout, --terminal-buffer-bytes, --max-terminal-streams reach the settings."""
    parser = build_parser()
    defaults = with_workspace_options(Settings(access_key="k"), parser.parse_args(["serve"]))
    assert (
        defaults.max_upload_bytes,
        defaults.upload_timeout,
        defaults.terminal_buffer_bytes,
        defaults.max_terminal_streams,
        defaults.workspace_call_timeout,
        defaults.workspace_output_bytes,
    ) == (25 * 1024 * 1024, 60.0, 1024 * 1024, 64, 600.0, 4 * 1024 * 1024)
    argv = ["serve", "--max-upload-bytes", "1000", "--upload-timeout", "2.5"]
    argv += ["--terminal-buffer-bytes", "4096", "--max-terminal-streams", "3"]
    args = parser.parse_args([*argv, "--workspace-call-timeout", "9", "--workspace-output-bytes", "512"])
    settings = with_workspace_options(Settings(access_key="k"), args)
    assert (
        settings.max_upload_bytes,
        settings.upload_timeout,
        settings.terminal_buffer_bytes,
        settings.max_terminal_streams,
        settings.workspace_call_timeout,
        settings.workspace_output_bytes,
    ) == (1000, 2.5, 4096, 3, 9.0, 512)
    for refused in (
        ["--max-upload-bytes", "0"],
        ["--upload-timeout", "0"],
        ["--terminal-buffer-bytes", "0"],
        ["--max-terminal-streams", "0"],
        ["--workspace-call-timeout", "0"],
        ["--workspace-output-bytes", "0"],
    ):
        with pytest.raises(SystemExit) as exit_status:
            parser.parse_args(["serve", *refused])
        assert exit_status.value.code == 2
        assert refused[0] in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "told"),
    [
        ("--bridge", "telnet", "unknown bridge 'telnet' (this hub bridges: agent-cli, zclaw)"),
        ("--bridge-anonymous", "zclaw", "name the token the loopback clients act as"),
    ],
)
def test_an_unknown_bridge_stops_serve_with_what_is_wrong(tmp_path: Path, option: str, value: str, told: str) -> None:
    """`--bridge` names a bridge this hub has; anything else exits 2 with the list, no traceback."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "aophub",
            "serve",
            "--data-dir",
            str(tmp_path),
            "--token",
            FLAG_KEY,
            option,
            value,
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert result.returncode == 2
    assert told in result.stderr
    assert "Traceback" not in result.stderr
