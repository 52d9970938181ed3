"""Count the tokens of a model call: tiktoken where the model's encoding is known and on disk, else an estimate.

tiktoken knows which encoding each OpenAI model name uses (``gpt-4o`` -> ``o200k_base``), but its
wheel does not ship the encodings: ``tiktoken.get_encoding`` downloads them at first use, which an
offline hub (and CI) cannot do, and which would stall a turn. So the hub never lets tiktoken
download: it loads an encoding only from ``<data dir>/tokenizers/<encoding>.tiktoken`` (the file
tiktoken itself downloads, e.g. ``o200k_base.tiktoken``), and counts with it when the profile's
model maps to that encoding. Otherwise (another model, or no file) it uses a documented,
deliberately high estimate: one token per :data:`ESTIMATE_BYTES_PER_TOKEN` UTF-8 bytes (English
text averages about 4 bytes per token, so the estimate over-counts and the budget holds).

Each message also costs :data:`MESSAGE_OVERHEAD_TOKENS` (role and separators, as in OpenAI's chat
format), each image :data:`IMAGE_TOKENS`, and each tool definition the tokens of its JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import tiktoken
import tiktoken.model
from google.protobuf import json_format

from aop import content_pb2
from aophub.agent.provider import ChatMessage

__all__ = [
    "ENCODINGS_DIR",
    "ESTIMATE_BYTES_PER_TOKEN",
    "IMAGE_TOKENS",
    "MESSAGE_OVERHEAD_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "EstimatedTokens",
    "TiktokenTokens",
    "TokenCounter",
    "counter_for",
    "message_tokens",
    "request_tokens",
    "tools_tokens",
]

log = logging.getLogger(__name__)

# Where a data directory keeps tiktoken encoding files (<name>.tiktoken).
ENCODINGS_DIR = "tokenizers"
ESTIMATE_BYTES_PER_TOKEN = 3
MESSAGE_OVERHEAD_TOKENS = 4
# The reply is primed with a few tokens (OpenAI's chat format: 3).
REPLY_PRIMING_TOKENS = 3
# An image's share of the prompt (OpenAI counts 85 to ~1100 by size and detail; this is the high end).
IMAGE_TOKENS = 1000

# The pre-tokenizer patterns of the encodings the hub can load (from tiktoken_ext.openai_public,
# which only builds them together with a download).
_PATTERNS = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}


class TokenCounter(Protocol):
    """Counts the tokens of a text for one model."""

    @property
    def exact(self) -> bool:
        """True for a real tokenizer, False for an estimate."""
        ...

    def count(self, text: str) -> int: ...


class EstimatedTokens:
    """The estimate for models whose tokenizer the hub does not have: ``ceil(utf8 bytes / 3)``."""

    exact = False

    def __repr__(self) -> str:
        return f"<EstimatedTokens {ESTIMATE_BYTES_PER_TOKEN} bytes/token>"

    def count(self, text: str) -> int:
        return math.ceil(len(text.encode("utf-8", "replace")) / ESTIMATE_BYTES_PER_TOKEN)


class TiktokenTokens:
    """A real tiktoken encoding."""

    exact = True

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self._encoding = encoding

    def __repr__(self) -> str:
        return f"<TiktokenTokens {self._encoding.name}>"

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))


def _load_ranks(path: Path) -> dict[bytes, int]:
    """The mergeable ranks of a ``.tiktoken`` file (lines ``<base64 token> <rank>``); ValueError when malformed."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error) as error:
            raise ValueError(f"{path.name}, line {number}: not '<base64 token> <rank>' ({error})") from error
    return ranks


def counter_for(model: str, encodings_dir: Path | None) -> TokenCounter:
    """The counter of ``model``: its tiktoken encoding when the model name maps to one whose file is in
    ``encodings_dir``, else :class:`EstimatedTokens`. Never touches the network; a bad file is logged
    and estimated around."""
    try:
        name = tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return EstimatedTokens()
    pattern = _PATTERNS.get(name)
    path = None if encodings_dir is None else encodings_dir / f"{name}.tiktoken"
    if pattern is None or path is None or not path.is_file():
        return EstimatedTokens()
    try:
        ranks = _load_ranks(path)
        return TiktokenTokens(tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={}))
    except (OSError, ValueError) as error:
        log.warning("tokenizer %s cannot be loaded, token counts are estimated: %s", path, error)
        return EstimatedTokens()


def message_tokens(message: ChatMessage, counter: TokenCounter) -> int:
    """The tokens ``message`` takes in a prompt: its text, tool calls, images and overhead."""
    tokens = MESSAGE_OVERHEAD_TOKENS + counter.count(message.text) + IMAGE_TOKENS * len(message.images)
    for call in message.tool_calls:
        tokens += counter.count(call.name) + counter.count(call.arguments) + MESSAGE_OVERHEAD_TOKENS
    return tokens


def tools_tokens(tools: Iterable[content_pb2.ToolDefinition], counter: TokenCounter) -> int:
    """The tokens the tool definitions take (their JSON)."""
    return sum(counter.count(json.dumps(json_format.MessageToDict(tool), sort_keys=True)) for tool in tools)


def request_tokens(
    messages: Sequence[ChatMessage], tools: Iterable[content_pb2.ToolDefinition], counter: TokenCounter
) -> int:
    """The prompt tokens of a model call with ``messages`` and ``tools``."""
    return REPLY_PRIMING_TOKENS + sum(message_tokens(m, counter) for m in messages) + tools_tokens(tools, counter)
