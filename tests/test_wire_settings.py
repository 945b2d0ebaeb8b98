"""/settings thread-bindings: admins only (checked at run time), shown with where each value comes from,
stored per server, audited, and overriding the config file."""

from __future__ import annotations

import discord

from tests.test_wire_control import command, member


async def test_admin_sets_per_server_values_that_override_the_config(world):
    world.extra_config = "[channels.discord.thread_bindings]\nidle_hours = 12\n"
    await world.start_bot()
    admin = member(world, "admin", manage_guild=True)

    shown = await command(world, admin, "settings thread-bindings")
    assert shown.splitlines() == [
        "Thread-binding settings here:",
        "enabled: True (default)",
        "idle_hours: 12.0 (channels.discord.thread_bindings)",
        "max_age_hours: 0.0 (default)",
        "spawn_subagent_sessions: False (default)",
        "auto_archive_minutes: 60 (default)",
        "moderator_role: none (not set)",
    ]

    updated = await command(world, admin, "settings thread-bindings", spawn_subagent_sessions=True, idle_hours=2)
    assert "spawn_subagent_sessions: True (this server)" in updated and "idle_hours: 2.0 (this server)" in updated
    assert world.rows("SELECT actor_user_id, action, detail FROM audit_log") == [
        (admin.id, "settings", "idle_hours=2.0, spawn_subagent_sessions=True")
    ]

    answer = await command(world, world.alice, "subagents spawn", agent="researcher", task="x", thread=True)
    assert answer.startswith("Spawned subagent researcher")
    assert world.rows("SELECT idle_seconds FROM thread_bindings") == [(7200.0,)]


async def test_members_without_manage_server_are_refused(world):
    await world.start_bot()
    assert await command(world, world.alice, "settings thread-bindings", enabled=False) == (
        "⚠️ You need the Manage Server permission to view or change these settings."
    )
    assert world.rows("SELECT COUNT(*) FROM guild_settings") == [(0,)]
    group = next(c for c in world.discord.synced_commands(world.guild) if c["name"] == "settings")
    assert group["default_member_permissions"] == str(discord.Permissions(manage_guild=True).value)


async def test_a_server_moderator_role_may_kill_anyones_run(world):
    admin = member(world, "admin", manage_guild=True)
    role = world.discord.add_role(world.guild, "Wranglers")
    wrangler = world.discord.add_user("wrangler")
    world.discord.add_member(world.guild, wrangler, roles=[role])
    world.llm.hang()
    await world.start_bot()
    await command(world, admin, "settings thread-bindings", moderator_role=role)
    await command(world, world.alice, "subagents spawn", agent="researcher", task="Long job")
    await world.llm.wait_hanging(1)

    assert await command(world, wrangler, "subagents kill", target="1") == "killed Long job."
