"""The aophub.v1 extensions decoded (aophub.protocol.extensions): TurnOptions and CommandCatalog."""

from __future__ import annotations

import pytest
from google.protobuf import any_pb2

from aop import chat_pb2
from aophub.protocol.codec import pack
from aophub.protocol.errors import Code, HubError
from aophub.protocol.extensions import TURN_OPTIONS_URL, command_catalog, turn_options
from aophub.v1 import agent_pb2, extensions_pb2

UNDECODABLE = b"\xff"  # a tag whose varint never ends


def run_request(*extensions: any_pb2.Any) -> chat_pb2.RunTurnRequest:
    return chat_pb2.RunTurnRequest(session_id="s1", extensions=extensions)


def test_turn_options_default_when_absent() -> None:
    """A request without the extension gets default TurnOptions."""
    assert turn_options(run_request()) == extensions_pb2.TurnOptions()


def test_turn_options_decoded_and_other_extensions_ignored() -> None:
    """The TurnOptions extension is decoded; extensions of other types are left alone."""
    options = extensions_pb2.TurnOptions(policy=extensions_pb2.TURN_POLICY_ENQUEUE, max_tokens=50)
    other = any_pb2.Any(type_url="type.googleapis.com/example.Other", value=UNDECODABLE)
    assert turn_options(run_request(other, pack(options))) == options


def test_turn_options_repeated_last_one_wins() -> None:
    """Of two TurnOptions extensions the last one counts, whole."""
    first = extensions_pb2.TurnOptions(regenerate=True)
    last = extensions_pb2.TurnOptions(system_prompt="Speak French.")
    assert turn_options(run_request(pack(first), pack(last))) == last


def test_turn_options_that_do_not_decode_are_invalid_argument() -> None:
    """Undecodable TurnOptions raise HubError INVALID_ARGUMENT, never protobuf's DecodeError."""
    with pytest.raises(HubError) as caught:
        turn_options(run_request(any_pb2.Any(type_url=TURN_OPTIONS_URL, value=UNDECODABLE)))
    assert caught.value.code is Code.INVALID_ARGUMENT
    assert caught.value.message == "extension aophub.v1.TurnOptions does not decode"


def test_command_catalog_decoded() -> None:
    """A packed CommandCatalog decodes to its commands."""
    catalog = agent_pb2.CommandCatalog(commands=[agent_pb2.Command(name="reset", description="start over")])
    assert command_catalog(pack(catalog)) == catalog


def test_command_catalog_that_does_not_decode_is_invalid_payload() -> None:
    """An undecodable CommandCatalog raises HubError INVALID_PAYLOAD."""
    packed = any_pb2.Any(type_url="type.googleapis.com/aophub.v1.CommandCatalog", value=UNDECODABLE)
    with pytest.raises(HubError) as caught:
        command_catalog(packed)
    assert caught.value.code is Code.INVALID_PAYLOAD
    assert caught.value.message == "the aophub.v1.CommandCatalog does not decode"
