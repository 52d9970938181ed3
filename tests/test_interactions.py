"""The readable form of an interaction's tool call (``aophub.hub.interactions.describe_call``), without I/O.

ProtoJSON shows ``call.arguments.data`` (bytes) only as base64, so the hub repeats the tool name
and the arguments as text in the interaction itself, derived from the call alone.
"""

from __future__ import annotations

from aop import content_pb2, value_pb2
from aophub.hub.interactions import MAX_ARGUMENTS_TEXT, describe_call
from aophub.v1 import interaction_pb2


def asking(name: str, arguments: bytes, **readable: object) -> interaction_pb2.Interaction:
    call = content_pb2.ToolCall(
        id="call-1", name=name, arguments=value_pb2.EncodedValue(data=arguments, media_type="application/json")
    )
    return interaction_pb2.Interaction(id="int-1", call=call, **readable)  # type: ignore[arg-type]


def test_the_tool_name_and_arguments_read_as_text() -> None:
    """A call of exec with JSON arguments: tool_name and arguments_json say it in plain text."""
    interaction = asking("exec", b'{"command": "ls -la"}')
    describe_call(interaction)
    assert (interaction.tool_name, interaction.arguments_json) == ("exec", '{"command": "ls -la"}')
    assert not interaction.arguments_truncated


def test_what_a_node_wrote_in_the_readable_fields_is_replaced() -> None:
    """A node cannot show one thing and ask for another: the readable fields come from the call only."""
    interaction = asking("exec", b'{"command": "rm -rf ~"}', tool_name="read_file", arguments_json='{"path": "a"}')
    describe_call(interaction)
    assert (interaction.tool_name, interaction.arguments_json) == ("exec", '{"command": "rm -rf ~"}')


def test_long_arguments_are_cut_at_a_character_boundary_and_marked() -> None:
    """Arguments over the cap are cut to at most MAX_ARGUMENTS_TEXT bytes of whole characters, and flagged."""
    text = '{"content": "' + "é" * MAX_ARGUMENTS_TEXT + '"}'
    interaction = asking("write_file", text.encode())
    describe_call(interaction)
    shown = interaction.arguments_json.encode()
    assert MAX_ARGUMENTS_TEXT - 1 <= len(shown) <= MAX_ARGUMENTS_TEXT
    assert text.startswith(interaction.arguments_json)
    assert interaction.arguments_truncated
    assert interaction.call.arguments.data == text.encode()  # the call keeps them whole


def test_arguments_that_are_not_text_are_left_out() -> None:
    """Arguments that are not UTF-8 give an empty arguments_json (the call still has the bytes)."""
    interaction = asking("upload", b"\xff\xfe\x00binary")
    describe_call(interaction)
    assert (interaction.tool_name, interaction.arguments_json, interaction.arguments_truncated) == ("upload", "", False)


def test_a_call_without_arguments_reads_as_empty() -> None:
    """No arguments: empty text, not truncated."""
    interaction = interaction_pb2.Interaction(id="int-1", call=content_pb2.ToolCall(id="c", name="confirm"))
    describe_call(interaction)
    assert (interaction.tool_name, interaction.arguments_json, interaction.arguments_truncated) == (
        "confirm",
        "",
        False,
    )
