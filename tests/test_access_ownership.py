"""Per-session ownership rules: who sees a session, acts in it, and shares it (aophub.access.ownership)."""

from __future__ import annotations

import pytest

from aophub.access.ownership import (
    EVERYONE,
    check_share_name,
    may_act,
    may_see,
    may_share,
    sees_everything,
    shared,
    unshared,
)
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope
from aophub.protocol.errors import Code, HubError


def principal(name: str, *scopes: Scope) -> Principal:
    return Principal(name, frozenset(scopes))


ALICE = principal("alice", Scope.APP)
BOB = principal("bob", Scope.APP)
AUDITOR = principal("auditor", Scope.READ)
BOTH = principal("lead", Scope.APP, Scope.READ)
NODE = Principal("laptop", frozenset({Scope.NODE}), node_id="laptop")


@pytest.mark.parametrize(
    ("who", "owner", "shared_with", "expected"),
    [
        (ALICE, "alice", (), (True, True, True)),
        (BOB, "alice", (), (False, False, False)),
        (BOB, "alice", ("bob",), (True, True, False)),
        (BOB, "alice", ("bobby", "carol"), (False, False, False)),
        (BOB, "alice", (EVERYONE,), (True, True, False)),
        (AUDITOR, "alice", (), (True, False, False)),
        (BOTH, "alice", (), (True, False, False)),
        (BOTH, "lead", (), (True, True, True)),
        (ACCESS_KEY_PRINCIPAL, "alice", (), (True, True, True)),
        (principal("ops", Scope.ADMIN), "alice", (), (True, True, True)),
        (NODE, "alice", (), (False, False, False)),
        (NODE, "alice", (EVERYONE,), (True, True, False)),  # the node scope cannot send app requests anyway
    ],
)
def test_who_sees_acts_and_shares(
    who: Principal, owner: str, shared_with: tuple[str, ...], expected: tuple[bool, bool, bool]
) -> None:
    """admin: everything; read: sees all; app: its own and shared ones; only owner or admin share."""
    assert (may_see(who, owner, shared_with), may_act(who, owner, shared_with), may_share(who, owner)) == expected


def test_sees_everything_only_with_admin_or_a_held_read_scope() -> None:
    """app grants read requests, but not the view of every session: read must be held as a scope."""
    assert [sees_everything(p) for p in (ACCESS_KEY_PRINCIPAL, AUDITOR, BOTH, ALICE)] == [True, True, True, False]


def test_share_lists_are_sorted_sets() -> None:
    """Sharing twice keeps one entry; unsharing a name not there changes nothing."""
    assert shared(("carol",), "bob") == ("bob", "carol")
    assert shared(("bob",), "bob") == ("bob",)
    assert unshared(("bob", "carol"), "bob") == ("carol",)
    assert unshared(("carol",), "bob") == ("carol",)


@pytest.mark.parametrize("name", ["", "has space", "a,b", "admin", "x" * 65])
def test_a_share_names_a_token_or_everyone(name: str) -> None:
    """Only token names and "*" can be shared with; anything else is INVALID_ARGUMENT."""
    with pytest.raises(HubError) as refused:
        check_share_name(name)
    assert refused.value.code is Code.INVALID_ARGUMENT
    assert check_share_name("*") == "*"
    assert check_share_name("bob") == "bob"
