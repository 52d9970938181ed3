"""The questions an agent asks a person in the chat, and how a typed reply answers them.

Two kinds of interaction reach the chat: an approval of a tool call (with ask-before-tools on),
and a call of a *client tool*, a tool the chat itself declares when it opens a session
(:data:`CLIENT_TOOLS`): ``confirm`` (a yes/no question), ``choose`` (one of several options) and
``ask`` (free text). A call of a client tool the chat does not know (declared by another
application on a session opened elsewhere) is answered with free text.

:func:`question_of` turns an interaction into a :class:`Question` to show; :func:`answer_of`
turns the line the person typed into the ``InteractionAnswer`` to send, or None when the line
does not answer the question (the chat asks again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from aop import content_pb2, value_pb2
from aophub.v1 import extensions_pb2, interaction_pb2

__all__ = ["CLIENT_TOOLS", "DENIED_REASON", "Question", "answer_of", "question_of"]

DENIED_REASON = "denied in aophub chat"
_YES = {"y", "yes"}
_NO = {"n", "no"}


def _tool(name: str, description: str, properties: dict[str, Any]) -> content_pb2.ToolDefinition:
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    encoded = value_pb2.EncodedValue(data=json.dumps(schema).encode(), media_type="application/json")
    return content_pb2.ToolDefinition(type="function", name=name, description=description, input_schema=encoded)


_QUESTION = {"type": "string", "description": "The question, as the person will read it"}
CLIENT_TOOLS = extensions_pb2.ClientTools(
    tools=[
        _tool("confirm", "Ask the person a yes/no question; the answer is 'yes' or 'no'.", {"question": _QUESTION}),
        _tool(
            "choose",
            "Ask the person to pick one of several options; the answer is the option picked.",
            {"question": _QUESTION, "options": {"type": "array", "items": {"type": "string"}, "minItems": 2}},
        ),
        _tool("ask", "Ask the person a question; the answer is the text they type.", {"question": _QUESTION}),
    ]
)

Form = Literal["approve", "confirm", "choose", "input"]


@dataclass(frozen=True)
class Question:
    """A question to put to the person: its form decides which replies answer it."""

    interaction_id: str
    form: Form
    text: str
    options: tuple[str, ...] = ()

    @property
    def hint(self) -> str:
        """What to type, shown after the question."""
        if self.form in ("approve", "confirm"):
            return "y/n"
        if self.form == "choose":
            return f"1-{len(self.options)}"
        return "your answer"


def question_of(interaction: interaction_pb2.Interaction) -> Question:
    """The question ``interaction`` asks."""
    name = interaction.tool_name or interaction.call.name
    arguments = interaction.arguments_json or interaction.call.arguments.data.decode("utf-8", "replace")
    if interaction.kind == interaction_pb2.INTERACTION_KIND_APPROVAL:
        return Question(interaction.id, "approve", f"Allow {name} {_compact(arguments)}?")
    fields = _object(arguments)
    question = str(fields.get("question", "")).strip()
    options = fields.get("options")
    if name == "confirm" and question:
        return Question(interaction.id, "confirm", question)
    if name == "choose" and question and isinstance(options, list) and options:
        return Question(interaction.id, "choose", question, tuple(str(option) for option in options))
    if name == "ask" and question:
        return Question(interaction.id, "input", question)
    return Question(interaction.id, "input", f"The agent calls {name} {_compact(arguments)}; your answer:")


def answer_of(question: Question, line: str) -> interaction_pb2.InteractionAnswer | None:
    """The answer ``line`` gives to ``question``; None if it gives none."""
    reply = line.strip()
    if question.form in ("approve", "confirm"):
        if reply.lower() not in _YES | _NO:
            return None
        yes = reply.lower() in _YES
        if question.form == "approve":
            approval = interaction_pb2.Approval(approved=yes, reason="" if yes else DENIED_REASON)
            return interaction_pb2.InteractionAnswer(approval=approval)
        return _output("yes" if yes else "no")
    if question.form == "choose":
        chosen = _option(question.options, reply)
        return _output(chosen) if chosen is not None else None
    return _output(line)


def _option(options: tuple[str, ...], reply: str) -> str | None:
    """The option ``reply`` names: by its number (from 1) or its text (any case)."""
    if reply.isdigit() and 1 <= int(reply) <= len(options):
        return options[int(reply) - 1]
    for option in options:
        if option.lower() == reply.lower():
            return option
    return None


def _output(text: str) -> interaction_pb2.InteractionAnswer:
    part = content_pb2.Content(text=content_pb2.TextContent(text=text))
    return interaction_pb2.InteractionAnswer(output=interaction_pb2.ClientToolOutput(output=[part]))


def _object(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _compact(arguments: str) -> str:
    """Arguments as one line of compact JSON (as sent when not JSON)."""
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False, separators=(", ", ": "))
    except ValueError:
        return arguments
