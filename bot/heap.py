"""The start-up heap, frozen so that Python's full collections skip it.

The heap a process has once started (modules, classes, pydantic schemas, the core: hundreds of thousands of objects)
is not garbage, yet each of Python's full collections walks all of it, and one comes every time the heap grows by a
quarter: with thousands of durable runs at once, those walks are the event loop's longest stalls. Frozen after
start-up (:func:`gc.freeze`), it is left out of every collection, and what runs create is collected as before.
"""

from __future__ import annotations

import gc


def freeze_start_up() -> None:
    """Freeze every object alive now. Not collected first: a full collection of the whole heap is slow, and the
    garbage start-up leaves in cycles is little (it is freed at :func:`thaw`)."""
    gc.freeze()


def thaw() -> None:
    """At close: what start-up froze is collected again when it becomes garbage (a process that starts the bot again,
    as the tests do, would otherwise keep every earlier start's objects for ever)."""
    gc.unfreeze()
