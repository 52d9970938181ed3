"""Python produces exactly the committed golden wire vectors."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from aop import envelope_pb2, event_pb2
from tests.golden.builders import GOLDEN_DIR, VECTORS, serialize, to_json

TYPES: dict[str, type[Message]] = {"aop.Envelope": envelope_pb2.Envelope, "aop.Event": event_pb2.Event}
INDEX = json.loads((GOLDEN_DIR / "index.json").read_text())["vectors"]


def test_index_lists_every_builder() -> None:
    """The committed index and the builders name the same vectors."""
    assert [entry["name"] for entry in INDEX] == list(VECTORS)


def test_every_event_payload_kind_has_a_vector() -> None:
    """Each case of Event.payload appears in at least one vector."""
    kinds = {VECTORS[name]().WhichOneof("payload") for name in VECTORS if name.startswith("event_")}
    assert kinds == {field.name for field in event_pb2.Event.DESCRIPTOR.oneofs_by_name["payload"].fields}


@pytest.mark.parametrize("entry", INDEX, ids=[entry["name"] for entry in INDEX])
def test_vector(entry: dict[str, str]) -> None:
    """Binary, base64 and ProtoJSON match the files, and both files parse back."""
    name = entry["name"]
    built = VECTORS[name]()
    assert built.DESCRIPTOR.full_name == entry["type"]
    golden = (GOLDEN_DIR / f"{name}.bin").read_bytes()

    assert serialize(built) == golden
    assert (GOLDEN_DIR / f"{name}.b64").read_text().strip() == base64.b64encode(golden).decode()
    golden_json = json.loads((GOLDEN_DIR / f"{name}.json").read_text())
    assert to_json(built) == golden_json

    message_type = TYPES[entry["type"]]
    assert message_type.FromString(golden) == built
    # An Any parsed from JSON is re-packed without deterministic map order, so
    # this direction compares through ProtoJSON rather than bytes.
    assert to_json(json_format.ParseDict(golden_json, message_type())) == golden_json
