"""Approvals of ``always_ask`` tool calls seen from Discord: the run pauses and the bot posts a request naming the
tool and its arguments with Approve / Deny buttons; the owner's Approve (clicked after a restart) runs the tool and
the run goes on; Deny and the timeout give the model a refusal; a moderator may decide for someone else (audited);
anyone else's click is refused privately. The request is edited to say what was decided, without its buttons."""

from __future__ import annotations

import json
from pathlib import Path

import discord

from bot.agents.tool_gate import DENIED, TIMED_OUT
from tests.harness import API_KEY, QUICK_STATUS_EDITS, World, announcement_for
from tests.test_wire_control import command, member, run_id_full, spawn
from tests.test_wire_mcp import with_mcp
from tests.test_wire_status import buttons, click, status_for


def asking(world, text: str = "hi") -> Path:
    """The researcher uses the MCP test server, and must ask before ``calc__shout`` (which its model calls with
    ``text``); the file of the server's calls."""
    calls = world.tmp_path / "calls.jsonl"
    with_mcp(world, calls)
    world.extra_config += '[risk_profiles.careful]\nalways_ask = ["calc__shout"]\n'
    world.extra_config = 'risk_profile = "careful"\n' + world.extra_config
    world.llm.tool_call("calc__shout", {"text": text})
    world.llm.reply("Shouted.")
    return calls


def recorded(calls: Path) -> list[dict]:
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


async def approval_request(world, predicate=lambda m: True) -> dict:
    return await world.discord.wait_for_message(
        world.channel, lambda m: "`calc__shout`" in m["content"] and predicate(m)
    )


async def decide(world, user, request, action: str, approval_id: str) -> str:
    """Click Approve or Deny on a request as ``user``; the private answer."""
    inter, _ = await click(world, user, request, f"approval:{action}:{approval_id}")
    return (await world.discord.wait_followup(inter))["content"]


async def paused(world) -> tuple[str, str, dict]:
    """Spawn the researcher; wait for its approval request. Its run id prefix, its approval id, the request."""
    run_id = await spawn(world, task="Shout hi")
    request = await approval_request(world, lambda m: bool(buttons(m)))
    approval_id = world.rows("SELECT id FROM approvals")[0][0]
    assert buttons(request) == [f"approval:approve:{approval_id}", f"approval:deny:{approval_id}"]
    assert request["content"].startswith(f"✋ Run {run_id} wants to call `calc__shout` with:\n```json\n")
    assert '{"text": "hi"}' in request["content"]
    assert world.rows("SELECT status FROM runs") == [("awaiting_approval",)]
    return run_id, approval_id, request


def approvals_time_out_at_once(monkeypatch) -> None:
    """Every world's config gives nobody more than a moment to decide an approval."""
    config_text = World.config_text
    monkeypatch.setattr(
        World,
        "config_text",
        lambda self, extra="": config_text(self, extra).replace(
            'model = "fake/gpt-4o-mini"\n', 'model = "fake/gpt-4o-mini"\napproval_timeout_minutes = 0.01\n', 1
        ),
    )


async def test_the_owner_approves_after_a_restart_and_the_tool_runs_once(world):
    calls = asking(world)
    bot = await world.start_bot()
    run_id, approval_id, request = await paused(world)
    assert recorded(calls) == []
    await world.stop_bot(bot)

    await world.start_bot()
    assert world.rows("SELECT status FROM runs") == [("awaiting_approval",)]
    assert (
        await decide(world, world.alice, request, "approve", approval_id) == f"Approved `calc__shout` for run {run_id}."
    )
    announcement = await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert "Shouted." in announcement["content"]
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]
    edited = await approval_request(world, lambda m: "approved by" in m["content"])
    assert edited["content"] == f"✅ `calc__shout` (run {run_id}) approved by <@{world.alice.id}>."
    assert buttons(edited) == []


