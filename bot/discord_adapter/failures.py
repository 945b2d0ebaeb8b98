"""Discord failures: which are worth retrying, how long to wait, and how to name them in a line.

One rule for every place that talks to Discord (log-in at start-up, announcement delivery), so a failure that
the bot waits out in one place is not fatal in another.
"""

from __future__ import annotations

import asyncio
import os

import aiohttp
import discord

from bot.i18n import Words

NETWORK_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError)


def is_transient(error: BaseException) -> bool:
    """5xx, 429 and network failures pass; a malformed URL, a bad token or any other answer will not.

    A rate limit longer than the client waits out (``max_ratelimit_timeout``) passes too: it is retried later."""
    if isinstance(error, discord.RateLimited):
        return True
    if isinstance(error, discord.HTTPException):
        return error.status >= 500 or error.status == 429
    if isinstance(error, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError)):
        return False
    return isinstance(error, NETWORK_ERRORS)


def backoff_delay(base: float, attempt: int, cap: float) -> float:
    """Exponential backoff: ``base`` before the second attempt, doubling each time, never above ``cap``."""
    return min(cap, base * 2 ** (attempt - 1))


def short_reason(error: BaseException) -> str:
    """A few words for a log line or an exit message, never a traceback: ``503 Service Unavailable``,
    ``Connection refused``, ``Name or service not known``, ``timed out``."""
    if isinstance(error, discord.HTTPException):
        return f"{error.status} {error.response.reason}"
    if isinstance(error, aiohttp.ClientConnectorError):
        os_error = error.os_error
        if os_error.errno is not None and os_error.errno > 0:
            return os.strerror(os_error.errno)
        return os_error.strerror or str(os_error)
    if isinstance(error, asyncio.TimeoutError):
        return "timed out"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def error_words(error: BaseException) -> Words:
    """A failure in words for people (``/subagents info``, notices), not a Python repr; Discord's own text as is."""
    if isinstance(error, discord.HTTPException):
        return Words("delivery-error-answered", {"answer": str(error)})
    if isinstance(error, discord.RateLimited):
        return Words("delivery-error-rate-limited", {"seconds": f"{error.retry_after:.0f}"})
    if isinstance(error, NETWORK_ERRORS):
        return Words("delivery-error-unreachable", {"reason": short_reason(error)})
    return Words("delivery-error-other", {"detail": str(error) or type(error).__name__})


def describe_error(error: BaseException) -> str:
    """:func:`error_words` in English: for logs, and what the outbox keeps as the error."""
    return str(error_words(error))
