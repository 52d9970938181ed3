"""Fuzzing both AOP endpoints with malformed, truncated, oversized and wrong-type frames.

Application endpoint (AOP sections 2, 4 and 5): every request envelope gets exactly one reply, its
response or its defined ``ProtocolError`` (INVALID_PAYLOAD, UNSUPPORTED_NAMESPACE,
UNSUPPORTED_MESSAGE, ...) or ``Rejection`` (INVALID_ARGUMENT, NOT_FOUND, ...); watches and
``cancel_operation`` get none. An oracle written from the spec, not from the hub's code, predicts
each reply from the frame's bytes alone. Node endpoint (AOP 7.6): a frame that does not decode or
names a namespace nodes do not speak drops that node; anything else leaves it connected.

Throughout, a sentinel session on another connection runs echo turns one after another, each
checked event by event, and the lifecycle invariants hold over everything stored at the end. The
sans-I/O ``ApplicationConnection`` takes hundreds of examples in process; smaller runs go over real
sockets to a real server.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.hub.application import ApplicationConnection
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.v1 import agent_pb2, extensions_pb2, interaction_pb2

from .support.lifecycle import assert_lifecycle, close_everything
from .support.raw_node import RawNode
from .support.server import TOKEN, RunningHub, running_hub

CORE = "aop.ProtocolMessage"
INTERACTION = "aophub.v1.InteractionProtocolMessage"
TURN_OPTIONS_URL = TYPE_URL_PREFIX + "aophub.v1.TurnOptions"
CATALOG_URL = TYPE_URL_PREFIX + "aophub.v1.CommandCatalog"
ONLINE_NODE = "local"
FUZZ_SESSION = "fuzz-open"  # open on the built-in node; the fuzzer runs turns in it
CLOSED_SESSION = "fuzz-closed"  # closed before the fuzzing starts
SENTINEL_SESSION = "sentinel"  # never named by the fuzzer
RESERVED = frozenset({FUZZ_SESSION, CLOSED_SESSION, SENTINEL_SESSION, ONLINE_NODE})
MUTATING = {
    "open_session_request": "open_session_response",
    "run_turn_request": "run_turn_response",
    "cancel_turn_request": "cancel_turn_response",
    "close_session_request": "close_session_response",
}
MAX_CURSOR = 2**63 - 1
TIMEOUT = 10.0
FUZZ_SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

M = TypeVar("M", bound=Message)
_unique = itertools.count(1)


# -- frames ---------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One binary frame; ``fresh`` frames get a never-used envelope id when sent (see :func:`materialize`)."""

    data: bytes
    fresh: bool = False


def materialize(frame: Frame) -> bytes:
    """The bytes to send: a fresh frame's non-empty envelope id is made unique, so the journal never replays it."""
    if not frame.fresh:
        return frame.data
    envelope = envelope_pb2.Envelope.FromString(frame.data)
    if envelope.id:
        envelope.id = f"{next(_unique)}~{envelope.id}"
    return envelope.SerializeToString(deterministic=True)


def envelope_bytes(message: Message, envelope_id: str = "", reply_to: str = "") -> bytes:
    return envelope_pb2.Envelope(id=envelope_id, reply_to=reply_to, payload=pack(message)).SerializeToString()


texts = st.text(max_size=16)
unknown_ids = st.text(min_size=1, max_size=16).filter(lambda s: s not in RESERVED and not s.startswith("ses_"))
# Weighted towards what exists, so that most requests get past their argument checks.
session_ids = st.one_of(
    st.just(FUZZ_SESSION), st.just(FUZZ_SESSION), st.sampled_from(["", CLOSED_SESSION]), unknown_ids
)
node_ids = st.one_of(st.just(ONLINE_NODE), st.sampled_from(["", "offline"]), texts)
envelope_ids = st.one_of(st.just(""), *[texts.map(lambda text: f"id{text}")] * 4)
cursors = st.one_of(
    st.integers(min_value=0, max_value=40).map(str),
    st.sampled_from(["", "-1", "1.5", " 1", "\u0661", "\u00b2", "0" * 19 + "1", str(MAX_CURSOR), str(MAX_CURSOR + 1)]),
    st.integers(min_value=0, max_value=2**70).map(str),
    texts,
)
# Big enough to matter, small enough that hundreds of examples stay fast; one word, so echo streams one delta.
big_texts = st.sampled_from(["", "x" * 70_000])
type_urls = st.one_of(
    st.sampled_from(
        [
            TYPE_URL_PREFIX + CORE,
            TYPE_URL_PREFIX + INTERACTION,
            TYPE_URL_PREFIX + "aop.tool.ProtocolMessage",
            TYPE_URL_PREFIX + "aophub.v1.ScanProtocolMessage",
            TYPE_URL_PREFIX + "aop.Envelope",
            TYPE_URL_PREFIX,
            TYPE_URL_PREFIX + "/" + CORE,
            TYPE_URL_PREFIX + CORE + " ",
            CORE,
            "type.googleapis.com/aop/ProtocolMessage",
            "https://example.com/" + CORE,
            "",
        ]
    ),
    texts.map(lambda name: TYPE_URL_PREFIX + name),
    texts,
)


def text_content(text: str) -> content_pb2.Content:
    return content_pb2.Content(text=content_pb2.TextContent(text=text))


