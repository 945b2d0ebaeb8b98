"""How much a tool result, and a run's result, may hold: what is over is cut, with a marker where it was cut.

A tool result reaches the model's context and the session's transcript only up to ``[tools] result_max_bytes`` of
text (its JSON form when it is not text), shared by all of its text items; an image or audio item is kept up to
``[tools] result_max_binary_bytes`` and otherwise replaced by a note. The marker is part of the text the model
reads, so it knows it was given only the beginning.

A run's result (stored, announced, handed to its requester) is cut at ``RESULT_MAX_BYTES``, 1 MiB: more than a model
writes in one answer (the largest output limits, about 128k tokens, come to about half of it), so a real answer is
never cut, while the run's row, its announcement's outbox row and ``result.md`` stay bounded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import BinaryContent, ToolReturn, tool_return_ta
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from bot.config import TOOL_RESULT_MAX_BINARY_BYTES, TOOL_RESULT_MAX_BYTES, Config

RESULT_MAX_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ResultLimits:
    """What one tool result may hold: text bytes (shared by its items), and bytes of each image or audio item."""

    text_bytes: int = TOOL_RESULT_MAX_BYTES
    binary_bytes: int = TOOL_RESULT_MAX_BINARY_BYTES

    @classmethod
    def of(cls, config: Config) -> ResultLimits:
        return cls(config.tools.result_max_bytes, config.tools.result_max_binary_bytes)


def _marker(total: int, shown: int) -> str:
    return f"\n…[truncated: {total:,} bytes, showing the first {shown:,}]"


def _size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def _cut(text: str, limit: int) -> str:
    """The longest start of ``text`` whose UTF-8 form fits in ``limit`` bytes."""
    return text.encode("utf-8", errors="surrogatepass")[: max(0, limit)].decode("utf-8", errors="ignore")


def truncated(text: str, limit: int) -> str:
    """``text`` if its UTF-8 form fits in ``limit`` bytes; else its start and a marker saying so, in ``limit``."""
    if len(text) * 4 <= limit:  # no character takes more than 4 bytes
        return text
    size = _size(text)
    return text if size <= limit else _cut_texts([text], {0: text}, {0: size}, limit)[0]


def _text_of(item: Any) -> str:
    return item if isinstance(item, str) else tool_return_ta.dump_json(item, by_alias=True).decode()


def _binary_note(item: BinaryContent, limit: int) -> str:
    return f"…[omitted: {item.media_type} content of {len(item.data):,} bytes, over the limit of {limit:,}]"


def capped_result(value: Any, limits: ResultLimits) -> Any:
    """``value`` as a tool returned it when it fits ``limits``. Else each image or audio item over its limit becomes
    a note, and the text items (their JSON form when not text, notes included) are kept while they fit: the first
    that does not is cut, with a marker saying how much text there was and how much is shown, and the rest are left
    out. What this returns fits ``limits``, so cutting it again changes nothing."""
    if isinstance(value, ToolReturn):
        return replace(value, return_value=capped_result(value.return_value, limits))
    originals = list(value) if isinstance(value, list | tuple) else [value]
    items = [
        _binary_note(item, limits.binary_bytes)
        if isinstance(item, BinaryContent) and len(item.data) > limits.binary_bytes
        else item
        for item in originals
    ]
    texts = {index: _text_of(item) for index, item in enumerate(items) if not isinstance(item, BinaryContent)}
    sizes = {index: _size(text) for index, text in texts.items()}
    total = sum(sizes.values())
    if total > limits.text_bytes:
        items = _cut_texts(items, texts, sizes, limits.text_bytes)
    elif all(item is original for item, original in zip(items, originals, strict=True)):
        return value
    return items if isinstance(value, list | tuple) else items[0]


def _cut_texts(items: list[Any], texts: dict[int, str], sizes: dict[int, int], limit: int) -> list[Any]:
    """``items`` with their texts kept while they fit ``limit`` bytes.

    The first text that does not fit is cut, with a marker."""
    total = sum(sizes.values())
    budget, shown = limit - _size(_marker(total, limit)), 0
    capped: list[Any] = []
    for index, item in enumerate(items):
        if index not in texts:
            capped.append(item)
        elif sizes[index] <= budget:
            capped.append(item)
            budget, shown = budget - sizes[index], shown + sizes[index]
        else:  # the first text that does not fit: cut; the texts after it are left out
            kept = _cut(texts[index], budget)
            capped.append(kept + _marker(total, shown + _size(kept)))
            capped.extend(
                later for later_index, later in enumerate(items) if later_index > index and later_index not in texts
            )
            break
    return capped


@dataclass
class CappedToolset(WrapperToolset[Any]):
    """Every result of the wrapped tools, cut to ``limits``."""

    limits: ResultLimits = field(default_factory=ResultLimits)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        return capped_result(await self.wrapped.call_tool(name, tool_args, ctx, tool), self.limits)
