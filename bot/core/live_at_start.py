"""Which live runs are left live when a process settles what a dead process left (its own previous life at start-up,
or one the janitor claimed): those whose workflow (their own, or one of their wakes') DBOS recovers, those paused for
an approval (a decision wakes them), those another live process owns, and those waiting on children that are,
transitively, among them (the children's results wake them). Every other run the dead process owned was cut off for
good and is settled ``interrupted``; a child's end still reaches a waiting parent that stays live, so it is woken once
all have ended."""

from __future__ import annotations

from bot.records import RunStatus
from storage.repositories import Repositories


async def left_live(repos: Repositories, recovering: set[str], executor_id: str, *, or_nobody: bool) -> set[str]:
    live = await repos.runs.list_live()
    settling = {run.id for run in await repos.runs.live_owned_by(executor_id, or_nobody=or_nobody)}
    kept = set(recovering) | {
        run.id for run in live if run.status is RunStatus.AWAITING_APPROVAL or run.id not in settling
    }
    waiting = {run.id for run in live if run.status is RunStatus.WAITING_CHILDREN}
    while more := {run.parent_run_id or "" for run in live if run.id in kept} & waiting - kept:
        kept |= more
    return kept
