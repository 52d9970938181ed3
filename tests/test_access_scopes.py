"""Scopes and principals (sans-I/O): what each scope grants, names, node patterns, refusals naming the scope."""

from __future__ import annotations

import pytest

from aophub.access.scopes import (
    ACCESS_KEY_PRINCIPAL,
    Principal,
    Scope,
    check_node_pattern,
    check_token_name,
    parse_scopes,
)
from aophub.protocol.errors import Code, HubError

# Scope held -> the needs it satisfies (admin: every one).
GRANTS = {
    Scope.ADMIN: {Scope.ADMIN, Scope.APP, Scope.READ, Scope.NODE, Scope.WORKSPACE, Scope.TERMINAL},
    Scope.APP: {Scope.APP, Scope.READ},
    Scope.READ: {Scope.READ},
    Scope.NODE: {Scope.NODE},
}


@pytest.mark.parametrize("held", sorted(GRANTS))
@pytest.mark.parametrize("need", sorted(Scope))
def test_each_scope_grants_exactly_its_needs(held: Scope, need: Scope) -> None:
    """admin grants everything, app includes read, read and node grant only themselves."""
    principal = Principal("t", frozenset({held}), node_id="n" if held is Scope.NODE else "")
    assert principal.allows(need) == (need in GRANTS[held])


def test_a_refusal_names_the_missing_scope_and_the_request() -> None:
    """require() raises PERMISSION_DENIED naming the scope and what was asked, never other tokens."""
    reader = Principal("dashboard", frozenset({Scope.READ}))
    with pytest.raises(HubError) as refused:
        reader.require(Scope.APP, "run_turn_request")
    assert refused.value.code is Code.PERMISSION_DENIED
    assert refused.value.message == "this token lacks the app scope needed for run_turn_request"


def test_the_access_key_is_an_admin_principal_never_revoked() -> None:
    """The access key's principal is called admin, holds admin and has no token id (never revoked)."""
    assert ACCESS_KEY_PRINCIPAL.name == "admin"
    assert ACCESS_KEY_PRINCIPAL.scopes == {Scope.ADMIN}
    assert ACCESS_KEY_PRINCIPAL.token_id == ""
    assert ACCESS_KEY_PRINCIPAL.may_serve_node("anything")


@pytest.mark.parametrize(
    ("pattern", "node_id", "allowed"),
    [
        ("a", "a", True),
        ("a", "b", False),
        ("a", "local", False),
        ("lab-*", "lab-1", True),
        ("lab-*", "lab", False),
        ("lab-?", "lab-12", False),
        ("Lab", "lab", False),  # case-sensitive, as node ids are
    ],
)
def test_a_node_token_serves_only_the_ids_its_pattern_matches(pattern: str, node_id: str, allowed: bool) -> None:
    """may_serve_node is a case-sensitive glob match of the token's pattern."""
    principal = Principal("laptop", frozenset({Scope.NODE}), node_id=pattern)
    assert principal.may_serve_node(node_id) is allowed


def test_require_node_says_what_is_missing() -> None:
    """An app token lacks the node scope; a node token for a does not cover b: both PERMISSION_DENIED."""
    with pytest.raises(HubError, match="lacks the node scope"):
        Principal("phone", frozenset({Scope.APP})).require_node("a")
    with pytest.raises(HubError, match="does not cover node id 'b'"):
        Principal("laptop", frozenset({Scope.NODE}), node_id="a").require_node("b")


def test_workspace_and_terminal_are_available_beside_app_or_read() -> None:
    """The remote workspace's scopes exist now; each grants only itself (AOP-workspace 8, policy table)."""
    assert parse_scopes(["app,workspace,terminal"]) == {Scope.APP, Scope.WORKSPACE, Scope.TERMINAL}
    assert parse_scopes(["read", "terminal"]) == {Scope.READ, Scope.TERMINAL}
    shell = Principal("phone", frozenset({Scope.READ, Scope.TERMINAL}))
    assert shell.allows(Scope.TERMINAL)
    assert not shell.allows(Scope.WORKSPACE)
    assert not shell.allows(Scope.APP)
    assert not Principal("phone", frozenset({Scope.APP})).allows(Scope.TERMINAL)
    assert ACCESS_KEY_PRINCIPAL.allows(Scope.TERMINAL)
    assert ACCESS_KEY_PRINCIPAL.allows(Scope.WORKSPACE)


def test_parse_scopes_accepts_repeats_and_commas() -> None:
    """--scope app --scope read,node gives three scopes; case and spaces do not matter."""
    assert parse_scopes(["app", " READ, node"]) == {Scope.APP, Scope.READ, Scope.NODE}


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["workspace"], "workspace only adds to another scope: give it with app or read"),
        (["terminal"], "terminal only adds to another scope: give it with app or read"),
        (["workspace,terminal"], r"terminal,workspace only adds to another scope: give it with app or read \(e\.g\."),
        (["root"], "unknown scope 'root'"),
        ([], "at least one scope"),
        ([" , "], "at least one scope"),
    ],
)
def test_parse_scopes_refuses_add_ons_alone_unknown_and_none(names: list[str], message: str) -> None:
    """workspace and terminal alone are refused (they cannot even connect); unknown or no scopes too."""
    with pytest.raises(ValueError, match=message):
        parse_scopes(names)


@pytest.mark.parametrize("name", ["", "admin", "has space", "a/b", "x" * 65, "é"])
def test_bad_token_names_are_refused(name: str) -> None:
    """Names are 1-64 of [A-Za-z0-9._-]; "admin" is the access key's."""
    with pytest.raises(ValueError, match="token name"):
        check_token_name(name)


def test_node_patterns_go_with_the_node_scope_only() -> None:
    """The node scope needs a pattern; other scopes refuse one."""
    assert check_node_pattern(frozenset({Scope.NODE}), "lab-*") == "lab-*"
    assert check_node_pattern(frozenset({Scope.APP}), "") == ""
    with pytest.raises(ValueError, match="needs a node id"):
        check_node_pattern(frozenset({Scope.NODE}), "")
    with pytest.raises(ValueError, match="only with the node scope"):
        check_node_pattern(frozenset({Scope.APP}), "a")
    with pytest.raises(ValueError, match="visible ASCII"):
        check_node_pattern(frozenset({Scope.NODE}), "a b")
