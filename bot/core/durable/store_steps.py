"""Steps of a durable run journaled in the store itself, not in DBOS: those whose work is the store's (taking a
run's inbox or its approval decisions, pausing for approval, reading where a turn starts). The work and the record
of what it returned commit in one transaction (a read's, right after it), so such a step happens exactly once (a
replay reads the record back) for a fraction of a millisecond, where a DBOS step costs milliseconds of CPU (two
transactions of its own, built through SQLAlchemy, on DBOS's threads).

A step's key is its workflow's id, its name, and its count among that workflow's steps of that name: the same when a
recovered workflow replays it, since a workflow is deterministic up to what its steps return. A workflow this
process starts new (a run's, or a wake's under its next number) reads no record back: none can exist yet. Outside a
workflow (durable runs off) a step is its work, in a transaction.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from contextvars import ContextVar
from typing import TypeVar

from dbos import DBOS

from bot.agents.journal import in_workflow
from storage.db import Connection
from storage.repositories import Repositories

T = TypeVar("T")
_counts: ContextVar[Counter[str] | None] = ContextVar("store_step_counts", default=None)
_new: ContextVar[bool] = ContextVar("store_steps_new", default=False)  # the workflow starting here is a new one
_replayable: ContextVar[bool] = ContextVar("store_steps_replayable", default=True)


def starting_new() -> None:
    """The workflow this task starts next is new: no step of it can have happened before."""
    _new.set(True)


def begin() -> None:
    """At the start of a workflow's body: its store steps count from the first (each execution, replays too).

    A new workflow's steps look for no record of an earlier execution: there is none."""
    _counts.set(Counter())
    _replayable.set(not _new.get())
    _new.set(False)


async def store_step(
    repos: Repositories,
    run_id: str,
    name: str,
    work: Callable[[Connection], Awaitable[T]],
    encode: Callable[[T], str],
    decode: Callable[[str], T],
    tx: Connection | None = None,
) -> T:
    """``work`` in a transaction, once per workflow step: a replay gets back what the first execution returned.

    ``tx``: in that transaction, with the caller's own work, rather than in one of its own."""
    if not in_workflow():
        async with _in(repos, tx) as within:
            return await work(within)
    counts = _counts.get()
    assert counts is not None, "a store step in a workflow whose body did not begin()"
    counts[name] += 1
    key = f"{DBOS.workflow_id}#{name}#{counts[name]}"
    recorded = await repos.run_steps.output(key) if _replayable.get() else None
    if recorded is not None:
        return decode(recorded)
    async with _in(repos, tx) as within:
        result = await work(within)
        await repos.run_steps.record(within, key, run_id, encode(result))
    return result


def _in(repos: Repositories, tx: Connection | None) -> AbstractAsyncContextManager[Connection]:
    """The caller's transaction ``tx``, left to it to commit; else a transaction of the step's own."""
    return nullcontext(tx) if tx is not None else repos.db.transaction()


async def once(repos: Repositories, run_id: str, name: str, work: Callable[[Connection], Awaitable[None]]) -> bool:
    """``work`` in a transaction, once per workflow step; False: a replay, whose first execution did it."""
    done = False

    async def doing(tx: Connection) -> bool:
        nonlocal done
        await work(tx)
        done = True
        return done

    await store_step(repos, run_id, name, doing, json.dumps, json.loads)
    return done


class StoreSteps:
    """The engine's :class:`~bot.core.runs.ports.Journal`: store steps over one store's repositories."""

    def __init__(self, repos: Repositories) -> None:
        self._repos = repos

    async def step(
        self,
        run_id: str,
        name: str,
        work: Callable[[Connection], Awaitable[T]],
        encode: Callable[[T], str],
        decode: Callable[[str], T],
        tx: Connection | None = None,
    ) -> T:
        return await store_step(self._repos, run_id, name, work, encode, decode, tx)

    def first_execution(self) -> bool:
        """Outside a workflow, always; in one, unless it may be a recovered workflow's replay."""
        return not in_workflow() or not _replayable.get()