contents = st.one_of(
    texts.map(text_content),
    big_texts.map(text_content),
    texts.map(lambda text: content_pb2.Content(refusal=text)),
    texts.map(lambda text: content_pb2.Content(reasoning=content_pb2.ReasoningContent(text=text))),
    st.binary(max_size=32).map(
        lambda data: content_pb2.Content(media=content_pb2.MediaContent(kind="image", resource={"data": data}))
    ),
)
inputs = st.builds(
    lambda role, parts: content_pb2.Message(role=role, content=parts),
    st.sampled_from(["user", "", "assistant", "tool", "a role nobody knows"]),
    st.one_of(st.lists(contents, min_size=1, max_size=3), st.lists(contents, max_size=3)),
)
turn_options = st.builds(
    lambda policy, regenerate: pack(extensions_pb2.TurnOptions(policy=policy, regenerate=regenerate)),
    st.integers(min_value=0, max_value=5),
    st.booleans(),
)
extensions = st.one_of(
    turn_options,
    turn_options,
    st.builds(lambda value: any_pb2.Any(type_url=TURN_OPTIONS_URL, value=value), st.binary(max_size=8)),
    st.builds(lambda url, value: any_pb2.Any(type_url=url, value=value), type_urls, st.binary(max_size=32)),
)


@st.composite
def open_session_requests(draw: st.DrawFn) -> protocol_pb2.ProtocolMessage:
    node_id = draw(node_ids)
    session_id = draw(session_ids)
    if node_id == ONLINE_NODE and session_id not in (FUZZ_SESSION, CLOSED_SESSION):
        session_id = ""  # never create a session under an id a later example might name
    request = chat_pb2.OpenSessionRequest(
        session_id=session_id,
        node_id=node_id,
        title=draw(st.one_of(texts, big_texts)),
        parent_session_id=draw(texts),
        extensions=draw(st.lists(extensions, max_size=2)),
    )
    return protocol_pb2.ProtocolMessage(open_session_request=request)


@st.composite
def run_turn_requests(draw: st.DrawFn) -> protocol_pb2.ProtocolMessage:
    request = chat_pb2.RunTurnRequest(
        session_id=draw(session_ids),
        turn_id=draw(st.one_of(st.just(""), texts.map(lambda text: f"turn{text}"))),
        input=draw(inputs),
        continue_session=draw(st.booleans()),
        max_turns=draw(st.integers(min_value=0, max_value=2**32 - 1)),
        extensions=draw(st.lists(extensions, max_size=2)),
    )
    return protocol_pb2.ProtocolMessage(run_turn_request=request)


def _core(**case: Message) -> protocol_pb2.ProtocolMessage:
    return protocol_pb2.ProtocolMessage(**case)  # type: ignore[arg-type]


def _empty_case(case: str) -> protocol_pb2.ProtocolMessage:
    message = protocol_pb2.ProtocolMessage()
    getattr(message, case).SetInParent()
    return message


NOT_FROM_APPLICATIONS = [
    "agent_accepted",
    "agent_status",
    "agent_stats",
    "open_session_response",
    "run_turn_response",
    "cancel_turn_response",
    "close_session_response",
    "list_events_response",
    "event",
    "protocol_error",
]

# Requests meant to pass their checks, so that the fuzzing also runs, queues and interrupts turns.
plausible_requests = st.one_of(
    st.builds(
        lambda text, options, turn_id: _core(
            run_turn_request=chat_pb2.RunTurnRequest(
                session_id=FUZZ_SESSION,
                turn_id=turn_id,
                input=content_pb2.Message(role="user", content=[text_content(text)]),
                extensions=options,
            )
        ),
        st.one_of(texts, big_texts),
        st.lists(turn_options, max_size=1),
        st.one_of(st.just(""), texts.map(lambda text: f"turn{text}")),
    ),
    st.builds(
        lambda session_id, title: _core(
            open_session_request=chat_pb2.OpenSessionRequest(session_id=session_id, node_id=ONLINE_NODE, title=title)
        ),
        st.sampled_from(["", FUZZ_SESSION]),
        st.one_of(texts, big_texts),
    ),
)

core_messages = st.one_of(
    plausible_requests,
    plausible_requests,
    open_session_requests(),
    run_turn_requests(),
    st.builds(
        lambda s, t, r: _core(cancel_turn_request=chat_pb2.CancelTurnRequest(session_id=s, turn_id=t, reason=r)),
        session_ids,
        texts,
        texts,
    ),
    st.builds(
        lambda s, r: _core(close_session_request=chat_pb2.CloseSessionRequest(session_id=s, reason=r)),
        # Never the fuzz session: closing it would refuse every later turn of the run.
        session_ids.filter(lambda s: s != FUZZ_SESSION),
        texts,
    ),
    st.builds(
        lambda s, c, n: _core(list_events_request=chat_pb2.ListEventsRequest(session_id=s, after_cursor=c, limit=n)),
        session_ids,
        cursors,
        st.integers(min_value=0, max_value=2**32 - 1),
    ),
    st.builds(
        lambda s, c: _core(watch_events_request=chat_pb2.WatchEventsRequest(session_id=s, after_cursor=c)),
        session_ids,
        cursors,
    ),
    st.builds(lambda t: _core(cancel_operation=protocol_pb2.CancelOperation(target_id=t)), texts),
    st.builds(lambda n: _core(agent_hello=protocol_pb2.AgentHello(node_id=n)), texts),
    st.sampled_from(NOT_FROM_APPLICATIONS).map(_empty_case),
    st.just(protocol_pb2.ProtocolMessage()),
)
answer_requests = st.builds(
    lambda i, approve: interaction_pb2.InteractionProtocolMessage(
        answer_request=interaction_pb2.AnswerInteractionRequest(
            interaction_id=i, answer=interaction_pb2.InteractionAnswer(approval={"approved": approve})
        )
    ),
    st.one_of(st.just(""), texts),
    st.booleans(),
)
interaction_messages = st.one_of(
    answer_requests,
    st.sampled_from(["answer_response", "requested", "resolved"]).map(
        lambda case: interaction_pb2.InteractionProtocolMessage(**{case: {}})
    ),
    st.just(interaction_pb2.InteractionProtocolMessage()),
)


