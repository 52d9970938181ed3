"""The node runtime (aophub.node.runtime) fed envelope by envelope: accepting and refusing turns."""

from __future__ import annotations

import asyncio

from google.protobuf import any_pb2

from aop import chat_pb2, content_pb2, envelope_pb2, protocol_pb2
from aophub.node.runtime import NodeRuntime
from aophub.node.turn import Turn
from aophub.protocol.codec import core_message, pack, unpack
from aophub.protocol.errors import Code, HubError
from aophub.protocol.extensions import TURN_OPTIONS_URL
from aophub.v1 import extensions_pb2

TIMEOUT = 5.0
SESSION = "ses_1"


class RecordingAgent:
    """Completes every turn at once, remembering the options each turn ran with."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, extensions_pb2.TurnOptions]] = []

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="test", model="recording")

    async def run_turn(self, turn: Turn) -> str:
        self.ran.append((turn.turn_id, turn.options))
        return "completed"


def run_turn_envelope(turn_id: str, *extensions: any_pb2.Any) -> envelope_pb2.Envelope:
    request = chat_pb2.RunTurnRequest(session_id=SESSION, turn_id=turn_id, extensions=extensions)
    request.input.content.add(text=content_pb2.TextContent(text="hi"))
    return envelope_pb2.Envelope(id=turn_id, payload=pack(core_message(run_turn_request=request)))


async def next_message(sent: asyncio.Queue[envelope_pb2.Envelope]) -> tuple[str, protocol_pb2.ProtocolMessage]:
    envelope = await asyncio.wait_for(sent.get(), TIMEOUT)
    return envelope.reply_to, unpack(envelope, protocol_pb2.ProtocolMessage)


async def test_turn_options_that_do_not_decode_refuse_the_turn_and_the_node_serves_on() -> None:
    """Undecodable TurnOptions: run_turn_response rejected INVALID_ARGUMENT, nothing runs; the next turn runs."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
    agent = RecordingAgent()

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), agent, send)
    try:
        await runtime.receive(run_turn_envelope("turn_bad", any_pb2.Any(type_url=TURN_OPTIONS_URL, value=b"\xff")))
        assert sent.qsize() == 1  # the refusal only: no turn_started, no turn_ended
        reply_to, message = await next_message(sent)
        assert reply_to == "turn_bad"
        rejected = message.run_turn_response.rejected
        assert message.run_turn_response.WhichOneof("outcome") == "rejected"
        assert (rejected.code, rejected.message) == (
            "INVALID_ARGUMENT",
            "extension aophub.v1.TurnOptions does not decode",
        )

        options = extensions_pb2.TurnOptions(max_tokens=7)
        await runtime.receive(run_turn_envelope("turn_good", pack(options)))
        reply_to, message = await next_message(sent)
        assert (reply_to, message.run_turn_response.WhichOneof("outcome")) == ("turn_good", "accepted")
        kinds = []
        while "turn_ended" not in kinds:
            _, message = await next_message(sent)
            if message.WhichOneof("message") == "event":
                kinds.append(message.event.WhichOneof("payload"))
        assert kinds == ["turn_started", "turn_ended"]
        assert agent.ran == [("turn_good", options)]
    finally:
        await runtime.stop()


