"""Several processes on one store: shards and the executor id they give a process, the refusal of an executor id a
live process holds, the heartbeat, start-up settlement scoped to a process's own runs, and the janitor that claims
each dead process once and resumes (durable) or settles (not durable) its runs."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import pytest
from dbos import DBOS
from structlog.testing import capture_logs

from bot.__main__ import main
from bot.config import StorageConfig, parse_config
from bot.core.durable.durable_runs import DurableRuns
from bot.core.durable.executors import ExecutorTaken
from bot.core.orchestrator import Orchestrator
from bot.core.runs.requests import SpawnRequest
from bot.records import RunStatus
from bot.shards import ShardsError, parse_shards, with_shards
from storage.db import Database
from tests import stores
from tests.core_support import ORIGIN, Gate, ScriptedModels, settle
from tests.db_views import outbox_payloads
from tests.test_durable_runs import Script

CONFIG = """
[agents.defaults]
model = "test/default"
[agents.defaults.subagents]
max_spawn_depth = 2
[agents.list.main]
[agents.list.researcher]
[durability]
resume_interrupted = false
executor_id = "{executor}"
heartbeat_seconds = {heartbeat}
lease_seconds = {lease}
queue_poll_seconds = 0.2  # a dead process's workflow, resumed, waits for a poll of DBOS's own queue
"""


@pytest.fixture(autouse=True)
def _no_dbos_left_behind():
    yield
    DBOS.destroy()


def config(executor: str, *, heartbeat: float = 60, lease: float = 120, durable: bool = False):
    text = CONFIG.format(executor=executor, heartbeat=heartbeat, lease=lease)
    return parse_config(text.replace("resume_interrupted = false", f"resume_interrupted = {str(durable).lower()}"))


async def process(tmp_path, executor: str, models, **options) -> tuple[Database, Orchestrator]:
    """A bot process's core as ``executor`` on the shared store of ``tmp_path`` (its own connection)."""
    cfg = config(executor, **options)
    db = await Database.open(stores.database(tmp_path / "shared.sqlite3"))
    durable = DurableRuns(cfg.durability, StorageConfig(path=str(tmp_path / "shared.sqlite3")))
    orchestrator = Orchestrator(cfg, db, models, durable=durable if cfg.durability.resume_interrupted else None)
    try:
        await orchestrator.start()
    except BaseException:
        await db.close()
        raise
    return db, orchestrator


async def stop(db: Database, orchestrator: Orchestrator) -> None:
    await orchestrator.close()
    await db.close()


def processes(tmp_path):
    return stores.query(tmp_path / "shared.sqlite3", "SELECT executor_id, claimed_by FROM processes ORDER BY 1")


