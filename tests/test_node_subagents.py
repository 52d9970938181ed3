"""The node runtime's side of subagents (aophub.node.runtime): spawn through a turn, answers, finished notices."""

from __future__ import annotations

import asyncio

from aop import chat_pb2, content_pb2, envelope_pb2, protocol_pb2
from aophub.node.runtime import NodeRuntime, SubagentRequest
from aophub.node.turn import Turn
from aophub.protocol.codec import core_message, pack, unpack
from aophub.v1 import subagent_pb2

TIMEOUT = 5.0


class Parent:
    """An agent whose turns spawn one subagent; it keeps what the runtime binds and tells it."""

    def __init__(self) -> None:
        self.request: SubagentRequest | None = None
        self.finished: list[subagent_pb2.Subagent] = []
        self.answers: list[subagent_pb2.SubagentAnswer] = []
        self.could_spawn: list[bool] = []

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="test", model="parent")

    async def run_turn(self, turn: Turn) -> str:
        self.could_spawn.append(turn.can_spawn)
        if turn.can_spawn:
            self.answers.append(await turn.spawn("count files", "count", "call_1"))
        return "completed"

    def bind_subagents(self, request: SubagentRequest | None) -> None:
        self.request = request

    def subagent_finished(self, subagent: subagent_pb2.Subagent) -> None:
        self.finished.append(subagent)


def open_and_run(session_id: str, turn_id: str, *, parent_session_id: str = "") -> list[envelope_pb2.Envelope]:
    opened = chat_pb2.OpenSessionRequest(session_id=session_id, parent_session_id=parent_session_id)
    run = chat_pb2.RunTurnRequest(session_id=session_id, turn_id=turn_id)
    run.input.content.add(text=content_pb2.TextContent(text="go"))
    return [
        envelope_pb2.Envelope(id=f"open-{session_id}", payload=pack(core_message(open_session_request=opened))),
        envelope_pb2.Envelope(id=turn_id, payload=pack(core_message(run_turn_request=run))),
    ]


async def test_a_turn_spawns_through_the_hub_and_a_finished_notice_reaches_the_agent() -> None:
    """spawn_request carries the turn and call; the hub's answer (by reply_to) returns to the turn; finished is
    handed to the agent; a subagent's own session cannot spawn; without the capability nothing is bound."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    agent = Parent()
    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), agent, send)
    assert agent.request is None
    runtime.subagents = True
    assert agent.request == runtime.subagent_request
    try:
        for envelope in open_and_run("ses_p", "turn_1"):
            await runtime.receive(envelope)
        async with asyncio.timeout(TIMEOUT):
            while True:
                envelope = await sent.get()
                if envelope.payload.type_url.endswith("aophub.v1.SubagentProtocolMessage"):
                    break
        spawn = unpack(envelope, subagent_pb2.SubagentProtocolMessage).spawn_request
        assert (spawn.parent_session_id, spawn.parent_turn_id, spawn.parent_tool_call_id) == (
            "ses_p",
            "turn_1",
            "call_1",
        )
        assert (spawn.task, spawn.label) == ("count files", "count")
        answer = subagent_pb2.SubagentAnswer(subagents=[subagent_pb2.Subagent(id="sub_1", parent_session_id="ses_p")])
        reply = envelope_pb2.Envelope(
            id="hub-1", reply_to=envelope.id, payload=pack(subagent_pb2.SubagentProtocolMessage(answer=answer))
        )
        await runtime.receive(reply)
        await runtime.idle()
        assert agent.answers == [answer]

        finished = subagent_pb2.Subagent(id="sub_1", status=subagent_pb2.SUBAGENT_STATUS_COMPLETED, result="42")
        notice = subagent_pb2.SubagentProtocolMessage(finished=finished)
        await runtime.receive(envelope_pb2.Envelope(id="hub-2", payload=pack(notice)))
        assert agent.finished == [finished]

        for envelope in open_and_run("ses_c", "turn_2", parent_session_id="ses_p"):
            await runtime.receive(envelope)
        await runtime.idle()
        assert agent.could_spawn == [True, False]  # a subagent's session spawns none

        runtime.subagents = False
        assert agent.request is None
        for envelope in open_and_run("ses_q", "turn_3"):
            await runtime.receive(envelope)
        await runtime.idle()
        assert agent.could_spawn == [True, False, False]
    finally:
        await runtime.stop()
