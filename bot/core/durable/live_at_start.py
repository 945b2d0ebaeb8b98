"""Which live runs stay live when a process settles what a dead process left.

The dead process is its own previous life at start-up, or one the janitor claimed. Left live are those whose workflow
(their own, or one of their wakes') DBOS recovers or a queue holds, those paused for an approval (a decision wakes
them), those another live process owns, and those waiting on children that are, transitively, among them (the children's
results wake them). With durable runs, a run whose start the dead process committed but never made (queued with no
workflow, or woken with none after its last one ended: it died between the commit and the start) is started again. Every
other run the dead process owned was cut off for good and is settled ``interrupted``; a child's end still reaches a
waiting parent that stays live, so it is woken once all have ended."""

from __future__ import annotations

from bot.core.durable.durable_runs import DurableRuns
from bot.core.runs.settlement import AfterCommit
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


async def lost_starts(
    repos: Repositories, durable: DurableRuns, kept: set[str], executor_id: str, *, or_nobody: bool
) -> AfterCommit:
    """The starts and wakes the dead process committed and never made, to make again."""
    again = AfterCommit()
    for run in await repos.runs.live_owned_by(executor_id, or_nobody=or_nobody):
        if run.id in kept or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            continue
        workflows = await durable.statuses(run.id)
        if run.status is RunStatus.QUEUED and not workflows:
            again.queue.append(run.id)
        elif run.status is RunStatus.RUNNING and workflows and all(status == "SUCCESS" for status in workflows):
            again.wake.append(run.id)
    return again
