"""Binding deadlines are one sweep over an indexed column, not a timer per binding: bindings that came due while the
bot was down all end at the next start, each once and earliest first, across several pages of due rows; those not
yet due stay, with their deadlines."""

from __future__ import annotations

import time

from structlog.testing import capture_logs

from bot.records import Binding
from storage import due_rows as due_pages
from tests import stores
from tests.core_support import ScriptedModels, running_core, spawned_and_done, text
from tests.polling import eventually

CONFIG = '[agents.defaults]\nmodel = "test/m"\n[agents.list.main]\n'
MODELS = ScriptedModels(m=text("answer"))
PAGE = 50  # due rows read at a time (storage.due_rows reads 500; fewer here, so the test writes fewer)
DUE = 2 * PAGE + 21  # more than two pages of due rows
HOUR = 3600.0


async def test_bindings_due_while_down_end_once_each_earliest_first_and_others_stay(tmp_path, monkeypatch):
    monkeypatch.setattr(due_pages, "PAGE", PAGE)
    now = time.time()
    async with running_core(tmp_path, MODELS, CONFIG) as core:
        session_key = (await spawned_and_done(core)).session_key
        for thread_id in range(1, DUE + 3):
            await core.core.bindings.bind(Binding(thread_id, 1, 1, session_key, 7, now, now, HOUR, 0))
    due_rows = "last_activity_at = ? - thread_id, deadline_at = ? - thread_id"  # thread 1 came due last
    stores.query(
        tmp_path / "core.sqlite3",
        f"UPDATE thread_bindings SET {due_rows} WHERE thread_id <= ?",
        (now - HOUR, now - HOUR, DUE),
    )

    with capture_logs() as logs:
        async with running_core(tmp_path, MODELS, CONFIG) as core:

            async def only_undue_left() -> bool:  # and each end logged: a commit is seen before its caller goes on
                left = stores.query(tmp_path / "core.sqlite3", "SELECT thread_id FROM thread_bindings ORDER BY 1")
                logged = [line for line in logs if line["event"] == "thread_unbound"]
                return left == [(DUE + 1,), (DUE + 2,)] and len(logged) >= DUE

            await eventually(only_undue_left, timeout=60, describe="the due bindings to end")
            undue = await core.bindings.get(DUE + 1)
            assert undue is not None and undue.deadline() == (now + HOUR, "idle")

    ended = [line["thread_id"] for line in logs if line["event"] == "thread_unbound"]
    assert ended == list(range(DUE, 0, -1))  # each once, earliest deadline first
