"""Slash commands a node serves (AOP-nodes 9.7.4 to 9.7.6), and how an SDK user adds their own.

>>> commands = NodeCommands()
>>> @commands.command("/deploy", usage="<env>", description="Deploy the service")
... async def deploy(call: CommandCall) -> str:
...     return f"deployed to {call.args}"
>>> await serve_agent(server, token, "my-node", agent, commands=commands)

A handler gets a :class:`CommandCall` (the session, the line, the verb and what follows it) and
returns the command's output: text (shown ``plain``), a :class:`CommandOutput`, or ``None`` for
none. It refuses with :class:`CommandFailed`; the hub then shows the text in the session as an
error. The :class:`~aophub.node.runtime.NodeRuntime` does the wire part: it sends the catalog
(every command but ``/help``, which every node serves) after acceptance, and answers each
command request with the output event and a ``result``, or ``COMMAND_FAILED``.

Names are what a user types: ``/verb`` or ``!name``. A line's command is its first word,
lower-cased for a verb.

A command that reads or changes what every user of the node shares declares the scope a caller
needs (``scope="admin"``), for the whole command or for some of its forms
(``subcommand_scopes={"enable": "admin"}``: ``/skills enable NAME``). The hub refuses the command
to a caller without it (:mod:`aophub.protocol.command_scopes`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from google.protobuf import any_pb2

from aophub.protocol.command_scopes import declared_scopes
from aophub.v1 import agent_pb2

__all__ = ["CommandCall", "CommandFailed", "CommandHandler", "CommandOutput", "NodeCommands", "command_name"]


class CommandFailed(Exception):
    """A command refused or failed; its text is what the user sees (``COMMAND_FAILED``)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@dataclass(frozen=True)
class CommandCall:
    """One command line to run in a session."""

    session_id: str
    # The line as typed, e.g. "/title Release notes".
    line: str
    # The command: "/title" (verbs lower-cased) or "!name".
    name: str
    # What follows the command, stripped: "Release notes".
    args: str


@dataclass(frozen=True)
class CommandOutput:
    """What a command shows: ``text``, as ``plain`` text or ``preformatted`` (monospace)."""

    text: str
    presentation: str = "plain"
    # Extensions of the output event (beside its aiscan.agent.CommandDetail), e.g. aophub.v1.ContextSummary.
    extensions: tuple[any_pb2.Any, ...] = ()


CommandHandler = Callable[[CommandCall], Awaitable[CommandOutput | str | None]]


@dataclass(frozen=True)
class _Command:
    name: str
    usage: str
    description: str
    handler: CommandHandler
    scope: str = ""
    subcommand_scopes: Mapping[str, str] = field(default_factory=dict)


def command_name(line: str) -> str:
    """The command a line names: its first word (a verb lower-cased); ``""`` for a line that is none."""
    words = line.split(maxsplit=1)
    if not words or not words[0].startswith(("/", "!")) or len(words[0]) < 2:
        return ""
    return words[0].lower() if words[0].startswith("/") else words[0]


class NodeCommands:
    """A node's commands by name; ``/help`` (the list of them) is always served."""

    def __init__(self) -> None:
        self._commands: dict[str, _Command] = {}

    def __repr__(self) -> str:
        return f"<NodeCommands {sorted(self._commands)}>"

    def add(
        self,
        name: str,
        handler: CommandHandler,
        *,
        description: str = "",
        usage: str = "",
        scope: str = "",
        subcommand_scopes: Mapping[str, str] | None = None,
    ) -> None:
        """Serve ``name`` (``/verb`` or ``!name``, one word) with ``handler``; ``usage`` shows its arguments.

        ``scope`` is the scope a caller needs to run it (e.g. ``"admin"``), ``subcommand_scopes``
        the scope of the forms whose first argument is a key (one word, compared case-insensitively).
        Raises ``ValueError`` for a malformed name, ``/help``, a name already served or a
        subcommand that is not one word.
        """
        if command_name(name) != name or name != name.strip():
            raise ValueError(f"a command is one word starting with / or ! (verbs in lower case), not {name!r}")
        if name == "/help" or name in self._commands:
            raise ValueError(f"command {name} is already served")
        subcommands = dict(subcommand_scopes or {})
        if any(len(word.split()) != 1 or word != word.strip() for word in subcommands):
            raise ValueError(f"a subcommand is one word, not {sorted(subcommands)!r}")
        self._commands[name] = _Command(name, usage, description, handler, scope, subcommands)

    def command(
        self,
        name: str,
        *,
        description: str = "",
        usage: str = "",
        scope: str = "",
        subcommand_scopes: Mapping[str, str] | None = None,
    ) -> Callable[[CommandHandler], CommandHandler]:
        """:meth:`add` as a decorator."""

        def register(handler: CommandHandler) -> CommandHandler:
            self.add(
                name, handler, description=description, usage=usage, scope=scope, subcommand_scopes=subcommand_scopes
            )
            return handler

        return register

    def catalog(self) -> list[tuple[str, str, str]]:
        """What the node lists: ``(name, usage line, description)`` of every command, ``/help`` aside."""
        return [
            (command.name, f"{command.name} {command.usage}".strip(), command.description)
            for command in self._commands.values()
        ]

    def listing(self) -> list[agent_pb2.Command]:
        """Every command but ``/help`` as ``aophub.v1.Command`` (name without its ``/``), with its scopes."""
        return [
            agent_pb2.Command(
                name=command.name.removeprefix("/"),
                description=command.description,
                usage=command.usage,
                required_scope=command.scope,
                subcommand_scopes=command.subcommand_scopes,
            )
            for command in self._commands.values()
        ]

    def declares_scopes(self, line: str) -> bool:
        """Whether running ``line`` needs a scope (:mod:`aophub.protocol.command_scopes`)."""
        return bool(declared_scopes(self.listing(), line))

    def serves(self, name: str) -> bool:
        return name == "/help" or name in self._commands

    async def run(self, session_id: str, line: str) -> CommandOutput | None:
        """Run the command ``line`` names (which :meth:`serves`); its output, or ``None`` for none.

        Raises :class:`CommandFailed` as the handler does.
        """
        name = command_name(line)
        if name == "/help":
            return CommandOutput(self._help(), "preformatted")
        command = self._commands[name]
        args = line.strip()[len(name) :].strip()
        output = await command.handler(CommandCall(session_id=session_id, line=line, name=name, args=args))
        return CommandOutput(output) if isinstance(output, str) else output

    def _help(self) -> str:
        lines = [f"{usage}  {description}".rstrip() for _, usage, description in self.catalog()]
        return "\n".join(["Commands of this node:", *lines, "/help  List these commands"])
