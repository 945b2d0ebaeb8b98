"""What almost every room of the core is built with, as one frozen value.

Rooms take a :class:`CoreContext` instead of five loose arguments, so a new common need is one field here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.config import Config
from bot.core.signals import Signals
from bot.core.timers import Timers
from bot.redaction import Redactor
from storage.repositories import Repositories


@dataclass(frozen=True)
class CoreContext:
    """The config, the store's repositories, the clock, signals, timers and the redactor."""

    config: Config
    repos: Repositories
    clock: Callable[[], float]
    signals: Signals
    timers: Timers
    redact: Redactor
