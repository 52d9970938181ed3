"""Secrets never reach the long-term memory: what looks like a key, a token or a password is redacted."""

from __future__ import annotations

import pytest

from aophub.agent.redaction import REDACTED, redact

SECRETS = [
    ("OpenAI", "sk-proj-Abcdefghijklmnopqrstuvwx1234"),
    ("Anthropic", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"),
    ("Stripe", "sk_live_abcdefghijklmnop1234"),
    ("GitHub", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("GitHub fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"),
    ("GitLab", "glpat-abcdefghij0123456789"),
    ("Slack", "xoxb-123456789012-abcdefghijkl"),
    ("AWS", "AKIAIOSFODNN7EXAMPLE"),
    ("Google", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("aophub token", "aoh_Zx9aBcDeFgHiJkLmNoPq"),
    ("JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("hex", "0123456789abcdef0123456789abcdef01234567"),
    ("random", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWpr"),
]


@pytest.mark.parametrize(("kind", "secret"), SECRETS, ids=[kind for kind, _ in SECRETS])
def test_keys_and_tokens_are_redacted(kind: str, secret: str) -> None:
    """A key or token anywhere in the text is replaced, the rest kept."""
    assert redact(f"use {secret} for the deploy") == f"use {REDACTED} for the deploy"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password=hunter2 then", f"password={REDACTED} then"),
        ('{"api_key": "abc def"}', f'{{"api_key": {REDACTED}}}'),
        ("DB_PASSWORD: s3cr3t", f"DB_PASSWORD: {REDACTED}"),
        ("client_secret = 'x y'", f"client_secret = {REDACTED}"),
        ("Authorization: Bearer abc.def-ghi_jkl", f"Authorization: {REDACTED}"),
        ("postgres://bob:s3cret@db:5432/app", f"postgres://bob:{REDACTED}@db:5432/app"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
            REDACTED,
        ),
    ],
)
def test_assignments_credentials_and_key_blocks_are_redacted(text: str, expected: str) -> None:
    """Secret-named assignments keep their name; URL passwords, bearer credentials and key blocks go."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The user prefers tabs and the deploy target is staging.",
        "The repo lives in /usr/local/src/project-alpha/services/billing",
        "Meeting on 2026-12-01 at 10:30 about token budgets",
        "Version 3.11.7, build 20261201",
    ],
)
def test_ordinary_facts_are_kept(text: str) -> None:
    """Plain facts, paths, dates and the word token in prose are not redacted."""
    assert redact(text) == text
