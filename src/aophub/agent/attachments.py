"""Files attached to a turn's input, as the built-in agent gives them to the model.

A user message may carry files as ``MediaContent`` parts (an ``aop.Resource``
with inline data or a URI). Images go to the model as images (when its
profile accepts them); a part with a transcript gives its transcript. Every
other attachment with inline data is saved in the workspace under
``attachments/<turn>/<name>`` (names made safe: no directories, no leading dot,
only letters, digits, ``.``, ``_`` and ``-``; repeated names get ``-2``, ``-3``),
and the model is told its path; a UTF-8 text file up to the inline limit is
also given inline. A URI is named, not fetched.

:func:`attachments_of` and :func:`user_message` are pure and deterministic, so
a conversation rebuilt from stored events after a restart reads exactly as it
did; saving the files is the caller's part (:func:`save_attachments`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aop import content_pb2
from aophub.agent.provider import ChatMessage
from aophub.agent.sandbox import SandboxError, Workspace

__all__ = [
    "ATTACHMENTS_DIR",
    "DEFAULT_INLINE_ATTACHMENT_BYTES",
    "Attachment",
    "attachments_of",
    "save_attachments",
    "user_message",
]

DEFAULT_INLINE_ATTACHMENT_BYTES = 64 * 1024
ATTACHMENTS_DIR = "attachments"
_MAX_NAME_CHARS = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Media types that are text whatever their family says.
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/javascript",
        "application/x-sh",
        "application/sql",
        "application/x-ndjson",
    }
)


@dataclass(frozen=True)
class Attachment:
    """One attached file: how it is named and where it goes.

    ``path`` is where it is saved, relative to the workspace ("" for a URI or a
    part without data); ``text`` is its content when it goes inline, else None;
    ``why_not_inline`` says why a saved file is not shown.
    """

    name: str
    media_type: str
    data: bytes
    path: str
    text: str | None
    why_not_inline: str
    uri: str = ""


def _is_image(media: content_pb2.MediaContent) -> bool:
    return media.kind == "image" or media.resource.media_type.startswith("image/")


def _textual_type(media_type: str) -> bool:
    base = media_type.split(";", 1)[0].strip().lower()
    return (
        not base
        or base == "application/octet-stream"
        or base.startswith("text/")
        or base in _TEXT_TYPES
        or base.endswith(("+json", "+xml", "+yaml"))
    )


def _as_text(media_type: str, data: bytes) -> str | None:
    """``data`` as text if the media type allows text and the bytes are UTF-8 without NUL, else None."""
    if not _textual_type(media_type) or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _safe_name(name: str) -> str:
    """The last path component of ``name``, made safe (see :func:`_sanitize`)."""
    return _sanitize(name.replace("\\", "/").rsplit("/", 1)[-1])


def _sanitize(text: str) -> str:
    """``text`` with unsafe characters replaced, no leading dot, at most 100 characters; "" if nothing is left."""
    safe = _UNSAFE.sub("_", text).lstrip(".").strip("_")
    if len(safe) > _MAX_NAME_CHARS:
        stem, dot, extension = safe.rpartition(".")
        keep = extension if dot and stem and len(extension) <= 16 else ""
        safe = safe[: _MAX_NAME_CHARS - len(keep) - 1] + "." + keep if keep else safe[:_MAX_NAME_CHARS]
    return safe


def _turn_directory(turn_id: str) -> str:
    safe = _sanitize(turn_id)
    if safe == turn_id:
        return safe
    # Keep two turns whose ids differ only in unsafe characters apart.
    return f"{safe or 'turn'}-{hashlib.sha256(turn_id.encode()).hexdigest()[:8]}"


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        stem, dot, extension = name.rpartition(".")
        candidate = f"{stem}-{number}.{extension}" if dot and stem else f"{name}-{number}"
    taken.add(candidate)
    return candidate


def attachments_of(message: content_pb2.Message, turn_id: str, inline_limit: int) -> list[Attachment]:
    """The file attachments of ``message`` (images and transcribed parts excluded), in order."""
    found: list[Attachment] = []
    taken: set[str] = set()
    directory = f"{ATTACHMENTS_DIR}/{_turn_directory(turn_id)}"
    for part in message.content:
        if part.WhichOneof("value") != "media" or _is_image(part.media) or part.media.transcript:
            continue
        resource = part.media.resource
        media_type = resource.media_type or "unknown type"
        source = resource.WhichOneof("source")
        if source != "data":
            name = _safe_name(resource.filename) or _safe_name(resource.uri) or f"attachment-{len(found) + 1}"
            found.append(Attachment(name, media_type, b"", "", None, "", uri=resource.uri))
            continue
        name = _unique(_safe_name(resource.filename) or f"attachment-{len(found) + 1}", taken)
        data = resource.data
        text = _as_text(resource.media_type, data)
        if text is None:
            why = "it is not text"
        elif len(data) > inline_limit:
            text, why = None, f"it is over the {inline_limit}-byte inline limit"
        else:
            why = ""
        found.append(Attachment(name, media_type, data, f"{directory}/{name}", text, why))
    return found


def _describe(attachment: Attachment, unsaved: Mapping[str, str]) -> str:
    head = f"[attached file: {attachment.name} ({attachment.media_type}"
    if not attachment.path:
        if attachment.uri:
            return f"{head}) at {attachment.uri}; its content was not fetched]"
        return f"{head}) without content]"
    head += f", {len(attachment.data)} bytes)"
    problem = unsaved.get(attachment.path)
    where = f"; it could not be saved in the workspace: {problem}" if problem else f", saved as {attachment.path}"
    if attachment.text is None:
        return f"{head}{where}; {attachment.why_not_inline}, so it is not shown here]"
    body = attachment.text if attachment.text.endswith("\n") or not attachment.text else attachment.text + "\n"
    return f"{head}{where}]\n{body}[end of {attachment.name}]"


def user_message(
    message: content_pb2.Message,
    attachments: Sequence[Attachment],
    unsaved: Mapping[str, str] | None = None,
) -> ChatMessage:
    """The user ``message`` as the model sees it: its text, transcripts and ``attachments`` (from
    :func:`attachments_of`) in order, its images as images. ``unsaved`` maps the path of each
    attachment that could not be saved to the reason."""
    texts: list[str] = []
    images: list[content_pb2.MediaContent] = []
    files = iter(attachments)
    for part in message.content:
        kind = part.WhichOneof("value")
        if kind == "text":
            texts.append(part.text.text)
        elif kind == "media":
            if _is_image(part.media):
                images.append(part.media)
            elif part.media.transcript:
                texts.append(part.media.transcript)
            else:
                texts.append(_describe(next(files), unsaved or {}))
    return ChatMessage("user", "\n".join(texts), images=tuple(images))


def save_attachments(workspace: Workspace, attachments: Sequence[Attachment]) -> dict[str, str]:
    """Write each attachment with data to its path in ``workspace`` (blocking: run it in a thread).

    Returns the path of each attachment that could not be saved, with the reason.
    """
    unsaved: dict[str, str] = {}
    for attachment in attachments:
        if not attachment.path:
            continue
        try:
            workspace.replace_file(workspace.resolve(attachment.path), attachment.data)
        except SandboxError as error:
            unsaved[attachment.path] = str(error)
        except OSError as error:
            unsaved[attachment.path] = error.strerror or type(error).__name__
    return unsaved
