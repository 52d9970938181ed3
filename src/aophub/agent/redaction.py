"""Redact what looks like a secret from text before it is kept (the agent's long-term memory).

A pattern list, deliberately broad: provider API keys (OpenAI, Anthropic, Google, GitHub, GitLab,
Slack, AWS, Stripe, the hub's own ``aoh_`` tokens), JSON web tokens, ``Bearer`` credentials,
private key blocks, URLs with a password, ``name = value`` assignments whose name says secret
(password, token, api key, ...), and long random-looking strings (32+ hex digits, or 40+ letters
and digits mixed). Each match becomes :data:`REDACTED` (an assignment keeps its name). Redaction
can over-match; a memory with a placeholder is better than a memory with a key.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact"]

REDACTED = "[redacted]"

_TOKENS = re.compile(
    "|".join(
        [
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)",
            r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_-]{16,}",  # OpenAI, Anthropic (sk-ant-...), Stripe
            r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
            r"\bgh[pousr]_[A-Za-z0-9]{20,}\b",
            r"\bgithub_pat_[A-Za-z0-9_]{20,}\b",
            r"\bglpat-[A-Za-z0-9_-]{20,}\b",
            r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b",
            r"\bAKIA[0-9A-Z]{16}\b",
            r"\bAIza[0-9A-Za-z_-]{35}\b",
            r"\baoh_[A-Za-z0-9_-]{16,}",
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
            r"\b(?i:bearer)\s+[A-Za-z0-9._~+/=-]{12,}",
            r"\b[A-Fa-f0-9]{32,}\b",
            r"\b(?=[A-Za-z0-9_+/-]*[0-9])(?=[A-Za-z0-9_+/-]*[A-Za-z])[A-Za-z0-9_+/-]{40,}={0,2}",
        ]
    )
)
# scheme://user:password@host
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)")
# password = value, "api_key": "value", token: value ...
_ASSIGNMENT = re.compile(
    r"""(?ix)
    \b((?:[a-z0-9_-]*?)(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)
    ["']?\s*[:=]\s*)
    (?:"[^"\n]*"|'[^'\n]*'|[^\s,;]+)
    """
)


def redact(text: str) -> str:
    """``text`` with every secret-looking part replaced by :data:`REDACTED`."""
    text = _TOKENS.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(rf"\1{REDACTED}\2", text)
    return _ASSIGNMENT.sub(lambda match: match.group(1) + REDACTED, text)
