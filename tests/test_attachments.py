"""Files attached to a turn (aophub.agent.attachments): names, text or not, inline limit, saving."""

from __future__ import annotations

from pathlib import Path

import pytest

from aop import content_pb2
from aophub.agent.attachments import (
    DEFAULT_INLINE_ATTACHMENT_BYTES,
    Attachment,
    attachments_of,
    save_attachments,
    user_message,
)
from aophub.agent.sandbox import Workspace


def file_part(name: str, media_type: str, data: bytes) -> content_pb2.Content:
    resource = content_pb2.Resource(data=data, media_type=media_type, filename=name)
    return content_pb2.Content(media=content_pb2.MediaContent(kind="file", resource=resource))


def message(*parts: content_pb2.Content) -> content_pb2.Message:
    return content_pb2.Message(role="user", content=list(parts))


def only(part: content_pb2.Content, limit: int = DEFAULT_INLINE_ATTACHMENT_BYTES) -> Attachment:
    (attachment,) = attachments_of(message(part), "turn_1", limit)
    return attachment


@pytest.mark.parametrize(
    ("given", "saved"),
    [
        ("notes.txt", "notes.txt"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\report final.pdf", "report_final.pdf"),
        (".bashrc", "bashrc"),
        ("..", "attachment-1"),
        ("", "attachment-1"),
        ("résumé.txt", "r_sum_.txt"),
        ("a" * 300 + ".txt", "a" * 96 + ".txt"),
    ],
)
def test_names_are_made_safe(given: str, saved: str) -> None:
    """Only the last component, safe characters, no leading dot, at most 100 characters, never empty."""
    attachment = only(file_part(given, "text/plain", b"x"))
    assert (attachment.name, attachment.path) == (saved, f"attachments/turn_1/{saved}")


def test_repeated_names_are_numbered_and_odd_turn_ids_kept_apart() -> None:
    """Two files called a.txt in one turn become a.txt and a-2.txt; an unsafe turn id gets a hash suffix."""
    parts = [file_part("a.txt", "text/plain", b"1"), file_part("x/a.txt", "text/plain", b"2"), file_part("b", "", b"3")]
    found = attachments_of(message(*parts), "turn/../1", 10)
    assert [a.name for a in found] == ["a.txt", "a-2.txt", "b"]
    directory = found[0].path.rsplit("/", 1)[0]
    assert directory.startswith("attachments/turn_.._1-")
    assert len(directory) == len("attachments/turn_.._1-") + 8
    assert directory != attachments_of(message(*parts), "turn_.._1", 10)[0].path.rsplit("/", 1)[0]


@pytest.mark.parametrize(
    ("media_type", "data", "inline"),
    [
        ("text/plain", b"hello", True),
        ("text/markdown; charset=utf-8", "é\n".encode(), True),
        ("application/json", b"{}", True),
        ("application/vnd.api+json", b"{}", True),
        ("", b"plain words", True),
        ("application/octet-stream", b"plain words", True),
        ("application/pdf", b"%PDF-1.4", False),
        ("text/plain", b"\xff\xfe", False),
        ("text/plain", b"a\x00b", False),
        ("audio/wav", b"RIFF", False),
    ],
)
def test_text_is_told_apart_from_other_files(media_type: str, data: bytes, inline: bool) -> None:
    """Text is a textual (or unknown) media type with UTF-8 content and no NUL byte."""
    attachment = only(file_part("f", media_type, data))
    assert (attachment.text is not None) == inline
    assert attachment.why_not_inline == ("" if inline else "it is not text")


def test_the_default_inline_limit_is_64_kib() -> None:
    """65536 bytes of text go inline; one more byte does not."""
    assert only(file_part("a", "text/plain", b"x" * 65536)).text == "x" * 65536
    over = only(file_part("a", "text/plain", b"x" * 65537))
    assert (over.text, over.why_not_inline) == (None, "it is over the 65536-byte inline limit")


def test_the_model_text_keeps_the_order_of_the_parts() -> None:
    """Text, transcripts, files and URIs appear in order; images stay images; an unsaved file says why."""
    image = content_pb2.Content(
        media=content_pb2.MediaContent(kind="image", resource=content_pb2.Resource(data=b"PNG", media_type="image/png"))
    )
    voice = content_pb2.Content(media=content_pb2.MediaContent(kind="audio", transcript="spoken words"))
    linked = content_pb2.Content(
        media=content_pb2.MediaContent(
            kind="file", resource=content_pb2.Resource(uri="https://example.com/x.csv", media_type="text/csv")
        )
    )
    parts = [
        content_pb2.Content(text=content_pb2.TextContent(text="look")),
        image,
        file_part("a.txt", "text/plain", b"no newline"),
        voice,
        linked,
        file_part("b.bin", "application/zip", b"PK"),
    ]
    found = attachments_of(message(*parts), "t", 100)
    chat = user_message(message(*parts), found, {"attachments/t/b.bin": "disk full"})
    assert chat.images == (image.media,)
    assert chat.text == (
        "look\n"
        "[attached file: a.txt (text/plain, 10 bytes), saved as attachments/t/a.txt]\n"
        "no newline\n"
        "[end of a.txt]\n"
        "spoken words\n"
        "[attached file: x.csv (text/csv) at https://example.com/x.csv; its content was not fetched]\n"
        "[attached file: b.bin (application/zip, 2 bytes); it could not be saved in the workspace: disk full; "
        "it is not text, so it is not shown here]"
    )


def test_save_writes_each_file_and_reports_refusals(tmp_path: Path) -> None:
    """Files land under attachments/<turn>/; an attachments directory leading outside is refused, not followed."""
    root = tmp_path / "ws"
    root.mkdir()
    found = attachments_of(message(file_part("a.txt", "text/plain", b"hi\n")), "t1", 100)
    assert save_attachments(Workspace(root), found) == {}
    assert (root / "attachments" / "t1" / "a.txt").read_bytes() == b"hi\n"
    (root / "attachments").rename(root / "old")
    (tmp_path / "outside").mkdir()
    (root / "attachments").symlink_to(tmp_path / "outside")
    unsaved = save_attachments(Workspace(root), found)
    assert list(unsaved) == ["attachments/t1/a.txt"]
    assert "outside the workspace" in unsaved["attachments/t1/a.txt"]
    assert list((tmp_path / "outside").iterdir()) == []
