"""Scopes and principals: who is calling, and what its credentials let it do.

A :class:`Principal` is the identity a request runs as: the token's name (``"admin"`` for the
hub's access key), its scopes, and for the ``node`` scope the node id or glob it may connect as.
Every check is :meth:`Principal.require` (a scope) or :meth:`Principal.may_serve_node` (a node id);
what each request needs is decided in :mod:`aophub.access.policy`, one table.

Scopes, and what each grants:

- ``admin``: everything (the access key is an admin principal).
- ``app``: what a person's application does: open sessions, run and cancel turns, watch, answer
  interactions, scans; and everything ``read`` may.
- ``read``: list and watch only (a dashboard, an auditor).
- ``node``: the node endpoint only, as the node ids its pattern matches.
- ``workspace``: uploads to a session's node (remote files, AOP-workspace 8.2).
- ``terminal``: terminals on nodes (``aop.pty``, AOP-workspace 8.4): a shell on the node's machine.

``workspace`` and ``terminal`` are add-ons: they grant nothing else, not even a connection to the
application endpoint (``read``), so a token holds them beside ``app`` or ``read``
(``--scope app,terminal``); a token of add-ons alone is refused at creation.

Sessions will record ``Principal.name`` as their owner (per-session ownership), so a principal is
identified by its token's name; ``token_id`` tells connections of one token apart from another of
the same name created after a revocation.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from aophub.protocol.errors import Code, HubError

__all__ = [
    "ACCESS_KEY_NAME",
    "ACCESS_KEY_PRINCIPAL",
    "ADD_ON_SCOPES",
    "AVAILABLE_SCOPES",
    "RESERVED_SCOPES",
    "Principal",
    "Scope",
    "check_node_pattern",
    "check_token_name",
    "parse_scopes",
]


class Scope(enum.StrEnum):
    """A scope a token may hold, and the scope a request needs."""

    ADMIN = "admin"
    APP = "app"
    READ = "read"
    NODE = "node"
    WORKSPACE = "workspace"
    TERMINAL = "terminal"


# What holding a scope lets a principal do (admin: everything).
_GRANTS: dict[Scope, frozenset[Scope]] = {
    Scope.ADMIN: frozenset(Scope),
    Scope.APP: frozenset({Scope.APP, Scope.READ}),
    Scope.READ: frozenset({Scope.READ}),
    Scope.NODE: frozenset({Scope.NODE}),
    Scope.WORKSPACE: frozenset({Scope.WORKSPACE}),
    Scope.TERMINAL: frozenset({Scope.TERMINAL}),
}
# Scopes still reserved (none since the remote workspace exists); refused at token creation.
RESERVED_SCOPES: frozenset[Scope] = frozenset()
AVAILABLE_SCOPES = frozenset(Scope) - RESERVED_SCOPES
# Scopes that only add to another: a token needs one more besides them.
ADD_ON_SCOPES = frozenset({Scope.WORKSPACE, Scope.TERMINAL})

# The access key's name; no token may take it.
ACCESS_KEY_NAME = "admin"
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)
# A node id (what check_id allows: visible ASCII) or a glob of ids: * ? [...] as in fnmatch.
_NODE_PATTERN = re.compile(r"[\x21-\x7e]{1,128}", re.ASCII)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request runs as: see the module docstring.

    ``token_id`` is the token's public id ("" for the access key, which is never revoked);
    ``expires_at`` is Unix seconds or None.
    """

    name: str
    scopes: frozenset[Scope]
    node_id: str = ""
    token_id: str = ""
    expires_at: float | None = None
    _granted: frozenset[Scope] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        granted: frozenset[Scope] = frozenset().union(*(_GRANTS[scope] for scope in self.scopes))
        object.__setattr__(self, "_granted", granted)

    def allows(self, need: Scope) -> bool:
        """Whether this principal's scopes grant ``need``."""
        return need in self._granted

    def require(self, need: Scope, what: str) -> None:
        """Raise ``PERMISSION_DENIED`` naming the missing scope unless :meth:`allows` ``need``.

        ``what`` names the request refused, e.g. ``"aophub.v1.ConfigService/UpdateConfig"``.
        """
        if not self.allows(need):
            raise HubError(Code.PERMISSION_DENIED, f"this token lacks the {need} scope needed for {what}")

    def may_serve_node(self, node_id: str) -> bool:
        """Whether a node connection authenticated as this principal may take ``node_id``.

        ``admin``: any id (the built-in node's stays reserved by the registry). ``node``: the ids its
        pattern matches (case-sensitive glob).
        """
        if Scope.ADMIN in self.scopes:
            return True
        return Scope.NODE in self.scopes and fnmatch.fnmatchcase(node_id, self.node_id)

    def require_node(self, node_id: str) -> None:
        """Raise ``PERMISSION_DENIED`` unless :meth:`may_serve_node` ``node_id``."""
        if not self.allows(Scope.NODE):
            raise HubError(
                Code.PERMISSION_DENIED, f"this token lacks the {Scope.NODE} scope needed for the node endpoint"
            )
        if not self.may_serve_node(node_id):
            raise HubError(
                Code.PERMISSION_DENIED, f"this token's {Scope.NODE} scope does not cover node id {node_id!r}"
            )


ACCESS_KEY_PRINCIPAL = Principal(ACCESS_KEY_NAME, frozenset({Scope.ADMIN}))


def parse_scopes(names: Iterable[str]) -> frozenset[Scope]:
    """The scopes named (comma-separated entries allowed); ValueError for an unknown or reserved one, or none."""
    scopes: set[Scope] = set()
    for entry in names:
        for part in entry.split(","):
            name = part.strip().lower()
            if not name:
                continue
            try:
                scope = Scope(name)
            except ValueError:
                known = ", ".join(sorted(AVAILABLE_SCOPES))
                raise ValueError(f"unknown scope {name!r} (scopes: {known})") from None
            if scope in RESERVED_SCOPES:
                raise ValueError(f"the {scope} scope is not available yet")
            scopes.add(scope)
    if not scopes:
        raise ValueError("a token needs at least one scope")
    if scopes <= ADD_ON_SCOPES:
        named = ",".join(sorted(scopes))
        raise ValueError(f"{named} only adds to another scope: give it with app or read (e.g. app,{named})")
    return frozenset(scopes)


def check_token_name(name: str) -> str:
    """``name`` if a token may be called so; ValueError otherwise."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"token name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
    if name == ACCESS_KEY_NAME:
        raise ValueError(f"token name {name!r} is the access key's")
    return name


def check_node_pattern(scopes: frozenset[Scope], pattern: str) -> str:
    """The node id or glob for ``scopes``: required with ``node``, refused without it; ValueError otherwise."""
    if Scope.NODE not in scopes:
        if pattern:
            raise ValueError("a node id is given only with the node scope")
        return ""
    if not pattern:
        raise ValueError("the node scope needs a node id or a glob of ids (--node-id)")
    if not _NODE_PATTERN.fullmatch(pattern):
        raise ValueError(f"node id pattern {pattern!r}: use 1 to 128 visible ASCII characters")
    return pattern
