"""``aophub chat`` on the command line: where its credential comes from, and no terminal, no chat."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from aophub.chat.command import credential

from .support.server import ROOT


def _args(**values: object) -> argparse.Namespace:
    defaults: dict[str, object] = {"token": None, "token_file": None, "data_dir": Path("missing")}
    return argparse.Namespace(**(defaults | values))


def test_the_credential_comes_from_the_token_file_the_flag_the_environment_or_the_data_dir(tmp_path: Path) -> None:
    """The same order as the other subcommands; none at all is a clear error."""
    (tmp_path / "access_key").write_text("stored\n")
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n")
    key_file.chmod(0o600)
    assert credential(_args(token_file=key_file, token="flag"), {"AOPHUB_TOKEN": "env"}) == "from-file"
    assert credential(_args(token="flag"), {"AOPHUB_TOKEN": "env"}) == "flag"
    assert credential(_args(data_dir=tmp_path), {"AOPHUB_TOKEN": "env"}) == "env"
    assert credential(_args(data_dir=tmp_path), {}) == "stored"
    with pytest.raises(ValueError, match=r"no credential: give --token-file, --token or \$AOPHUB_TOKEN"):
        credential(_args(), {})


def test_without_a_terminal_the_chat_says_so_and_exits_2() -> None:
    """Piped input is refused with a clear message, before anything connects."""
    done = subprocess.run(
        [sys.executable, "-m", "aophub", "chat", "--token", "x"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "aophub chat: needs a terminal" in done.stderr