async def test_a_session_between_turns_keeps_no_worker_and_its_next_turn_sees_how_it_was_opened() -> None:
    """Once its turns are done a session costs the node only its OpenSessionRequest; closing drops that too."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
    opened_with: list[str] = []

    class TitleAgent(RecordingAgent):
        async def run_turn(self, turn: Turn) -> str:
            opened_with.append(turn.session.title)
            return "completed"

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    async def turn_ended() -> None:
        while True:
            _, message = await next_message(sent)
            if message.WhichOneof("message") == "event" and message.event.HasField("turn_ended"):
                return

    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), TitleAgent(), send)
    try:
        open_request = chat_pb2.OpenSessionRequest(session_id=SESSION, node_id="node", title="kept")
        await runtime.receive(
            envelope_pb2.Envelope(id="open", payload=pack(core_message(open_session_request=open_request)))
        )
        for turn_id in ["turn_1", "turn_2"]:
            await runtime.receive(run_turn_envelope(turn_id))
            await turn_ended()
            await asyncio.wait_for(runtime.idle(), TIMEOUT)
            assert runtime.workers == 0
        assert opened_with == ["kept", "kept"]
        assert runtime.sessions == 1
        close = chat_pb2.CloseSessionRequest(session_id=SESSION)
        await runtime.receive(
            envelope_pb2.Envelope(id="close", payload=pack(core_message(close_session_request=close)))
        )
        assert runtime.sessions == 0
    finally:
        await runtime.stop()


def foreign_envelope(envelope_id: str, type_url: str, value: bytes) -> envelope_pb2.Envelope:
    return envelope_pb2.Envelope(id=envelope_id, payload=any_pb2.Any(type_url=type_url, value=value))


async def test_payloads_the_node_does_not_serve_are_answered_with_a_protocol_error_and_never_misread() -> None:
    """AOP-nodes 9.9.1: the type URL decides how a payload is read. A foreign namespace whose bytes
    would decode as an open is refused UNSUPPORTED_NAMESPACE, not served (in the command namespace,
    which the node serves, INVALID_ARGUMENT: it is no command request); a non-canonical type URL
    or an undecodable payload INVALID_PAYLOAD; each reply_to the envelope's id, the node serving on."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), RecordingAgent(), send)
    try:
        # The same field numbers as an aop.ProtocolMessage{open_session_request}.
        looks_like_an_open = core_message(
            open_session_request=chat_pb2.OpenSessionRequest(session_id=SESSION, node_id="node")
        ).SerializeToString()
        cases = [
            (
                "foreign",
                "type.googleapis.com/aiscan.reload.ReloadProtocolMessage",
                looks_like_an_open,
                "UNSUPPORTED_NAMESPACE",
            ),
            # The command namespace is served; these bytes are no request in it (9.9.1).
            (
                "command",
                "type.googleapis.com/aiscan.command.CommandProtocolMessage",
                looks_like_an_open,
                "INVALID_ARGUMENT",
            ),
            ("non-canonical", "example.com/aop.ProtocolMessage", looks_like_an_open, "INVALID_PAYLOAD"),
            ("garbage", "type.googleapis.com/aop.ProtocolMessage", b"\xff\xff\xff", "INVALID_PAYLOAD"),
        ]
        for envelope_id, type_url, value, code in cases:
            await runtime.receive(foreign_envelope(envelope_id, type_url, value))
            reply_to, message = await next_message(sent)
            assert (reply_to, message.WhichOneof("message"), message.protocol_error.code) == (
                envelope_id,
                "protocol_error",
                code,
            )
        assert runtime.sessions == 0  # nothing was served as an open
        # The node serves on: a real open is answered.
        await runtime.receive(foreign_envelope("open", "type.googleapis.com/aop.ProtocolMessage", looks_like_an_open))
        reply_to, message = await next_message(sent)
        assert (reply_to, message.WhichOneof("message")) == ("open", "open_session_response")
        assert runtime.sessions == 1
    finally:
        await runtime.stop()


