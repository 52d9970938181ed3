"""Which scopes a node's catalog declares for a command line (aophub.protocol.command_scopes)."""

from __future__ import annotations

import pytest

from aophub.protocol.command_scopes import declared_scopes
from aophub.v1 import agent_pb2

CATALOG = [
    agent_pb2.Command(name="memory", required_scope="admin"),
    agent_pb2.Command(name="skills", subcommand_scopes={"enable": "admin", "Disable": "admin"}),
    agent_pb2.Command(name="!nmap", required_scope="workspace", subcommand_scopes={"-sS": "admin"}),
    agent_pb2.Command(name="/slashed", required_scope="admin"),
    agent_pb2.Command(name="status"),
]


@pytest.mark.parametrize(
    ("line", "scopes"),
    [
        ("/memory", ["admin"]),
        ("  /MEMORY  some words", ["admin"]),
        ("/memory\tenable", ["admin"]),
        ("/skills", []),
        ("/skills list", []),
        ("/skills enable find-todos", ["admin"]),
        ("/Skills\tDISABLE x", ["admin"]),
        ("!NMAP -sS host", ["workspace", "admin"]),
        ("/slashed", ["admin"]),
        ("/status", []),
        ("memory", []),
        ("/memoryx", []),
        ("", []),
        ("   ", []),
    ],
)
def test_the_line_is_read_leniently(line: str, scopes: list[str]) -> None:
    """Any leading space, any case, names with or without their "/": every spelling a node runs is caught."""
    assert declared_scopes(CATALOG, line) == scopes
