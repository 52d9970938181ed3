"""The agent's side of subagents: the ``spawn`` tool, the notes it reads about finished ones, ``/subagents``.

The hub runs subagents (:mod:`aophub.hub.subagents`); the agent only asks for one (its node sends
``SpawnSubagentRequest``) and is told when one ended. What it is told becomes a user-role note in
the parent's conversation, before the next turn's input: in memory when the node hears
``finished``, or from the stored ``SubagentUpdate`` event when the conversation is rebuilt
(:mod:`aophub.agent.history`). Both say the same (:func:`note_text`).
"""

from __future__ import annotations

import json

from aop import content_pb2, event_pb2, value_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, decode_into
from aophub.protocol.errors import Code, HubError
from aophub.v1 import subagent_pb2

__all__ = [
    "SPAWN_TOOL",
    "SUBAGENTS_COMMAND",
    "SpawnRefused",
    "describe",
    "final_update_of",
    "note_text",
    "spawn_arguments",
    "spawn_definition",
]

SPAWN_TOOL = "spawn"
SUBAGENTS_COMMAND = "/subagents"
# Characters of a subagent's answer the parent's note carries at most.
MAX_NOTE_ANSWER = 16_000
_UPDATE_URL = TYPE_URL_PREFIX + subagent_pb2.SubagentUpdate.DESCRIPTOR.full_name
_TERMINAL = frozenset(
    {
        subagent_pb2.SUBAGENT_STATUS_COMPLETED,
        subagent_pb2.SUBAGENT_STATUS_FAILED,
        subagent_pb2.SUBAGENT_STATUS_CANCELED,
    }
)


class SpawnRefused(Exception):
    """The spawn was refused (bad arguments, the hub said no, or it runs no subagents); the text says why."""


def spawn_definition() -> content_pb2.ToolDefinition:
    """The ``spawn`` tool: start a background task and return at once with its id."""
    schema = {
        "type": "object",
        "properties": {
            "task": {"type": "string", "description": "What the subagent should do, self-contained"},
            "label": {"type": "string", "description": "A short name for the task (optional)"},
        },
        "required": ["task"],
        "additionalProperties": False,
    }
    return content_pb2.ToolDefinition(
        type="function",
        name=SPAWN_TOOL,
        description=(
            "Start a subagent: a background task run by another agent in its own session, with the same tools. "
            "It returns at once with the subagent's id; the conversation goes on meanwhile, and the subagent's "
            "answer arrives in a later turn. Give it everything it needs: it does not see this conversation."
        ),
        input_schema=value_pb2.EncodedValue(data=json.dumps(schema).encode(), media_type="application/json"),
    )


def spawn_arguments(arguments: bytes) -> tuple[str, str]:
    """``(task, label)`` from the call's JSON arguments; raises :class:`SpawnRefused`."""
    try:
        parsed = json.loads(arguments or b"{}")
    except ValueError as error:
        raise SpawnRefused(f"the arguments are not JSON ({error})") from error
    task = parsed.get("task") if isinstance(parsed, dict) else None
    label = parsed.get("label", "") if isinstance(parsed, dict) else ""
    if not isinstance(task, str) or not task.strip():
        raise SpawnRefused("'task' is required and must be a non-empty string")
    if not isinstance(label, str):
        raise SpawnRefused("'label' must be a string")
    return task, label


def _status(subagent: subagent_pb2.Subagent) -> str:
    return subagent_pb2.SubagentStatus.Name(subagent.status).removeprefix("SUBAGENT_STATUS_").lower()


def note_text(subagent: subagent_pb2.Subagent) -> str:
    """What the parent's agent is told of a finished subagent."""
    head = f"[Background task {subagent.id} ({subagent.label}) {_status(subagent)}"
    if subagent.status == subagent_pb2.SUBAGENT_STATUS_COMPLETED:
        answer = subagent.result
        if len(answer) > MAX_NOTE_ANSWER:
            answer = answer[:MAX_NOTE_ANSWER] + "\n[... cut]"
        return f"{head}. Its answer:\n{answer}\n]"
    return f"{head}: {subagent.error.message or subagent.error.code}]"


def final_update_of(event: event_pb2.Event) -> subagent_pb2.Subagent | None:
    """The finished subagent an event reports (a final ``SubagentUpdate``), else ``None``."""
    if event.WhichOneof("payload") != "extension" or event.extension.type_url != _UPDATE_URL:
        return None
    try:
        update = decode_into(subagent_pb2.SubagentUpdate(), event.extension.value, Code.INVALID_PAYLOAD, "{error}")
    except HubError:
        return None
    return update.subagent if update.subagent.status in _TERMINAL else None


def describe(subagents: list[subagent_pb2.Subagent]) -> str:
    """The ``/subagents`` listing: one line per subagent, oldest first."""
    if not subagents:
        return "no subagents in this session"
    lines = []
    for subagent in subagents:
        line = f"{subagent.id}  {_status(subagent):9}  {subagent.label}"
        if subagent.status == subagent_pb2.SUBAGENT_STATUS_RUNNING:
            line += f"  ({subagent.tool_calls} tool calls, {subagent.last_activity or 'starting'})"
        elif subagent.status == subagent_pb2.SUBAGENT_STATUS_QUEUED and subagent.queue_position:
            line += f"  (queue position {subagent.queue_position})"
        elif subagent.HasField("error"):
            line += f"  ({subagent.error.message or subagent.error.code})"
        lines.append(line)
    return "\n".join(lines)
