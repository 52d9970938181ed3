"""The built-in tools (aophub.agent.tools) and their audit log (aophub.agent.audit)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from aophub.agent import tools
from aophub.agent.audit import AuditLog
from aophub.agent.commands import ExecResult
from aophub.agent.isolation import Isolation
from aophub.agent.sandbox import ExecPolicy, Workspace
from aophub.agent.tools import TOOL_NAMES, ToolBox, ToolOutcome
from aophub.hub.workspace_audit import WorkspaceAction
from tests.support.processes import PidFiles, running

SECRET = "TOP-SECRET-CONTENT\n"
FIXED_TIME = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


class Setup:
    """A toolbox over a workspace, with a directory outside it holding a secret."""

    def __init__(self, base: Path, *, policy: ExecPolicy | None = None, **options: Any) -> None:
        self.outside = base / "outside"
        self.outside.mkdir()
        (self.outside / "secret").write_text(SECRET)
        self.root = base / "ws"
        self.root.mkdir()
        (self.root / "etc").symlink_to("/etc")
        (self.root / "out").symlink_to(self.outside)
        (self.root / "secret-link").symlink_to(self.outside / "secret")
        (self.root / "dangling").symlink_to(self.outside / "new.txt")
        self.audit_path = base / "logs" / "audit" / "tools.jsonl"
        self.box = ToolBox(
            Workspace(self.root),
            policy or ExecPolicy(timeout=10),
            AuditLog(self.audit_path, clock=lambda: FIXED_TIME),
            **options,
        )

    async def call(self, name: str, **arguments: object) -> ToolOutcome:
        return await self.box.call(name, json.dumps(arguments).encode(), session_id="s1", turn_id="t1", call_id="c1")

    def audit_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.audit_path.read_text().splitlines()]

    def outside_files(self) -> dict[str, str]:
        return {path.name: path.read_text() for path in self.outside.iterdir()}


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


# Escapes, for every file tool.

ESCAPE_PATHS = [
    "../x",
    "a/../../x",
    "/etc/passwd",
    "~/.ssh",
    "~/.ssh/authorized_keys",
    "etc/passwd",
    "etc",
    "out",
    "out/secret",
    "out/new.txt",
    "out/sub/new.txt",
    "secret-link",
    "dangling",
    "a\x00b",
    "",
]


def escape_call(tool: str, path: str) -> dict[str, object]:
    if tool == "write_file":
        return {"path": path, "content": "pwned\n"}
    if tool == "edit_file":
        return {"path": path, "old_text": "SECRET", "new_text": "pwned"}
    return {"path": path}


@pytest.mark.parametrize("path", ESCAPE_PATHS)
@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file", "list_dir"])
async def test_file_tools_refuse_escapes(setup: Setup, tool: str, path: str) -> None:
    """No file tool reads, writes, edits or lists anything outside the workspace."""
    outcome = await setup.call(tool, **escape_call(tool, path))
    assert outcome.is_error
    assert SECRET not in outcome.text
    assert "root:" not in outcome.text
    assert setup.outside_files() == {"secret": SECRET}


async def test_write_through_symlink_created_by_exec_is_refused(setup: Setup) -> None:
    """A symlink the agent makes with exec does not let write_file out."""
    made = await setup.call("exec", command="ln -s ../outside escape && mkdir d && ln -s ../../outside d/up")
    assert made.text == "exit code: 0\n"
    for path in ["escape/secret", "escape/new.txt", "d/up/new.txt"]:
        outcome = await setup.call("write_file", path=path, content="pwned\n")
        assert outcome.is_error
        assert "outside the workspace" in outcome.text
    assert setup.outside_files() == {"secret": SECRET}


# Where bubblewrap cannot run and commands run unsandboxed, they see what the hub's user sees.
UNSANDBOXED = Isolation(bubblewrap="/nonexistent/bwrap", allow_unsandboxed=True)


async def test_hardlink_made_with_exec_is_refused(tmp_path: Path) -> None:
    """A hard link to a file outside the workspace, made by an unsandboxed exec, is not read, edited or written."""
    setup = Setup(tmp_path, policy=ExecPolicy(timeout=10, isolation=UNSANDBOXED))
    made = await setup.call("exec", command="ln ../outside/secret alias")
    assert made.text == "exit code: 0\n"
    for tool in ("read_file", "edit_file", "write_file"):
        outcome = await setup.call(tool, **escape_call(tool, "alias"))
        assert outcome.is_error
        assert outcome.text == "'alias' refused: it has 2 hard links (the file tools refuse files with more than one)"
    assert setup.outside_files() == {"secret": SECRET}
    assert os.stat(setup.root / "alias").st_nlink == 2


async def test_hub_files_are_refused_even_inside_the_workspace(tmp_path: Path) -> None:
    """The hub's own files are refused by device and inode: by name, through a symlink, and after a rewrite."""
    config = tmp_path / "config.yaml"
    config.write_text("api_key: sk-secret\n")
    key = tmp_path / "access_key"
    key.write_text("the-key\n")
    (tmp_path / "cfg-link").symlink_to("config.yaml")
    box = ToolBox(Workspace(tmp_path, protected=[config, key]), ExecPolicy(), AuditLog(tmp_path / "logs" / "a.jsonl"))

    async def call(tool: str, path: str) -> ToolOutcome:
        return await box.call(tool, json.dumps(escape_call(tool, path)).encode())

    for path in ("config.yaml", "access_key", "cfg-link", "./logs/../config.yaml"):
        for tool in ("read_file", "edit_file", "write_file"):
            outcome = await call(tool, path)
            assert outcome.is_error, (tool, path)
            assert "refused: it is one of the hub's own files" in outcome.text
    assert (config.read_text(), key.read_text()) == ("api_key: sk-secret\n", "the-key\n")
    rewritten = tmp_path / "new-config"
    rewritten.write_text("api_key: sk-other\n")
    os.replace(rewritten, config)
    assert "the hub's own files" in (await call("read_file", "config.yaml")).text
    (tmp_path / "notes.txt").write_text("fine\n")
    assert (await call("read_file", "notes.txt")).text == "fine\n"


