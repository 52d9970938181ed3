"""Shows a :class:`~aophub.chat.transcript.Transcript`'s values in the terminal with rich.

What is final is printed once and stays in the terminal's scrollback: finished markdown blocks
of an answer, a collapsed line per reasoning, tool calls and their results, notes. While a turn
runs in the foreground a live region under it redraws only what is still changing: the answer's
unfinished block, "thinking" with the reasoning's length, or a spinner while the agent works.
"""

from __future__ import annotations

import time

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from aophub.chat.markdown_stream import MarkdownStream
from aophub.chat.questions import Question
from aophub.chat.transcript import (
    AnswerText,
    Asked,
    MessageDone,
    Problem,
    ReasoningText,
    Said,
    SessionClosed,
    Settled,
    Shown,
    ToolCalled,
    ToolFinished,
    TurnBegan,
    TurnFinished,
)
from aophub.v1 import agent_pb2, interaction_pb2

__all__ = ["Screen"]

# Lines of a tool's output shown under its call.
RESULT_LINES = 3
RESULT_WIDTH = 160
ARGUMENTS_WIDTH = 200
# Seconds between redraws of the live region (a markdown render each).
REDRAW_INTERVAL = 0.08


class _Bottom:
    """The last lines of a renderable that fit the live region (a long block scrolls in it)."""

    def __init__(self, renderable: RenderableType, reserved: int) -> None:
        self.renderable = renderable
        self.reserved = reserved

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options.update(height=None), pad=False)
        # One line less than the rest of the screen: a region as tall as the screen scrolls its top
        # line into the scrollback at each redraw, where it cannot be erased.
        room = max(1, min(options.max_height, console.height) - self.reserved - 1)
        for line in lines[-room:]:
            yield from line
            yield Segment.line()


