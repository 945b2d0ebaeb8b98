"""The live status message of a run: its buttons kill and steer with the same permissions as the commands,
it is finalised when the run ends, and its buttons still answer after the bot restarts."""

from __future__ import annotations

import pytest

from tests.fakes.openai_server import Step
from tests.harness import QUICK_STATUS_EDITS, announcement_for
from tests.test_wire_control import member, spawn


@pytest.fixture(autouse=True)
def _quick_status_edits(world):
    """These tests watch status messages change; the default throttle would add a second to each."""
    world.status_edit_interval = QUICK_STATUS_EDITS


def buttons(message) -> list[str]:
    return [c["custom_id"] for row in message.get("components", []) for c in row.get("components", [])]


async def status_for(world, run_prefix, predicate=lambda m: True):
    return await world.discord.wait_for_message(
        world.channel, lambda m: f"-# run {run_prefix}" in m["content"] and predicate(m)
    )


async def click(world, user, message, custom_id):
    inter = await world.discord.click_button(user, message, custom_id)
    ack = await world.discord.wait_ack(inter)
    assert ack.status_code == 200 and ack.elapsed < 3
    return inter, ack


async def test_status_message_buttons_kill_with_permissions_and_the_message_is_finalised(world):
    world.llm.hang()
    await world.start_bot()
    run_id = await spawn(world)
    await world.llm.wait_hanging(1)
    full_id = world.rows("SELECT id FROM runs")[0][0]

    status = await status_for(world, run_id, lambda m: "running" in m["content"])
    assert status["content"].startswith("🔄 **Summarise the plan** · running · ")
    assert buttons(status) == [f"run:kill:{full_id}", f"run:steer:{full_id}"]

    bob = member(world, "bob")
    inter, _ = await click(world, bob, status, f"run:kill:{full_id}")
    refusal = await world.discord.wait_followup(inter)
    assert refusal["content"].startswith("⚠️ You can only kill runs you started") and refusal["flags"] & 64
    assert world.rows("SELECT status FROM runs") == [("running",)]

    inter, _ = await click(world, world.alice, status, f"run:kill:{full_id}")
    assert (await world.discord.wait_followup(inter))["content"] == "killed Summarise the plan."
    final = await status_for(world, run_id, lambda m: "killed" in m["content"])
    assert final["content"].startswith("🛑 **Summarise the plan** · killed · ")
    assert buttons(final) == []
    await world.quiescent()
    assert world.bot_messages() == []


async def test_steer_button_opens_a_modal_whose_text_reaches_the_model(world):
    world.extra_config = "[agents.defaults.subagents]\nmax_spawn_depth = 2\n"
    world.llm.hang(then=Step.calls([("sessions_list", {})]))
    world.llm.respond_with(
        lambda body: "saw: " + " | ".join(m["content"] for m in body["messages"] if m["role"] == "user")
    )
    await world.start_bot()
    run_id = await spawn(world, task="Draft it")
    await world.llm.wait_hanging(1)
    full_id = world.rows("SELECT id FROM runs")[0][0]
    status = await status_for(world, run_id, lambda m: bool(buttons(m)))

    _, ack = await click(world, world.alice, status, f"run:steer:{full_id}")
    assert ack.type == 9 and ack.data["custom_id"] == f"run:steer-modal:{full_id}"
    inter = await world.discord.submit_modal(
        world.alice, world.channel, f"run:steer-modal:{full_id}", {"steer-text": "Shorter, please"}
    )
    assert (await world.discord.wait_followup(inter))["content"] == f"steered Draft it (run {run_id})."
    world.llm.release()

    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "saw: Draft it | Shorter, please" in announcement["content"]


async def test_after_a_restart_the_status_is_finalised(world):
    world.extra_config = "[durability]\nresume_interrupted = false"  # the run is interrupted, not resumed
    world.llm.hang()
    bot = await world.start_bot()
    run_id = await spawn(world)
    await world.llm.wait_hanging(1)
    await status_for(world, run_id, lambda m: bool(buttons(m)))
    await world.stop_bot(bot)

    await world.start_bot()
    final = await status_for(world, run_id, lambda m: "interrupted" in m["content"])
    assert final["content"].startswith("⚠️ **Summarise the plan** · interrupted · ")
    assert buttons(final) == []


async def test_buttons_answer_in_a_new_process(world):
    """The buttons' state is their custom_id: a restarted bot (no view in memory) still handles them. Here the
    status message could not be finalised after the restart (Discord refused the edit), so its buttons remain."""
    world.extra_config = "[durability]\nresume_interrupted = false"  # the run is interrupted, not resumed
    world.llm.hang()
    bot = await world.start_bot()
    run_id = await spawn(world)
    await world.llm.wait_hanging(1)
    full_id = world.rows("SELECT id FROM runs")[0][0]
    status = await status_for(world, run_id, lambda m: bool(buttons(m)))
    await world.stop_bot(bot)
    world.discord.inject_failure("PATCH", r"^/channels/\d+/messages/\d+$", 403, code=50001, message="Missing Access")

    await world.start_bot()
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert buttons(world.discord.get_message(status["id"])) == [f"run:kill:{full_id}", f"run:steer:{full_id}"]

    inter, _ = await click(world, world.alice, status, f"run:kill:{full_id}")
    assert (await world.discord.wait_followup(inter))["content"] == "Summarise the plan is already finished."
    _, ack = await click(world, world.alice, status, f"run:steer:{full_id}")
    assert ack.type == 9
