"""What the fuzz tests expect back: the spec's answer to a frame, predicted from its bytes alone.

:class:`Oracle` predicts the application endpoint's reply (AOP sections 2, 4 and 5);
:func:`assert_replies` pairs the replies a connection got with the predictions;
:func:`node_keeps` says whether the node endpoint keeps a node that sent a frame (AOP 7.6). They
are written from the spec, not from the hub's code.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aop import chat_pb2, envelope_pb2, protocol_pb2
from aophub.hub.request_checks import MAX_ID_BYTES
from aophub.protocol.codec import TYPE_URL_PREFIX
from aophub.v1 import extensions_pb2, interaction_pb2, scan_pb2

from .fuzz_frames import CORE, INTERACTION, MAX_CURSOR, ONLINE_NODE, SCAN, TURN_OPTIONS_URL, decodes

__all__ = [
    "Expect",
    "Oracle",
    "assert_replies",
    "node_keeps",
    "outcome",
    "outcomes",
    "required_replies",
    "superseded",
]

MUTATING = {
    "open_session_request": "open_session_response",
    "run_turn_request": "run_turn_response",
    "cancel_turn_request": "cancel_turn_response",
    "close_session_request": "close_session_response",
}


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


@dataclass(frozen=True)
class Oracle:
    """Predicts the application endpoint's reply to one frame, from AOP sections 2, 4 and 5.

    ``sessions`` maps the session ids that exist to whether they are closed; every other id is
    unknown. ``products`` says whether the hub serves the product namespaces
    ``aophub.v1.InteractionProtocolMessage`` and ``aophub.v1.ScanProtocolMessage`` (the real app
    does; a bare ``ApplicationConnection`` does not). No interaction or scan exists.
    """

    sessions: Mapping[str, bool]
    products: bool

    def expect(self, frame: bytes, *, first: bool, fresh: bool) -> Expect:
        """What the hub must answer ``frame``, the ``first`` of its connection; ``fresh``: its id was never used."""
        envelope = decodes(envelope_pb2.Envelope, frame)
        if envelope is None:
            return protocol_error("", "INVALID_PAYLOAD")
        key = envelope.id
        url = envelope.payload.type_url
        name = url.removeprefix(TYPE_URL_PREFIX) if url.startswith(TYPE_URL_PREFIX) else ""
        if not envelope.HasField("payload") or not name or "/" in name:
            return protocol_error(key, "INVALID_PAYLOAD")
        if name == INTERACTION and self.products:
            return self._interaction(key, envelope.payload.value, fresh)
        if name == SCAN and self.products:
            return self._scan(key, envelope.payload.value)
        if name != CORE:
            return protocol_error(key, "UNSUPPORTED_NAMESPACE")
        return self._core(key, envelope.payload.value, first=first, fresh=fresh)

    def _core(self, key: str, value: bytes, *, first: bool, fresh: bool) -> Expect:
        message = decodes(protocol_pb2.ProtocolMessage, value)
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
        if validity is False or (validity is None and codes):
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
        return outcomes(key, "answer_response", "NOT_FOUND" if fresh else "*")

    def _scan(self, key: str, value: bytes) -> Expect:
        message = decodes(scan_pb2.ScanProtocolMessage, value)
        if message is None:
            return protocol_error(key, "INVALID_PAYLOAD")
        if message.WhichOneof("message") != "watch_scan_request":
            return protocol_error(key, "UNSUPPORTED_MESSAGE")
        # The watch is refused in a ScanProtocolMessage: no scan exists; the cursor may be bad too.
        request = message.watch_scan_request
        codes = {"NOT_FOUND" if request.scan_id else "INVALID_ARGUMENT"}
        if cursor_validity(request.after_cursor) is not True:
            codes.add("INVALID_ARGUMENT")
        return outcomes(key, "scan_rejected", *codes)


def outcome(frame: bytes) -> tuple[str, str] | None:
    """``(reply_to, "<case>:<code>")`` of a frame the hub sent, or None for an event delivery."""
    envelope = envelope_pb2.Envelope.FromString(frame)
    url = envelope.payload.type_url
    if url == TYPE_URL_PREFIX + SCAN:
        scan = scan_pb2.ScanProtocolMessage.FromString(envelope.payload.value)
        if scan.WhichOneof("message") != "rejected":
            return None  # a watch's snapshot, update or event
        assert scan.rejected.message, scan
        return envelope.reply_to, f"scan_rejected:{scan.rejected.code}"
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


def required_replies(expects: Iterable[Expect]) -> Counter[str]:
    """How many replies must come to each envelope id.

    Per id, not in all: an optional reply that came (a watch refused rather than served) must not
    stand in for a required one to another id that has not come yet.
    """
    return Counter(expect.reply_to for expect in expects if expect.reply_to is not None and not expect.optional)


def node_keeps(frame: bytes) -> bool:
    """Whether a node that sent ``frame`` after its hello stays connected (AOP-nodes 9.1.6).

    Dropped: only a frame that is no envelope, or one whose envelope id is longer than ids may be.
    A namespace nodes do not speak, a payload that does not decode and an extension that does not
    decode are answered in-band, and the node stays.
    """
    envelope = decodes(envelope_pb2.Envelope, frame)
    return envelope is not None and len(envelope.id.encode()) <= MAX_ID_BYTES
