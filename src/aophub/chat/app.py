"""``aophub chat``: a person's terminal client for one session of a hub.

The chat opens a session (or resumes one with its history), watches it for as long as it
runs, and loops: read a line, run it (a turn, a slash command, or one of the chat's own verbs),
follow the turn until it ends while answering the agent's questions inline. It is built on
:class:`aophub.client.HubClient`, whose watch reconnects by itself and resumes from the last
cursor; :class:`~aophub.chat.transcript.Transcript` keeps the text exact across that.

Ctrl-C while a turn runs cancels it; a second Ctrl-C (before it ended, or at the empty prompt
after) leaves. At the prompt Ctrl-C clears a typed line; Ctrl-D or ``/quit`` leave too. Leaving
keeps the session open: ``aophub chat --session ID`` picks it up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import termios
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout
from rich.console import Console
from websockets.exceptions import WebSocketException

from aophub.chat.management import Management, ManagementError
from aophub.chat.questions import CLIENT_TOOLS, Question, answer_of, question_of
from aophub.chat.screen import Screen
from aophub.chat.shell import Shell
from aophub.chat.transcript import Shown, Transcript
from aophub.client import HubClient, HubClientError, Watcher, WatchItem

__all__ = ["LOCAL_VERBS", "Chat", "ChatOptions"]

# The chat's own verbs; every other line starting with "/" or "!" is a command for the hub.
LOCAL_VERBS = {
    "/help": "list the commands of this session",
    "/cancel": "cancel the running turn (CancelTurn)",
    "/close": "close the session for good and leave (CloseSession)",
    "/archive": "archive the session: hidden from listings, still open (UpdateSession)",
    "/reasoning": "show the last reasoning in full",
    "/upload": "/upload PATH: upload a file into the session's workspace (the agent is told on its next turn)",
    "/shell": "a terminal on the session's node; Ctrl-] detaches, /shell again attaches (no output lost)",
    "/quit": "leave; the session stays open (also /exit, Ctrl-D)",
}
HISTORY_PAGE = 500
# Seconds between redraws of the live region while a turn runs.
TICK = 0.1


@dataclass(frozen=True)
class ChatOptions:
    server: str
    token: str
    node_id: str = "local"
    session_id: str = ""
    title: str = ""


class _Leave(Exception):
    """The person asked to leave."""


class _CtrlC(Exception):
    """Ctrl-C at a prompt (an exception, not KeyboardInterrupt, so that it stays in its task)."""


class Chat:
    """One chat on one session; :meth:`run` until the person leaves."""

    def __init__(self, options: ChatOptions, *, console: Console | None = None) -> None:
        self.options = options
        self.screen = Screen(console or Console(highlight=False))
        self.transcript = Transcript()
        self.session_id = options.session_id
        self._prompts: PromptSession[str] = PromptSession()
        self._changed = asyncio.Event()
        self._failure: BaseException | None = None
        self._foreground = ""  # the turn this chat runs and follows
        self._canceling = False
        self._draft = ""
        self._conversation: asyncio.Task[None] | None = None
        self._hub: HubClient | None = None
        self._management: Management | None = None
        self._quiet: contextlib.ExitStack | None = None
        self._closed_here = False
        self._ticker: asyncio.Task[None] | None = None
        self._node_id = options.node_id
        self._shell: Shell | None = None
        self._held: list[Shown] | None = None  # what the watch showed while a terminal had the screen

    def __repr__(self) -> str:
        return f"<Chat session={self.session_id or '-'} foreground={self._foreground or '-'}>"

    # -- lifecycle ------------------------------------------------------------------------------

    async def run(self) -> int:
        """Chat until the person leaves; the exit status (0, or 1 when the hub failed us)."""
        try:
            self._hub = await HubClient.connect(self.options.server, self.options.token)
        except (OSError, TimeoutError, HubClientError, WebSocketException) as error:
            self.screen.note(f"cannot connect to {self.options.server}: {error}", "bold red")
            return 1
        self._management = Management(self.options.server, self.options.token)
        try:
            return await self._chat(self._hub)
        finally:
            await self._hub.close()
            self._management.close()

    async def _chat(self, hub: HubClient) -> int:
        try:
            if not await self._open(hub):
                return 1
        except (HubClientError, ManagementError) as error:
            self.screen.note(f"cannot open the session: {error}", "bold red")
            return 1
        watcher = await hub.watch(self.session_id, after_cursor=str(self.transcript.last_cursor or ""))
        reader = asyncio.create_task(self._read(watcher))
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._interrupt)
        self._conversation = asyncio.create_task(self._converse(hub))
        try:
            await self._conversation
        except (asyncio.CancelledError, _Leave):
            pass
        except (HubClientError, ConnectionError) as error:
            self._live_off()
            self.screen.note(f"lost the hub: {error}", "bold red")
            return 1
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self._live_off()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            with contextlib.suppress(HubClientError, ConnectionError):
                await watcher.stop()
        if not (self.transcript.closed or self._closed_here):
            self.screen.note(f"session {self.session_id} stays open: aophub chat --session {self.session_id}")
        return 0

    async def _open(self, hub: HubClient) -> bool:
        """Open a new session, or resume ``--session`` and print its history; False if it cannot be."""
        assert self._management is not None
        if not self.session_id:
            session = await hub.open_session(self.options.node_id, title=self.options.title, extensions=[CLIENT_TOOLS])
            self.session_id = session.id
            self._node_id = session.node_id or self._node_id
            self.screen.note(f"session {session.id} on node {session.node_id} · /help lists the commands")
            return True
        info = await self._management.get_session(self.session_id)
        self._node_id = info.node_id or self._node_id
        title = f" “{info.title}”" if info.title else ""
        self.screen.note(f"session {info.id}{title} on node {info.node_id}")
        await self._print_history(hub)
        if self.transcript.closed:
            self.screen.note("the session is closed: its history is above, it runs no more turns", "yellow")
            return False
        try:  # re-bind it on its node (which may have restarted since), with this chat's tools
            await hub.open_session(info.node_id, session_id=info.id, extensions=[CLIENT_TOOLS])
        except HubClientError as error:
            self.screen.note(f"the node is not reachable now ({error}); the chat watches the session", "yellow")
        self._foreground = self.transcript.running_turn
        return True

    async def _print_history(self, hub: HubClient) -> None:
        cursor = ""
        while True:  # a page shorter than asked is not the end: only an empty page is
            page = await hub.list_events(self.session_id, after_cursor=cursor, limit=HISTORY_PAGE)
            if not page.events:
                break
            for delivery in page.events:
                for shown in self.transcript.feed(WatchItem(delivery.cursor, delivery.event)):
                    self.screen.show(shown)
            cursor = page.next_cursor
        self.screen.note("— end of history —")

    async def _read(self, watcher: Watcher) -> None:
        """Feed every delivered event to the transcript and the screen; a watch failure ends the chat."""
        try:
            async for item in watcher:
                for shown in self.transcript.feed(item):
                    if self._held is not None:
                        self._held.append(shown)
                    else:
                        self.screen.show(shown)
                self._changed.set()
        except (HubClientError, ConnectionError) as error:
            self._failure = error
            self._changed.set()

    # -- the conversation -----------------------------------------------------------------------

    async def _converse(self, hub: HubClient) -> None:
        while True:
            if self._failure is not None:
                raise self._failure
            if self.transcript.pending and not self._canceling:
                self._live_off()
                await self._ask(next(iter(self.transcript.pending.values())).id)
            elif self._foreground and self._foreground not in self.transcript.ended_turns:
                self._live_on()
                await self._wait_for_change()
            elif self._foreground:
                self._live_off()
                self._foreground, self._canceling = "", False
            elif self.transcript.closed:
                return
            else:
                line = await self._read_line()
                if line is not None:
                    await self._run_line(hub, line)

    def _live_on(self) -> None:
        """The foreground turn streams: redraw its live part, and keep typed keys from garbling it."""
        if self._quiet is None:
            self._quiet = contextlib.ExitStack()
            self._quiet.enter_context(quiet_keys())
            self.screen.start_live()
            self._ticker = asyncio.create_task(self._tick())

    def _live_off(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self.screen.stop_live()
        if self._quiet is not None:
            self._quiet.close()
            self._quiet = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)  # a spinner's pace, not a wait for anything
            self.screen.tick()

    async def _wait_for_change(self) -> None:
        self._changed.clear()
        await self._changed.wait()

    async def _race_prompt(
        self, message: str, default: str, key_bindings: KeyBindings, interrupted: Callable[[], bool]
    ) -> str | None:
        """A prompt's line, or None when ``interrupted()`` became true (or the watch failed) first."""
        prompt = asyncio.create_task(
            self._prompts.prompt_async(message, default=default, key_bindings=key_bindings, handle_sigint=False)
        )
        while not prompt.done():
            change = asyncio.create_task(self._wait_for_change())
            await asyncio.wait({prompt, change}, return_when=asyncio.FIRST_COMPLETED)
            change.cancel()
            if not prompt.done() and (interrupted() or self._failure is not None):
                self._draft = self._prompts.default_buffer.text
                prompt.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prompt
                return None
        return prompt.result()

    async def _read_line(self) -> str | None:
        """The next line typed; None when something else must happen first. Leaving raises :class:`_Leave`."""
        with patch_stdout(raw=True):
            try:
                keys = _prompt_keys(clear_first=True)
                line = await self._race_prompt("> ", self._draft, keys, lambda: bool(self.transcript.pending))
            except (EOFError, _CtrlC):
                raise _Leave from None
        if line is not None:
            self._draft = ""
        return line

    async def _ask(self, interaction_id: str) -> None:
        """Ask the pending interaction until it is answered (here or elsewhere) or withdrawn."""
        assert self._management is not None
        question = question_of(self.transcript.pending[interaction_id])
        self.screen.question(question)
        while interaction_id in self.transcript.pending and not self._canceling:
            with patch_stdout(raw=True):
                try:
                    reply = await self._race_prompt(
                        f"{question.hint} > ",
                        "",
                        _prompt_keys(clear_first=False),
                        lambda: interaction_id not in self.transcript.pending,
                    )
                except EOFError:
                    raise _Leave from None
                except _CtrlC:
                    self._interrupt()
                    return
            if reply is None:
                return  # answered elsewhere, withdrawn, or the watch failed: the loop decides
            answer = answer_of(question, reply)
            if answer is None:
                self.screen.note(_retry_hint(question), "yellow")
                continue
            try:
                await self._management.answer(interaction_id, answer)
            except ManagementError as error:
                self.screen.note(f"the answer was not taken: {error}", "yellow")
                continue
            while interaction_id in self.transcript.pending and self._failure is None:
                await self._wait_for_change()  # its ANSWERED event

    async def _run_line(self, hub: HubClient, line: str) -> None:
        text = line.strip()
        if not text:
            return
        try:
            if text.startswith("/") and text.split()[0].lower() in LOCAL_VERBS | {"/exit": ""}:
                verb, _, argument = text.partition(" ")
                await self._local(hub, verb.lower(), argument.strip())
            elif text.startswith(("/", "!")):
                assert self._management is not None
                self.transcript.expect_echo(text)
                await self._management.run_command(self.session_id, text)
            else:
                self.transcript.expect_echo(text)
                receipt = await hub.run_turn(self.session_id, text)
                self._foreground = receipt.turn_id
                if receipt.state == "queued":
                    self.screen.note("queued behind the running turn")
        except (HubClientError, ManagementError) as error:
            self.screen.note(f"refused: {error}", "bold red")

    async def _local(self, hub: HubClient, verb: str, argument: str = "") -> None:
        assert self._management is not None
        if verb == "/help":
            self.screen.commands(await self._management.list_commands(self.session_id), LOCAL_VERBS)
        elif verb == "/cancel":
            turn = self.transcript.running_turn
            if turn:
                await hub.cancel_turn(self.session_id, turn, "canceled in aophub chat")
            else:
                self.screen.note("no turn is running")
        elif verb == "/close":
            await hub.close_session(self.session_id, "closed in aophub chat")
            self.screen.note(f"session {self.session_id} closed")
            self._closed_here = True
            raise _Leave
        elif verb == "/archive":
            await self._management.archive(self.session_id)
            self.screen.note("archived: hidden from session listings, still open")
        elif verb == "/reasoning":
            self.screen.reasoning()
        elif verb == "/upload":
            await self._upload(hub, argument)
        elif verb == "/shell":
            await self._attach_shell(hub)
        else:
            raise _Leave

    async def _upload(self, hub: HubClient, argument: str) -> None:
        if not argument:
            self.screen.note("usage: /upload PATH", "yellow")
            return
        path = await asyncio.to_thread(_existing_file, argument)
        if path is None:
            self.screen.note(f"no file {argument}", "yellow")
            return
        uploaded = await hub.upload(self.session_id, path)
        self.screen.note(f"uploaded {path.name} ({uploaded.size} bytes); the agent sees it on its next turn")

    async def _attach_shell(self, hub: HubClient) -> None:
        """Give the tty to the session's terminal until Ctrl-]; what the watch showed meanwhile comes after."""
        if self._shell is None:
            self._shell = Shell(hub, self._node_id)
        self._held = []
        try:
            outcome = await self._shell.attach()
        finally:
            held, self._held = self._held, None
            sys.stdout.write("\r\n")
            sys.stdout.flush()
            for shown in held:
                self.screen.show(shown)
        self.screen.note(outcome)

    # -- Ctrl-C ---------------------------------------------------------------------------------

    def _interrupt(self) -> None:
        """Ctrl-C outside a prompt: cancel the foreground turn; leave if there is none or it is canceling."""
        running = self._foreground and self._foreground not in self.transcript.ended_turns
        if running and not self._canceling and self._hub is not None:
            self._canceling = True
            self.screen.note("canceling the turn… (Ctrl-C again leaves)", "yellow")
            asyncio.get_running_loop().create_task(self._cancel(self._hub, self._foreground))
            self._changed.set()
        elif self._conversation is not None:
            self._conversation.cancel()

    async def _cancel(self, hub: HubClient, turn_id: str) -> None:
        try:
            await hub.cancel_turn(self.session_id, turn_id, "canceled in aophub chat (Ctrl-C)")
        except HubClientError as error:
            self.screen.note(f"the turn was not canceled: {error}", "yellow")


def _prompt_keys(*, clear_first: bool) -> KeyBindings:
    """Ctrl-C at a prompt raises :class:`_CtrlC`; with ``clear_first`` it first clears a typed line."""
    keys = KeyBindings()

    @keys.add("c-c")
    def _interrupt(event: KeyPressEvent) -> None:
        if clear_first and event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=_CtrlC, style="class:aborting")

    return keys


def _existing_file(argument: str) -> Path | None:
    path = Path(argument).expanduser()
    return path if path.is_file() else None


def _retry_hint(question: Question) -> str:
    if question.form == "choose":
        return f"type a number from 1 to {len(question.options)}, or an option as written"
    return "type y or n"


@contextlib.contextmanager
def quiet_keys() -> Iterator[None]:
    """While a turn streams, keys typed ahead are not echoed over the output (Ctrl-C still interrupts)."""
    if not sys.stdin.isatty():
        yield
        return
    descriptor = sys.stdin.fileno()
    saved = termios.tcgetattr(descriptor)
    quiet = termios.tcgetattr(descriptor)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(descriptor, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(descriptor, termios.TCSANOW, saved)