async def test_missing_hub_files_are_not_created(tmp_path: Path) -> None:
    """A hub file that does not exist yet (a database journal) cannot be created by write_file under its name."""
    journal = tmp_path / "aophub.db-wal"
    (tmp_path / "alias").symlink_to(".")
    box = ToolBox(Workspace(tmp_path, protected=[journal]), ExecPolicy(), AuditLog(tmp_path / "logs" / "a.jsonl"))
    for path in ("aophub.db-wal", "alias/aophub.db-wal"):
        outcome = await box.call("write_file", json.dumps({"path": path, "content": "x"}).encode())
        assert outcome.text.startswith("'aophub.db-wal' refused: it is one of the hub's own files (")
    assert not journal.exists()
    assert not (await box.call("write_file", b'{"path": "sub/aophub.db-wal", "content": "x"}')).is_error


async def test_symlinks_inside_the_workspace_are_followed(setup: Setup) -> None:
    """A symlink pointing inside the workspace works, and writing through it keeps the link."""
    (setup.root / "real.txt").write_text("old\n")
    (setup.root / "alias.txt").symlink_to("real.txt")
    assert (await setup.call("read_file", path="alias.txt")).text == "old\n"
    outcome = await setup.call("write_file", path="alias.txt", content="new\n")
    assert outcome.text == "wrote 4 bytes to real.txt"
    assert (setup.root / "alias.txt").is_symlink()
    assert (setup.root / "real.txt").read_text() == "new\n"


# Definitions and argument checking.