@st.composite
def request_frames(draw: st.DrawFn) -> Frame:
    """A well-formed envelope with a core or interaction message (its id made unique when sent)."""
    message: Message = draw(st.one_of(core_messages, interaction_messages))
    envelope_id = draw(envelope_ids)
    return Frame(envelope_bytes(message, envelope_id, reply_to=draw(texts)), fresh=True)


# Serialized messages of other types, to sit where an aop.ProtocolMessage belongs.
other_messages = st.one_of(
    st.builds(lambda s: chat_pb2.Session(id=s, state="open").SerializeToString(), texts),
    st.builds(lambda s: chat_pb2.RunTurnRequest(session_id=s, turn_id=s).SerializeToString(), texts),
    st.builds(lambda s: event_pb2.Event(id=s, session_id=s, seq=7).SerializeToString(), texts),
    st.builds(lambda s: envelope_pb2.Envelope(id=s).SerializeToString(), texts),
    st.builds(lambda s: interaction_pb2.Interaction(id=s).SerializeToString(), texts),
)


@st.composite
def junk_envelopes(draw: st.DrawFn) -> Frame:
    """An envelope whose payload has any type URL and any bytes (often another message's)."""
    envelope = envelope_pb2.Envelope(id=draw(texts))
    if draw(st.booleans()):
        value = draw(st.one_of(st.binary(max_size=48), other_messages))
        envelope.payload.CopyFrom(any_pb2.Any(type_url=draw(type_urls), value=value))
    return Frame(envelope.SerializeToString())


@st.composite
def damaged_frames(draw: st.DrawFn) -> Frame:
    """A well-formed frame truncated, or with one byte changed."""
    data = draw(request_frames()).data
    if draw(st.booleans()):
        return Frame(data[: draw(st.integers(min_value=0, max_value=max(len(data) - 1, 0)))])
    index = draw(st.integers(min_value=0, max_value=len(data) - 1))
    return Frame(data[:index] + bytes([draw(st.integers(0, 255))]) + data[index + 1 :])


app_frames = st.one_of(
    request_frames(),
    request_frames(),
    request_frames(),
    junk_envelopes(),
    damaged_frames(),
    st.binary(max_size=64).map(Frame),
)


