"""Every boolean and zero-valued setting of the configuration, for tests of the file and of ConfigService."""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

__all__ = ["SETTINGS", "document_with", "value_at"]

PROFILE = {"id": "p", "provider": "PROVIDER_KIND_OPENAI_COMPATIBLE", "base_url": "http://127.0.0.1:9/v1", "model": "m"}

# Every boolean and zero-valued setting, as (path, value written, value in effect), both ways: the
# zero value (false, 0, "", unset enum) and a non-zero one. "0 means N" settings show N in effect.
SETTINGS: list[tuple[str, object, object]] = [
    ("agent.tools_enabled", False, False),
    ("agent.tools_enabled", True, True),
    ("agent.ask_before_tools", False, False),
    ("agent.ask_before_tools", True, True),
    ("agent.max_turns", 0, 25),
    ("agent.max_turns", 7, 7),
    ("agent.turn_timeout_seconds", 0, 600),
    ("agent.turn_timeout_seconds", 30, 30),
    ("agent.system_prompt", "", ""),
    ("agent.system_prompt", "Be brief.", "Be brief."),
    ("agent.skills_enabled", False, False),
    ("agent.skills_enabled", True, True),
    ("agent.skills_prompt_tokens", 0, 0),
    ("agent.skills_prompt_tokens", 500, 500),
    ("agent.memory_prompt_tokens", 0, 0),
    ("agent.memory_prompt_tokens", 300, 300),
    ("scans.concurrency", 0, 3),
    ("scans.concurrency", 5, 5),
    ("scans.timeout_seconds", 0, 600),
    ("scans.timeout_seconds", 9, 9),
    ("scans.modes.0.max_turns", 0, 0),
    ("scans.modes.0.max_turns", 4, 4),
    ("sandbox.workspace", "", "workspace"),
    ("sandbox.workspace", "elsewhere", "elsewhere"),
    ("sandbox.exec_timeout_seconds", 0, 60),
    ("sandbox.exec_timeout_seconds", 5, 5),
    ("sandbox.output_cap_bytes", 0, 65536),
    ("sandbox.output_cap_bytes", 10, 10),
    ("sandbox.terminals", False, False),
    ("sandbox.terminals", True, True),
    ("sandbox.remote_exec", False, False),
    ("sandbox.remote_exec", True, True),
    ("interactions.timeout_seconds", 0, 600),
    ("interactions.timeout_seconds", 5, 5),
    ("interactions.expiry_policy", "EXPIRY_POLICY_UNSPECIFIED", "EXPIRY_POLICY_DENY"),
    ("interactions.expiry_policy", "EXPIRY_POLICY_CANCEL_TURN", "EXPIRY_POLICY_CANCEL_TURN"),
    ("profiles.0.images", False, False),
    ("profiles.0.images", True, True),
    ("profiles.0.max_tokens", 0, 0),
    ("profiles.0.max_tokens", 64, 64),
    ("profiles.0.context_window", 0, 0),
    ("profiles.0.context_window", 8192, 8192),
    ("profiles.0.timeout_seconds", 0, 0),
    ("profiles.0.timeout_seconds", 45, 45),
    ("active_profile_id", "", ""),
    ("active_profile_id", "p", "p"),
]


def document_with(path: str, value: object) -> dict[str, Any]:
    """A valid configuration document (one profile, one scan mode) with ``value`` at the dotted ``path``."""
    document: dict[str, Any] = {
        "profiles": [dict(PROFILE)],
        "scans": {"modes": [{"name": "review", "task_template": "Review {target}."}]},
    }
    *parents, last = path.split(".")
    node: Any = document
    for part in parents:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    node[last] = value
    return document


def value_at(message: Message, path: str) -> object:
    """The value at the dotted ``path`` of ``message`` as ProtoJSON would show it (enums by name)."""
    node: Any = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    for part in path.split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return node