async def test_a_protocol_error_from_the_hub_is_never_answered() -> None:
    """AOP-nodes 9.1.7: answering one could start an error exchange."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), RecordingAgent(), send)
    try:
        error = protocol_pb2.ProtocolMessage()
        error.protocol_error.code = "INVALID_PAYLOAD"
        error.protocol_error.message = "the hub did not understand"
        await runtime.receive(envelope_pb2.Envelope(id="error", reply_to="x", payload=pack(error)))
        close = chat_pb2.CloseSessionRequest(session_id=SESSION)
        await runtime.receive(
            envelope_pb2.Envelope(id="close", payload=pack(core_message(close_session_request=close)))
        )
        # The envelopes are handled in order: the first thing sent answers the close.
        reply_to, message = await next_message(sent)
        assert (reply_to, message.WhichOneof("message")) == ("close", "close_session_response")
        assert sent.empty()
    finally:
        await runtime.stop()


class OneSessionAgent(RecordingAgent):
    """A SessionAware agent: refuses a second session, and records closes."""

    def __init__(self) -> None:
        super().__init__()
        self.session: str | None = None
        self.closed: list[str] = []

    async def open_session(self, request: chat_pb2.OpenSessionRequest) -> None:
        if self.session not in (None, request.session_id):
            raise HubError(Code.FAILED_PRECONDITION, f"session {self.session} holds this agent")
        self.session = request.session_id

    async def close_session(self, session_id: str) -> None:
        self.closed.append(session_id)
        self.session = None


async def test_a_session_aware_agent_refuses_an_open_and_hears_of_closes() -> None:
    """The node's open answer is the agent's: a refusal is open_session_response rejected with its code; a close
    reaches the agent, after which another session opens."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()
    agent = OneSessionAgent()

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    def open_envelope(session_id: str) -> envelope_pb2.Envelope:
        request = chat_pb2.OpenSessionRequest(session_id=session_id)
        return envelope_pb2.Envelope(id=f"open:{session_id}", payload=pack(core_message(open_session_request=request)))

    runtime = NodeRuntime(protocol_pb2.AgentHello(node_id="node"), agent, send)
    try:
        await runtime.receive(open_envelope("ses_a"))
        _, message = await next_message(sent)
        assert message.open_session_response.WhichOneof("outcome") == "accepted"
        await runtime.receive(open_envelope("ses_b"))
        _, message = await next_message(sent)
        rejected = message.open_session_response.rejected
        assert (rejected.code, rejected.message) == ("FAILED_PRECONDITION", "session ses_a holds this agent")
        assert runtime.sessions == 1

        close = chat_pb2.CloseSessionRequest(session_id="ses_a")
        await runtime.receive(
            envelope_pb2.Envelope(id="close", payload=pack(core_message(close_session_request=close)))
        )
        _, message = await next_message(sent)
        assert message.close_session_response.WhichOneof("outcome") == "accepted"
        assert agent.closed == ["ses_a"]
        await runtime.receive(open_envelope("ses_b"))
        _, message = await next_message(sent)
        assert message.open_session_response.WhichOneof("outcome") == "accepted"
    finally:
        await runtime.stop()


class WaitingAgent(RecordingAgent):
    """Waits in every turn until cancelled; ``swallow`` lets a turn end "completed" despite its cancel.

    Each turn records how many cancels its task still carried when it began: a cancel aimed at an
    earlier turn must not outlive that turn.
    """

    def __init__(self, *, swallow: bool = False) -> None:
        super().__init__()
        self.swallow = swallow
        self.started = asyncio.Event()
        self.carried: list[int] = []

    async def run_turn(self, turn: Turn) -> str:
        task = asyncio.current_task()
        assert task is not None
        self.carried.append(task.cancelling())
        self.ran.append((turn.turn_id, turn.options))
        self.started.set()
        try:
            await asyncio.sleep(TIMEOUT * 2)
        except asyncio.CancelledError:
            if not self.swallow:
                raise
        return "completed"


async def turn_endings(sent: asyncio.Queue[envelope_pb2.Envelope], count: int) -> list[tuple[str, str]]:
    """The next ``count`` turn_ended events as (turn id, stop reason)."""
    ended: list[tuple[str, str]] = []
    while len(ended) < count:
        _, message = await next_message(sent)
        if message.WhichOneof("message") == "event" and message.event.HasField("turn_ended"):
            ended.append((message.event.turn_id, message.event.turn_ended.stop_reason))
    return ended


