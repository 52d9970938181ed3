"""Token texts and the token book (sans-I/O): minted, verified, expired, unknown, tampered."""

from __future__ import annotations

import pytest

from aophub.access.scopes import Principal, Scope
from aophub.access.tokens import TOKEN_PREFIX, Expired, TokenBook, mint

T0 = 1_800_000_000.0


def test_a_minted_token_verifies_as_its_principal() -> None:
    """mint() gives aoh_<12 hex>_<43 chars>; the book turns it into the token's principal."""
    record, text = mint("phone", {Scope.APP}, "", created_at=T0, expires_at=T0 + 60)
    assert text.startswith(f"{TOKEN_PREFIX}{record.id}_")
    assert len(record.id) == 12
    assert len(text) == len(TOKEN_PREFIX) + 12 + 1 + 43
    book = TokenBook([record])
    assert book.verify(text, T0) == Principal("phone", frozenset({Scope.APP}), token_id=record.id, expires_at=T0 + 60)


def test_the_record_holds_a_salted_hash_never_the_text() -> None:
    """Nothing in the record contains the secret; two tokens never share a salt."""
    first, text = mint("a", {Scope.READ}, "", created_at=T0, expires_at=None)
    second, _ = mint("b", {Scope.READ}, "", created_at=T0, expires_at=None)
    secret = text.split("_", 2)[2]  # the secret part may itself hold "_"
    assert len(secret) == 43
    assert secret not in repr(first)
    assert secret.encode() not in first.digest + first.salt
    assert first.salt != second.salt
    assert len(first.digest) == 32


def test_unknown_wrong_and_malformed_tokens_are_all_just_unknown() -> None:
    """A wrong secret, an unknown id, a malformed text and the empty string all give None alike."""
    record, text = mint("phone", {Scope.APP}, "", created_at=T0, expires_at=None)
    book = TokenBook([record])
    _other, other_text = mint("other", {Scope.APP}, "", created_at=T0, expires_at=None)
    wrong_secret = text[:-1] + ("A" if text[-1] != "A" else "B")
    for candidate in (wrong_secret, other_text, "aoh_zz_nope", "", text + "x", text.upper()):
        assert book.verify(candidate, T0) is None, candidate


def test_an_expired_token_is_told_so_only_when_its_secret_matched() -> None:
    """At and after its expiry a token verifies as Expired; its cookie principal is gone."""
    record, text = mint("phone", {Scope.APP}, "", created_at=T0, expires_at=T0 + 60)
    book = TokenBook([record])
    assert isinstance(book.verify(text, T0 + 59.9), Principal)
    assert book.verify(text, T0 + 60) == Expired(record)
    assert book.principal(record.id, T0 + 59) is not None
    assert book.principal(record.id, T0 + 60) is None


def test_a_removed_token_is_unknown_at_once() -> None:
    """remove() (a revocation) makes the text and the id unknown."""
    record, text = mint("phone", {Scope.APP}, "", created_at=T0, expires_at=None)
    book = TokenBook([record])
    assert book.remove("phone") == record
    assert book.verify(text, T0) is None
    assert book.principal(record.id, T0) is None
    assert book.remove("phone") is None


def test_the_book_refuses_a_second_token_of_one_name() -> None:
    """Names are unique in the book (the store's UNIQUE constraint agrees)."""
    record, _ = mint("phone", {Scope.APP}, "", created_at=T0, expires_at=None)
    book = TokenBook([record])
    again, _ = mint("phone", {Scope.READ}, "", created_at=T0, expires_at=None)
    with pytest.raises(ValueError, match="phone"):
        book.add(again)
    assert book.all() == [record]
    assert book.named("phone") == record