def test_definitions_describe_every_tool(setup: Setup) -> None:
    """Each tool is offered as a function with a JSON Schema input."""
    definitions = setup.box.definitions()
    assert [definition.name for definition in definitions] == list(TOOL_NAMES)
    for definition in definitions:
        assert definition.type == "function"
        assert definition.description
        assert definition.input_schema.media_type == "application/json"
        schema = json.loads(definition.input_schema.data)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
    schemas = {d.name: json.loads(d.input_schema.data) for d in definitions}
    assert schemas["edit_file"]["required"] == ["path", "old_text", "new_text"]
    assert schemas["list_dir"]["required"] == []
    assert schemas["read_file"]["properties"]["offset"] == {
        "type": "integer",
        "description": "First line to return, counting from 1. Default 1.",
        "minimum": 1,
    }


async def test_disabled_toolbox_offers_and_runs_nothing(tmp_path: Path) -> None:
    """With tools disabled nothing is offered and every call is refused and audited."""
    setup = Setup(tmp_path, enabled=False)
    assert setup.box.definitions() == []
    outcome = await setup.call("exec", command="touch ran")
    assert outcome == ToolOutcome("tools are disabled on this hub", True, outcome.duration_ms)
    assert not (setup.root / "ran").exists()
    assert setup.audit_lines()[0]["is_error"] is True


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("read_file", b"{not json", "not valid JSON"),
        ("read_file", b"\xff\xfe", "not valid JSON"),
        ("read_file", b"[1, 2]", "expected a JSON object"),
        ("read_file", b'"a.txt"', "expected a JSON object"),
        ("read_file", b"{}", "'path' is required"),
        ("read_file", b'{"path": 7}', "'path' must be a string"),
        ("read_file", b'{"path": "a", "offset": "2"}', "'offset' must be an integer"),
        ("read_file", b'{"path": "a", "offset": true}', "'offset' must be an integer"),
        ("read_file", b'{"path": "a", "offset": 0}', "'offset' must be at least 1"),
        ("read_file", b'{"path": "a", "limit": 1.5}', "'limit' must be an integer"),
        ("read_file", b'{"path": "a", "mode": "r"}', "unexpected 'mode'"),
        ("write_file", b'{"path": "a"}', "'content' is required"),
        ("write_file", b'{"path": "a", "content": null}', "'content' must be a string"),
        ("edit_file", b'{"path": "a", "old_text": "x"}', "'new_text' is required"),
        ("exec", b'{"cmd": "ls"}', "unexpected 'cmd'"),
        ("exec", b"[" * 100_000, "not valid JSON"),
        ("delete_everything", b"{}", "unknown tool 'delete_everything'"),
    ],
)
async def test_bad_calls_become_error_outcomes(setup: Setup, name: str, arguments: bytes, message: str) -> None:
    """Malformed arguments and unknown tools give an error outcome, never an exception."""
    outcome = await setup.box.call(name, arguments)
    assert outcome.is_error
    assert message in outcome.text


async def test_empty_arguments_mean_no_arguments(setup: Setup) -> None:
    """A call with empty argument bytes is a call with {}."""
    (setup.root / "f.txt").write_text("x")
    outcome = await setup.box.call("list_dir", b"")
    assert not outcome.is_error
    assert "file\t1\tf.txt" in outcome.text