def recording_runtime(agent: RecordingAgent) -> tuple[NodeRuntime, asyncio.Queue[envelope_pb2.Envelope]]:
    """A runtime for ``agent`` whose envelopes to the hub are queued, in order, in the queue returned."""
    sent: asyncio.Queue[envelope_pb2.Envelope] = asyncio.Queue()

    async def send(envelope: envelope_pb2.Envelope) -> None:
        sent.put_nowait(envelope)

    return NodeRuntime(protocol_pb2.AgentHello(node_id="node"), agent, send), sent


def cancel_envelope(turn_id: str) -> envelope_pb2.Envelope:
    cancel = chat_pb2.CancelTurnRequest(session_id=SESSION, turn_id=turn_id)
    return envelope_pb2.Envelope(id=f"cancel-{turn_id}", payload=pack(core_message(cancel_turn_request=cancel)))


async def test_a_canceled_turn_ends_canceled_and_the_session_runs_its_next_turn_unburdened() -> None:
    """Canceling the running turn (twice) ends it "canceled"; the next turn runs with no cancel left over."""
    agent = WaitingAgent()
    runtime, sent = recording_runtime(agent)
    try:
        await runtime.receive(run_turn_envelope("turn_1"))
        await runtime.receive(run_turn_envelope("turn_2"))  # queued behind turn_1
        await asyncio.wait_for(agent.started.wait(), TIMEOUT)
        agent.started.clear()
        await runtime.receive(cancel_envelope("turn_1"))
        await runtime.receive(cancel_envelope("turn_1"))
        assert await turn_endings(sent, 1) == [("turn_1", "canceled")]
        await asyncio.wait_for(agent.started.wait(), TIMEOUT)
        await runtime.receive(cancel_envelope("turn_2"))
        assert await turn_endings(sent, 1) == [("turn_2", "canceled")]
        assert agent.carried == [0, 0]
        await asyncio.wait_for(runtime.idle(), TIMEOUT)
    finally:
        await runtime.stop()


async def test_an_agent_that_ignores_its_cancel_ends_its_turn_as_it_says_and_leaves_no_cancel_behind() -> None:
    """An agent may catch the cancel and finish: its stop reason stands, and its next turn's task is not cancelling."""
    agent = WaitingAgent(swallow=True)
    runtime, sent = recording_runtime(agent)
    try:
        await runtime.receive(run_turn_envelope("turn_1"))
        await runtime.receive(run_turn_envelope("turn_2"))
        await asyncio.wait_for(agent.started.wait(), TIMEOUT)
        agent.started.clear()
        await runtime.receive(cancel_envelope("turn_1"))
        assert await turn_endings(sent, 1) == [("turn_1", "completed")]
        await asyncio.wait_for(agent.started.wait(), TIMEOUT)
        assert agent.carried == [0, 0]
    finally:
        await runtime.stop()


async def test_closing_a_session_while_its_canceled_turn_winds_down_ends_it_silently() -> None:
    """A turn canceled and then closed with its session reports nothing more: the close wins, no turn_ended."""
    agent = WaitingAgent()
    runtime, sent = recording_runtime(agent)
    try:
        await runtime.receive(run_turn_envelope("turn_1"))
        await asyncio.wait_for(agent.started.wait(), TIMEOUT)
        await runtime.receive(cancel_envelope("turn_1"))  # both land before the worker runs again
        close = chat_pb2.CloseSessionRequest(session_id=SESSION)
        await runtime.receive(
            envelope_pb2.Envelope(id="close", payload=pack(core_message(close_session_request=close)))
        )
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        await asyncio.wait_for(asyncio.gather(*others, return_exceptions=True), TIMEOUT)  # the worker has ended
        kinds = []
        while not sent.empty():
            message = unpack(sent.get_nowait(), protocol_pb2.ProtocolMessage)
            if message.WhichOneof("message") == "event":
                kinds.append(message.event.WhichOneof("payload"))
        assert "turn_ended" not in kinds
        assert runtime.workers == 0
    finally:
        await runtime.stop()
