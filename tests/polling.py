"""How tests wait: until something happens, or through a window where something must not.

``eventually`` waits for what happens on its own time (a message, a request, a database state); ``stays`` waits
through a window in which a state must hold (nothing more is sent, a run stays queued), failing as soon as it does not.

``eventually`` re-checks its condition whenever it may have changed: when the fake that owns the state announces a
change (``changed`` returns the event it will set next), or else — the bot's SQLite database announces nothing — on a
short interval. On timeout the test fails with an AssertionError saying what it waited for and what it saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

POLL_INTERVAL = 0.01


class NeverHappened(AssertionError, TimeoutError):
    """What a test waited for did not happen in time: a readable pytest failure that is also a TimeoutError."""


async def eventually(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout: float,
    describe: str | Callable[[], str],
    changed: Callable[[], asyncio.Event] | None = None,
) -> T:
    """The first truthy result of ``check()`` (plain or awaitable): a found message, ``True``, a row.

    ``describe`` says what is awaited (a callable is asked at the timeout, so it can show the last state seen);
    ``changed`` returns the event that is set at the next change, else the check is polled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        event = changed() if changed is not None else None  # taken before checking: no change slips between
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return result
        remaining = deadline - loop.time()
        if remaining <= 0:
            description = describe() if callable(describe) else describe
            raise NeverHappened(f"timed out after {timeout:g}s: {description}")
        if event is None:
            await asyncio.sleep(min(POLL_INTERVAL, remaining))
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)


class DidNotHold(AssertionError):
    """A state a test said must hold stopped holding: a readable pytest failure."""


async def stays(
    check: Callable[[], object | Awaitable[object]], *, for_seconds: float, describe: str | Callable[[], str]
) -> None:
    """Wait ``for_seconds`` while ``check()`` stays truthy; fail at once when it does not.

    For what must not happen within a window (a second delivery, a run starting past its lane's limit): the check
    says the state is still as it should be, and is polled from the start to the window's end, both included.
    ``describe`` says what should have held (a callable is asked at the failure, to show what was seen)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + for_seconds
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if not result:
            description = describe() if callable(describe) else describe
            raise DidNotHold(f"stopped holding within {for_seconds:g}s: {description}")
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        await asyncio.sleep(min(POLL_INTERVAL, remaining))
