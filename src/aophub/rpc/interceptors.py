"""Cross-cutting behaviour of every management RPC.

:class:`AuthInterceptor` is a metadata interceptor placed first, so connectrpc
runs it before the request body is read or parsed: a bad key, or a token without
the scope the method needs (:mod:`aophub.access.policy`), costs nothing.
:class:`ErrorInterceptor` is the boundary where the hub's exceptions become
Connect errors (through ``aophub.protocol.error_mapping``); anything
unexpected becomes ``internal`` with a generic message, details in the log.

The principal a call authenticated as is :func:`caller` in the service
methods (a context variable the AuthInterceptor sets for the call and resets
at its end): they pass it to the hub, which decides per session (per-session
ownership, :mod:`aophub.access.ownership`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from http.cookies import CookieError, SimpleCookie
from typing import TypeVar

from connectrpc.code import Code as ConnectCode
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from starlette.datastructures import Headers

from aophub.access.authenticator import CROSS_ORIGIN_REQUEST, Authenticator
from aophub.access.policy import rpc_scope
from aophub.access.scopes import Principal
from aophub.access.throttle import retry_after_header
from aophub.protocol.error_mapping import INTERNAL_MESSAGE, to_connect_code
from aophub.protocol.errors import Code, HubError
from aophub.store.base import StoreError

__all__ = ["AuthInterceptor", "ErrorInterceptor", "caller", "calling_as"]

log = logging.getLogger(__name__)

REQ = TypeVar("REQ")
RES = TypeVar("RES")

_CALLER: contextvars.ContextVar[Principal] = contextvars.ContextVar("aophub_rpc_caller")


def caller() -> Principal:
    """Who the current RPC authenticated as; only inside a call the AuthInterceptor admitted."""
    try:
        return _CALLER.get()
    except LookupError:
        # A service method reached without the interceptor: refuse rather than act as anyone.
        raise HubError(Code.UNAUTHENTICATED, "no authenticated caller") from None


@contextlib.contextmanager
def calling_as(principal: Principal) -> Iterator[None]:
    """Run service methods in-process as ``principal`` (what the AuthInterceptor does for a call)."""
    token = _CALLER.set(principal)
    try:
        yield
    finally:
        _CALLER.reset(token)


def _cookies(header: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def _client_host(client_address: str | None) -> str:
    """The host of connectrpc's ``"host:port"`` client address (IPv6 hosts contain colons)."""
    if client_address is None:
        return "unknown"
    return client_address.rpartition(":")[0].strip("[]") or client_address


class AuthInterceptor:
    """Refuses a call without a valid bearer key, token or session cookie (``unauthenticated``),
    and one whose credentials lack the scope the method needs (``permission_denied``, naming it).

    The client's address shares the authenticator's throttle with the other paths: a throttled
    address gets ``resource_exhausted`` with a ``Retry-After`` header.
    """

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    def __repr__(self) -> str:
        return "<AuthInterceptor>"

    async def on_start(self, ctx: RequestContext[object, object]) -> contextvars.Token[Principal]:
        headers = ctx.request_headers
        # Every value of a repeated header (connectrpc's Headers.items() keeps only the first), so that
        # two Authorization headers are refused here as on the WebSocket endpoints.
        everything = Headers(raw=[(name.encode(), value.encode()) for name, value in headers.allitems()])
        client = _client_host(ctx.client_address)
        result = self._authenticator.authenticate_client(client, everything, _cookies(headers.get("cookie", "")))
        if result.retry_after > 0:
            ctx.response_headers["retry-after"] = retry_after_header(result.retry_after)
            raise ConnectError(ConnectCode.RESOURCE_EXHAUSTED, result.reason)
        if result.ok and result.method == "cookie":
            origin, host = headers.get("origin"), headers.get("host")
            same_site = any(self._authenticator.origin_allowed(origin, host, scheme) for scheme in ("http", "https"))
            if not same_site:
                raise ConnectError(ConnectCode.UNAUTHENTICATED, CROSS_ORIGIN_REQUEST)
        if not result.ok or result.principal is None:
            raise ConnectError(ConnectCode.UNAUTHENTICATED, result.reason)
        path = f"{ctx.method.service_name}/{ctx.method.name}"
        try:
            result.principal.require(rpc_scope(path), path)
        except HubError as refusal:
            raise ConnectError(to_connect_code(refusal.code), refusal.message) from None
        return _CALLER.set(result.principal)

    async def on_end(
        self, token: contextvars.Token[Principal], ctx: RequestContext[object, object], error: Exception | None
    ) -> None:
        _CALLER.reset(token)


class ErrorInterceptor:
    """Maps hub errors to Connect codes and hides unexpected exceptions."""

    def __repr__(self) -> str:
        return "<ErrorInterceptor>"

    async def intercept_unary(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], Awaitable[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> RES:
        try:
            return await call_next(request, ctx)
        except Exception as error:
            raise _connect_error(error, ctx.method.name) from None

    async def intercept_server_stream(
        self,
        call_next: Callable[[REQ, RequestContext[REQ, RES]], AsyncIterator[RES]],
        request: REQ,
        ctx: RequestContext[REQ, RES],
    ) -> AsyncIterator[RES]:
        """The same mapping for a stream: an error while it runs ends it with the mapped code."""
        responses = call_next(request, ctx)
        try:
            async for response in responses:
                yield response
        except Exception as error:
            raise _connect_error(error, ctx.method.name) from None
        finally:
            aclose = getattr(responses, "aclose", None)
            if aclose is not None:
                await aclose()


def _connect_error(error: Exception, method: str) -> ConnectError:
    """``error`` as the ConnectError the client gets (logging what it must not see)."""
    if isinstance(error, ConnectError):
        return error
    if isinstance(error, HubError):
        if error.code is Code.INTERNAL:
            log.error("%s failed: %s", method, error.message)
            return ConnectError(ConnectCode.INTERNAL, INTERNAL_MESSAGE)
        return ConnectError(to_connect_code(error.code), error.message)
    if isinstance(error, StoreError):
        code = ConnectCode.UNAVAILABLE if error.retryable else ConnectCode.INTERNAL
        log.error("%s: storage failed: %s", method, error)
        return ConnectError(code, f"storage unavailable: {error}" if error.retryable else INTERNAL_MESSAGE)
    log.error("%s failed", method, exc_info=error)
    return ConnectError(ConnectCode.INTERNAL, INTERNAL_MESSAGE)
