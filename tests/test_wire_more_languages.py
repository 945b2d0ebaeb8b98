"""The rest of what members read follows their language: ``/agents``, target autocomplete, budget caps, run details.

English stays as it was; a Spanish member of the same server reads Spanish; the model still reads English."""

from __future__ import annotations

from tests.test_wire_control import member
from tests.test_wire_languages import SPANISH, ask
from tests.test_wire_threads import THREADS_ON


async def test_agents_and_target_choices_are_worded_for_whoever_asks(world):
    world.extra_config = THREADS_ON
    world.llm.hang()
    await world.start_bot()
    bob = member(world, "bob")  # speaks Spanish; not the run's owner
    await ask(world, world.alice, "subagents spawn", agent="researcher", task="Summarise the plan")
    await world.llm.wait_hanging(1)

    assert (await ask(world, world.alice, "agents")).splitlines() == [
        "agents:",
        "-----",
        "1. Summarise the plan (unbound) running",
    ]
    assert (await ask(world, bob, "agents", locale=SPANISH)).splitlines() == [
        "agentes:",
        "-----",
        "1. Summarise the plan (sin vincular) en curso",
    ]

    english = await world.discord.autocomplete(world.alice, world.channel, "subagents kill", focused="target")
    assert [c["value"] for c in english] == ["1"]
    assert english[0]["name"].startswith("#1 Summarise the plan — running, ")
    assert english[0]["name"].endswith(" ago")
    spanish = await world.discord.autocomplete(
        bob, world.channel, "subagents kill", focused="target", locale=SPANISH, target="en curso"
    )
    assert [c["value"] for c in spanish] == ["1"]
    assert spanish[0]["name"].startswith("#1 Summarise the plan — en curso, hace ")

    # from a thread, after a restart: the same words, each in their own language
    thread = world.discord.add_thread(world.channel, "discussion")
    await world.stop_bot(world.bots[0])
    await world.start_bot()
    assert (await ask(world, bob, "agents", channel=thread, locale="es-419")).splitlines()[0] == "agentes:"
    choices = await world.discord.autocomplete(bob, thread, "focus", focused="target", locale=SPANISH)
    assert choices[0]["name"].startswith("#1 Summarise the plan — ")
    assert ", hace " in choices[0]["name"]
    assert (await ask(world, world.alice, "agents", channel=thread)).splitlines()[0] == "agents:"
