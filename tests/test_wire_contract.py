"""The generated ``aop`` schema matches the AOP wire contract, field by field.

The contract lists every message of package ``aop`` and its sub-namespaces with
field numbers, names, types, oneofs and reserved numbers. Other AOP
implementations are built from the same listing, so a single difference breaks
interoperability. ``testdata/wire_contract.json`` holds that listing as data
(``tests/support/wire_contract.py``); these tests compare it with the
descriptors of the generated Python code, and, where the spec itself is beside
the checkout (development machines and CI), check that the stored listing still
equals the spec.
"""

from __future__ import annotations

import importlib

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor

from tests.support.wire_contract import LISTING, SPEC, Contract, Field, load_listing, parse_spec, to_json

SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64",
}


def describe_type(field: FieldDescriptor) -> str:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        return f"map<{describe_type(key)},{describe_type(value)}>"
    if field.message_type is not None:
        base = field.message_type.full_name
    elif field.enum_type is not None:
        base = field.enum_type.full_name
    else:
        base = SCALARS[field.type]
    return f"repeated {base}" if field.is_repeated else base


def describe_fields(descriptor: Descriptor) -> frozenset[Field]:
    return frozenset(
        Field(
            field.number,
            field.name,
            describe_type(field),
            field.containing_oneof.name if field.containing_oneof else "",
        )
        for field in descriptor.fields
    )


def file_proto(descriptor: FileDescriptor) -> descriptor_pb2.FileDescriptorProto:
    return descriptor_pb2.FileDescriptorProto.FromString(descriptor.serialized_pb)


def reserved_numbers(descriptor: Descriptor) -> frozenset[int]:
    """Reserved field numbers; the descriptor API has none, the file proto has them."""
    message_proto = next(m for m in file_proto(descriptor.file).message_type if m.name == descriptor.name)
    return frozenset(n for r in message_proto.reserved_range for n in range(r.start, r.end))


def load_file(proto_path: str) -> FileDescriptor:
    module = importlib.import_module(proto_path.removesuffix(".proto").replace("/", ".") + "_pb2")
    descriptor: FileDescriptor = module.DESCRIPTOR
    return descriptor


@pytest.fixture(scope="module")
def spec() -> Contract:
    return load_listing()


def test_stored_listing_equals_the_spec() -> None:
    """The listing in testdata is the spec's schema section, unchanged (where the spec is present)."""
    if not SPEC.exists():
        pytest.skip(f"the AOP spec is not beside this checkout ({SPEC}); the stored listing is used")
    assert LISTING.read_text() == to_json(parse_spec(SPEC.read_text())), (
        "the spec's schema changed: rewrite testdata/wire_contract.json (see tests/support/wire_contract.py)"
    )


def test_stored_listing_round_trips() -> None:
    """Loading and writing the stored listing gives the same text, so nothing in it is ignored."""
    assert to_json(load_listing()) == LISTING.read_text()


def all_messages(files: dict[str, str]) -> dict[str, Descriptor]:
    found: dict[str, Descriptor] = {}
    for proto_path in files:
        for descriptor in load_file(proto_path).message_types_by_name.values():
            found[descriptor.full_name] = descriptor
    return found


def all_enums(files: dict[str, str]) -> dict[str, EnumDescriptor]:
    found: dict[str, EnumDescriptor] = {}
    for proto_path in files:
        for descriptor in load_file(proto_path).enum_types_by_name.values():
            found[descriptor.full_name] = descriptor
    return found


def test_spec_listing_is_parsed_completely(spec: Contract) -> None:
    """The parser finds every file, message and enum the contract lists."""
    messages, enums, files = spec.messages, spec.enums, spec.files
    assert len(files) == 9
    assert len(messages) >= 60
    assert {e.name for e in enums} == {"DeltaOperation", "Direction", "Stream"}


def test_files_declare_the_contract_packages(spec: Contract) -> None:
    """Each proto file of the contract exists under the same path and package."""
    files = spec.files
    for proto_path, package in files.items():
        assert load_file(proto_path).package == package, proto_path


def test_no_message_is_missing_or_extra(spec: Contract) -> None:
    """The generated files define exactly the messages the contract lists."""
    messages, files = spec.messages, spec.files
    assert set(all_messages(files)) == {f"{m.package}.{m.name}" for m in messages}


def test_every_message_matches_field_by_field(spec: Contract) -> None:
    """Numbers, names, types, oneofs and reserved numbers are exactly as listed."""
    messages, files = spec.messages, spec.files
    generated = all_messages(files)
    mismatches: list[tuple[str, object]] = []
    for message in messages:
        descriptor = generated[f"{message.package}.{message.name}"]
        actual = describe_fields(descriptor)
        if actual != message.fields:
            mismatches.append((message.name, sorted(actual ^ message.fields, key=lambda f: f.number)))
        if reserved_numbers(descriptor) != message.reserved:
            mismatches.append((message.name, ("reserved", sorted(reserved_numbers(descriptor)))))
    assert mismatches == []


def test_every_enum_matches(spec: Contract) -> None:
    """Enum value names and numbers are exactly as listed."""
    enums, files = spec.enums, spec.files
    generated = all_enums(files)
    assert set(generated) == {f"{e.package}.{e.name}" for e in enums}
    for enum in enums:
        descriptor = generated[f"{enum.package}.{enum.name}"]
        assert tuple((v.name, v.number) for v in descriptor.values) == enum.values


def test_proto3_everywhere(spec: Contract) -> None:
    """Every contract file is proto3 (implicit presence, packed repeated scalars)."""
    files = spec.files
    for proto_path in files:
        assert file_proto(load_file(proto_path)).syntax == "proto3", proto_path
