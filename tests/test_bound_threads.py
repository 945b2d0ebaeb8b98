"""Routing a thread message asks which session the thread is bound to. With a PostgreSQL store the answer is a map in
memory that follows the table through the store's notices: a binding made or ended in another process routes here
accordingly, and while the listening connection is down the table answers until the map follows again. With SQLite
(no notices) the table answers."""

from __future__ import annotations

import time

import pytest
from structlog.testing import capture_logs

from bot.core.threads import bound_threads
from bot.core.threads.bound_threads import BoundThreads
from bot.records import Binding
from tests import stores
from tests.core_support import ORIGIN, ScriptedModels, running_core, spawned_and_done, text
from tests.polling import eventually

CONFIG = '[agents.defaults]\nmodel = "test/m"\n[agents.list.main]\n'
MODELS = ScriptedModels(m=text("answer"))
HOUR = 3600.0


def bound_to(session_key: str, thread_id: int) -> Binding:
    now = time.time()
    return Binding(thread_id, 1, 1, session_key, 7, now, now, HOUR, 0)


def routes(core) -> BoundThreads:
    return core.core.bindings.routes


async def following(core) -> None:
    """With PostgreSQL, wait until the core's map follows the table (then only the map answers)."""
    if stores.POSTGRESQL:
        await eventually(lambda: routes(core)._sessions is not None, timeout=10, describe="the map to follow")


async def answers(core, thread_id: int, session_key: str | None) -> bool:
    return await routes(core).session_of(thread_id) == session_key


async def test_a_binding_made_or_ended_in_another_process_routes_here_accordingly(tmp_path):
    async with running_core(tmp_path, MODELS, CONFIG) as here:
        session_key = (await spawned_and_done(here)).session_key
        await here.core.bindings.bind(bound_to(session_key, 1))
        async with running_core(tmp_path, MODELS, CONFIG) as elsewhere:
            await following(here)
            await following(elsewhere)
            assert await answers(elsewhere, 1, session_key)  # made before it started
            await elsewhere.core.bindings.bind(bound_to(session_key, 2))
            await eventually(lambda: answers(here, 2, session_key), timeout=10, describe="thread 2 bound here")
            await elsewhere.unbind(1)
            await eventually(lambda: answers(here, 1, None), timeout=10, describe="thread 1 unbound here")
            await following(here)  # the map answered, not the table

            assert (await here.thread_message(2, "and then?", ORIGIN)).routed
            assert not await here.thread_message(1, "anyone?", ORIGIN)
            await here.unbind(2)
            assert await answers(here, 2, None)  # its own change, at once
            assert not await here.thread_message(2, "still there?", ORIGIN)


@pytest.mark.skipif(not stores.POSTGRESQL, reason="only a PostgreSQL store sends notices")
async def test_while_its_connection_is_down_the_table_answers_and_then_the_map_follows_again(tmp_path, monkeypatch):
    monkeypatch.setattr(bound_threads, "_LISTEN_AGAIN_SECONDS", 5.0)  # down long enough to be asked meanwhile
    with capture_logs() as logs:
        async with running_core(tmp_path, MODELS, CONFIG) as here:
            session_key = (await spawned_and_done(here)).session_key
            await following(here)
            await stores.cut_listeners(here._db)
            await eventually(lambda: routes(here)._sessions is None, timeout=10, describe="the map given up")
            async with running_core(tmp_path, MODELS, CONFIG) as elsewhere:
                await elsewhere.core.bindings.bind(bound_to(session_key, 3))
                assert routes(here)._sessions is None
                assert await answers(here, 3, session_key)  # from the table, while not following

                await following(here)
                await elsewhere.unbind(3)
                await eventually(lambda: answers(here, 3, None), timeout=10, describe="thread 3 unbound here")
    followed = [line for line in logs if line["event"] == "bound_threads_followed"]
    assert [line["event"] for line in logs if line["event"] == "bound_threads_not_followed"] == [
        "bound_threads_not_followed"
    ]
    assert len(followed) >= 3  # here twice, elsewhere once