@pytest.mark.parametrize(
    ("spec", "count", "ids", "executor"),
    [
        ("2", "4", (2,), "shards-2-of-4"),
        ("0-3", "8", (0, 1, 2, 3), "shards-0-3-of-8"),
        ("0-1,4", "8", (0, 1, 4), "shards-0-1_4-of-8"),
    ],
)
def test_shards_name_the_process_unless_the_config_does(spec, count, ids, executor):
    shards = parse_shards(spec, count)
    assert shards is not None and shards.ids == ids and shards.count == int(count)
    assert with_shards(config("local"), shards).durability.executor_id == executor
    assert with_shards(config("eu-1"), shards).durability.executor_id == "eu-1"
    assert with_shards(config("local"), None).durability.executor_id == "local"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--shards", "8", "--shard-count", "8"], "shards are numbered 0 to 7 with --shard-count 8"),
        (["--shards", "3-1", "--shard-count", "8"], "the range 3-1 is reversed (write 1-3)"),
        (["--shards", "0-3"], "--shards and --shard-count go together"),
        (["--shard-count", "2"], "--shards and --shard-count go together"),
        (["--shards", "a", "--shard-count", "2"], "expected shard numbers like 2, 0-3 or 0-1,4"),
        (["--shards", "0,0", "--shard-count", "2"], "names a shard twice"),
        (["--shards", "0", "--shard-count", "two"], "--shard-count must be a whole number of at least 1"),
    ],
)
def test_bad_shards_are_one_line_and_exit_1(args, said, capsys):
    assert main(["--config", "missing.toml", *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("threadbound: ") and said in err
    with pytest.raises(ShardsError):
        parse_shards(args[1] if args[0] == "--shards" else None, args[-1] if "--shard-count" in args else None)


async def test_an_executor_id_a_live_process_holds_is_refused_and_a_dead_ones_taken_over(tmp_path):
    db = await Database.open(stores.database(tmp_path / "shared.sqlite3"))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    now = time.time()
    here = socket.gethostname()
    rows = [("elsewhere", 41, "other-host", now), ("stale", 42, "other-host", now - 500), ("gone", 0, here, now)]
    async with db.transaction() as tx:
        for executor, pid, host, beat in rows:
            pid = int(gone.stdout) if executor == "gone" else pid
            await tx.execute(
                "INSERT INTO processes (executor_id, pid, host, shards, started_at, heartbeat_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (executor, pid, host, None, beat, beat),
            )
    await db.close()

    with pytest.raises(ExecutorTaken) as refused:
        await process(tmp_path, "elsewhere", ScriptedModels())
    assert str(refused.value).startswith("executor id 'elsewhere' is held by a live process (pid 41 on other-host")
    for executor in ("stale", "gone"):  # a heartbeat older than the lease; a pid of this host that no longer runs
        db, orchestrator = await process(tmp_path, executor, ScriptedModels())
        row = stores.query(
            tmp_path / "shared.sqlite3", "SELECT pid, host FROM processes WHERE executor_id = ?", (executor,)
        )
        assert row == [(os.getpid(), here)]
        await stop(db, orchestrator)


async def test_a_live_process_beats_its_heartbeat(tmp_path):
    db, orchestrator = await process(tmp_path, "beating", ScriptedModels(), heartbeat=0.05, lease=1)
    sql = "SELECT heartbeat_at FROM processes WHERE executor_id = 'beating'"
    try:
        first = stores.query(tmp_path / "shared.sqlite3", sql)[0][0]
        await settle(orchestrator, lambda: _later(tmp_path, sql, first))
    finally:
        await stop(db, orchestrator)
    assert stores.query(tmp_path / "shared.sqlite3", sql) == [(0,)]  # a clean stop ends it at once


async def _later(tmp_path, sql, than):
    return stores.query(tmp_path / "shared.sqlite3", sql)[0][0] > than


async def test_a_second_process_starting_leaves_the_first_ones_runs_alone(tmp_path):
    gate = Gate("first's answer")
    db_a, a = await process(tmp_path, "a", ScriptedModels(default=gate))
    accepted = await a.spawn(SpawnRequest(agent_id="researcher", task="work", origin=ORIGIN))
    await gate.entered.wait()
    db_b, b = await process(tmp_path, "b", ScriptedModels())
    try:
        assert (await b.runs.get(accepted.run_id)).status is RunStatus.RUNNING
        assert await b.runs.owner(accepted.run_id) == "a"
        gate.opened.set()
        await settle(a, lambda: _status(a, accepted.run_id, RunStatus.COMPLETED))
        assert _announced(await outbox_payloads(a)) == [(accepted.run_id, "completed", "first's answer")]
    finally:
        await stop(db_b, b)
        await stop(db_a, a)


def _announced(payloads: list[dict]) -> list[tuple[str, str, str]]:
    return [(p["run_id"], p["status"], p["body"]) for p in payloads]


async def _status(core, run_id, status):
    return (await core.runs.get(run_id)).status is status


async def test_two_janitors_racing_claim_a_dead_process_once_and_settle_its_runs_once(tmp_path):
    gate = Gate()
    db_a, a = await process(tmp_path, "a", ScriptedModels(default=gate))
    accepted = await a.spawn(SpawnRequest(agent_id="researcher", task="work", origin=ORIGIN))
    await gate.entered.wait()
    await stop(db_a, a)  # its run stays live, owned by "a"; a clean stop ends its heartbeat at once
    db_b, b = await process(tmp_path, "b", ScriptedModels())
    db_c, c = await process(tmp_path, "c", ScriptedModels())
    try:
        assert (await b.runs.get(accepted.run_id)).status is RunStatus.RUNNING  # neither start touched it
        seen_by_b, seen_by_c = await b.core.executors.expired(), await c.core.executors.expired()
        assert [row.executor_id for row in seen_by_b + seen_by_c] == ["a", "a"]  # both see it dead, then race
        taken = await asyncio.gather(b.core.executors.take(seen_by_b[0]), c.core.executors.take(seen_by_c[0]))
        assert sorted(taken) == [False, True]
        assert (await b.runs.get(accepted.run_id)).status is RunStatus.INTERRUPTED
        [(run_id, status, _)] = _announced(await outbox_payloads(b))
        assert (run_id, status) == (accepted.run_id, "interrupted")
        assert processes(tmp_path) == [("b", None), ("c", None)]  # the dead one's row is gone once recovered
        assert await asyncio.gather(b.core.executors.sweep(), c.core.executors.sweep()) == [[], []]
    finally:
        await stop(db_c, c)
        await stop(db_b, b)


async def test_a_dead_processs_workflow_is_resumed_by_a_live_one_which_then_owns_it(tmp_path):
    """Durable: the dead process's run resumes from its journal in the live process (the completed request 1 is not
    sent again, the cut-off request 2 is), and completes and announces once there."""
    script = Script()
    db_a, a = await process(tmp_path, "a", ScriptedModels(default=script.answer), durable=True)
    accepted = await a.spawn(SpawnRequest(agent_id="researcher", task="find it", origin=ORIGIN))
    await script.waiting.wait()
    await stop(db_a, a)
    script.release.set()
    db_b, b = await process(tmp_path, "b", ScriptedModels(default=script.answer), durable=True)
    try:
        assert (await b.runs.get(accepted.run_id)).status is RunStatus.RUNNING  # b's launch did not recover it
        assert len(script.requests) == 2
        assert await b.core.executors.sweep() == ["a"]
        await settle(b, lambda: _status(b, accepted.run_id, RunStatus.COMPLETED))
        assert await b.runs.owner(accepted.run_id) == "b"
        assert len(script.requests) == 3 and len(script.requests[2]) == len(script.requests[1]) == 3  # request 2 again
        assert (await b.runs.get(accepted.run_id)).usage.requests == 2
        assert _announced(await outbox_payloads(b)) == [(accepted.run_id, "completed", "resumed answer")]
    finally:
        await stop(db_b, b)


async def test_a_process_claimed_while_alive_stops_its_runs_and_registers_again(tmp_path):
    """A process silent past its lease (stalled) is declared dead and its runs handed on; when it comes back it
    stops executing them (the request it had in flight is aborted, not answered twice) and takes new work again."""
    gate, aborted = Gate(), asyncio.Event()

    async def watched(messages, info):
        try:
            return await gate(messages, info)
        except asyncio.CancelledError:
            aborted.set()
            raise

    db_a, a = await process(tmp_path, "a", ScriptedModels(default=watched))
    db_b, b = await process(tmp_path, "b", ScriptedModels())
    try:
        accepted = await a.spawn(SpawnRequest(agent_id="researcher", task="work", origin=ORIGIN))
        await gate.entered.wait()
        async with db_a.transaction() as tx:  # a's heartbeat stalls past the lease
            await tx.execute("UPDATE processes SET heartbeat_at = 0 WHERE executor_id = 'a'")
        assert await b.core.executors.sweep() == ["a"]
        assert (await b.runs.get(accepted.run_id)).status is RunStatus.INTERRUPTED

        with capture_logs() as logs:
            await a.core.executors.beat()
        await asyncio.wait_for(aborted.wait(), 5)
        assert "executor_claimed_while_alive" in [line["event"] for line in logs]
        assert processes(tmp_path) == [("a", None), ("b", None)]  # registered again
        assert (await a.runs.get(accepted.run_id)).status is RunStatus.INTERRUPTED
        assert [status for _, status, _ in _announced(await outbox_payloads(a))] == ["interrupted"]

        gate.opened.set()
        again = await a.spawn(SpawnRequest(agent_id="researcher", task="more work", origin=ORIGIN))
        await settle(a, lambda: _status(a, again.run_id, RunStatus.COMPLETED))
        assert await a.runs.owner(again.run_id) == "a"
    finally:
        await stop(db_b, b)
        await stop(db_a, a)
