"""The AOP schema listing as data: parsed from the contract, stored in the repository.

The contract (section 3 of the AOP wire spec, kept in the shared folder beside a
development checkout) lists every message of package ``aop`` and its
sub-namespaces with field numbers, names, types, oneofs and reserved numbers.
``testdata/wire_contract.json`` holds that listing as data, so the contract test
runs from a plain clone; where the spec is present, a test checks that the
stored listing still equals it.

The reference agent nodes' namespaces (``aiscan.command``, ``aiscan.reload``
and the ``aiscan.config`` subset reload carries, AOP-nodes 9.0.2/9.0.3) are a
second listing in the same format, ``testdata/wire_contract_nodes.json``, with
their third-generation twins under ``cyber`` (9.0.5: the same layouts). A field
whose type is a message of the same package that the spec does not list (the
product settings of ``DistributeConfig``, 2-7) is reserved in aophub's schema,
so the stored listing has it as a reserved number.

The workspace namespaces (``aop.file``, ``aop.exec``, ``aop.pty``, AOP-workspace 8.0) are a third
listing, ``testdata/wire_contract_workspace.json``: the pty listing is there only, and the file and
exec listings must agree with the core spec's.

Rewrite the stored listings (only when the contract itself changed)::

    python -m tests.support.wire_contract ../shared/spec/AOP.md > testdata/wire_contract.json
    python -m tests.support.wire_contract --nodes ../shared/spec/AOP-nodes.md > testdata/wire_contract_nodes.json
    python -m tests.support.wire_contract --workspace ../shared/spec/AOP-workspace.md \
        > testdata/wire_contract_workspace.json
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LISTING",
    "NODES_LISTING",
    "NODES_SPEC",
    "SPEC",
    "WORKSPACE_LISTING",
    "WORKSPACE_SPEC",
    "Contract",
    "EnumSpec",
    "Field",
    "MessageSpec",
    "load_listing",
    "parse_nodes_spec",
    "parse_spec",
    "parse_workspace_spec",
]

ROOT = Path(__file__).resolve().parents[2]
LISTING = ROOT / "testdata" / "wire_contract.json"
SPEC = ROOT.parent / "shared" / "spec" / "AOP.md"
NODES_LISTING = ROOT / "testdata" / "wire_contract_nodes.json"
NODES_SPEC = ROOT.parent / "shared" / "spec" / "AOP-nodes.md"
WORKSPACE_LISTING = ROOT / "testdata" / "wire_contract_workspace.json"
WORKSPACE_SPEC = ROOT.parent / "shared" / "spec" / "AOP-workspace.md"
# Where aophub keeps each package of the nodes' listing (the spec names packages, not files).
NODE_FILES = {
    "aiscan.command": "aiscan/command/protocol.proto",
    "aiscan.reload": "aiscan/reload/protocol.proto",
    "aiscan.config": "aiscan/config/config.proto",
}
# The third schema generation renames the product packages and keeps their layouts (9.0.5).
GENERATIONS = {"aiscan": "cyber"}

SCALAR_NAMES = frozenset({"string", "bytes", "bool", "int32", "int64", "uint32", "uint64"})
WELL_KNOWN = {
    "Any": "google.protobuf.Any",
    "Timestamp": "google.protobuf.Timestamp",
    "Struct": "google.protobuf.Struct",
}


@dataclass(frozen=True, order=True)
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


@dataclass(frozen=True)
class Contract:
    messages: tuple[MessageSpec, ...]
    enums: tuple[EnumSpec, ...]
    files: dict[str, str]  # proto file -> package


def _split_top_level(body: str) -> list[str]:
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


def _normalize_type(type_: str, package: str) -> str:
    if type_.startswith("optional"):
        return "optional " + _normalize_type(type_.removeprefix("optional"), package)
    if type_.startswith("repeated"):
        return "repeated " + _normalize_type(type_.removeprefix("repeated"), package)
    if type_.startswith("map<"):
        key, value = type_[4:-1].split(",")
        return f"map<{_normalize_type(key, package)},{_normalize_type(value, package)}>"
    if type_ in SCALAR_NAMES:
        return type_
    if type_ in WELL_KNOWN:
        return WELL_KNOWN[type_]
    if "." in type_:
        return type_
    return f"{package}.{type_}"


def _parse_items(items: list[str], package: str, oneof: str, fields: set[Field], reserved: set[int]) -> None:
    for item in items:
        if item.startswith("oneof "):
            match = re.fullmatch(r"oneof (\w+) \{(.*)\}", item)
            assert match, item
            _parse_items(_split_top_level(match.group(2)), package, match.group(1), fields, reserved)
        elif item.startswith("reserved "):
            reserved.update(int(number) for number in re.findall(r"\d+", item))
        else:
            match = re.fullmatch(r"(\d+) (\w+): (.+)", item)
            assert match, item
            number, name, type_ = match.groups()
            fields.add(Field(int(number), name, _normalize_type(type_.replace(" ", ""), package), oneof))


def _message_line(line: str, package: str) -> MessageSpec | None:
    """The message a listing line such as ``- `Name` { 1 id: string; ... }`` defines, else None."""
    message = re.match(r"- `(\w+)` \{(.*)\}\s*$", line)
    if message is None:
        return None
    fields: set[Field] = set()
    reserved: set[int] = set()
    _parse_items(_split_top_level(message.group(2)), package, "", fields, reserved)
    return MessageSpec(package, message.group(1), frozenset(fields), frozenset(reserved))


def parse_spec(text: str) -> Contract:
    """The messages, enums and ``{proto file: package}`` of the spec's schema section."""
    return _parse_schema(text.split("## 3. Schema", 1)[1].split("## 4.", 1)[0])


