"""Token counts: tiktoken from an encoding file in the data directory, else the documented estimate."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import pytest

from aop import content_pb2
from aophub.agent.provider import AssistantToolCall, ChatMessage
from aophub.agent.tokens import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD_TOKENS,
    EstimatedTokens,
    TiktokenTokens,
    counter_for,
    message_tokens,
)


def write_encoding(directory: Path, name: str, merges: list[bytes]) -> None:
    """A small encoding in tiktoken's file format: every byte, then ``merges``."""
    tokens = [bytes([value]) for value in range(256)] + merges
    lines = [base64.b64encode(token) + b" " + str(rank).encode() for rank, token in enumerate(tokens)]
    (directory / f"{name}.tiktoken").write_bytes(b"\n".join(lines) + b"\n")


def test_unknown_model_is_estimated_at_three_bytes_a_token(tmp_path: Path) -> None:
    """A model tiktoken does not know is estimated: ceil(UTF-8 bytes / 3)."""
    counter = counter_for("llama-3.1-8b-instruct", tmp_path)
    assert isinstance(counter, EstimatedTokens)
    assert not counter.exact
    assert counter.count("abcdefg") == 3
    assert counter.count("é") == 1  # two bytes


def test_known_model_without_its_encoding_file_is_estimated(tmp_path: Path) -> None:
    """gpt-4o maps to o200k_base, but without the file nothing is downloaded: the estimate is used."""
    assert isinstance(counter_for("gpt-4o", tmp_path), EstimatedTokens)
    assert isinstance(counter_for("gpt-4o", None), EstimatedTokens)


def test_known_model_counts_with_the_encoding_file_of_the_data_directory(tmp_path: Path) -> None:
    """gpt-4 maps to cl100k_base; its file in the directory is loaded and tiktoken counts with it."""
    write_encoding(tmp_path, "cl100k_base", [b"ab", b"abab"])
    counter = counter_for("gpt-4", tmp_path)
    assert isinstance(counter, TiktokenTokens)
    assert counter.exact
    assert counter.count("ababab") == 2  # "abab" + "ab" (the estimate says 2 too, so also:)
    assert counter.count("xyz") == 3  # one byte each; the estimate would say 1


def test_a_malformed_encoding_file_is_estimated_around(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A file that is not '<base64> <rank>' lines is logged and the estimate is used."""
    (tmp_path / "o200k_base.tiktoken").write_text("not an encoding\n")
    with caplog.at_level(logging.WARNING):
        assert isinstance(counter_for("gpt-4o-mini", tmp_path), EstimatedTokens)
    assert "o200k_base.tiktoken" in caplog.text


def test_message_tokens_count_text_calls_images_and_overhead() -> None:
    """A message costs its overhead, its text, its tool calls and a flat amount per image."""
    counter = EstimatedTokens()
    assert message_tokens(ChatMessage("user", "abcdef"), counter) == MESSAGE_OVERHEAD_TOKENS + 2
    call = AssistantToolCall("c1", "read", '{"p":1}')
    assistant = ChatMessage("assistant", "", tool_calls=(call,))
    assert message_tokens(assistant, counter) == 2 * MESSAGE_OVERHEAD_TOKENS + 2 + 3
    image = ChatMessage("user", "", images=(content_pb2.MediaContent(),))
    assert message_tokens(image, counter) == MESSAGE_OVERHEAD_TOKENS + IMAGE_TOKENS