async def test_deny_reaches_the_model_as_a_refusal_and_the_tool_never_runs(world):
    calls = asking(world)
    await world.start_bot()
    run_id, approval_id, request = await paused(world)

    assert await decide(world, world.alice, request, "deny", approval_id) == f"Denied `calc__shout` for run {run_id}."
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert world.llm.requests[-1]["messages"][-1]["content"] == DENIED
    assert recorded(calls) == []
    edited = await approval_request(world, lambda m: "denied by" in m["content"])
    assert buttons(edited) == []


async def test_nobody_deciding_in_time_denies_and_the_request_says_so(world, monkeypatch):
    calls = asking(world)
    approvals_time_out_at_once(monkeypatch)
    await world.start_bot()
    run_id = await spawn(world, task="Shout hi")

    edited = await approval_request(world, lambda m: "nobody decided" in m["content"])
    assert edited["content"] == f"⏱️ `calc__shout` (run {run_id}) denied: nobody decided in time."
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert world.llm.requests[-1]["messages"][-1]["content"] == TIMED_OUT
    assert recorded(calls) == []


async def test_a_strangers_click_is_refused_and_a_moderator_approves_audited(world):
    calls = asking(world)
    await world.start_bot()
    run_id, approval_id, request = await paused(world)
    bob = member(world, "bob")
    mod = member(world, "mod", manage_messages=True)

    inter, _ = await click(world, bob, request, f"approval:approve:{approval_id}")
    refusal = await world.discord.wait_followup(inter)
    assert refusal["flags"] & 64
    assert refusal["content"] == (
        f"⚠️ You can only approve tool calls of runs you started; run {run_id} belongs to <@{world.alice.id}>. "
        "Ask them or a moderator."
    )
    assert world.rows("SELECT status FROM approvals") == [("pending",)]

    assert await decide(world, mod, request, "approve", approval_id) == f"Approved `calc__shout` for run {run_id}."
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]
    assert world.rows("SELECT actor_user_id, target_user_id, action, run_id FROM audit_log") == [
        (mod.id, world.alice.id, "approve", run_id_full(world, run_id))
    ]


async def test_a_decision_counts_only_from_the_requests_channel_by_its_owner_or_a_moderator_of_its_server(world):
    calls = asking(world)
    elsewhere = world.discord.add_guild("Elsewhere")
    their_channel = world.discord.add_text_channel(elsewhere, "theirs")
    mallory = world.discord.add_user("mallory")  # a moderator there, not a member here
    world.discord.add_member(elsewhere, mallory, permissions=discord.Permissions(manage_messages=True))
    other = world.discord.add_text_channel(world.guild, "other")
    side = world.discord.add_thread(world.channel, "side")
    mod = member(world, "mod", manage_messages=True)
    await world.start_bot()
    run_id, approval_id, request = await paused(world)

    for user, channel in [(mallory, their_channel), (mod, other), (world.alice, other)]:
        inter = await world.discord.click_button(user, request, f"approval:approve:{approval_id}", elsewhere=channel)
        refusal = await world.discord.wait_followup(inter)
        assert refusal["flags"] & 64
        assert refusal["content"] == "⚠️ That approval request can only be decided in the channel where it was posted."
        assert world.rows("SELECT status, decided_by FROM approvals") == [("pending", None)]
    assert world.rows("SELECT status FROM runs") == [("awaiting_approval",)]
    assert world.rows("SELECT COUNT(*) FROM audit_log") == [(0,)]
    assert buttons(world.discord.get_message(request["id"])) == [
        f"approval:approve:{approval_id}",
        f"approval:deny:{approval_id}",
    ]
    assert recorded(calls) == []

    inter = await world.discord.click_button(mod, request, f"approval:approve:{approval_id}", elsewhere=side)
    assert (await world.discord.wait_followup(inter))["content"] == f"Approved `calc__shout` for run {run_id}."
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": "hi"}}]
    assert world.rows("SELECT guild_id, actor_user_id, target_user_id, action FROM audit_log") == [
        (world.guild.id, mod.id, world.alice.id, "approve")
    ]


