"""What the orchestrator costs per run, against a bare pydantic-ai run.

The bare run uses the same model, in the same process. Run by hand:
``.venv/bin/python bench/orchestrator_overhead.py [runs] [repeats]``. The model is an instant FunctionModel, so the
numbers are pure overhead: persistence (session, run, transcript, outbox rows in SQLite), the lane, and the
supervisor. Prints medians and the ratio; the machine is shared, so compare ratios, not times.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from bot.agents.models import ModelFactory, ResolvedModel
from bot.config import parse_config
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import SpawnRequest
from bot.records import Origin
from storage.db import Database

CONFIG = '[agents.defaults]\nmodel = "bench/instant"\n[agents.defaults.subagents]\nmax_children_per_agent = 20\n'


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("done")])


class InstantModels(ModelFactory):
    """Every agent's model is ``model``: by default one that answers at once."""

    def __init__(self, model: FunctionModel | None = None) -> None:
        super().__init__({})
        self._model = model or FunctionModel(answer, model_name="instant")

    def resolve(self, reference: str, agent: str | None = None) -> ResolvedModel:
        return ResolvedModel("bench/instant", self._model)


async def bare(runs: int) -> float:
    agent = Agent(FunctionModel(answer, model_name="instant"))
    started = time.perf_counter()
    for i in range(runs):
        await agent.run(f"task {i}")
    return (time.perf_counter() - started) / runs


async def orchestrated(runs: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        db = await Database.open(str(Path(folder) / "bench.sqlite3"))
        core = Orchestrator(parse_config(CONFIG), db, InstantModels())
        await core.start()
        origin = Origin(user_id=1, channel_id=2, conversation="bench:1", guild_id=3)
        started = time.perf_counter()
        for i in range(runs):
            accepted = await core.spawn(SpawnRequest(agent_id="main", task=f"task {i}", origin=origin))
            await core.core.ctx.signals.wait_for(functools.partial(_done, core, accepted.run_id), timeout=10)
        elapsed = (time.perf_counter() - started) / runs
        await core.close()
        await db.close()
        return elapsed


async def _done(core: Orchestrator, run_id: str) -> bool | None:
    run = await core.runs.get(run_id)
    return True if run is not None and run.status.is_terminal else None


async def main(runs: int, repeats: int) -> None:
    bare_times = [await bare(runs) for _ in range(repeats)]
    core_times = [await orchestrated(runs) for _ in range(repeats)]
    bare_ms = statistics.median(bare_times) * 1000
    core_ms = statistics.median(core_times) * 1000
    print(f"runs={runs} repeats={repeats}")
    print(f"bare pydantic-ai run      median {bare_ms:7.2f} ms/run")
    print(f"spawn → announce (core)   median {core_ms:7.2f} ms/run")
    print(f"ratio core / bare         {core_ms / bare_ms:7.1f}x   (overhead {core_ms - bare_ms:.2f} ms/run)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100, int(sys.argv[2]) if len(sys.argv) > 2 else 5))