# -- the oracle -----------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What the hub must answer a frame: one reply to ``reply_to`` whose outcome is in ``allowed``.

    ``reply_to`` None means no reply at all (a watch that streams, a cancel_operation). An
    outcome is ``"<reply case>:<code>"``; ``"<case>:*"`` allows any outcome of that case.
    """

    reply_to: str | None
    allowed: frozenset[str] = frozenset()
    closes: bool = False
    # No reply is fine too (a watch that a later watch with its id replaced, or cancel_operation ended).
    optional: bool = False
    watch: str | None = None  # the id of the watch this frame starts
    ends: str | None = None  # the operation a cancel_operation ends


def protocol_error(reply_to: str, *codes: str, closes: bool = False, watch: str | None = None) -> Expect:
    return Expect(reply_to, frozenset(f"protocol_error:{code}" for code in codes), closes, watch=watch)


def outcomes(reply_to: str, case: str, *codes: str) -> Expect:
    return Expect(reply_to, frozenset(f"{case}:{code}" for code in codes))


def cursor_validity(cursor: str) -> bool | None:
    """True for a cursor the hub could have handed out, False for no cursor at all, None for either
    (leading zeros: a number, but not one the hub writes)."""
    if cursor == "":
        return True
    if not (cursor.isascii() and cursor.isdigit() and int(cursor) <= MAX_CURSOR):
        return False
    return True if cursor == str(int(cursor)) else None


def decodes(message_type: type[M], data: bytes) -> M | None:
    try:
        return message_type.FromString(data)
    except DecodeError:
        return None


@dataclass(frozen=True)
class Oracle:
    """Predicts the application endpoint's reply to one frame, from AOP sections 2, 4 and 5.

    ``sessions`` maps the session ids that exist to whether they are closed; every other id is
    unknown. ``interactions`` says whether the hub serves ``aophub.v1.InteractionProtocolMessage``.
    """

    sessions: Mapping[str, bool]
    interactions: bool

    def expect(self, frame: bytes, *, first: bool, fresh: bool) -> Expect:
        envelope = decodes(envelope_pb2.Envelope, frame)
        if envelope is None:
            return protocol_error("", "INVALID_PAYLOAD")
        key = envelope.id
        url = envelope.payload.type_url
        name = url.removeprefix(TYPE_URL_PREFIX) if url.startswith(TYPE_URL_PREFIX) else ""
        if not envelope.HasField("payload") or not name or "/" in name:
            return protocol_error(key, "INVALID_PAYLOAD")
        if name == INTERACTION and self.interactions:
            return self._interaction(key, envelope.payload.value, fresh)
        if name != CORE:
            return protocol_error(key, "UNSUPPORTED_NAMESPACE")
        message = decodes(protocol_pb2.ProtocolMessage, envelope.payload.value)
        if message is None:
            return protocol_error(key, "INVALID_PAYLOAD")
        case = message.WhichOneof("message")
        if case == "agent_hello" and first:
            return protocol_error(key, "WRONG_ENDPOINT", closes=True)
        if case == "cancel_operation":
            return Expect(None, ends=message.cancel_operation.target_id)
        if case == "watch_events_request":
            watch = message.watch_events_request
            return self._read(key, watch.session_id, watch.after_cursor, listing=False)
        if case == "list_events_request":
            listing = message.list_events_request
            return self._read(key, listing.session_id, listing.after_cursor, listing=True)
        if case in MUTATING:
            reply_case = MUTATING[case]
            if not key:
                return outcomes(key, reply_case, "INVALID_ARGUMENT")
            if not fresh:  # an id that may have been used before: a replay or ALREADY_EXISTS
                return outcomes(key, reply_case, "*")
            return outcomes(key, reply_case, *getattr(self, f"_{case}")(getattr(message, case)))
        return protocol_error(key, "UNSUPPORTED_MESSAGE")

    def _state(self, session_id: str) -> str:
        """ "missing" (no id), "unknown", "open" or "closed"."""
        if not session_id:
            return "missing"
        if session_id not in self.sessions:
            return "unknown"
        return "closed" if self.sessions[session_id] else "open"

    def _read(self, key: str, session_id: str, cursor: str, *, listing: bool) -> Expect:
        """A watch (no reply unless refused) or a ListEvents; the spec orders neither check first."""
        codes = {"missing": {"INVALID_ARGUMENT"}, "unknown": {"NOT_FOUND"}}.get(self._state(session_id), set())
        validity = cursor_validity(cursor)
        if validity is False:
            codes.add("INVALID_ARGUMENT")
        watch = None if listing else key
        if codes:
            return protocol_error(key, *codes, watch=watch)
        if validity is None:  # refused or served
            if listing:
                return Expect(key, frozenset({"protocol_error:INVALID_ARGUMENT", "list_events_response:"}))
            return Expect(key, frozenset({"protocol_error:INVALID_ARGUMENT"}), optional=True, watch=key)
        return outcomes(key, "list_events_response", "") if listing else Expect(None, watch=key)

    def _open_session_request(self, request: chat_pb2.OpenSessionRequest) -> tuple[str, ...]:
        state = self._state(request.session_id)
        if not request.node_id:
            return ("INVALID_ARGUMENT",)
        if state in ("open", "closed") and request.node_id != ONLINE_NODE:
            return ("ALREADY_EXISTS",)  # bound to the built-in node
        if state == "closed":
            return ("FAILED_PRECONDITION",)
        if request.node_id != ONLINE_NODE:
            return ("UNAVAILABLE",)
        return ("accepted",)

    def _run_turn_request(self, request: chat_pb2.RunTurnRequest) -> tuple[str, ...]:
        options = extensions_pb2.TurnOptions()
        for extension in request.extensions:
            if extension.type_url == TURN_OPTIONS_URL:
                parsed = decodes(extensions_pb2.TurnOptions, extension.value)
                if parsed is None:
                    return ("INVALID_ARGUMENT",)
                options = parsed
        state = self._state(request.session_id)
        if state == "missing" or not (request.continue_session or options.regenerate or request.input.content):
            return ("INVALID_ARGUMENT",)
        if state == "unknown":
            return ("NOT_FOUND",)
        if state == "closed":
            return ("FAILED_PRECONDITION",)
        allowed = ["accepted"]
        if request.turn_id:
            allowed.append("ALREADY_EXISTS")  # the fuzzer may name a turn id twice
        if options.policy == extensions_pb2.TURN_POLICY_REJECT:
            allowed.append("FAILED_PRECONDITION")  # refused while another turn runs
        elif options.policy != extensions_pb2.TURN_POLICY_INTERRUPT:
            allowed.append("RESOURCE_EXHAUSTED")  # the session's queue is full
        return tuple(allowed)

    def _cancel_turn_request(self, request: chat_pb2.CancelTurnRequest) -> tuple[str, ...]:
        state = self._state(request.session_id)
        if state == "missing" or not request.turn_id:
            return ("INVALID_ARGUMENT",)
        if state == "open":
            return ("accepted", "NOT_FOUND")  # the fuzzer may name one of its own running turns
        return ("NOT_FOUND",)

    def _close_session_request(self, request: chat_pb2.CloseSessionRequest) -> tuple[str, ...]:
        state = self._state(request.session_id)
        return {"missing": ("INVALID_ARGUMENT",), "unknown": ("NOT_FOUND",)}.get(state, ("accepted",))

    def _interaction(self, key: str, value: bytes, fresh: bool) -> Expect:
        message = decodes(interaction_pb2.InteractionProtocolMessage, value)
        if message is None:
            return protocol_error(key, "INVALID_PAYLOAD")
        if message.WhichOneof("message") != "answer_request":
            return protocol_error(key, "UNSUPPORTED_MESSAGE")
        if not key or not message.answer_request.interaction_id:
            return outcomes(key, "answer_response", "INVALID_ARGUMENT")
        # No interaction ever exists in these runs.
        return outcomes(key, "answer_response", "NOT_FOUND" if fresh else "*")


def outcome(frame: bytes) -> tuple[str, str] | None:
    """``(reply_to, "<case>:<code>")`` of a frame the hub sent, or None for an event delivery."""
    envelope = envelope_pb2.Envelope.FromString(frame)
    url = envelope.payload.type_url
    if url == TYPE_URL_PREFIX + INTERACTION:
        answer = interaction_pb2.InteractionProtocolMessage.FromString(envelope.payload.value).answer_response
        assert answer.WhichOneof("outcome"), answer
        code = "accepted" if answer.WhichOneof("outcome") == "accepted" else answer.rejected.code
        return envelope.reply_to, f"answer_response:{code}"
    assert url == TYPE_URL_PREFIX + CORE, f"the hub sent a {url}"
    message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
    case = message.WhichOneof("message")
    if case == "event":
        return None
    if case == "protocol_error":
        assert message.protocol_error.message, message
        assert message.protocol_error.code != "INTERNAL", message
        return envelope.reply_to, f"protocol_error:{message.protocol_error.code}"
    if case == "list_events_response":
        return envelope.reply_to, f"{case}:"
    assert case in MUTATING.values(), message
    response = getattr(message, case)
    if response.WhichOneof("outcome") == "accepted":
        return envelope.reply_to, f"{case}:accepted"
    rejected = response.rejected
    assert rejected.message, message
    assert rejected.code != "INTERNAL", message
    assert rejected.retryable == (rejected.code in ("UNAVAILABLE", "RESOURCE_EXHAUSTED")), message
    return envelope.reply_to, f"{case}:{rejected.code}"


def allows(allowed: frozenset[str], got: str) -> bool:
    case = got.split(":", 1)[0]
    return got in allowed or f"{case}:*" in allowed


def assert_replies(expects: list[Expect], sent: Iterable[bytes]) -> None:
    """The hub's replies pair off one to one with the frames that expect one, each allowed."""
    wanted: dict[str, list[Expect]] = {}
    for expect in expects:
        if expect.reply_to is not None:
            wanted.setdefault(expect.reply_to, []).append(expect)
    got: dict[str, list[str]] = {}
    for reply in filter(None, map(outcome, sent)):
        got.setdefault(reply[0], []).append(reply[1])
    for key in got.keys() | wanted.keys():
        replies, expected = got.get(key, []), wanted.get(key, [])
        assert _pairs(expected, replies), (key, replies, expected)


