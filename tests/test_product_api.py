"""The aophub.v1 product API keeps its conventions on every service.

- read-only methods (Get*, List*, TestConnection) are marked NO_SIDE_EFFECTS, so
  Connect clients may use HTTP GET for them and retry them freely;
- every other method mutates: its request carries ``request_id`` (the
  idempotency key) and its response an ``outcome`` oneof of ``accepted`` and
  ``rejected`` (aop.Rejection), except the documented exceptions;
- views returned to clients never carry a secret.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FileDescriptor, MethodDescriptor

import aophub.v1

# Mutating calls whose idempotency does not come from request_id:
# SyncArtifacts deduplicates by event id; TestLLM and ListModels only probe an
# endpoint and change nothing in the hub. RunCommand is a slash command, which AOP-nodes 9.7.2
# does not journal (a repeated request runs it again); its refusals are Connect codes. CreateToken
# and RevokeToken take the token's name as their key (a journaled CreateToken response would keep
# the token's secret in clear), and refuse with Connect codes. SummarizeSession runs the command
# /summarize exactly as RunCommand does.
NOT_JOURNALED = {
    "SyncArtifacts",
    "TestLLM",
    "ListModels",
    "RunCommand",
    "SummarizeSession",
    "CreateToken",
    "RevokeToken",
}
READ_ONLY_PREFIXES = ("Get", "List")
READ_ONLY_EXTRA = {"TestConnection", "SearchMemory"}


def files() -> list[FileDescriptor]:
    return [
        importlib.import_module(f"aophub.v1.{module.name}").DESCRIPTOR
        for module in pkgutil.iter_modules(aophub.v1.__path__)
        if module.name.endswith("_pb2")
    ]


def methods() -> list[MethodDescriptor]:
    return [method for file in files() for service in file.services_by_name.values() for method in service.methods]


def is_read_only(method: MethodDescriptor) -> bool:
    return method.name in READ_ONLY_EXTRA or (
        method.name.startswith(READ_ONLY_PREFIXES) and method.name not in NOT_JOURNALED
    )


def idempotency_level(method: MethodDescriptor) -> int:
    options = descriptor_pb2.MethodOptions.FromString(method.GetOptions().SerializeToString())
    return options.idempotency_level


def test_every_service_of_the_design_exists() -> None:
    """The services named by DESIGN.md, plus interaction answers, are defined."""
    services = {service.name for file in files() for service in file.services_by_name.values()}
    assert services == {
        "SessionService",
        "ScanService",
        "ConfigService",
        "AgentService",
        "SystemService",
        "ArtifactService",
        "InteractionService",
        "TokenService",
        "MemoryService",
        "SkillService",
        "SubagentService",
    }


@pytest.mark.parametrize("method", methods(), ids=lambda m: m.full_name)
def test_method_conventions(method: MethodDescriptor) -> None:
    """Read-only methods have no side effects; mutating ones are journaled with outcomes; watches only stream."""
    if method.name.startswith("Watch"):
        # A watch is read-only and streams what changes; no request id, nothing to journal.
        assert method.server_streaming
        assert not method.client_streaming
        assert "request_id" not in method.input_type.fields_by_name
        return
    assert not method.server_streaming
    if is_read_only(method):
        assert idempotency_level(method) == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS
        return
    assert idempotency_level(method) == descriptor_pb2.MethodOptions.IDEMPOTENCY_UNKNOWN
    if method.name in NOT_JOURNALED:
        return
    assert "request_id" in method.input_type.fields_by_name
    outcome = method.output_type.oneofs_by_name["outcome"]
    assert {field.name for field in outcome.fields} == {"accepted", "rejected"}
    rejected = method.output_type.fields_by_name["rejected"].message_type
    assert rejected is not None
    assert rejected.full_name == "aop.Rejection"


SECRET_FIELDS = {"api_key", "token", "secret", "password"}
# The one response that carries a secret, by design: a new token's, shown once.
SHOWN_ONCE = {"aophub.v1.TokenService.CreateToken: aophub.v1.CreateTokenResponse.secret"}


def reachable(descriptor: Descriptor, seen: set[str]) -> set[str]:
    """Full names of ``descriptor`` and every message and field reachable from it."""
    if descriptor.full_name in seen:
        return seen
    seen.add(descriptor.full_name)
    for field in descriptor.fields:
        seen.add(f"{descriptor.full_name}.{field.name}")
        if field.message_type is not None:
            reachable(field.message_type, seen)
    return seen


def test_no_secret_reaches_a_client() -> None:
    """No response message reaches a field named like a secret (only *_configured flags)."""
    leaking = []
    for method in methods():
        leaking += [
            f"{method.full_name}: {name}"
            for name in reachable(method.output_type, set())
            if name.rpartition(".")[2] in SECRET_FIELDS
        ]
    assert leaking == sorted(SHOWN_ONCE)


def test_ws_namespaces_and_extensions_exist() -> None:
    """The application-channel namespaces and request extensions are defined."""
    names = {message.full_name for file in files() for message in file.message_types_by_name.values()}
    assert {
        "aophub.v1.ScanProtocolMessage",
        "aophub.v1.InteractionProtocolMessage",
        "aophub.v1.TurnOptions",
        "aophub.v1.ClientTools",
    } <= names


def test_oneofs_are_numbered_after_other_fields() -> None:
    """Go writes real oneof fields last; numbering them last keeps every encoder in number order."""
    misordered = []
    for file in files():
        for message in file.message_types_by_name.values():
            # proto3 `optional` fields sit in a synthetic oneof named "_<field>"; they are plain fields.
            plain = [
                f.number
                for f in message.fields
                if f.containing_oneof is None or f.containing_oneof.name == f"_{f.name}"
            ]
            in_oneof = [f.number for f in message.fields if f.number not in plain]
            if plain and in_oneof and min(in_oneof) < max(plain):
                misordered.append(message.full_name)
    assert misordered == []
