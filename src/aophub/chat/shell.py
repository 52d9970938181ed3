"""``/shell`` in ``aophub chat``: a terminal on the session's node, attached to the real tty.

While attached the tty is in raw mode: every key goes to the remote terminal (Ctrl-C included) and
its output is written to the screen as it comes. Ctrl-] (the byte 0x1d, as in telnet) detaches:
the remote terminal keeps running, and ``/shell`` again attaches it from where this chat stopped
reading: the output made in between comes from the node's scrollback, and nothing twice.
A window resize while attached is passed on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import termios
import tty
from collections.abc import Iterator

from aophub.client import HubClient, HubClientError, Terminal

__all__ = ["DETACH_KEY", "Shell"]

DETACH_KEY = b"\x1d"  # Ctrl-]
_READ_BYTES = 4096


class Shell:
    """The chat's one terminal on its session's node: opened by the first ``/shell``, attached by the next."""

    def __init__(self, hub: HubClient, node_id: str) -> None:
        self.hub = hub
        self.node_id = node_id
        self.terminal: Terminal | None = None

    def __repr__(self) -> str:
        return f"<Shell on {self.node_id} {self.terminal!r}>"

    async def attach(self) -> str:
        """Attach the terminal to this tty until Ctrl-] or the remote session ends; what happened, to tell."""
        cols, rows = shutil.get_terminal_size()
        if self.terminal is None or self.terminal.closed:
            self.terminal = await self.hub.open_terminal(self.node_id, cols=cols, rows=rows)
        else:
            try:
                await self.terminal.attach(cols=cols, rows=rows)
            except HubClientError:
                self.terminal = None  # gone (e.g. the node restarted): the next /shell opens a new one
                raise
        terminal = self.terminal
        detached = asyncio.Event()
        with _raw(sys.stdin), _keys(terminal, detached), _resizes(terminal):
            banner = f"\r\n[terminal {terminal.session.id} on {self.node_id} · Ctrl-] detaches]\r\n"
            sys.stdout.buffer.write(banner.encode())  # once keys go to the terminal
            sys.stdout.buffer.flush()
            output = asyncio.create_task(_copy_output(terminal))
            waiting = asyncio.create_task(detached.wait())
            await asyncio.wait({output, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if not output.done():
                await terminal.detach()
                await output  # what came before the detach, then the end of the attachment
            waiting.cancel()
        failure = output.exception()
        if failure is not None:  # the connection failed for good
            self.terminal = None
            raise failure
        if terminal.closed:
            session = terminal.session
            self.terminal = None
            return f"the terminal ended ({session.state}, exit code {session.exit_code})"
        return "detached: the terminal keeps running; /shell attaches it again"


async def _copy_output(terminal: Terminal) -> None:
    out = sys.stdout.buffer
    async for chunk in terminal:
        if chunk.missed:
            out.write(f"\r\n[{chunk.missed} bytes of output were older than the node's scrollback]\r\n".encode())
        out.write(chunk.data)
        out.flush()


@contextlib.contextmanager
def _raw(stream: object) -> Iterator[None]:
    """The tty in raw mode (no echo, no line editing, no signals from keys), restored after."""
    if not hasattr(stream, "fileno") or not os.isatty(stream.fileno()):
        yield
        return
    descriptor = stream.fileno()
    saved = termios.tcgetattr(descriptor)
    tty.setraw(descriptor, termios.TCSANOW)  # keys typed ahead are kept, not flushed
    try:
        yield
    finally:
        termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)


@contextlib.contextmanager
def _keys(terminal: Terminal, detached: asyncio.Event) -> Iterator[None]:
    """Send what is typed to the terminal, in order; Ctrl-] (once what came before it is sent) sets ``detached``."""
    loop = asyncio.get_running_loop()
    descriptor = sys.stdin.fileno()
    typed: asyncio.Queue[bytes] = asyncio.Queue()  # b"": detach here

    def readable() -> None:
        try:
            data = os.read(descriptor, _READ_BYTES)
        except OSError:
            data = b""
        before, key, _ = data.partition(DETACH_KEY)
        if before:
            typed.put_nowait(before)
        if key or not data:  # Ctrl-], or stdin is gone: nothing more can be typed
            loop.remove_reader(descriptor)
            typed.put_nowait(b"")

    async def send() -> None:
        while data := await typed.get():
            await terminal.send(data)
        detached.set()

    sender = loop.create_task(send())
    loop.add_reader(descriptor, readable)
    try:
        yield
    finally:
        loop.remove_reader(descriptor)
        sender.cancel()


@contextlib.contextmanager
def _resizes(terminal: Terminal) -> Iterator[None]:
    """Pass the window's new size on while attached."""
    loop = asyncio.get_running_loop()
    sent: set[asyncio.Task[None]] = set()

    def resized() -> None:
        cols, rows = shutil.get_terminal_size()
        task = loop.create_task(terminal.resize(cols, rows))
        sent.add(task)
        task.add_done_callback(sent.discard)

    loop.add_signal_handler(signal.SIGWINCH, resized)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGWINCH)
