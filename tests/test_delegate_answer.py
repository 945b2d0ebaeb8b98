"""A delegate's answer as the asking agent reads it: under ZeroClaw's header, which names both models and ends with
a warning when a later candidate of the target's fallback chain served it (reference/zeroclaw.md §6)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.core.tools.delegate_records import FALLBACK_WARNING, agent_header, answer
from bot.records import DelegateTask, Run, RunStatus, TaskStatus
from tests.test_spawn_policy import caller_run


def ended(model: str, served: str | None) -> Run:
    return replace(caller_run(model), status=RunStatus.COMPLETED, served_model=served)


@pytest.mark.parametrize(("agentic", "tail"), [(False, ")]"), (True, ", agentic)]")])
def test_a_fallback_answer_names_both_models_and_warns(agentic, tail):
    task = DelegateTask(
        task_id="t",
        run_id="r",
        caller_session_key="c",
        agent="analyst",
        header=agent_header("analyst", "fake/gpt-4o", agentic=agentic),
        background=False,
        status=TaskStatus.RUNNING,
        started_at=0,
        deadline=1,
    )

    assert answer(task, ended("fake/gpt-4o", "fake/gpt-4o"), "42") == f"[Agent 'analyst' (fake/gpt-4o{tail}\n42"
    assert answer(task, ended("fake/gpt-4o", None), "42") == f"[Agent 'analyst' (fake/gpt-4o{tail}\n42"
    assert answer(task, ended("fake/gpt-4o", "fake/o3"), "42") == (
        f"[Agent 'analyst' (requested: fake/gpt-4o; served: fake/o3{tail}\n42\n\n{FALLBACK_WARNING}"
    )