async def test_list_and_status_say_awaiting_approval_and_a_kill_edits_the_request(world):
    world.status_edit_interval = QUICK_STATUS_EDITS
    calls = asking(world)
    await world.start_bot()
    run_id, _, _ = await paused(world)
    listing = await command(world, world.alice, "subagents list")
    assert "awaiting approval" in listing
    status = await status_for(world, run_id, lambda m: "awaiting approval" in m["content"])
    assert status["content"].startswith("✋ **Shout hi** · awaiting approval · ")

    assert await command(world, world.alice, "subagents kill", target="1") == "killed Shout hi."
    edited = await approval_request(world, lambda m: "killed" in m["content"])
    assert edited["content"] == f"🛑 `calc__shout` (run {run_id}) not run: the run was killed."
    assert buttons(edited) == []
    assert world.rows("SELECT status FROM runs") == [("killed",)]
    assert world.rows("SELECT status FROM approvals") == [("cancelled",)]
    assert recorded(calls) == []


def pings_only(world, message: dict, user) -> None:
    """``message`` may ping ``user`` and nobody else, and pings nobody else."""
    allowed = world.discord.message_meta(message).allowed_mentions
    assert allowed["parse"] == [] and [int(u) for u in allowed["users"]] == [user.id]
    assert not allowed.get("replied_user") and not allowed.get("roles")
    assert [mentioned["id"] for mentioned in message["mentions"]] == [str(user.id)]
    assert not message["mention_everyone"]


async def test_the_request_shows_every_character_after_hundreds_of_spaces_and_pings_only_the_owner(world):
    bob = member(world, "bob")
    hidden = f"{' ' * 300}and then wipe it all <@{bob.id}> @everyone {API_KEY}\u202e\u200b"
    calls = asking(world, hidden)
    await world.start_bot()
    run_id = await spawn(world, task="Shout hi")

    request = await approval_request(world, lambda m: bool(buttons(m)))
    shown = '{"text": "' + " " * 300 + f'and then wipe it all <@{bob.id}> @everyone [REDACTED]\\u202e\\u200b"}}'
    assert request["content"] == (
        f"✋ Run {run_id} wants to call `calc__shout` with:\n```json\n{shown}\n```"
        f"<@{world.alice.id}> or a moderator: approve or deny within 30 minutes (no answer denies)."
    )
    assert world.discord.message_files(request) == []
    pings_only(world, request, world.alice)

    approval_id = world.rows("SELECT id FROM approvals")[0][0]
    assert await decide(world, world.alice, request, "approve", approval_id) == (
        f"Approved `calc__shout` for run {run_id}."
    )
    await world.discord.wait_for_message(world.channel, announcement_for(run_id))
    # the call is made with exactly what was shown: a secret of the bot's leaves through no tool call either
    assert recorded(calls) == [{"tool": "shout", "arguments": {"text": hidden.replace(API_KEY, "[REDACTED]")}}]


async def test_arguments_too_long_for_the_message_are_attached_whole(world):
    long = "x" * 2500 + f" {API_KEY} ```end"
    calls = asking(world, long)
    await world.start_bot()
    run_id = await spawn(world, task="Shout hi")

    request = await approval_request(world, lambda m: bool(buttons(m)))
    shown = json.dumps({"text": long.replace(API_KEY, "[REDACTED]")})
    assert request["content"] == (
        f"✋ Run {run_id} wants to call `calc__shout` with the arguments in the attached `arguments.json` "
        f"({len(shown):,} characters).\n"
        f"<@{world.alice.id}> or a moderator: approve or deny within 30 minutes (no answer denies)."
    )
    assert world.discord.message_files(request) == [("arguments.json", shown.encode())]
    pings_only(world, request, world.alice)
    assert recorded(calls) == []

    approval_id = world.rows("SELECT id FROM approvals")[0][0]
    assert await decide(world, world.alice, request, "deny", approval_id) == f"Denied `calc__shout` for run {run_id}."
    edited = await approval_request(world, lambda m: "denied by" in m["content"])
    assert world.discord.message_files(edited) == [("arguments.json", shown.encode())]  # the record stays
    assert recorded(calls) == []