def _pairs(expected: list[Expect], replies: list[str]) -> bool:
    """Whether each reply matches an expectation of its own, leaving only optional ones unmatched."""
    if not replies:
        return all(expect.optional for expect in expected)
    head, rest = replies[0], replies[1:]
    return any(
        allows(expect.allowed, head) and _pairs(expected[:index] + expected[index + 1 :], rest)
        for index, expect in enumerate(expected)
    )


def superseded(expects: list[Expect]) -> list[Expect]:
    """Watches replaced by a later watch with the same id, or ended by cancel_operation, may stay unanswered."""
    return [
        dataclasses.replace(expect, optional=True)
        if expect.watch is not None and any(expect.watch in (later.watch, later.ends) for later in expects[index + 1 :])
        else expect
        for index, expect in enumerate(expects)
    ]


def expected_replies(expects: Iterable[Expect]) -> int:
    """How many replies must come."""
    return sum(expect.reply_to is not None and not expect.optional for expect in expects)


# -- the sentinel -----------------------------------------------------------------


class Inbox:
    """What a connection received: replies by ``reply_to``, and one watch's deliveries in order."""

    def __init__(self, watch_id: str) -> None:
        self.watch_id = watch_id
        self.replies: dict[str, protocol_pb2.ProtocolMessage] = {}
        self.deliveries: deque[tuple[str, event_pb2.Event]] = deque()
        self._arrived = asyncio.Event()

    async def receive(self, frame: bytes) -> None:
        envelope = envelope_pb2.Envelope.FromString(frame)
        message = protocol_pb2.ProtocolMessage.FromString(envelope.payload.value)
        if envelope.reply_to == self.watch_id and message.HasField("event"):
            self.deliveries.append((envelope.delivery_cursor, message.event))
        else:
            self.replies[envelope.reply_to] = message
        self._arrived.set()

    async def reply(self, envelope_id: str) -> protocol_pb2.ProtocolMessage:
        while envelope_id not in self.replies:
            self._arrived.clear()
            await self._arrived.wait()
        return self.replies.pop(envelope_id)

    async def delivery(self) -> tuple[str, event_pb2.Event]:
        while not self.deliveries:
            self._arrived.clear()
            await self._arrived.wait()
        return self.deliveries.popleft()


