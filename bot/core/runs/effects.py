"""What a committed settlement asks of this process, done in one place.

Settlement writes and returns an :class:`~bot.core.runs.settlement.AfterCommit`; every room that settles hands
it here. Nothing in it runs before the commit, so a crash in between loses no state, only a wake-up the next start
makes again.
"""

from __future__ import annotations

from pydantic_ai import CancellationToken

from bot.core.runs.ports import Archive, Launcher, RunEnds
from bot.core.runs.settlement import AfterCommit
from bot.core.signals import Signals


class Cancellations:
    """The cancellation token of each turn in flight here, by run id."""

    def __init__(self) -> None:
        self._tokens: dict[str, CancellationToken] = {}

    def token(self, run_id: str) -> CancellationToken:
        return self._tokens.setdefault(run_id, CancellationToken())

    def done(self, run_id: str) -> None:
        self._tokens.pop(run_id, None)

    def cancel(self, run_id: str) -> None:
        token = self._tokens.get(run_id)
        if token is not None:
            token.cancel()


class Effects:
    """Applies an :class:`AfterCommit`: stops, wakes and starts runs, archives, ends bindings, signals."""

    def __init__(
        self, signals: Signals, launcher: Launcher, cancellations: Cancellations, archive: Archive, ends: RunEnds
    ) -> None:
        self._signals = signals
        self._launcher = launcher
        self.cancellations = cancellations  # execution registers each turn's token here
        self._archive = archive
        self._ends = ends

    def cancel(self, run_id: str) -> None:
        """Stop a killed run: its turn in flight here at once, and wherever it is queued or executing."""
        self.cancellations.cancel(run_id)
        self._launcher.kill(run_id)

    def apply(self, after: AfterCommit) -> None:
        for run_id in after.cancel:
            self.cancel(run_id)
        for run_id in after.wake:
            self._launcher.wake(run_id)
        for run_id in after.queue:
            self._launcher.queue(run_id)
        for run_id in after.changed:
            self._signals.run_changed(run_id)
        for when in after.archive_at:
            self._archive.scheduled(when)
        for session_key in after.archive_now:
            self._signals.background(self._archive.archive(session_key))
        for run_id in after.ended:
            self._signals.background(self._ends.end_run_bindings(run_id))
        if after.outbox:
            self._signals.outbox_changed()
        self._signals.progressed()
