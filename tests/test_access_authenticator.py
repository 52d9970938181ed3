"""Named tokens in the authenticator (sans-I/O): bearer and cookie give the token's principal, and the
throttle counts unknown tokens as guesses but not expired ones."""

from __future__ import annotations

from aophub.access.authenticator import INVALID_ACCESS_KEY, SESSION_COOKIE, TOKEN_EXPIRED, Authenticator
from aophub.access.scopes import ACCESS_KEY_PRINCIPAL, Principal, Scope
from aophub.access.throttle import AuthThrottle
from aophub.access.tokens import TokenBook, mint

KEY = "correct-horse-battery-staple"
T0 = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def setup(expires_in: float | None = None) -> tuple[Authenticator, Clock, str, TokenBook]:
    clock = Clock()
    record, text = mint(
        "phone", {Scope.APP}, "", created_at=T0, expires_at=None if expires_in is None else T0 + expires_in
    )
    book = TokenBook([record])
    throttle = AuthThrottle(max_failures=3, window=60, clock=clock)
    return Authenticator(KEY, tokens=book, clock=clock, throttle=throttle, cookie_max_age=3600), clock, text, book


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def test_a_bearer_token_authenticates_as_its_principal() -> None:
    """Bearer <token> gives the token's principal; Bearer <key> still gives admin."""
    authenticator, _, text, _ = setup()
    result = authenticator.authenticate(bearer(text), {})
    assert result.ok
    assert result.principal is not None
    assert (result.principal.name, result.principal.scopes) == ("phone", frozenset({Scope.APP}))
    assert authenticator.authenticate(bearer(KEY), {}).principal == ACCESS_KEY_PRINCIPAL


def test_a_token_cookie_carries_the_token_and_dies_with_it() -> None:
    """A cookie issued for a token authenticates as that token until the token is removed (revoked)."""
    authenticator, _, text, book = setup()
    principal = authenticator.authenticate(bearer(text), {}).principal
    assert isinstance(principal, Principal)
    value = authenticator.issue_cookie(principal)
    assert value.startswith("v2.")
    assert authenticator.authenticate({}, {SESSION_COOKIE: value}).principal == principal
    book.remove("phone")
    refused = authenticator.authenticate({}, {SESSION_COOKIE: value})
    assert (refused.ok, refused.principal) == (False, None)


def test_a_token_cookie_cannot_be_moved_to_another_token() -> None:
    """The token id is under the cookie's signature: changing it invalidates the cookie."""
    authenticator, _, text, book = setup()
    principal = authenticator.authenticate(bearer(text), {}).principal
    assert isinstance(principal, Principal)
    other, _ = mint("other", {Scope.ADMIN}, "", created_at=T0, expires_at=None)
    book.add(other)
    value = authenticator.issue_cookie(principal).replace(principal.token_id, other.id)
    assert not authenticator.authenticate({}, {SESSION_COOKIE: value}).ok


def test_an_expired_token_is_told_so_and_not_counted_as_a_guess() -> None:
    """Past its expiry a token gets "token expired" and the address is not throttled for it."""
    authenticator, clock, text, _ = setup(expires_in=60)
    clock.now = T0 + 60
    for _ in range(5):
        result = authenticator.authenticate_client("10.0.0.1", bearer(text), {})
        assert (result.ok, result.reason, result.retry_after) == (False, TOKEN_EXPIRED, 0.0)


def test_unknown_tokens_count_as_guesses() -> None:
    """Unknown tokens are wrong keys to the throttle: after 3 the address waits, even with a good token."""
    authenticator, _, text, _ = setup()
    forged = "aoh_0123456789ab_" + "A" * 43
    for _ in range(3):
        assert authenticator.authenticate_client("10.0.0.2", bearer(forged), {}).reason == INVALID_ACCESS_KEY
    assert authenticator.authenticate_client("10.0.0.2", bearer(text), {}).retry_after > 0
