"""The sub-agent queue over the wire: ``/subagents list`` and ``info`` show a queued run's place in the fair order,
and a spawn while the queue is full is refused privately, with the numbers, and writes nothing."""

from __future__ import annotations

from tests.fakes.openai_server import Step
from tests.polling import eventually
from tests.test_wire_caps import command_in
from tests.test_wire_control import command, member, spawn

ONE_SLOT_TWO_WAITING = "[agents.defaults.subagents]\nmax_concurrent = 1\nmax_queued = 2\nmax_queued_per_server = 2\n"


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


SHARES_OF_TWO = "[agents.defaults.subagents]\nmax_concurrent = 1\nmax_queued = 3\nmax_queued_per_server = 2\n"


async def test_a_server_at_its_share_of_the_queue_is_refused_and_another_servers_first_run_is_not(world):
    world.extra_config = SHARES_OF_TWO
    world.guild_commands = False  # global commands: every server has them
    world.llm.default = lambda body: Step.hang()
    servers = []
    for name in ("carol", "dan"):
        guild = world.discord.add_guild(f"{name}'s server")
        user = world.discord.add_user(name)
        world.discord.add_member(guild, user)
        servers.append((guild, user, world.discord.add_text_channel(guild, "general")))
    (carols_server, carol, carols), (dans_server, dan, dans) = servers
    await world.start_bot()
    bob = member(world, "bob")
    await spawn(world, task="alice one")
    await world.llm.wait_hanging(1)
    await spawn(world, task="alice two")
    await spawn(world, bob, task="bob one")

    # this server has its share waiting (2 of the queue's 3): its members are refused, naming the share
    assert await command(world, bob, "subagents spawn", agent="researcher", task="bob two") == (
        "⚠️ The sub-agent queue is full on this server (2 runs waiting, "
        "agents.defaults.subagents.max_queued_per_server = 2); try again when some have started."
    )
    # another server's first run is taken, and it fills the queue
    first = await command_in(world, carol, carols, "subagents spawn", agent="researcher", task="carol one")
    assert first.startswith("Spawned subagent")
    assert await command_in(world, carol, carols, "subagents spawn", agent="researcher", task="carol two") == (
        "⚠️ The sub-agent queue is full (3 runs waiting, agents.defaults.subagents.max_queued = 3); try again when "
        "some have started."
    )
    # a full queue still takes a server's first run: one server's backlog never refuses another's first
    first = await command_in(world, dan, dans, "subagents spawn", agent="researcher", task="dan one")
    assert first.startswith("Spawned subagent")
    queued = world.rows("SELECT guild_id, COUNT(*) FROM runs WHERE status = 'queued' GROUP BY guild_id")
    assert sorted(queued) == sorted([(world.guild.id, 2), (carols_server.id, 1), (dans_server.id, 1)])
    assert world.rows("SELECT COUNT(*) FROM sessions WHERE kind = 'subagent'") == [(5,)]