class Sentinel:
    """A session on its own connection whose echo turns are checked event by event.

    Tests run :meth:`turn` alongside whatever they do to the hub. Each turn is checked whole:
    accepted, then exactly its user message, turn_started, the deltas of "echo: <input>", the
    complete message, usage and turn_ended "completed", with dense cursors and increasing seq
    across the whole watch.
    """

    def __init__(self) -> None:
        self.inbox = Inbox("sentinel-watch")
        self.completed = 0
        self._send: Callable[[bytes], Awaitable[None]] | None = None
        self._cursor = 0
        self._seq = 0

    def __repr__(self) -> str:
        return f"<Sentinel completed={self.completed}>"

    async def start(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        """Watch the session through ``send``, which delivers a frame to the sentinel's connection."""
        self._send = send
        watch = chat_pb2.WatchEventsRequest(session_id=SENTINEL_SESSION)
        await send(envelope_bytes(protocol_pb2.ProtocolMessage(watch_events_request=watch), self.inbox.watch_id))

    async def turn(self) -> None:
        """Run the next turn and check everything it delivered."""
        assert self._send is not None
        async with asyncio.timeout(TIMEOUT):
            await self._turn(self._send, self.completed)
        self.completed += 1

    async def _turn(self, send: Callable[[bytes], Awaitable[None]], number: int) -> None:
        turn_id, text = f"sentinel-{number}", f"sentinel turn {number} of many"
        request = chat_pb2.RunTurnRequest(
            session_id=SENTINEL_SESSION,
            turn_id=turn_id,
            input=content_pb2.Message(role="user", content=[text_content(text)]),
        )
        await send(envelope_bytes(protocol_pb2.ProtocolMessage(run_turn_request=request), f"run-{turn_id}"))
        reply = await self.inbox.reply(f"run-{turn_id}")
        assert reply.run_turn_response.accepted.turn_id == turn_id, reply
        persisted: list[event_pb2.Event] = []
        streamed = ""
        while not (persisted and persisted[-1].HasField("turn_ended")):
            cursor, event = await self.inbox.delivery()
            assert event.seq > self._seq, (event, self._seq)
            self._seq = event.seq
            if not cursor:
                assert event.turn_id == turn_id, event
                assert event.HasField("message_delta"), event
                streamed += event.message_delta.text
                continue
            assert int(cursor) == self._cursor + 1, (cursor, self._cursor)
            self._cursor = int(cursor)
            if event.turn_id == turn_id:
                persisted.append(event)
            else:
                assert event.HasField("session_started"), event
        kinds = [event.WhichOneof("payload") for event in persisted]
        assert kinds == ["message", "turn_started", "message", "usage", "turn_ended"], kinds
        assert persisted[0].message.content[0].text.text == text
        assert persisted[2].message.content[0].text.text == streamed == f"echo: {text}"
        assert persisted[-1].turn_ended.stop_reason == "completed", persisted[-1]


# -- the application endpoint in process ----------------------------------------------


class Collector:
    """The send side of an in-process connection: every frame it was given, in order."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self._arrived = asyncio.Event()

    async def __call__(self, frame: bytes) -> None:
        self.frames.append(frame)
        self._arrived.set()

    async def replies(self, count: int) -> None:
        """Wait until at least ``count`` frames other than event deliveries arrived."""
        while sum(outcome(frame) is not None for frame in self.frames) < count:
            self._arrived.clear()
            await self._arrived.wait()


@dataclass
class Fuzzed:
    """A hub ready for fuzzing: an oracle that knows its sessions, and the sentinel."""

    hub: RunningHub
    oracle: Oracle
    sentinel: Sentinel


async def prepare(running: RunningHub, *, interactions: bool) -> Fuzzed:
    """Open the fuzz session, a closed one and the sentinel's (not yet running)."""
    hub = running.runtime.hub
    for session_id in (FUZZ_SESSION, CLOSED_SESSION, SENTINEL_SESSION):
        request = chat_pb2.OpenSessionRequest(session_id=session_id, node_id=ONLINE_NODE)
        opened = await hub.open_session(f"setup-open-{session_id}", request)
        assert opened.WhichOneof("outcome") == "accepted", opened
    closed = await hub.close_session("setup-close", chat_pb2.CloseSessionRequest(session_id=CLOSED_SESSION))
    assert closed.WhichOneof("outcome") == "accepted", closed
    oracle = Oracle({FUZZ_SESSION: False, CLOSED_SESSION: True}, interactions=interactions)
    return Fuzzed(running, oracle, Sentinel())


@pytest.fixture
async def in_process(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Fuzzed]:
    """A hub whose sentinel runs on an in-process connection; checked for progress and invariants after."""
    async with running_hub(tmp_path, durability="NORMAL", echo_delay=0.0) as running:
        fuzzed = await prepare(running, interactions=False)
        connection = ApplicationConnection(running.runtime.hub, fuzzed.sentinel.inbox.receive)

        async def send(frame: bytes) -> None:
            assert await connection.receive(frame) is None

        await fuzzed.sentinel.start(send)
        yield fuzzed
        await finish(fuzzed, caplog)
        await connection.close()


async def finish(fuzzed: Fuzzed, caplog: pytest.LogCaptureFixture) -> None:
    """The sentinel made progress during the fuzzing and still does; nothing logged an error; invariants hold."""
    assert fuzzed.sentinel.completed >= 1, "the sentinel completed no turn while the fuzzing ran"
    await fuzzed.sentinel.turn()
    runtime = fuzzed.hub.runtime
    await close_everything(runtime)
    await assert_lifecycle(runtime)
    errors = [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert errors == [], [record.getMessage() for record in errors]


async def exchange(
    connection: ApplicationConnection, collector: Collector, oracle: Oracle, frames: list[Frame]
) -> None:
    """Feed ``frames`` to one new connection and check that the replies are exactly the predicted ones."""
    expects: list[Expect] = []
    for index, frame in enumerate(frames):
        data = materialize(frame)
        expect = oracle.expect(data, first=index == 0, fresh=frame.fresh)
        expects.append(expect)
        close = await connection.receive(data)
        assert (close is not None) == expect.closes, (close, expect)
        if close is not None:
            break
    expects = superseded(expects)
    async with asyncio.timeout(TIMEOUT):
        await collector.replies(expected_replies(expects))
        # Every request has finished: a reply arriving later would be a second one.
        while pending := set(connection._tasks):
            await asyncio.wait(pending)
    assert_replies(expects, collector.frames)


@settings(FUZZ_SETTINGS, max_examples=200)
@given(frames=st.lists(app_frames, min_size=1, max_size=10))
async def test_application_connection_answers_every_fuzzed_frame(in_process: Fuzzed, frames: list[Frame]) -> None:
    """Random, truncated, oversized and wrong-type frames in process: each gets exactly its defined reply."""
    collector = Collector()
    connection = ApplicationConnection(in_process.hub.runtime.hub, collector)
    try:
        await asyncio.gather(exchange(connection, collector, in_process.oracle, frames), in_process.sentinel.turn())
    finally:
        await connection.close()


# -- both endpoints over real sockets ----------------------------------------------


async def dial(url: str) -> ClientConnection:
    return await connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_size=None)


async def pump(socket: ClientConnection, receive: Callable[[bytes], Awaitable[None]]) -> None:
    """Hand every binary frame the hub sends to ``receive`` until the connection closes."""
    with contextlib.suppress(ConnectionClosed):
        async for frame in socket:
            assert isinstance(frame, bytes), "the hub sent a text frame"
            await receive(frame)


@dataclass
class Wired(Fuzzed):
    """A fuzzing hub with a node that must stay connected throughout."""

    steady: RawNode


@pytest.fixture
async def over_the_wire(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> AsyncIterator[Wired]:
    """A real server; the sentinel and a steady node use their own sockets; checked like ``in_process``."""
    async with running_hub(tmp_path, durability="NORMAL", echo_delay=0.0) as running:
        fuzzed = await prepare(running, interactions=True)
        sentinel_socket = await dial(running.app_url)
        reader = asyncio.create_task(pump(sentinel_socket, fuzzed.sentinel.inbox.receive))
        await fuzzed.sentinel.start(sentinel_socket.send)
        async with await RawNode.connect(running.node_url, "steady") as steady:
            handle = running.runtime.hub.nodes.get("steady")
            yield Wired(running, fuzzed.oracle, fuzzed.sentinel, steady)
            assert running.runtime.hub.nodes.get("steady") is handle, "the steady node was disturbed"
        await finish(fuzzed, caplog)
        await sentinel_socket.close()
        await reader


@settings(FUZZ_SETTINGS, max_examples=40)
@given(frames=st.lists(app_frames, min_size=1, max_size=8))
async def test_application_endpoint_answers_every_fuzzed_frame(over_the_wire: Wired, frames: list[Frame]) -> None:
    """The same fuzzing over a real socket: each frame gets exactly its defined reply; others are undisturbed."""
    await asyncio.gather(exchange_over_the_wire(over_the_wire, frames), over_the_wire.sentinel.turn())


async def exchange_over_the_wire(wired: Wired, frames: list[Frame]) -> None:
    collector = Collector()
    socket = await dial(wired.hub.app_url)
    reader = asyncio.create_task(pump(socket, collector))
    expects: list[Expect] = []
    try:
        for index, frame in enumerate(frames):
            data = materialize(frame)
            expects.append(wired.oracle.expect(data, first=index == 0, fresh=frame.fresh))
            await socket.send(data)
            if expects[-1].closes:
                async with asyncio.timeout(TIMEOUT):
                    await reader
                assert socket.close_code == 1008, socket.close_code
                break
        expects = superseded(expects)
        async with asyncio.timeout(TIMEOUT):
            await collector.replies(expected_replies(expects))
        if not expects[-1].closes:
            # A ListEvents behind everything else: by its reply, any second reply would have shown up too.
            barrier = f"barrier-{next(_unique)}"
            request = chat_pb2.ListEventsRequest(session_id=FUZZ_SESSION, limit=1)
            await socket.send(envelope_bytes(protocol_pb2.ProtocolMessage(list_events_request=request), barrier))
            expects.append(outcomes(barrier, "list_events_response", ""))
            async with asyncio.timeout(TIMEOUT):
                await collector.replies(expected_replies(expects))
        assert_replies(expects, collector.frames)
    finally:
        await socket.close()
        await reader


# -- the node endpoint ------------------------------------------------------------------


def node_keeps(frame: bytes) -> bool:
    """Whether a node that sent ``frame`` after its hello stays connected (AOP 7.6).

    Dropped: a frame that is no envelope, a payload without the exact type URL, a namespace nodes
    do not speak, a payload that does not decode, a command catalog that does not decode.
    """
    envelope = decodes(envelope_pb2.Envelope, frame)
    if envelope is None or not envelope.HasField("payload"):
        return False
    url = envelope.payload.type_url
    name = url.removeprefix(TYPE_URL_PREFIX) if url.startswith(TYPE_URL_PREFIX) else ""
    if name == INTERACTION:
        return decodes(interaction_pb2.InteractionProtocolMessage, envelope.payload.value) is not None
    if name != CORE:
        return False
    message = decodes(protocol_pb2.ProtocolMessage, envelope.payload.value)
    if message is None:
        return False
    event = message.event
    if message.HasField("event") and not event.session_id and event.extension.type_url == CATALOG_URL:
        return decodes(agent_pb2.CommandCatalog, event.extension.value) is not None
    return True


# What a node might name: nothing of its own, the sentinel's session and turns (another node's).
node_session_ids = st.one_of(st.sampled_from(["", SENTINEL_SESSION, FUZZ_SESSION]), texts)
node_turn_ids = st.one_of(st.sampled_from(["", "sentinel-0", "sentinel-1"]), texts)
node_events = st.builds(
    lambda session_id, turn_id, payload: event_pb2.Event(session_id=session_id, turn_id=turn_id, **payload),
    node_session_ids,
    node_turn_ids,
    st.one_of(
        st.just({}),
        texts.map(lambda text: {"message": content_pb2.Message(role="assistant", content=[text_content(text)])}),
        texts.map(lambda text: {"message_delta": event_pb2.MessageDelta(text=text)}),
        texts.map(lambda text: {"turn_ended": event_pb2.TurnEnded(stop_reason=text)}),
        st.sampled_from(["session_started", "session_ended", "turn_started"]).map(
            lambda kind: {kind: getattr(event_pb2, "".join(part.title() for part in kind.split("_")))()}
        ),
        texts.map(lambda text: {"tool_result": content_pb2.ToolResult(call_id=text)}),
        st.one_of(st.binary(max_size=24), st.just(agent_pb2.CommandCatalog().SerializeToString())).map(
            lambda value: {"extension": any_pb2.Any(type_url=CATALOG_URL, value=value)}
        ),
        st.builds(lambda url, value: {"extension": any_pb2.Any(type_url=url, value=value)}, type_urls, st.binary()),
    ),
)
node_interactions = st.builds(
    lambda interaction_id, session_id, turn_id, kind: interaction_pb2.InteractionProtocolMessage(
        requested=interaction_pb2.Interaction(id=interaction_id, session_id=session_id, turn_id=turn_id, kind=kind)
    ),
    texts,
    node_session_ids,
    node_turn_ids,
    st.integers(min_value=0, max_value=3),
)


@st.composite
def node_message_frames(draw: st.DrawFn) -> Frame:
    """A well-formed envelope with something a node might send (or must not)."""
    message: Message = draw(
        st.one_of(
            node_events.map(lambda event: protocol_pb2.ProtocolMessage(event=event)),
            core_messages,
            node_interactions,
            interaction_messages,
        )
    )
    return Frame(envelope_bytes(message, draw(envelope_ids), reply_to=draw(node_turn_ids)))


@st.composite
def damaged_node_frames(draw: st.DrawFn) -> Frame:
    data = draw(node_message_frames()).data
    return Frame(data[: draw(st.integers(min_value=0, max_value=max(len(data) - 1, 0)))])


node_frames = st.one_of(
    node_message_frames(),
    node_message_frames(),
    node_message_frames(),
    junk_envelopes(),
    damaged_node_frames(),
    st.binary(max_size=64).map(Frame),
)


async def probe(node: RawNode) -> None:
    """A round trip on the node's channel: an interaction the hub refuses, answered ``resolved``."""
    interaction = interaction_pb2.Interaction(
        id="probe", session_id="no-such-session", turn_id="t", kind=interaction_pb2.INTERACTION_KIND_APPROVAL
    )
    envelope_id = await node.send(interaction_pb2.InteractionProtocolMessage(requested=interaction))
    await node.wait_for(lambda item: item.envelope.reply_to == envelope_id)


async def fuzz_node(wired: Wired, frames: list[Frame]) -> None:
    """One node connection sending ``frames``: dropped (1008) at the first offending frame, else still served."""
    node_id = f"fuzz-node-{next(_unique)}"
    hub = wired.hub.runtime.hub
    async with await RawNode.connect(wired.hub.node_url, node_id) as node:
        for frame in frames:
            await node.send_frame(frame.data)
            if not node_keeps(frame.data):
                code, reason = await node.closed()
                assert code == 1008, (code, reason)
                assert reason
                assert hub.nodes.get(node_id) is None
                return
        await probe(node)
        assert hub.nodes.get(node_id) is not None


@settings(FUZZ_SETTINGS, max_examples=40)
@given(frames=st.lists(node_frames, min_size=1, max_size=6))
async def test_node_endpoint_drops_only_the_offending_node(over_the_wire: Wired, frames: list[Frame]) -> None:
    """Random frames from a node after its hello: a bad one drops that node (1008); nothing else is affected."""
    await asyncio.gather(fuzz_node(over_the_wire, frames), over_the_wire.sentinel.turn())


@st.composite
def hellos(draw: st.DrawFn) -> Frame:
    """An agent_hello with or without a node id (made unique when sent), in a well-formed envelope."""
    node_id = draw(st.one_of(st.just(""), texts.map(lambda text: f"fuzz-hello{text}")))
    hello = protocol_pb2.AgentHello(node_id=node_id, name=draw(texts), capabilities=draw(st.lists(texts, max_size=3)))
    return Frame(envelope_bytes(protocol_pb2.ProtocolMessage(agent_hello=hello), draw(envelope_ids)))


def unique_node(frame: bytes) -> bytes:
    """``frame`` with a hello's non-empty node id made unique (a hello never replaces another test node)."""
    envelope = decodes(envelope_pb2.Envelope, frame)
    if envelope is None or envelope.payload.type_url != TYPE_URL_PREFIX + CORE:
        return frame
    message = decodes(protocol_pb2.ProtocolMessage, envelope.payload.value)
    if message is None or not message.agent_hello.node_id:
        return frame
    message.agent_hello.node_id = f"{next(_unique)}-{message.agent_hello.node_id}"
    envelope.payload.CopyFrom(pack(message))
    return envelope.SerializeToString()


@settings(FUZZ_SETTINGS, max_examples=30)
@given(first=st.one_of(hellos(), hellos(), node_frames))
async def test_node_endpoint_refuses_every_fuzzed_first_frame(over_the_wire: Wired, first: Frame) -> None:
    """A first frame that is not an agent_hello with a node id closes the connection (1008); a hello is accepted."""
    data = unique_node(first.data)
    envelope = decodes(envelope_pb2.Envelope, data)
    message = decodes(protocol_pb2.ProtocolMessage, envelope.payload.value) if envelope else None
    hello = message.agent_hello if message is not None else None
    welcome = (
        envelope is not None
        and envelope.payload.type_url == TYPE_URL_PREFIX + CORE
        and hello is not None
        and bool(hello.node_id)
    )
    async with await RawNode.dial(over_the_wire.hub.node_url, "unnamed") as node:
        await node.send_frame(data)
        if welcome:
            assert envelope is not None
            assert hello is not None
            accepted = await node.wait_for(lambda item: item.case == "agent_accepted")
            assert accepted.envelope.reply_to == envelope.id
            assert over_the_wire.hub.runtime.hub.nodes.get(hello.node_id) is not None
        else:
            code, reason = await node.closed()
            assert code == 1008, (code, reason)
            assert reason
    await over_the_wire.sentinel.turn()