async def test_unexpected_exceptions_become_internal_errors(
    setup: Setup, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug inside a tool is logged and reported without its details."""

    async def broken(*args: object) -> ExecResult:
        raise RuntimeError("internal detail")

    monkeypatch.setattr(tools, "run_command", broken)
    outcome = await setup.call("exec", command="ls")
    assert outcome.is_error
    assert outcome.text == "exec failed with an internal error"
    assert "internal detail" in caplog.text


# read_file


async def test_read_file_returns_the_text(setup: Setup) -> None:
    """A whole text file comes back exactly."""
    (setup.root / "a.txt").write_text("one\ntwo\r\nthree")
    outcome = await setup.call("read_file", path="a.txt")
    assert outcome == ToolOutcome("one\ntwo\r\nthree", False, outcome.duration_ms)


async def test_read_file_window_in_lines(setup: Setup) -> None:
    """offset and limit select lines, and a note says which and how to continue."""
    (setup.root / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    outcome = await setup.call("read_file", path="a.txt", offset=3, limit=2)
    assert outcome.text == "line 3\nline 4\n[lines 3-4 of 10; use offset=5 to continue]"
    tail = await setup.call("read_file", path="a.txt", offset=9)
    assert tail.text == "line 9\nline 10\n[lines 9-10 of 10]"
    whole = await setup.call("read_file", path="a.txt", limit=100)
    assert whole.text == (setup.root / "a.txt").read_text()


async def test_read_file_line_breaks_are_newlines_only(setup: Setup) -> None:
    """Form feeds and other exotic separators do not split lines."""
    (setup.root / "a.txt").write_text("a\x0cb\u2028c\nd\n")
    assert (
        await setup.call("read_file", path="a.txt", limit=1)
    ).text == "a\x0cb\u2028c\n[lines 1-1 of 2; use offset=2 to continue]"


@pytest.mark.parametrize(
    ("content", "arguments", "message"),
    [
        (b"\x7fELF\x00\x01", {}, "binary file"),
        (b"caf\xe9\n", {}, "not UTF-8 text"),
        (b"x" * 1001, {}, "1001 bytes, over the 1000-byte limit"),
        (b"a\nb\n", {"offset": 3}, "offset 3 is past the end of 'f', which has 2 lines"),
    ],
)
async def test_read_file_refusals(tmp_path: Path, content: bytes, arguments: dict[str, object], message: str) -> None:
    """Binary, non-UTF-8 and oversized files, and windows past the end, are refused clearly."""
    setup = Setup(tmp_path, max_read_bytes=1000)
    (setup.root / "f").write_bytes(content)
    outcome = await setup.call("read_file", path="f", **arguments)
    assert outcome.is_error
    assert message in outcome.text


async def test_read_file_special_files(setup: Setup) -> None:
    """Directories, FIFOs, missing and empty files each get a clear answer, without hanging."""
    (setup.root / "d").mkdir()
    os.mkfifo(setup.root / "fifo")
    (setup.root / "empty").touch()
    assert "is a directory; use list_dir" in (await setup.call("read_file", path="d")).text
    assert "not a regular file" in (await setup.call("read_file", path="fifo")).text
    assert (await setup.call("read_file", path="nope")).text == "'nope' does not exist"
    assert (await setup.call("read_file", path="empty")).text == "[empty file]"


# write_file


async def test_write_file_creates_parents_and_replaces(setup: Setup) -> None:
    """write_file makes missing directories, creates and then replaces the file."""
    first = await setup.call("write_file", path="src/pkg/mod.py", content="x = 1\n")
    assert first == ToolOutcome("wrote 6 bytes to src/pkg/mod.py", False, first.duration_ms)
    second = await setup.call("write_file", path="src/pkg/mod.py", content="x = 'é'\n")
    assert second.text == "wrote 9 bytes to src/pkg/mod.py"
    assert (setup.root / "src/pkg/mod.py").read_text() == "x = 'é'\n"
    assert sorted(p.name for p in (setup.root / "src/pkg").iterdir()) == ["mod.py"]


async def test_write_file_keeps_the_mode_of_a_replaced_file(setup: Setup) -> None:
    """Replacing an executable script keeps it executable; new files are 0644."""
    script = setup.root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    await setup.call("write_file", path="run.sh", content="#!/bin/sh\necho hi\n")
    await setup.call("write_file", path="new.txt", content="")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert stat.S_IMODE((setup.root / "new.txt").stat().st_mode) == 0o644


async def test_write_file_refuses_directories_and_bad_text(setup: Setup) -> None:
    """Writing over a directory or the root, or unencodable text, is an error."""
    (setup.root / "d").mkdir()
    (setup.root / "file").write_text("x")
    assert (await setup.call("write_file", path="d", content="x")).text == "'d' is a directory"
    assert (await setup.call("write_file", path=".", content="x")).is_error
    assert (await setup.call("write_file", path="file/child", content="x")).text == (
        "write_file failed: Not a directory: file"
    )
    lone = await setup.box.call("write_file", b'{"path": "s.txt", "content": "\\ud800"}')
    assert "not valid Unicode" in lone.text
    assert not (setup.root / "s.txt").exists()


async def test_write_file_replaces_in_one_step(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new content is complete in a temporary file in the same directory before one rename."""
    target = setup.root / "data.txt"
    target.write_text("old")
    renames: list[tuple[str, str, str]] = []
    real_replace = os.replace

    def spy(source: str, destination: str, *, src_dir_fd: int, dst_dir_fd: int) -> None:
        assert os.path.samestat(os.fstat(src_dir_fd), os.stat(setup.root))
        assert (os.path.dirname(source), src_dir_fd) == ("", dst_dir_fd)
        renames.append((source, (setup.root / source).read_text(), target.read_text()))
        real_replace(source, destination, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    monkeypatch.setattr(os, "replace", spy)
    await setup.call("write_file", path="data.txt", content="new content")
    [(_source, staged, visible)] = renames
    assert (staged, visible) == ("new content", "old")
    assert target.read_text() == "new content"
    assert sorted(p.name for p in setup.root.iterdir() if p.name.endswith(".tmp")) == []


async def test_write_file_failure_leaves_no_temporary_file(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the rename fails the old file is intact and the temporary file is removed."""
    target = setup.root / "data.txt"
    target.write_text("old")

    def failing(source: str, destination: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device", source)

    monkeypatch.setattr(os, "replace", failing)
    outcome = await setup.call("write_file", path="data.txt", content="new")
    assert outcome.is_error
    assert outcome.text.startswith("write_file failed: No space left on device: .data.txt.")
    assert target.read_text() == "old"
    assert sorted(p.name for p in setup.root.iterdir()) == sorted(["data.txt", "etc", "out", "secret-link", "dangling"])


async def test_concurrent_reader_never_sees_a_partial_file(setup: Setup) -> None:
    """A reader racing many large writes only ever sees one complete version."""
    target = setup.root / "big.txt"
    versions = ["a" * 1_000_000, "b" * 1_000_000]
    target.write_text(versions[0])
    done = threading.Event()
    seen: set[str] = set()

    def read_until_done() -> None:
        while not done.is_set():
            seen.add(target.read_text())

    reader = asyncio.create_task(asyncio.to_thread(read_until_done))
    try:
        for n in range(20):
            outcome = await setup.call("write_file", path="big.txt", content=versions[n % 2])
            assert not outcome.is_error
    finally:
        done.set()
        await reader
    assert seen <= set(versions)


# edit_file


async def test_edit_file_replaces_the_one_occurrence(setup: Setup) -> None:
    """An exact, unique old_text is replaced and the file mode kept."""
    path = setup.root / "m.py"
    path.write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    path.chmod(0o600)
    outcome = await setup.call("edit_file", path="m.py", old_text="    return 1\n", new_text="    return 10\n")
    assert outcome == ToolOutcome("edited m.py: replaced 1 occurrence", False, outcome.duration_ms)
    assert path.read_text() == "def f():\n    return 10\n\ndef g():\n    return 2\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("old_text", "message"),
    [
        ("return 3", "old_text was not found in 'm.py'"),
        ("return", "old_text appears 3 times in 'm.py'"),
        ("", "old_text is empty"),
    ],
)
async def test_edit_file_refuses_missing_ambiguous_and_empty_text(setup: Setup, old_text: str, message: str) -> None:
    """Missing, repeated or empty old_text leaves the file untouched and says why."""
    path = setup.root / "m.py"
    original = "return 1\nreturn 2\nreturn 1\n"
    path.write_text(original)
    outcome = await setup.call("edit_file", path="m.py", old_text=old_text, new_text="x")
    assert outcome.is_error
    assert message in outcome.text
    assert path.read_text() == original


async def test_edit_file_needs_an_existing_text_file(setup: Setup) -> None:
    """edit_file does not create files and refuses binary ones."""
    assert (await setup.call("edit_file", path="new.py", old_text="a", new_text="b")).text == "'new.py' does not exist"
    (setup.root / "bin").write_bytes(b"a\x00b")
    assert "binary file" in (await setup.call("edit_file", path="bin", old_text="a", new_text="b")).text


# list_dir


async def test_list_dir_entries(setup: Setup) -> None:
    """Entries come sorted, with their type and size; symlinks are not followed."""
    (setup.root / "src").mkdir()
    (setup.root / "src" / "b.py").write_text("12345")
    (setup.root / "src" / "a dir").mkdir()
    (setup.root / "src" / "link").symlink_to("b.py")
    (setup.root / "src" / "new\nline").touch()
    outcome = await setup.call("list_dir", path="src")
    assert outcome.text == 'dir\t-\ta dir/\nfile\t5\tb.py\nsymlink\t-\tlink\nfile\t0\t"new\\nline"\n'
    root = await setup.box.call("list_dir", b"{}")
    assert root.text.splitlines() == [
        "symlink\t-\tdangling",
        "symlink\t-\tetc",
        "symlink\t-\tout",
        "symlink\t-\tsecret-link",
        "dir\t-\tsrc/",
    ]


async def test_list_dir_is_capped(tmp_path: Path) -> None:
    """Past max_list_entries the listing says how many entries were left out."""
    setup = Setup(tmp_path, max_list_entries=3)
    (setup.root / "many").mkdir()
    for n in range(10):
        (setup.root / "many" / f"f{n}").touch()
    outcome = await setup.call("list_dir", path="many")
    assert outcome.text == "file\t0\tf0\nfile\t0\tf1\nfile\t0\tf2\n[7 more entries not shown]\n"


async def test_list_dir_refusals(setup: Setup) -> None:
    """Files, missing paths and empty directories get a clear answer."""
    (setup.root / "f").touch()
    (setup.root / "empty").mkdir()
    assert (await setup.call("list_dir", path="f")).text == "'f' is not a directory"
    assert (await setup.call("list_dir", path="nope")).text == "'nope' does not exist"
    assert (await setup.call("list_dir", path="empty")).text == "[empty directory]"


# exec


async def test_exec_reports_the_exit_code(setup: Setup) -> None:
    """The output starts with the exit code; a failing command is not a tool error."""
    ok = await setup.call("exec", command="echo hello")
    assert ok == ToolOutcome("exit code: 0\nhello\n", False, ok.duration_ms)
    failed = await setup.call("exec", command="echo oops >&2; exit 2")
    assert failed == ToolOutcome("exit code: 2\noops\n", False, failed.duration_ms)


async def test_exec_denied_and_not_allowed_are_errors(tmp_path: Path) -> None:
    """Denied commands and commands outside the allow-list are errors and do not run."""
    setup = Setup(tmp_path, policy=ExecPolicy(allow_patterns=[r"echo .*", r"touch ran.*"]))
    denied = await setup.call("exec", command="touch ran; sudo reboot")
    assert denied.is_error
    assert "deny pattern" in denied.text
    refused = await setup.call("exec", command="ls")
    assert refused.text == "command refused: it matches none of the allow patterns"
    assert not (setup.root / "ran").exists()
    assert (await setup.call("exec", command="echo fine")).text == "exit code: 0\nfine\n"


async def test_exec_timeout_is_an_error_with_the_output_so_far(tmp_path: Path) -> None:
    """A command that runs too long is killed and reported as an error."""
    setup = Setup(tmp_path, policy=ExecPolicy(timeout=0.3))
    outcome = await setup.call("exec", command="echo before; sleep 100")
    assert outcome.is_error
    assert outcome.text == "the command timed out after 0.3 seconds and was killed; its output so far:\nbefore\n"


async def test_exec_leaves_no_daemon_running(tmp_path: Path) -> None:
    """A setsid daemon holding the output open ends with the unsandboxed exec call, which returns at once."""
    setup = Setup(tmp_path, policy=ExecPolicy(timeout=5, isolation=UNSANDBOXED))
    pid_files = PidFiles(setup.root)
    command = (
        "setsid -f sh -c 'echo $$ > daemon.tmp && mv daemon.tmp daemon; exec sleep 100'; "
        "while [ ! -f daemon ]; do :; done; echo started"
    )
    try:
        outcome = await setup.call("exec", command=command)
        assert outcome == ToolOutcome("exit code: 0\nstarted\n", False, outcome.duration_ms)
        assert not running(pid_files.read("daemon"))
    finally:
        pid_files.kill_survivors()


async def test_exec_output_cap(tmp_path: Path) -> None:
    """exec output is capped with a marker."""
    setup = Setup(tmp_path, policy=ExecPolicy(output_cap=10))
    outcome = await setup.call("exec", command="seq 1 100")
    assert outcome.text == "exit code: 0\n1\n2\n3\n4\n5\n[output truncated: 282 more bytes not shown]\n"


# The audit log.


async def test_audit_lines_for_successful_failed_and_refused_calls(setup: Setup) -> None:
    """Every call, whether it worked, failed or was refused, is one JSON line."""
    await setup.call("write_file", path="a.txt", content="hello")
    await setup.call("read_file", path="missing.txt")
    await setup.call("read_file", path="../outside/secret")
    await setup.box.call("exec", b"{oops", session_id="s2", turn_id="t2", call_id="c9")
    await setup.box.call("rm_rf", b'{"path": "."}')
    lines = setup.audit_lines()
    assert lines[0] == {
        "time": "2025-01-02T03:04:05.678Z",
        "session_id": "s1",
        "turn_id": "t1",
        "call_id": "c1",
        "tool": "write_file",
        "kind": "function",
        "arguments": {"path": "a.txt", "content": "hello"},
        "is_error": False,
        "duration_ms": lines[0]["duration_ms"],
        "summary": "wrote 5 bytes to a.txt",
    }
    assert isinstance(lines[0]["duration_ms"], int)
    assert (lines[1]["tool"], lines[1]["is_error"], lines[1]["summary"]) == (
        "read_file",
        True,
        "'missing.txt' does not exist",
    )
    assert lines[2]["is_error"] is True
    assert "outside the workspace" in lines[2]["summary"]
    assert lines[3]["arguments"] is None
    assert lines[3]["raw_arguments"] == "{oops"
    assert (lines[3]["session_id"], lines[3]["turn_id"], lines[3]["call_id"]) == ("s2", "t2", "c9")
    assert "not valid JSON" in lines[3]["summary"]
    assert (lines[4]["tool"], lines[4]["arguments"], lines[4]["is_error"]) == ("rm_rf", {"path": "."}, True)
    assert len(lines) == 5


async def test_audit_log_file_is_private(setup: Setup) -> None:
    """The log and its directories are created on first use, the file with mode 0600."""
    assert not setup.audit_path.parent.exists()
    await setup.call("list_dir")
    assert stat.S_IMODE(setup.audit_path.stat().st_mode) == 0o600


def test_audit_log_tightens_an_existing_file(tmp_path: Path) -> None:
    """An existing log readable by others is made private on the next write."""
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    path.chmod(0o644)
    AuditLog(path).record(tool="exec", arguments={}, is_error=False, duration_ms=1, output="")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["time"].endswith("Z")


def test_workspace_actions_share_the_audit_log(tmp_path: Path) -> None:
    """The hub's relayed uploads and terminal requests are lines of the same log, kind "workspace", empty fields out."""
    path = tmp_path / "audit.jsonl"
    clock = lambda: datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)  # noqa: E731
    log = AuditLog(path, clock=clock, max_string_chars=24)
    log.record_workspace(
        WorkspaceAction("pty.open", "laptop", "forwarded", peer="203.0.113.7:52114", token="phone", stream_id="s1")
    )
    log.record_workspace(WorkspaceAction("upload", "laptop", "failed: " + "x" * 40, envelope_id="e1", detail="a.txt"))
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first == {
        "time": "2026-01-02T03:04:05.678Z",
        "kind": "workspace",
        "operation": "pty.open",
        "node_id": "laptop",
        "stream_id": "s1",
        "peer": "203.0.113.7:52114",
        "token": "phone",
        "outcome": "forwarded",
    }
    assert second["envelope_id"] == "e1"
    assert second["detail"] == "a.txt"
    assert str(second["outcome"]).endswith("[24 more characters]")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_audit_summary_and_arguments_are_bounded(setup: Setup) -> None:
    """The summary is the first 200 characters; huge argument strings are shortened."""
    await setup.call("exec", command="seq 1 1000")
    await setup.call("write_file", path="big.txt", content="x" * 10_000)
    exec_line, write_line = setup.audit_lines()
    assert exec_line["summary"] == ("exit code: 0\n" + "".join(f"{n}\n" for n in range(1, 1001)))[:200]
    assert write_line["arguments"]["content"] == "x" * 4096 + "... [5904 more characters]"
    assert (setup.root / "big.txt").read_text() == "x" * 10_000


async def test_concurrent_calls_write_whole_lines(setup: Setup) -> None:
    """Many calls at once leave one well-formed line each."""
    calls = [setup.box.call("exec", json.dumps({"command": f"echo {n}"}).encode(), call_id=f"c{n}") for n in range(30)]
    calls += [setup.box.call("read_file", b'{"path": "nope"}', call_id=f"r{n}") for n in range(30)]
    await asyncio.gather(*calls)
    ids = sorted(line["call_id"] for line in setup.audit_lines())
    assert ids == sorted([f"c{n}" for n in range(30)] + [f"r{n}" for n in range(30)])


async def test_cancelled_call_is_audited(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call cancelled mid-way is audited as canceled, then the cancellation propagates."""
    started = asyncio.Event()

    async def hanging(*args: object) -> ExecResult:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    monkeypatch.setattr(tools, "run_command", hanging)
    task = asyncio.create_task(setup.call("exec", command="sleep 100"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [line] = setup.audit_lines()
    assert (line["tool"], line["is_error"], line["summary"]) == ("exec", True, "canceled")


def test_duration_uses_the_injected_clock(tmp_path: Path) -> None:
    """duration_ms is measured with the clock the toolbox was given."""
    ticks = iter([10.0, 10.25])
    clock: Callable[[], float] = lambda: next(ticks)  # noqa: E731
    setup = Setup(tmp_path, clock=clock)
    outcome = asyncio.run(setup.box.call("nope", b"{}"))
    assert outcome.duration_ms == 250
    assert setup.audit_lines()[0]["duration_ms"] == 250


def test_record_audits_a_call_that_did_not_run(setup: Setup) -> None:
    """ToolBox.record writes the one line of a call answered without running it (here a client tool)."""
    setup.box.record(
        "confirm",
        b"{oops",
        "yes",
        is_error=False,
        duration_ms=5,
        kind="client",
        session_id="s",
        turn_id="t",
        call_id="c",
    )
    (line,) = setup.audit_lines()
    assert (line["tool"], line["kind"], line["arguments"], line["raw_arguments"]) == (
        "confirm",
        "client",
        None,
        "{oops",
    )
    assert (line["is_error"], line["duration_ms"], line["summary"], line["call_id"]) == (False, 5, "yes", "c")