def parse_workspace_spec(text: str) -> Contract:
    """The workspace namespaces ``aop.file``, ``aop.exec`` and ``aop.pty`` (AOP-workspace 8.0)."""
    return _parse_schema(text.split("## 8.0 Schema", 1)[1].split("## 8.1", 1)[0])


def _parse_schema(section: str) -> Contract:
    """The messages, enums and files of a schema section (``#### `file.proto` (package `p`...)`` headers)."""
    messages: list[MessageSpec] = []
    enums: list[EnumSpec] = []
    files: dict[str, str] = {}
    package = ""
    for line in section.splitlines():
        header = re.match(r"#### `([\w/]+\.proto)` \(package `([\w.]+)`[);]", line)
        if header:
            files[header.group(1)] = package = header.group(2)
            continue
        enum = re.match(r"- enum `(\w+)`: (.*)$", line)
        if enum:
            values = tuple((name, int(number)) for name, number in re.findall(r"(\w+)=(\d+)", enum.group(2)))
            enums.append(EnumSpec(package, enum.group(1), values))
            continue
        message = _message_line(line, package)
        if message is not None:
            messages.append(message)
    return Contract(tuple(messages), tuple(enums), files)


def _subset(message: MessageSpec, listed: set[str]) -> MessageSpec:
    """``message`` with each field whose type is an unlisted message of its own package turned reserved."""
    unlisted = {
        field for field in message.fields if field.type.startswith(message.package + ".") and field.type not in listed
    }
    return MessageSpec(
        message.package,
        message.name,
        message.fields - unlisted,
        message.reserved | {field.number for field in unlisted},
    )


def _renamed(message: MessageSpec, old: str, new: str) -> MessageSpec:
    def rename(name: str) -> str:
        return re.sub(rf"\b{old}\.", f"{new}.", name)

    return MessageSpec(
        rename(message.package),
        message.name,
        frozenset(Field(f.number, f.name, rename(f.type), f.oneof) for f in message.fields),
        message.reserved,
    )


def parse_nodes_spec(text: str) -> Contract:
    """The reference nodes' namespaces (AOP-nodes 9.0.2/9.0.3) as aophub defines them, in both generations."""
    section = text.split("### 9.0.2", 1)[1].split("### 9.0.4", 1)[0]
    listed: list[MessageSpec] = []
    package = ""
    for line in section.splitlines():
        header = re.search(r"\(package `([\w.]+)`", line) or re.match(r"Package `([\w.]+)`\.", line)
        if header:
            package = header.group(1)
            continue
        message = _message_line(line, package)
        if message is not None:
            listed.append(message)
    names = {f"{m.package}.{m.name}" for m in listed}
    second = [_subset(m, names) for m in listed]
    messages = second + [_renamed(m, old, new) for old, new in GENERATIONS.items() for m in second]
    files = {path: package for package, path in NODE_FILES.items()}
    for old, new in GENERATIONS.items():
        files |= {
            path.replace(f"{old}/", f"{new}/", 1): package.replace(old, new, 1) for package, path in NODE_FILES.items()
        }
    return Contract(tuple(messages), (), files)


def to_json(contract: Contract) -> str:
    """The stored form: stable order, one field or enum value per line, so a diff reads as the change."""
    dump = json.dumps
    lines = ["{", f' "files": {dump(contract.files)},', ' "enums": [']
    lines += [
        f'  {{"package": {dump(e.package)}, "name": {dump(e.name)}, "values": {dump([list(v) for v in e.values])}}}'
        + ("," if index < len(contract.enums) - 1 else "")
        for index, e in enumerate(contract.enums)
    ]
    lines += [" ],", ' "messages": [']
    for index, m in enumerate(contract.messages):
        fields = ",\n".join(f"    {dump([f.number, f.name, f.type, f.oneof])}" for f in sorted(m.fields))
        closing = "," if index < len(contract.messages) - 1 else ""
        lines.append(
            f'  {{"package": {dump(m.package)}, "name": {dump(m.name)}, "reserved": {dump(sorted(m.reserved))}, '
            f'"fields": [\n{fields}\n  ]}}{closing}'
        )
    lines += [" ]", "}"]
    return "\n".join(lines) + "\n"


def load_listing(path: Path = LISTING) -> Contract:
    """The listing stored in the repository."""
    data = json.loads(path.read_text())
    return Contract(
        messages=tuple(
            MessageSpec(
                m["package"],
                m["name"],
                frozenset(Field(number, name, type_, oneof) for number, name, type_, oneof in m["fields"]),
                frozenset(m["reserved"]),
            )
            for m in data["messages"]
        ),
        enums=tuple(
            EnumSpec(e["package"], e["name"], tuple((name, number) for name, number in e["values"]))
            for e in data["enums"]
        ),
        files=dict(data["files"]),
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--nodes"]:
        sys.stdout.write(to_json(parse_nodes_spec(Path(sys.argv[2] if len(sys.argv) > 2 else NODES_SPEC).read_text())))
    elif sys.argv[1:2] == ["--workspace"]:
        spec = Path(sys.argv[2] if len(sys.argv) > 2 else WORKSPACE_SPEC)
        sys.stdout.write(to_json(parse_workspace_spec(spec.read_text())))
    else:
        sys.stdout.write(to_json(parse_spec(Path(sys.argv[1] if len(sys.argv) > 1 else SPEC).read_text())))
