"""The checks people's commands and agents' tools share before killing or steering a run."""

from dataclasses import replace

from bot.core.oversight.run_actions import NotActionable, descendants, kill_refusal, live_runs, steer_refusal
from bot.records import Run, RunKind, RunStatus

RUN = Run(
    id="a" * 32,
    session_key="agent:main:subagent:x",
    kind=RunKind.SPAWN,
    status=RunStatus.RUNNING,
    task="t",
    model="test/m",
    thinking=None,
    timeout_seconds=0,
    requester_user_id=1,
    guild_id=None,
    channel_id=2,
    source_message_id=None,
    created_at=0,
)


def test_a_live_run_can_be_killed_and_a_finished_one_cannot():
    for status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING_CHILDREN):
        assert kill_refusal(replace(RUN, status=status)) is None
    for status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.KILLED, RunStatus.INTERRUPTED):
        assert kill_refusal(replace(RUN, status=status)) is NotActionable.FINISHED
    assert kill_refusal(None) is NotActionable.FINISHED


def test_a_waiting_run_is_not_steered_itself():
    assert steer_refusal(replace(RUN, status=RunStatus.QUEUED)) is None
    assert steer_refusal(RUN) is None
    assert steer_refusal(replace(RUN, status=RunStatus.WAITING_CHILDREN)) is NotActionable.WAITING
    assert steer_refusal(replace(RUN, status=RunStatus.TIMED_OUT)) is NotActionable.FINISHED


def test_a_kill_that_stopped_nothing_is_not_counted_as_minus_one_descendant():
    assert descendants([]) is None
    assert descendants([RUN]) == 0
    assert descendants([RUN, replace(RUN, id="b" * 32)]) == 1


def test_live_runs_pairs_each_row_with_its_live_run():
    done = replace(RUN, status=RunStatus.COMPLETED)
    assert live_runs(["a", "b", "c"], {"a": RUN, "b": done, "c": None}.get) == [("a", RUN)]
