"""A real terminal for tests: a program in a tmux pane, driven by keys, read from the screen.

``Terminal()`` runs its own tmux server (a socket in a fresh temporary directory), so tests never
touch a person's tmux. :meth:`Terminal.start` runs a command in a pane of a fixed size;
:meth:`send` types text or keys (``"Enter"``, ``"C-c"``); :meth:`screen` is the pane's text
with its scrollback; :meth:`wait_for` waits until the screen matches a pattern. The pane stays
after the program exits (``remain-on-exit``), so its last screen can be read, and
:meth:`exit_status` tells how it exited.
A terminal can only be watched: waiting polls the screen, bounded by a deadline.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["Terminal", "tmux_available"]

POLL = 0.05


def tmux_available() -> bool:
    return shutil.which("tmux") is not None


class Terminal:
    """One tmux pane running one command; see the module docstring."""

    def __init__(self, *, width: int = 110, height: int = 40) -> None:
        # A socket path must stay short (about 100 bytes): not under pytest's long tmp_path.
        self.directory = Path(tempfile.mkdtemp(prefix="aophub-tmux-"))
        self.socket = self.directory / "sock"
        self.config = self.directory / "tmux.conf"
        self.status_file = self.directory / "status"
        # The pane stays when the program exits, with its screen and exit status.
        self.config.write_text("set -g remain-on-exit on\nset -g history-limit 10000\nset -g status off\n")
        self.width = width
        self.height = height
        self.started = False

    def __repr__(self) -> str:
        return f"<Terminal {self.socket} {self.width}x{self.height}>"

    def _tmux(self, *arguments: str) -> str:
        done = subprocess.run(
            # -u: UTF-8 whatever the locale (CI may have none), so the chat's marks read back as written.
            ["tmux", "-u", "-S", str(self.socket), *arguments],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(arguments)}: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> None:
        """Run ``command`` in a new pane with ``env`` added to tmux's environment."""
        variables = [item for name, value in env.items() for item in ("-e", f"{name}={value}")]
        # The shell writes the program's exit status (tmux is slow to notice a pane's program exited).
        # It survives the program's Ctrl-C: a trap (unlike an ignored SIGINT) is not inherited.
        line = f"trap : INT; {shlex.join(command)}; echo $? > {shlex.quote(str(self.status_file))}"
        self._tmux(
            "-f", str(self.config), "new-session", "-d", "-x", str(self.width), "-y", str(self.height),
            "-c", str(cwd), *variables, "-s", "test", line,
        )  # fmt: skip
        self.started = True

    def send(self, *keys: str, literal: bool = False) -> None:
        """Type ``keys``: tmux key names (``Enter``, ``C-c``), or text as it is with ``literal``."""
        self._tmux("send-keys", "-t", "test", *(["-l"] if literal else []), *keys)

    def type_line(self, text: str) -> None:
        self.send(text, literal=True)
        self.send("Enter")

    def screen(self) -> str:
        """The pane's text, scrollback included, lines joined where the terminal wrapped them, without
        trailing blanks."""
        text = self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "test")
        return "\n".join(line.rstrip() for line in text.splitlines()).rstrip("\n") + "\n"

    def exit_status(self) -> int | None:
        """The program's exit status once it exited, else None."""
        try:
            written = self.status_file.read_text()
        except FileNotFoundError:
            return None
        return int(written) if written.endswith("\n") else None

    async def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """The first match of ``pattern`` (multi-line) on the screen, waiting for it to appear."""
        compiled = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        while True:
            screen = await asyncio.to_thread(self.screen)
            match = compiled.search(screen)
            if match:
                return match
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} on the screen within {timeout} s:\n{screen}")
            await asyncio.sleep(POLL)

    async def wait_for_exit(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while (status := await asyncio.to_thread(self.exit_status)) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the program did not exit within {timeout} s:\n{self.screen()}")
            await asyncio.sleep(POLL)
        return status

    def close(self) -> None:
        if self.started:
            subprocess.run(
                ["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, timeout=10, check=False
            )
            self.started = False
        shutil.rmtree(self.directory, ignore_errors=True)
