"""The one redaction of secrets, for every text stored or leaving the process.

The secrets are the values of the environment variables the config names: the Discord token
(``discord.token_env``), every provider's key (``providers.<name>.api_key_env``), every agent's own keys
(``agents.list.<id>.api_key_env``) and every MCP server's ``env_from`` values. They are read once, at start; a
value shorter than :data:`MIN_SECRET_LENGTH` characters is not redacted (it would cut common words out of text).
Each occurrence becomes :data:`REDACTED`. Applied to logs (every field, nested dicts and lists included), to what
a turn of a run stores and says (transcripts, results, errors: and so announcements, replies, ``/subagents info``
and ``log``, completion events), to model answers, provider errors and tool results before a durable run's journal
records them and before the model reads them, and to approval requests. Storage never sees a secret: callers
redact before they hand text to it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, ToolReturn
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from bot.config import Config, secret_values

REDACTED = "[REDACTED]"
MIN_SECRET_LENGTH = 6

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)


class Redactor:
    """Replaces every occurrence of a known secret.

    In a text, or anywhere in nested dicts, lists and tuples."""

    def __init__(self, secrets: Iterable[str]) -> None:
        kept = sorted({s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)  # longest first
        self._pattern = re.compile("|".join(re.escape(secret) for secret in kept)) if kept else None

    @classmethod
    def of(cls, config: Config, environ: Mapping[str, str] | None = None) -> Redactor:
        """The redaction of every secret ``config`` names, as the environment holds them now."""
        return cls(secret_values(config, dict(os.environ if environ is None else environ)))

    def text(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(REDACTED, text)

    def value(self, value: T) -> T:
        """``value`` with every string in it redacted; other objects as they are.

        Strings in it: dict keys and values, list and tuple items."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)  # type: ignore[return-value]  # a str subclass becomes a str
        if isinstance(value, dict):
            return {self.value(key): self.value(item) for key, item in value.items()}  # type: ignore[return-value]
        if isinstance(value, list):
            return [self.value(item) for item in value]  # type: ignore[return-value]
        if isinstance(value, tuple) and not hasattr(value, "_fields"):  # a named tuple stays as it is
            return tuple(self.value(item) for item in value)  # type: ignore[return-value]
        if isinstance(value, ToolReturn):  # a tool's result with content for the model beside its return value
            return replace(value, return_value=self.value(value.return_value), content=self.value(value.content))
        return value

    def exception(self, error: E) -> E:
        """``error`` itself, with every secret in its arguments and attributes redacted.

        They are all that pickling keeps: what a durable run's journal records of a failed step."""
        if self._pattern is not None:
            error.args = self.value(error.args)
            error.__dict__.update({name: self.value(value) for name, value in vars(error).items()})
        return error

    def messages(self, messages: Sequence[ModelMessage]) -> list[ModelMessage]:
        """Model messages as they may be stored: the same ones when no secret occurs in them, else copies with every
        secret redacted (prompts, replies, tool calls' arguments and tool results alike)."""
        if self._pattern is None or not messages:
            return list(messages)
        dumped = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
        redacted = self.value(dumped)
        return list(messages) if redacted == dumped else ModelMessagesTypeAdapter.validate_python(redacted)


@dataclass
class RedactedToolset(WrapperToolset[Any]):
    """A toolset whose results and errors (a retry's message too) come back redacted: what the model reads, and
    what a durable run's journal records of a call."""

    redact: Redactor = field(default_factory=lambda: Redactor(()))

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        try:
            return self.redact.value(await self.wrapped.call_tool(name, tool_args, ctx, tool))
        except Exception as error:
            raise self.redact.exception(error)  # noqa: B904  # the same error, its traceback kept


class RedactedModel(WrapperModel):
    """A model whose answers and errors (a provider's error body) come back redacted: what the run stores, and
    what a durable run's journal records of a request."""

    def __init__(self, wrapped: Model, redact: Redactor) -> None:
        super().__init__(wrapped)
        self.redact = redact

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        try:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        except Exception as error:
            raise self.redact.exception(error)  # noqa: B904  # the same error, its traceback kept
        redacted = self.redact.messages([response])[0]
        assert isinstance(redacted, ModelResponse)
        return redacted
