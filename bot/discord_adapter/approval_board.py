"""Approval requests in Discord: a message per ``always_ask`` call naming the tool and every character of its
arguments (in the text, or in an attached ``arguments.json`` when they do not fit), with Approve and Deny buttons,
posted in the run's thread or channel, pinging only the run's owner; once decided (or timed out, or its run
killed) the message says so and loses its buttons. What each message shows is stored (``approvals.shown``), so a
restarted bot posts what was not posted and finishes edits it missed.

Not through the outbox: an outbox row is a one-way announcement, while a request carries buttons and is edited
later, like a run's status message (:mod:`bot.discord_adapter.status_board`), which this follows. The send carries
a nonce from the approval id, so a retry within Discord's de-duplication window does not post twice.

Every process on the store runs a board and sees every row, so only the process that owns the approval's run
(``runs.executor_id``: the one that paused it, whose listener wakes this board) posts the request; a run has one
owner at a time, and it changes only when another process executes the run (a decision's wake, a dead process's
run taken over), so no lease or claim is needed for exactly one post, and a process started later on the store
leaves another's requests alone. Not the process serving the approval's guild: a run may pause in another one (a
schedule's firing, a run resumed after its process died) and nothing would wake that board. Edits are made by
whichever process settled the approval (its listener is the one told): they set the same text, so a second one
changes nothing. Each message is in its server's preferred language; the tool's name and arguments as they are."""

from __future__ import annotations

import io
from collections.abc import Callable

import discord
import structlog

from bot.discord_adapter.read_back import nonce_for
from bot.discord_adapter.rounds import Rounds
from bot.discord_adapter.server_locale import server_locale
from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT
from bot.i18n import localized
from bot.records import Approval, ApprovalStatus, short_run_id
from storage.repositories import Repositories

log = structlog.get_logger(__name__)

ARGUMENTS_FILE = "arguments.json"  # a request's arguments when they do not fit in its text


def request_message(
    approval: Approval, timeout_minutes: float, locale: object = None
) -> tuple[str, discord.File | None]:
    """A request's text, with the arguments as a file when they do not fit.

    Every character is shown either way. Arguments with a backtick go to the file too (in the text they could close
    their code block)."""
    arguments = approval.arguments
    call = {"run": short_run_id(approval.run_id), "tool": approval.tool_name}
    minutes = f"{timeout_minutes:g}"
    if approval.owner_user_id is not None:
        decide = localized("approval-decide-owner", locale, owner=f"<@{approval.owner_user_id}>", minutes=minutes)
    else:
        decide = localized("approval-decide-moderator", locale, minutes=minutes)
    inline = f"{localized('approval-asks-inline', locale, **call)}\n```json\n{arguments}\n```{decide}"
    if "`" not in arguments and len(inline) <= DISCORD_MESSAGE_LIMIT:
        return inline, None
    asks = localized("approval-asks-file", locale, file=ARGUMENTS_FILE, characters=len(arguments), **call)
    return f"{asks}\n{decide}", discord.File(io.BytesIO(arguments.encode("utf-8")), ARGUMENTS_FILE)


def pinged(approval: Approval) -> discord.AllowedMentions:
    """Whom a request may ping: its run's owner, nobody else."""
    owner = approval.owner_user_id
    users = [discord.Object(owner)] if owner is not None else False
    return discord.AllowedMentions(everyone=False, users=users, roles=False, replied_user=False)


def decided_text(approval: Approval, locale: object = None) -> str:
    call = {"tool": approval.tool_name, "run": short_run_id(approval.run_id)}
    match approval.status:
        case ApprovalStatus.APPROVED:
            return localized("approval-approved", locale, member=f"<@{approval.decided_by}>", **call)
        case ApprovalStatus.DENIED:
            return localized("approval-denied", locale, member=f"<@{approval.decided_by}>", **call)
        case ApprovalStatus.TIMED_OUT:
            return localized("approval-timed-out", locale, **call)
        case _:
            return localized("approval-run-killed", locale, **call)


class ApprovalBoard:
    def __init__(
        self,
        client: discord.Client,
        repos: Repositories,
        timeout_minutes: float,
        executor_id: str,
        *,
        controls: Callable[[str], discord.ui.View],
    ) -> None:
        """``controls``: the Approve and Deny buttons a request carries, those the bot registered."""
        self._client = client
        self._controls = controls
        self._repos = repos
        self._timeout_minutes = timeout_minutes
        self._executor_id = executor_id
        self._rounds = Rounds("approval-board", self._show_unshown)

    def changed(self) -> None:
        self._rounds.wake()

    def start(self) -> None:
        """Post what was not posted, finish edits a previous process missed, then follow changes."""
        self._rounds.start()

    async def close(self) -> None:
        await self._rounds.close()

    async def _show_unshown(self) -> None:
        for approval in await self._repos.approvals.unshown():
            try:
                await self._show(approval)
            except discord.HTTPException as error:
                log.warning("approval_message_failed", approval_id=approval.id, error=repr(error))

    async def _show(self, approval: Approval) -> None:
        channel = self._client.get_partial_messageable(approval.channel_id)
        locale = server_locale(self._client, approval.channel_id)
        if locale is None and (run := await self._repos.runs.get(approval.run_id)) is not None:
            locale = server_locale(self._client, approval.channel_id, run.guild_id)  # a thread not cached
        message_id = None
        if approval.message_id is None and approval.status is ApprovalStatus.PENDING:
            if await self._repos.runs.owner(approval.run_id) != self._executor_id:
                return  # its run's process posts it
            text, arguments = request_message(approval, self._timeout_minutes, locale)
            message = await channel.send(
                text,
                file=arguments or discord.utils.MISSING,
                view=self._controls(approval.id),
                nonce=nonce_for(approval.id, 0),
                allowed_mentions=pinged(approval),
            )
            message_id = message.id
        elif approval.message_id is not None:
            decided = decided_text(approval, locale)
            await channel.get_partial_message(approval.message_id).edit(content=decided, view=None)
        async with self._repos.db.transaction() as tx:
            await self._repos.approvals.shown_as(tx, approval.id, approval.status, message_id)
