"""The sub-agent queue over the wire: ``/subagents list`` and ``info`` show a queued run's place in the fair order,
and a spawn while the queue is full is refused privately, with the numbers, and writes nothing."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.polling import eventually
from tests.test_wire_control import command, member, spawn

ONE_SLOT_TWO_WAITING = "[agents.defaults.subagents]\nmax_concurrent = 1\nmax_queued = 2\n"


def status_of(listing: str, label: str) -> str:
    """The status a ``/subagents list`` line gives the sub-agent labelled ``label``."""
    line = next(line for line in listing.splitlines() if line.split(". ", 1)[-1].startswith(f"{label} ("))
    return line.rsplit(") ", 1)[1]


async def test_list_shows_queued_places_and_a_spawn_over_the_queue_cap_is_refused_privately(world):
    world.extra_config = ONE_SLOT_TWO_WAITING
    world.llm.default = lambda body: Step.hang()
    await world.start_bot()
    bob = member(world, "bob")
    await spawn(world, task="alice one")
    await world.llm.wait_hanging(1)
    await spawn(world, task="alice two")
    await spawn(world, bob, task="bob one")

    async def listed_with_places() -> str | None:
        listing = await command(world, world.alice, "subagents list")
        return listing if "queued, 2nd in line" in listing else None

    listing = await eventually(listed_with_places, timeout=10, describe="both queued runs to have their place")
    assert status_of(listing, "alice one") == "running"
    # bob has nothing running yet, alice has one: bob's first goes before alice's second (run_queues' priority)
    assert status_of(listing, "bob one") == "queued, 1st in line"
    assert status_of(listing, "alice two") == "queued, 2nd in line"
    assert "Status: queued, 1st in line" in await command(world, bob, "subagents info", target="bob one")

    refused = await command(world, bob, "subagents spawn", agent="researcher", task="bob two")
    assert refused == (
        "⚠️ The sub-agent queue is full (2 runs waiting, agents.defaults.subagents.max_queued = 2); try again when "
        "some have started."
    )
    assert world.rows("SELECT COUNT(*) FROM runs") == [(3,)]
    assert world.rows("SELECT COUNT(*) FROM sessions WHERE kind = 'subagent'") == [(3,)]
