"""The chat's questions: interactions shown as questions, typed replies turned into answers."""

from __future__ import annotations

import json

from aop import content_pb2, value_pb2
from aophub.chat.questions import CLIENT_TOOLS, DENIED_REASON, Question, answer_of, question_of
from aophub.v1 import interaction_pb2

APPROVAL = interaction_pb2.INTERACTION_KIND_APPROVAL
CLIENT_TOOL = interaction_pb2.INTERACTION_KIND_CLIENT_TOOL


def interaction(kind: interaction_pb2.InteractionKind, name: str, arguments: object) -> interaction_pb2.Interaction:
    data = json.dumps(arguments).encode()
    call = content_pb2.ToolCall(id="c1", name=name, arguments=value_pb2.EncodedValue(data=data))
    return interaction_pb2.Interaction(id="int_1", kind=kind, call=call, tool_name=name, arguments_json=data.decode())


def output_text(answer: interaction_pb2.InteractionAnswer | None) -> str:
    assert answer is not None
    assert answer.HasField("output")
    return "".join(part.text.text for part in answer.output.output)


def test_the_chat_declares_confirm_choose_and_ask_with_json_schemas() -> None:
    """Three client tools, each with an object schema requiring its fields."""
    schemas = {tool.name: json.loads(tool.input_schema.data) for tool in CLIENT_TOOLS.tools}
    assert sorted(schemas) == ["ask", "choose", "confirm"]
    assert schemas["choose"]["required"] == ["options", "question"]
    assert all(tool.input_schema.media_type == "application/json" for tool in CLIENT_TOOLS.tools)


def test_an_approval_takes_y_or_n_and_names_the_call() -> None:
    """y approves, n denies with a reason, anything else is no answer."""
    question = question_of(interaction(APPROVAL, "exec", {"command": "ls"}))
    assert question == Question("int_1", "approve", 'Allow exec {"command": "ls"}?')
    assert answer_of(question, " Y ") == interaction_pb2.InteractionAnswer(
        approval=interaction_pb2.Approval(approved=True)
    )
    denied = answer_of(question, "no")
    assert denied is not None
    assert (denied.approval.approved, denied.approval.reason) == (False, DENIED_REASON)
    assert answer_of(question, "maybe") is None


def test_confirm_choose_and_ask_turn_replies_into_tool_output() -> None:
    """confirm answers yes/no, choose an option by number or text, ask the text as typed."""
    confirm = question_of(interaction(CLIENT_TOOL, "confirm", {"question": "Go?"}))
    assert (confirm.form, confirm.text, confirm.hint) == ("confirm", "Go?", "y/n")
    assert output_text(answer_of(confirm, "n")) == "no"
    choose = question_of(interaction(CLIENT_TOOL, "choose", {"question": "Where?", "options": ["dev", "prod"]}))
    assert (choose.form, choose.options, choose.hint) == ("choose", ("dev", "prod"), "1-2")
    assert output_text(answer_of(choose, "2")) == "prod"
    assert output_text(answer_of(choose, "DEV")) == "dev"
    assert answer_of(choose, "3") is None
    assert answer_of(choose, "test") is None
    ask = question_of(interaction(CLIENT_TOOL, "ask", {"question": "Name?"}))
    assert output_text(answer_of(ask, "Spring release")) == "Spring release"


def test_a_client_tool_the_chat_does_not_know_is_answered_with_free_text() -> None:
    """Another app's tool, or arguments that do not fit: the call is shown and any text answers it."""
    unknown = question_of(interaction(CLIENT_TOOL, "pick_file", {"glob": "*.py"}))
    assert unknown.form == "input"
    assert unknown.text == 'The agent calls pick_file {"glob": "*.py"}; your answer:'
    malformed = question_of(interaction(CLIENT_TOOL, "choose", {"question": "Where?"}))
    assert malformed.form == "input"
