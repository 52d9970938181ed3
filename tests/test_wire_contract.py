"""The generated ``aop`` schema matches the AOP wire contract, field by field.

The contract lists every message of package ``aop`` and its sub-namespaces with
field numbers, names, types, oneofs and reserved numbers. Other AOP
implementations are built from the same listing, so a single difference breaks
interoperability. ``testdata/wire_contract.json`` holds that listing as data
(``tests/support/wire_contract.py``); these tests compare it with the
descriptors of the generated Python code, and, where the spec itself is beside
the checkout (development machines and CI), check that the stored listing still
equals the spec. The reference agent nodes' namespaces (``aiscan.command``,
``aiscan.reload``, ``aiscan.config`` and their ``cyber`` twins, AOP-nodes 9.0)
are a second listing, ``testdata/wire_contract_nodes.json``, checked the same way. The workspace
namespaces ``aop.file``, ``aop.exec`` and ``aop.pty`` (AOP-workspace 8.0) are a third,
``testdata/wire_contract_workspace.json``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor

from tests.support.wire_contract import (
    LISTING,
    NODES_LISTING,
    NODES_SPEC,
    SPEC,
    WORKSPACE_LISTING,
    WORKSPACE_SPEC,
    Contract,
    Field,
    load_listing,
    parse_nodes_spec,
    parse_spec,
    parse_workspace_spec,
    to_json,
)

# (stored listing, spec beside the checkout, the parser of the spec's section)
LISTINGS: dict[str, tuple[Path, Path, Callable[[str], Contract]]] = {
    "aop": (LISTING, SPEC, parse_spec),
    "nodes": (NODES_LISTING, NODES_SPEC, parse_nodes_spec),
    "workspace": (WORKSPACE_LISTING, WORKSPACE_SPEC, parse_workspace_spec),
}

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
    """The fields as the listing writes them; a proto3 ``optional`` is ``optional <type>`` outside any oneof."""
    optional = {field.name for field in message_proto(descriptor).field if field.proto3_optional}
    return frozenset(
        Field(
            field.number,
            field.name,
            f"optional {describe_type(field)}" if field.name in optional else describe_type(field),
            field.containing_oneof.name if field.containing_oneof and field.name not in optional else "",
        )
        for field in descriptor.fields
    )


def file_proto(descriptor: FileDescriptor) -> descriptor_pb2.FileDescriptorProto:
    return descriptor_pb2.FileDescriptorProto.FromString(descriptor.serialized_pb)


def message_proto(descriptor: Descriptor) -> descriptor_pb2.DescriptorProto:
    """The message as its file declares it (reserved ranges and proto3 ``optional`` are only there)."""
    return next(m for m in file_proto(descriptor.file).message_type if m.name == descriptor.name)


def reserved_numbers(descriptor: Descriptor) -> frozenset[int]:
    """Reserved field numbers; the descriptor API has none, the file proto has them."""
    return frozenset(n for r in message_proto(descriptor).reserved_range for n in range(r.start, r.end))


def load_file(proto_path: str) -> FileDescriptor:
    module = importlib.import_module(proto_path.removesuffix(".proto").replace("/", ".") + "_pb2")
    descriptor: FileDescriptor = module.DESCRIPTOR
    return descriptor


@pytest.fixture(scope="module", params=sorted(LISTINGS))
def spec(request: pytest.FixtureRequest) -> Contract:
    """Each stored listing in turn: the AOP core's and the reference nodes' namespaces."""
    listing, _, _ = LISTINGS[request.param]
    return load_listing(listing)


@pytest.mark.parametrize("which", sorted(LISTINGS))
def test_stored_listing_equals_the_spec(which: str) -> None:
    """The listing in testdata is the spec's schema section, unchanged (where the spec is present)."""
    listing, spec_path, parse = LISTINGS[which]
    if not spec_path.exists():
        pytest.skip(f"the spec is not beside this checkout ({spec_path}); the stored listing is used")
    assert listing.read_text() == to_json(parse(spec_path.read_text())), (
        f"the spec's schema changed: rewrite testdata/{listing.name} (see tests/support/wire_contract.py)"
    )


@pytest.mark.parametrize("which", sorted(LISTINGS))
def test_stored_listing_round_trips(which: str) -> None:
    """Loading and writing the stored listing gives the same text, so nothing in it is ignored."""
    listing, _, _ = LISTINGS[which]
    assert to_json(load_listing(listing)) == listing.read_text()


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


def test_spec_listing_is_parsed_completely() -> None:
    """The parser finds every file, message and enum the contract lists."""
    messages, enums, files = (contract := load_listing(LISTING)).messages, contract.enums, contract.files
    assert len(files) == 9
    assert len(messages) >= 60
    assert {e.name for e in enums} == {"DeltaOperation", "Direction", "Stream"}


def test_nodes_listing_is_parsed_completely() -> None:
    """Every message of 9.0.2 and 9.0.3 is listed, in both generations (9.0.5), the config as a subset."""
    contract = load_listing(NODES_LISTING)
    names = {f"{m.package}.{m.name}" for m in contract.messages}
    for generation in ("aiscan", "cyber"):
        assert {n for n in names if n.startswith(generation + ".")} == {
            f"{generation}.command.{name}"
            for name in ("CommandSpec", "CommandCatalog", "CommandRequest", "CommandResult", "CommandReceipt")
        } | {f"{generation}.command.CommandProtocolMessage"} | {
            f"{generation}.reload.{name}" for name in ("ReloadRequest", "ReloadResult", "ReloadProtocolMessage")
        } | {f"{generation}.config.{name}" for name in ("DistributeConfig", "LLMConfig", "LLMProviderConfig")}
        distribute = next(
            m for m in contract.messages if m.package == f"{generation}.config" and m.name == "DistributeConfig"
        )
        # Only llm (1) is defined; the product settings (2-7) are reserved: a hub leaves them unset (9.6.6).
        assert {f.number for f in distribute.fields} == {1}
        assert distribute.reserved == frozenset(range(2, 8))
    assert len(contract.files) == 6


def test_workspace_listing_is_parsed_completely() -> None:
    """8.0 lists the three workspace namespaces; its file and exec listings equal the core spec's."""
    workspace, core = load_listing(WORKSPACE_LISTING), load_listing(LISTING)
    assert workspace.files == {
        "aop/file/protocol.proto": "aop.file",
        "aop/exec/protocol.proto": "aop.exec",
        "aop/pty/protocol.proto": "aop.pty",
    }
    pty = {m.name for m in workspace.messages if m.package == "aop.pty"}
    assert len(pty) == 18
    assert {"Session", "Open", "Detached", "Kill", "Closed", "ProtocolMessage"} <= pty
    oneof = next(m for m in workspace.messages if m.package == "aop.pty" and m.name == "ProtocolMessage")
    assert sorted(f.number for f in oneof.fields) == list(range(10, 26))
    shared = {m for m in workspace.messages if m.package in ("aop.file", "aop.exec")}
    assert shared == {m for m in core.messages if m.package in ("aop.file", "aop.exec")}


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
