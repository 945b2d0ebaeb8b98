"""Which live runs a start-up leaves live when durable runs are on: those whose workflow (their own, or one of their
wakes') DBOS recovers, those paused for an approval (a decision wakes them), and those waiting on children that are,
transitively, among them (the children's results wake them). Every other live run was cut off for good and is settled
``interrupted``; a child's end still reaches a waiting parent that stays live, so it is woken once all have ended."""

from __future__ import annotations

from bot.records import RunStatus
from storage.repositories import Repositories


async def left_live(repos: Repositories, recovering: set[str]) -> set[str]:
    live = await repos.runs.list_live()
    kept = set(recovering) | {run.id for run in live if run.status is RunStatus.AWAITING_APPROVAL}
    waiting = {run.id for run in live if run.status is RunStatus.WAITING_CHILDREN}
    while more := {run.parent_run_id or "" for run in live if run.id in kept} & waiting - kept:
        kept |= more
    return kept
