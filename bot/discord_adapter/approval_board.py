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
changes nothing."""

from __future__ import annotations

import io
from collections.abc import Callable

import discord
import structlog

from bot.discord_adapter.read_back import nonce_for
from bot.discord_adapter.rounds import Rounds
from bot.discord_adapter.splitting import DISCORD_MESSAGE_LIMIT
from bot.records import Approval, ApprovalStatus, short_run_id
from storage.repositories import Repositories

log = structlog.get_logger(__name__)

ARGUMENTS_FILE = "arguments.json"  # a request's arguments when they do not fit in its text


def request_message(approval: Approval, timeout_minutes: float) -> tuple[str, discord.File | None]:
    """A request's text, with the arguments as a file when they do not fit.

    Every character is shown either way. Arguments with a backtick go to the file too (in the text they could close
    their code block)."""
    arguments = approval.arguments
    asks = f"✋ Run {short_run_id(approval.run_id)} wants to call `{approval.tool_name}` with"
    who = f"<@{approval.owner_user_id}> or a moderator" if approval.owner_user_id is not None else "A moderator"
    decide = f"{who}: approve or deny within {timeout_minutes:g} minutes (no answer denies)."
    inline = f"{asks}:\n```json\n{arguments}\n```{decide}"
    if "`" not in arguments and len(inline) <= DISCORD_MESSAGE_LIMIT:
        return inline, None
    text = f"{asks} the arguments in the attached `{ARGUMENTS_FILE}` ({len(arguments):,} characters).\n{decide}"
    return text, discord.File(io.BytesIO(arguments.encode("utf-8")), ARGUMENTS_FILE)


def pinged(approval: Approval) -> discord.AllowedMentions:
    """Whom a request may ping: its run's owner, nobody else."""
    owner = approval.owner_user_id
    users = [discord.Object(owner)] if owner is not None else False
    return discord.AllowedMentions(everyone=False, users=users, roles=False, replied_user=False)


def decided_text(approval: Approval) -> str:
    call = f"`{approval.tool_name}` (run {short_run_id(approval.run_id)})"
    match approval.status:
        case ApprovalStatus.APPROVED:
            return f"✅ {call} approved by <@{approval.decided_by}>."
        case ApprovalStatus.DENIED:
            return f"🚫 {call} denied by <@{approval.decided_by}>."
        case ApprovalStatus.TIMED_OUT:
            return f"⏱️ {call} denied: nobody decided in time."
        case _:
            return f"🛑 {call} not run: the run was killed."


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
        message_id = None
        if approval.message_id is None and approval.status is ApprovalStatus.PENDING:
            if await self._repos.runs.owner(approval.run_id) != self._executor_id:
                return  # its run's process posts it
            text, arguments = request_message(approval, self._timeout_minutes)
            message = await channel.send(
                text,
                file=arguments or discord.utils.MISSING,
                view=self._controls(approval.id),
                nonce=nonce_for(approval.id, 0),
                allowed_mentions=pinged(approval),
            )
            message_id = message.id
        elif approval.message_id is not None:
            await channel.get_partial_message(approval.message_id).edit(content=decided_text(approval), view=None)
        async with self._repos.db.transaction() as tx:
            await self._repos.approvals.shown_as(tx, approval.id, approval.status, message_id)
