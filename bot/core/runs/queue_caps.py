"""The caps on a member's and a server's share of the sub-agent queue.

They are a member's live sub-agents on a server (``max_active_runs_per_member``), the whole queue's (``max_queued``) and
each server's share of it (``max_queued_per_server``; DMs together count as one server).

A server with no run waiting always gets one in, even into a full queue, so one server's backlog never refuses
another server's first run: the queue may hold one run more per server than ``max_queued``.
"""

from __future__ import annotations

from bot.config import SubagentDefaults
from bot.core.errors import SpawnRefused
from bot.i18n import Words
from storage.runs import QueueLoad

NOTHING_QUEUED = QueueLoad(total=0, server=0, guild_id=None)


def where(guild_id: int | None) -> str:
    """Where a per-server count counts: ``server``, or ``dm`` (``guild_id`` ``None``), as the catalogue selects."""
    return "server" if guild_id is not None else "dm"


def member_key(guild_id: int | None, user_id: int | None) -> str:
    """The spawn lock a member's cap is counted under: one per member per server."""
    return f"member:{guild_id}:{user_id}"


def check_member(limit: int, active: int, guild_id: int | None, member: int | None) -> None:
    """Refuse one more live sub-agent for a member who has ``active`` of ``limit``.

    The refusal is a :class:`SpawnRefused`; a ``limit`` of 0 is no cap. ``member`` is ``None`` for their own command,
    0 for a main agent's spawn in their turn, else the member a follow-up answers to."""
    if limit and active >= limit:
        whose = {None: "you", 0: "turn"}.get(member, f"<@{member}>")
        refused = {"whose": whose, "active": str(active), "where": where(guild_id)}
        raise SpawnRefused("forbidden", Words("refused-member-running", refused))


def check_queue(subagents: SubagentDefaults, queued: QueueLoad) -> None:
    """Refuse (:class:`SpawnRefused`) one more run of ``queued.guild_id`` for the lane: the whole queue's cap when
    the server has a run waiting already, then the server's share."""
    share, cap = subagents.server_queue_share, subagents.max_queued
    if queued.server and queued.total >= cap:
        raise SpawnRefused("forbidden", Words("refused-queue-full", {"waiting": str(queued.total), "cap": str(cap)}))
    if queued.server >= share:
        refused = {"where": where(queued.guild_id), "waiting": str(queued.server), "cap": str(share)}
        raise SpawnRefused("forbidden", Words("refused-server-queue-full", refused))
