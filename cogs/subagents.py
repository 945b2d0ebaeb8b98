"""``/subagents``: spawn, list, info, log, kill, send and steer sub-agents of this channel's conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.config import THINKING_LEVELS
from bot.core.runs.requests import SpawnRequest
from bot.discord_adapter.attachments import prepared
from bot.discord_adapter.autocomplete import target_choices
from bot.discord_adapter.conversations import channel_id_of, conversation_of
from bot.discord_adapter.replies import send_text
from bot.discord_adapter.run_views import render_info, render_listing, render_log
from bot.discord_adapter.spoken import spoken
from bot.discord_adapter.thinking import thinks_privately
from bot.discord_adapter.tool_views import render_tool_report
from bot.i18n import localized
from bot.records import Origin

if TYPE_CHECKING:
    from bot.app import ThreadboundBot


class SubagentsCog(commands.GroupCog, group_name="subagents", group_description=localized("cmd-subagents")):
    def __init__(self, bot: ThreadboundBot) -> None:
        self.bot = bot
        super().__init__()

    @app_commands.command(name="spawn", description=localized("cmd-subagents-spawn"))
    @app_commands.describe(
        agent=localized("cmd-subagents-spawn-agent"),
        task=localized("cmd-subagents-spawn-task"),
        model=localized("cmd-subagents-spawn-model"),
        thinking=localized("cmd-subagents-spawn-thinking"),
        thread=localized("cmd-subagents-spawn-thread"),
        runtime=localized("cmd-subagents-spawn-runtime"),
        attachment=localized("cmd-subagents-spawn-attachment"),
    )
    @app_commands.choices(
        thinking=[app_commands.Choice(name=level, value=level) for level in THINKING_LEVELS],
        runtime=[app_commands.Choice(name=name, value=name) for name in ("subagent", "acp")],
    )
    @thinks_privately
    async def spawn(
        self,
        interaction: discord.Interaction,
        agent: str,
        task: str,
        model: str | None = None,
        thinking: str | None = None,
        thread: bool = False,
        runtime: str = "subagent",
        attachment: discord.Attachment | None = None,
    ) -> None:
        files = await prepared([attachment] if attachment else [], self.bot.config.discord)
        origin = Origin(
            user_id=interaction.user.id,
            channel_id=channel_id_of(interaction),
            guild_id=interaction.guild_id,
            conversation=conversation_of(interaction),
        )
        accepted = await self.bot.orchestrator.spawn(
            SpawnRequest(
                agent_id=agent,
                task=task,
                model=model,
                thinking=thinking,
                thread=thread,
                origin=origin,
                runtime=runtime,
                attachments=files,
            )
        )
        spawned = localized(
            "spawned",
            interaction.locale,
            agent=accepted.agent_id,
            session=accepted.session_key,
            run=accepted.short_run_id,
        )
        await send_text(interaction, spawned)

    @app_commands.command(name="tools", description=localized("cmd-subagents-tools"))
    @app_commands.describe(agent=localized("cmd-subagents-tools-agent"))
    @thinks_privately
    async def tools(self, interaction: discord.Interaction, agent: str) -> None:
        report = await self.bot.orchestrator.tool_report(agent.strip())
        await send_text(interaction, render_tool_report(report, interaction.locale))

    @spawn.autocomplete("agent")
    @tools.autocomplete("agent")
    async def _agent_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        agents = sorted(agent_id for agent_id, agent in self.bot.config.agents.list.items() if agent.enabled)
        if getattr(interaction.namespace, "runtime", None) == "acp":  # spawn's agent names an ACP agent then
            agents = sorted(self.bot.config.acp_agents)
        return [app_commands.Choice(name=a, value=a) for a in agents if a.startswith(current.lower())][:25]

    @app_commands.command(name="list", description=localized("cmd-subagents-list"))
    @thinks_privately
    async def list_(self, interaction: discord.Interaction) -> None:
        listing = await self.bot.control.listing(conversation_of(interaction))
        await send_text(interaction, render_listing(listing, locale=interaction.locale))

    @app_commands.command(name="info", description=localized("cmd-subagents-info"))
    @app_commands.describe(target=localized("cmd-subagents-info-target"))
    @thinks_privately
    async def info(self, interaction: discord.Interaction, target: str) -> None:
        row = await self.bot.control.resolve(conversation_of(interaction), target)
        details = await self.bot.control.details(row)
        shown = render_info(
            row,
            delivery=details.delivery,
            transcript_messages=details.messages,
            activity=details.activity,
            locale=interaction.locale,
        )
        await send_text(interaction, shown)

    @app_commands.command(name="log", description=localized("cmd-subagents-log"))
    @app_commands.describe(
        target=localized("cmd-subagents-log-target"),
        limit=localized("cmd-subagents-log-limit"),
        tools=localized("cmd-subagents-log-tools"),
    )
    @thinks_privately
    async def log(
        self,
        interaction: discord.Interaction,
        target: str,
        limit: app_commands.Range[int, 1, 200] = 20,
        tools: bool = False,
    ) -> None:
        row = await self.bot.control.resolve(conversation_of(interaction), target)
        entries = await self.bot.orchestrator.history(row.session.key, limit, tools)
        await send_text(interaction, render_log(row, entries, interaction.locale), filename="log.txt")

    @app_commands.command(name="kill", description=localized("cmd-subagents-kill"))
    @app_commands.describe(target=localized("cmd-subagents-kill-target"))
    @thinks_privately
    async def kill(self, interaction: discord.Interaction, target: str) -> None:
        control, conversation = self.bot.control, conversation_of(interaction)
        actor = await self.bot.actor(interaction)
        if target.strip().lower() in ("all", "*"):
            reply = await control.kill_all(actor, conversation)
        else:
            reply = await control.kill(actor, conversation, target)
        await send_text(interaction, reply.render(interaction.locale))

    @app_commands.command(name="send", description=localized("cmd-subagents-send"))
    @app_commands.describe(
        target=localized("cmd-subagents-send-target"),
        message=localized("cmd-subagents-send-message"),
        attachment=localized("cmd-subagents-send-attachment"),
    )
    @thinks_privately
    async def send(
        self, interaction: discord.Interaction, target: str, message: str, attachment: discord.Attachment | None = None
    ) -> None:
        files = await prepared([attachment] if attachment else [], self.bot.config.discord)
        actor = await self.bot.actor(interaction)
        reply = await self.bot.control.send(actor, conversation_of(interaction), target, message, files)
        await send_text(interaction, spoken(reply, interaction.locale))

    @app_commands.command(name="steer", description=localized("cmd-subagents-steer"))
    @app_commands.describe(
        target=localized("cmd-subagents-steer-target"),
        message=localized("cmd-subagents-steer-message"),
    )
    @thinks_privately
    async def steer(self, interaction: discord.Interaction, target: str, message: str) -> None:
        actor = await self.bot.actor(interaction)
        reply = await self.bot.control.steer(actor, conversation_of(interaction), target, message)
        await send_text(interaction, reply.render(interaction.locale))

    @info.autocomplete("target")
    @log.autocomplete("target")
    @kill.autocomplete("target")
    @send.autocomplete("target")
    @steer.autocomplete("target")
    async def _target_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await target_choices(self.bot.control, conversation_of(interaction), current, interaction.locale)


async def setup(bot: ThreadboundBot) -> None:
    await bot.add_cog(SubagentsCog(bot))
