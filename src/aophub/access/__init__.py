"""Access control: who a caller is (the access key or a named token) and what its scopes let it do.

- :mod:`~aophub.access.scopes`: scopes and the :class:`Principal` a request runs as, with its checks;
- :mod:`~aophub.access.policy`: the one table of what every RPC, WebSocket request and endpoint needs;
- :mod:`~aophub.access.tokens`: token texts, their salted hashes, and checking a presented one;
- :mod:`~aophub.access.authenticator`: bearer keys, tokens and session cookies -> a principal;
- :mod:`~aophub.access.throttle`: slowing down guesses per client address;
- :mod:`~aophub.access.live`: open connections by token, closed on revocation or expiry;
- :mod:`~aophub.access.admin`: creating, listing and revoking tokens in the store.

Used alike by the WebSocket adapters (``aophub.transport``), the RPC interceptors (``aophub.rpc``)
and the hub core (per-request checks on the application channel). It imports neither.
"""

from aophub.access.admin import TokenAdmin
from aophub.access.authenticator import AccessKey, Authenticator, AuthResult, resolve_access_key
from aophub.access.live import LiveConnections, close_expired
from aophub.access.policy import application_request_scope, rpc_scope
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope
from aophub.access.throttle import AuthThrottle
from aophub.access.tokens import TokenBook

__all__ = [
    "ACCESS_KEY_PRINCIPAL",
    "AccessKey",
    "AuthResult",
    "AuthThrottle",
    "Authenticator",
    "LiveConnections",
    "Principal",
    "Scope",
    "TokenAdmin",
    "TokenBook",
    "application_request_scope",
    "close_expired",
    "resolve_access_key",
    "rpc_scope",
]
