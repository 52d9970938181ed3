"""Per-session ownership: which sessions a principal sees, acts in, and may share.

Every session records its **owner**, the name of the token that opened it (``"admin"`` for the
access key, and for sessions stored before sessions had owners), and the token names its owner
**shared** it with (:data:`EVERYONE`, ``"*"``, shares it with every token). The rule:

- ``admin`` sees and acts in every session;
- ``read`` (held as a scope, not merely granted by ``app``) sees every session: list and watch;
- ``app`` sees and acts in the sessions it owns and those shared with its name or with everyone;
- only the owner or an admin shares a session or takes a share back.

A session the principal may not see is, to it, a session that does not exist: the hub refuses it
with exactly the refusal of an unknown session (``NOT_FOUND``), so nothing tells that it exists.
A session it sees but may not act in (a token holding both ``read`` and ``app``) is refused with
``PERMISSION_DENIED``: its existence is no secret to that principal.

A name identifies a person, not one token text: a token created after a revocation under the same
name owns the sessions of the old one (so a phone's token can be rotated without losing its
history), and sharing with a name that no token holds yet takes effect once one does.
"""

from __future__ import annotations

from collections.abc import Iterable

from aophub.access.scopes import Principal, Scope, check_token_name
from aophub.protocol.errors import Code, HubError

__all__ = [
    "EVERYONE",
    "check_share_name",
    "may_act",
    "may_see",
    "may_share",
    "sees_everything",
    "shared",
    "unshared",
]

# The share of a session with every token.
EVERYONE = "*"


def sees_everything(principal: Principal) -> bool:
    """Whether ``principal`` sees every session (``admin``, or ``read`` held as a scope)."""
    return Scope.ADMIN in principal.scopes or Scope.READ in principal.scopes


def _member(principal: Principal, owner: str, shared_with: Iterable[str]) -> bool:
    """Whether the session is ``principal``'s own or shared with it."""
    if owner == principal.name:
        return True
    names = set(shared_with)
    return principal.name in names or EVERYONE in names


def may_see(principal: Principal, owner: str, shared_with: Iterable[str]) -> bool:
    """Whether ``principal`` may see (list, get, watch, read the events of) a session."""
    return sees_everything(principal) or _member(principal, owner, shared_with)


def may_act(principal: Principal, owner: str, shared_with: Iterable[str]) -> bool:
    """Whether ``principal`` may act in a session: run, cancel, close, answer, rename, delete, ..."""
    return Scope.ADMIN in principal.scopes or _member(principal, owner, shared_with)


def may_share(principal: Principal, owner: str) -> bool:
    """Whether ``principal`` may share a session, or take a share back: its owner or an admin."""
    return Scope.ADMIN in principal.scopes or owner == principal.name


def check_share_name(name: str) -> str:
    """``name`` if a session may be shared with it (a token name or ``"*"``); ``INVALID_ARGUMENT`` otherwise."""
    if name == EVERYONE:
        return name
    try:
        return check_token_name(name)
    except ValueError as error:
        raise HubError(Code.INVALID_ARGUMENT, f"token_name: {error}") from None


def shared(shared_with: Iterable[str], name: str) -> tuple[str, ...]:
    """``shared_with`` with ``name`` added, sorted and without duplicates."""
    return tuple(sorted({*shared_with, name}))


def unshared(shared_with: Iterable[str], name: str) -> tuple[str, ...]:
    """``shared_with`` without ``name``, sorted."""
    return tuple(sorted(set(shared_with) - {name}))
