"""The generated ``aop`` schema matches the AOP wire contract, field by field.

The contract (``spec/AOP.md`` section 3, in the shared folder beside this
repository) lists every message of package ``aop`` and its sub-namespaces with
field numbers, names, types, oneofs and reserved numbers. Other AOP
implementations are built from the same listing, so a single difference breaks
interoperability. This test parses the listing and compares it with the
descriptors of the generated Python code.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "AOP.md"

SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64",
}
WELL_KNOWN = {
    "Any": "google.protobuf.Any",
    "Timestamp": "google.protobuf.Timestamp",
    "Struct": "google.protobuf.Struct",
}


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    type: str  # "string", "repeated aop.Content", "map<string,uint64>", ...
    oneof: str  # "" when not in a oneof


@dataclass(frozen=True)
class MessageSpec:
    package: str
    name: str
    fields: frozenset[Field]
    reserved: frozenset[int]


@dataclass(frozen=True)
class EnumSpec:
    package: str
    name: str
    values: tuple[tuple[str, int], ...]


def split_top_level(body: str) -> list[str]:
    """Split ``body`` on ';' that are not inside braces."""
    parts, depth, current = [], 0, ""
    for char in body:
        depth += char == "{"
        depth -= char == "}"
        if char == ";" and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def parse_items(items: list[str], package: str, oneof: str, fields: set[Field], reserved: set[int]) -> None:
    for item in items:
        if item.startswith("oneof "):
            match = re.fullmatch(r"oneof (\w+) \{(.*)\}", item)
            assert match, item
            parse_items(split_top_level(match.group(2)), package, match.group(1), fields, reserved)
        elif item.startswith("reserved "):
            reserved.update(int(number) for number in re.findall(r"\d+", item))
        else:
            match = re.fullmatch(r"(\d+) (\w+): (.+)", item)
            assert match, item
            number, name, type_ = match.groups()
            fields.add(Field(int(number), name, normalize_type(type_.replace(" ", ""), package), oneof))


def normalize_type(type_: str, package: str) -> str:
    if type_.startswith("repeated"):
        return "repeated " + normalize_type(type_.removeprefix("repeated"), package)
    if type_.startswith("map<"):
        key, value = type_[4:-1].split(",")
        return f"map<{normalize_type(key, package)},{normalize_type(value, package)}>"
    if type_ in SCALARS.values():
        return type_
    if type_ in WELL_KNOWN:
        return WELL_KNOWN[type_]
    if "." in type_:
        return type_
    return f"{package}.{type_}"


def parse_spec(text: str) -> tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]:
    """Return the messages, enums and ``{proto file: package}`` of section 3."""
    section = text.split("## 3. Schema", 1)[1].split("## 4.", 1)[0]
    messages, enums, files = [], [], {}
    package = ""
    for line in section.splitlines():
        header = re.match(r"#### `([\w/]+\.proto)` \(package `([\w.]+)`\)", line)
        if header:
            files[header.group(1)] = package = header.group(2)
            continue
        enum = re.match(r"- enum `(\w+)`: (.*)$", line)
        if enum:
            values = tuple((name, int(number)) for name, number in re.findall(r"(\w+)=(\d+)", enum.group(2)))
            enums.append(EnumSpec(package, enum.group(1), values))
            continue
        message = re.match(r"- `(\w+)` \{(.*)\}\s*$", line)
        if message:
            fields: set[Field] = set()
            reserved: set[int] = set()
            parse_items(split_top_level(message.group(2)), package, "", fields, reserved)
            messages.append(MessageSpec(package, message.group(1), frozenset(fields), frozenset(reserved)))
    return messages, enums, files


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
def spec() -> tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]:
    if not SPEC.exists():
        pytest.skip(f"the AOP spec is not beside this checkout ({SPEC})")
    return parse_spec(SPEC.read_text())


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


def test_spec_listing_is_parsed_completely(spec: tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]) -> None:
    """The parser finds every file, message and enum the contract lists."""
    messages, enums, files = spec
    assert len(files) == 9
    assert len(messages) >= 60
    assert {e.name for e in enums} == {"DeltaOperation", "Direction", "Stream"}


def test_files_declare_the_contract_packages(spec: tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]) -> None:
    """Each proto file of the contract exists under the same path and package."""
    _, _, files = spec
    for proto_path, package in files.items():
        assert load_file(proto_path).package == package, proto_path


def test_no_message_is_missing_or_extra(spec: tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]) -> None:
    """The generated files define exactly the messages the contract lists."""
    messages, _, files = spec
    assert set(all_messages(files)) == {f"{m.package}.{m.name}" for m in messages}


def test_every_message_matches_field_by_field(spec: tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]) -> None:
    """Numbers, names, types, oneofs and reserved numbers are exactly as listed."""
    messages, _, files = spec
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


def test_every_enum_matches(spec: tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]) -> None:
    """Enum value names and numbers are exactly as listed."""
    _, enums, files = spec
    generated = all_enums(files)
    assert set(generated) == {f"{e.package}.{e.name}" for e in enums}
    for enum in enums:
        descriptor = generated[f"{enum.package}.{enum.name}"]
        assert tuple((v.name, v.number) for v in descriptor.values) == enum.values


def test_proto3_everywhere(spec: tuple[list[MessageSpec], list[EnumSpec], dict[str, str]]) -> None:
    """Every contract file is proto3 (implicit presence, packed repeated scalars)."""
    _, _, files = spec
    for proto_path in files:
        assert file_proto(load_file(proto_path)).syntax == "proto3", proto_path
