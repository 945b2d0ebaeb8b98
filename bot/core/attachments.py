"""Attachments in a prompt: whether the run's model may read them, and the prompt they make.

An image goes to the model as an image part by its URL, so only a model its provider lists in ``vision_models``
gets one; a text file goes in as text, fenced and labelled with its name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from pydantic_ai.messages import ImageUrl, ModelMessage, ModelRequest, UserContent, UserPromptPart

from bot.config import Config
from bot.core.errors import AttachmentRefused
from bot.i18n import Words
from bot.records import Attachment, AttachmentKind
from bot.redaction import Redactor

FileSource = Callable[[], Awaitable[Sequence[Attachment]]]  # a message's files, fetched only once it is routed


def reads_images(config: Config, model: str) -> bool:
    """Whether ``model`` (``<provider>/<model>``) is one its provider's ``vision_models`` lists."""
    provider, _, name = model.partition("/")
    configured = config.providers.get(provider)
    return configured is not None and name in configured.vision_models


def check_readable(config: Config, model: str, attachments: Sequence[Attachment]) -> None:
    """Refuse images for a model that cannot read them, before anything is written."""
    images = [item.name for item in attachments if item.kind is AttachmentKind.IMAGE]
    if images and not reads_images(config, model):
        provider = model.partition("/")[0]
        refused = {"model": model, "images": ", ".join(images), "provider": provider}
        raise AttachmentRefused(Words("refused-blind-model", refused))


def label(item: Attachment) -> str:
    """How the model and the log name an attachment: its name, size and kind."""
    return f"Attached {item.kind.value} file `{item.name}` ({item.size} bytes, sha256 {item.sha256[:12]})"


def _fence(text: str) -> str:
    """A fence longer than any run of backticks in ``text``.

    So the file cannot close it early."""
    longest, run = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def parts(item: Attachment) -> list[UserContent]:
    """One attachment as prompt parts: its label, then its text or its image."""
    if item.kind is AttachmentKind.TEXT:
        fence = _fence(item.text or "")
        return [f"{label(item)}:\n{fence}\n{item.text or ''}\n{fence}"]
    return [f"{label(item)}:", ImageUrl(url=item.url, media_type=item.media_type)]


def prompt_of(text: str, attachments: Sequence[Attachment]) -> str | list[UserContent]:
    """A turn's prompt: the text alone, or the text followed by its attachments' parts."""
    if not attachments:
        return text
    return [text, *(part for item in attachments for part in parts(item))]


def redacted(redact: Redactor, attachments: Sequence[Attachment]) -> list[Attachment]:
    """The attachments as they may be stored and read: secrets in text files' content redacted."""
    return [replace(item, text=redact.text(item.text)) if item.text is not None else item for item in attachments]


def shown(content: str | Sequence[UserContent]) -> str:
    """A prompt's text as a transcript shows it: its text parts; an image is shown by the label before it."""
    return content if isinstance(content, str) else "\n\n".join(part for part in content if isinstance(part, str))


def steered(text: str, attachments: Sequence[Attachment]) -> str:
    """A message for a live run, which reads text only: its text files go in with it; an image is refused."""
    images = [item.name for item in attachments if item.kind is AttachmentKind.IMAGE]
    if images:
        raise AttachmentRefused(Words("refused-image-while-running", {"images": ", ".join(images)}))
    return "\n\n".join([text, *(part for item in attachments for part in parts(item) if isinstance(part, str))])


def _seen(part: UserPromptPart) -> UserPromptPart:
    if isinstance(part.content, str) or not any(isinstance(item, ImageUrl) for item in part.content):
        return part
    shown = [item if not isinstance(item, ImageUrl) else "(the image was shown in that turn)" for item in part.content]
    return replace(part, content=shown)


def earlier_turns(history: Sequence[ModelMessage]) -> list[ModelMessage]:
    """Earlier turns as the next one sends them: their images by label only.

    Discord's attachment URLs expire, and every later turn would send every image again."""
    return [
        replace(message, parts=[_seen(part) if isinstance(part, UserPromptPart) else part for part in message.parts])
        if isinstance(message, ModelRequest)
        else message
        for message in history
    ]
