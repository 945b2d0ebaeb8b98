"""A message's attachments: checked against the limits, downloaded, sorted into images and text.

A file is text when its bytes decode as UTF-8 with no NUL and few control characters, whatever its name says;
an image when Discord or its first bytes say so. Anything else, or anything over the limits, is refused by name:
a file is never dropped silently."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import discord

from bot.config import DiscordConfig
from bot.core.errors import AttachmentRefused
from bot.i18n import Words
from bot.records import Attachment, AttachmentKind

_IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_ALLOWED_CONTROLS = frozenset("\n\r\t\f\v\x1b")
_MAX_CONTROL_SHARE = 0.02  # more control characters than this and a decoded file is binary, not text


def _image_type(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((media for magic, media in _IMAGE_SIGNATURES.items() if data.startswith(magic)), None)


def text_of(data: bytes) -> str | None:
    """The file's text if its content is text (UTF-8, no NUL, mostly printable); else ``None``."""
    if b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    controls = sum(1 for char in text if not char.isprintable() and char not in _ALLOWED_CONTROLS and char != " ")
    return text if controls <= _MAX_CONTROL_SHARE * max(len(text), 1) else None


def _size(count: int) -> str:
    return f"{count / 1024:.0f} KiB" if count >= 1024 else f"{count} bytes"


def check_limits(files: Sequence[discord.Attachment], limits: DiscordConfig) -> None:
    """Refuse a message over the count, per-file or total limits before anything is downloaded."""
    if len(files) > limits.max_attachments:
        refused = {"count": str(len(files)), "limit": str(limits.max_attachments)}
        raise AttachmentRefused(Words("refused-too-many-files", refused))
    for file in files:
        if file.size > limits.max_attachment_bytes:
            refused = {"file": file.filename, "size": _size(file.size), "limit": _size(limits.max_attachment_bytes)}
            raise AttachmentRefused(Words("refused-file-too-big", refused))
    total = sum(file.size for file in files)
    if total > limits.max_attachments_total_bytes:
        refused = {"size": _size(total), "limit": _size(limits.max_attachments_total_bytes)}
        raise AttachmentRefused(Words("refused-files-too-big", refused))


async def prepared(files: Sequence[discord.Attachment], limits: DiscordConfig) -> tuple[Attachment, ...]:
    """The message's files as the model will read them; a :class:`AttachmentRefused` naming the file that cannot be."""
    check_limits(files, limits)
    prepared_files = []
    for file in files:
        try:
            data = await file.read()
        except discord.HTTPException as error:
            failed = {"file": file.filename, "status": str(error.status)}
            raise AttachmentRefused(Words("refused-download-failed", failed)) from None
        if len(data) > limits.max_attachment_bytes:  # the size Discord announced was not the size it served
            over = {"file": file.filename, "limit": _size(limits.max_attachment_bytes)}
            raise AttachmentRefused(Words("refused-file-over", over))
        prepared_files.append(_sorted(file, data))
    return tuple(prepared_files)


def _sorted(file: discord.Attachment, data: bytes) -> Attachment:
    digest = hashlib.sha256(data).hexdigest()
    announced = (file.content_type or "").split(";")[0].strip().lower()
    image = _image_type(data) or (announced if announced in _IMAGE_TYPES else None)
    if image is not None:
        return Attachment(file.filename, file.url, digest, len(data), AttachmentKind.IMAGE, image)
    text = text_of(data)
    if text is None:
        raise AttachmentRefused(Words("refused-unreadable-file", {"file": file.filename}))
    return Attachment(file.filename, file.url, digest, len(data), AttachmentKind.TEXT, "text/plain", text)
