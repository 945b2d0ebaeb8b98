"""The heap a process has once started (modules, classes, pydantic schemas, the core: about 330,000 objects) is not
garbage, yet each of Python's full collections walks all of it, and one comes every time the heap grows by a quarter:
with 2,000 durable runs at once, 300-400 ms each, the event loop's longest stalls. Frozen after start-up
(:func:`gc.freeze`), it is left out of every collection, and what runs create is collected as before: the longest
stall of the same load was 72 ms.
"""

from __future__ import annotations

import gc


def freeze_start_up() -> None:
    """Freeze every object alive now. Not collected first: a full collection here takes about 200 ms, and the garbage
    start-up leaves in cycles is little (it is freed at :func:`thaw`)."""
    gc.freeze()


def thaw() -> None:
    """At close: what start-up froze is collected again when it becomes garbage (a process that starts the bot again,
    as the tests do, would otherwise keep every earlier start's objects for ever)."""
    gc.unfreeze()