class Screen:
    """Renders shown values on ``console``; :meth:`start_live` while a turn runs in the foreground."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.last_reasoning = ""
        self._answer = MarkdownStream()
        self._answer_id = ""
        self._reasoning = ""
        self._reasoning_id = ""
        self._live: Live | None = None
        self._drawn_at = 0.0
        self._calls: dict[str, ToolCalled] = {}

    def __repr__(self) -> str:
        return f"<Screen live={self._live is not None} answer={self._answer_id or '-'}>"

    # -- the live region -----------------------------------------------------------------------

    def start_live(self) -> None:
        """Show the live region. It is redrawn by :meth:`tick` and by what is shown, never by a thread of
        its own: a redraw racing a print garbles both."""
        if self._live is None:
            self._live = Live(
                self._live_view(), console=self.console, transient=True, auto_refresh=False, redirect_stdout=False
            )
            self._live.start()
            self._drawn_at = time.monotonic()

    def stop_live(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def tick(self) -> None:
        """Redraw the live region (the spinner turns); call it a few times a second."""
        if self._live is not None:
            self._live.update(self._live_view(), refresh=True)
            self._drawn_at = time.monotonic()

    def _refresh(self) -> None:
        """Take a change: redrawn at once when the last redraw is :data:`REDRAW_INTERVAL` ago, else by the next
        tick or print."""
        if self._live is None:
            return
        if time.monotonic() - self._drawn_at >= REDRAW_INTERVAL:
            self.tick()
        else:
            self._live.update(self._live_view())

    def _live_view(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._reasoning_id:
            parts.append(Text(f"▸ thinking… {_words(self._reasoning)}", style="dim italic"))
        pending = self._answer.pending
        if pending:
            parts.append(_Bottom(Markdown(pending), reserved=len(parts) + 1))
        else:
            parts.append(Spinner("dots", text=Text("working… (Ctrl-C cancels)", style="dim")))
        return Group(*parts)

    # -- what the transcript shows -------------------------------------------------------------

    def show(self, shown: Shown) -> None:
        """Print or redraw what ``shown`` means."""
        if isinstance(shown, ReasoningText):
            self._reasoning_id = shown.message_id
            self._reasoning += shown.text
        elif isinstance(shown, AnswerText):
            self._end_reasoning()
            if shown.message_id != self._answer_id:
                self._end_answer()
                self._answer_id = shown.message_id
            for block in self._answer.append(shown.text):
                self.console.print(Markdown(block))
        elif isinstance(shown, MessageDone):
            self._end_reasoning()
            if shown.message_id == self._answer_id:
                self._end_answer()
        else:
            self._end_reasoning()
            self._end_answer()
            self._show_settled(shown)
        self._refresh()

    def _show_settled(self, shown: Shown) -> None:
        if isinstance(shown, Said):
            self._said(shown)
        elif isinstance(shown, ToolCalled):
            self._calls[shown.call_id] = shown
            arguments = _clip(shown.arguments, ARGUMENTS_WIDTH)
            label = "client tool" if shown.kind == "client" else "tool"
            self.console.print(
                Text.assemble(("⚙ ", "cyan"), (shown.name, "bold cyan"), f" {arguments}", (f"  ({label})", "dim"))
            )
        elif isinstance(shown, ToolFinished):
            self._tool_finished(shown)
        elif isinstance(shown, Settled):
            self._settled(shown.interaction)
        elif isinstance(shown, TurnFinished):
            self._turn_finished(shown)
        elif isinstance(shown, Problem):
            self.console.print(Text(f"error: {shown.text}", style="bold red"))
        elif isinstance(shown, SessionClosed):
            self.console.print(Text(f"session closed ({shown.reason or 'no reason given'})", style="yellow"))
        elif isinstance(shown, Asked | TurnBegan):
            pass  # the chat asks the question itself; a turn shows itself by what it does

    def _said(self, said: Said) -> None:
        if said.role == "user":
            self.console.print(Text.assemble(("> ", "bold green"), (said.text, "bold")))
        elif said.role == "assistant":
            self.console.print(Text(said.text) if said.preformatted else Markdown(said.text))
        else:
            self.console.print(Text(said.text, style="dim"))

    def _tool_finished(self, result: ToolFinished) -> None:
        lines = [line for line in result.output.splitlines() if line.strip()]
        shown = [_clip(line, RESULT_WIDTH) for line in lines[:RESULT_LINES]]
        if len(lines) > RESULT_LINES:
            shown.append(f"… {len(lines) - RESULT_LINES} more lines")
        mark, style = ("✗", "red") if result.is_error else ("✓", "green")
        head = Text.assemble(
            ("  " + mark + " ", style), (result.name, style), (f" · {_duration(result.duration_ms)}", "dim")
        )
        self.console.print(head)
        for line in shown or ["(no output)"]:
            self.console.print(Text("    " + line, style="dim"))

    def _settled(self, interaction: interaction_pb2.Interaction) -> None:
        name = interaction.tool_name or interaction.call.name
        if interaction.state == interaction_pb2.INTERACTION_STATE_ANSWERED:
            answer = interaction.answer
            if answer.HasField("approval"):
                verdict = "approved" if answer.approval.approved else "denied"
                text = f"{verdict} {name}"
                style = "green" if answer.approval.approved else "yellow"
            else:
                output = "".join(part.text.text for part in answer.output.output if part.HasField("text"))
                text, style = f"{name} answered: {_clip(output, RESULT_WIDTH)}", "green"
        elif interaction.state == interaction_pb2.INTERACTION_STATE_EXPIRED:
            text, style = f"{name}: the question expired unanswered", "yellow"
        else:
            text, style = f"{name}: the question was withdrawn (the turn ended)", "yellow"
        self.console.print(Text("  → " + text, style=style))

    def _turn_finished(self, finished: TurnFinished) -> None:
        if finished.stop_reason == "completed":
            tokens = f" · {finished.output_tokens} tokens" if finished.output_tokens else ""
            self.console.print(Text(f"— completed{tokens}", style="dim"))
        else:
            detail = f" ({finished.error})" if finished.error else ""
            self.console.print(Text(f"— turn ended: {finished.stop_reason}{detail}", style="yellow"))

    def _end_reasoning(self) -> None:
        """Collapse the reasoning streamed so far into one line."""
        if not self._reasoning_id:
            return
        self.last_reasoning = self._reasoning
        self.console.print(Text(f"▸ reasoning · {_words(self._reasoning)} (/reasoning shows it)", style="dim italic"))
        self._reasoning, self._reasoning_id = "", ""

    def _end_answer(self) -> None:
        rest = self._answer.finish()
        if rest:
            self.console.print(Markdown(rest))
        self._answer_id = ""

    # -- the chat's own output -----------------------------------------------------------------

    def note(self, text: str, style: str = "dim") -> None:
        self.console.print(Text(text, style=style))

    def question(self, question: Question) -> None:
        self.console.print(Text.assemble(("? ", "bold magenta"), (question.text, "bold")))
        for number, option in enumerate(question.options, start=1):
            self.console.print(Text(f"  {number}. {option}"))

    def reasoning(self) -> None:
        if self.last_reasoning:
            self.console.print(Text(self.last_reasoning, style="italic"))
        else:
            self.note("no reasoning in this chat yet")

    def commands(self, commands: list[agent_pb2.Command], local: dict[str, str]) -> None:
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("command")
        table.add_column("what it does")
        table.add_column("from", style="dim")
        listed = set()
        for command in commands:
            name = command.name if command.name.startswith("!") else "/" + command.name
            listed.add(name)
            table.add_row(f"{name} {command.usage}".rstrip(), command.description, command.source or "node")
        for name, description in local.items():
            if name not in listed:  # /help: the hub's entry says the same
                table.add_row(name, description, "chat")
        self.console.print(table)


def _words(text: str) -> str:
    count = len(text.split())
    return f"{count} word{'' if count == 1 else 's'}"


def _clip(text: str, width: int) -> str:
    line = " ".join(text.split()) if "\n" in text else text
    return line if len(line) <= width else line[: width - 1] + "…"


def _duration(milliseconds: int) -> str:
    return f"{milliseconds} ms" if milliseconds < 1000 else f"{milliseconds / 1000:.1f} s"
