"""What the fuzz tests send: frames for both AOP endpoints, well-formed or not, as hypothesis strategies.

Requests name a small world the tests set up (:data:`FUZZ_SESSION` open on the built-in node,
:data:`CLOSED_SESSION` closed, nothing else), so that most get past their argument checks; the
rest is junk: random bytes, envelopes with any type URL and payload (often another message's),
well-formed frames truncated or with one byte changed, payloads of a few dozen KiB.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError, Message
from hypothesis import strategies as st

from aop import chat_pb2, content_pb2, envelope_pb2, event_pb2, protocol_pb2
from aophub.protocol.codec import TYPE_URL_PREFIX, pack
from aophub.v1 import agent_pb2, extensions_pb2, interaction_pb2, scan_pb2

__all__ = [
    "CATALOG_URL",
    "CLOSED_SESSION",
    "CORE",
    "FUZZ_SESSION",
    "INTERACTION",
    "MAX_CURSOR",
    "ONLINE_NODE",
    "SCAN",
    "SENTINEL_SESSION",
    "TURN_OPTIONS_URL",
    "Frame",
    "app_frames",
    "decodes",
    "envelope_bytes",
    "hellos",
    "materialize",
    "node_frames",
    "text_content",
    "unique",
    "unique_node",
]

CORE = "aop.ProtocolMessage"
INTERACTION = "aophub.v1.InteractionProtocolMessage"
SCAN = "aophub.v1.ScanProtocolMessage"
TURN_OPTIONS_URL = TYPE_URL_PREFIX + "aophub.v1.TurnOptions"
CATALOG_URL = TYPE_URL_PREFIX + "aophub.v1.CommandCatalog"
ONLINE_NODE = "local"
FUZZ_SESSION = "fuzz-open"  # open on the built-in node; the fuzzer runs turns in it
CLOSED_SESSION = "fuzz-closed"  # closed before the fuzzing starts
# The sentinel's session: applications never name it; fuzzed nodes do, and must not touch it.
SENTINEL_SESSION = "sentinel"
RESERVED = frozenset({FUZZ_SESSION, CLOSED_SESSION, SENTINEL_SESSION, ONLINE_NODE})
MAX_CURSOR = 2**63 - 1

M = TypeVar("M", bound=Message)
_unique = itertools.count(1)


def decodes(message_type: type[M], data: bytes) -> M | None:
    try:
        return message_type.FromString(data)
    except DecodeError:
        return None


def unique() -> int:
    """A number never returned before in this process (for ids that must be new)."""
    return next(_unique)


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
        envelope.id = f"{unique()}~{envelope.id}"
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
            TYPE_URL_PREFIX + SCAN,
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


scan_messages = st.one_of(
    st.builds(
        lambda scan_id, cursor: scan_pb2.ScanProtocolMessage(
            watch_scan_request=scan_pb2.WatchScanRequest(scan_id=scan_id, after_cursor=cursor)
        ),
        st.one_of(st.just(""), texts),
        cursors,
    ),
    st.sampled_from(["snapshot", "update", "event", "rejected"]).map(
        lambda case: scan_pb2.ScanProtocolMessage(**{case: {}})
    ),
    st.just(scan_pb2.ScanProtocolMessage()),
)


@st.composite
def request_frames(draw: st.DrawFn) -> Frame:
    """A well-formed envelope with a core or product message (its id made unique when sent)."""
    message: Message = draw(st.one_of(core_messages, core_messages, interaction_messages, scan_messages))
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


# -- nodes ----------------------------------------------------------------------


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
    message.agent_hello.node_id = f"{unique()}-{message.agent_hello.node_id}"
    envelope.payload.CopyFrom(pack(message))
    return envelope.SerializeToString()
