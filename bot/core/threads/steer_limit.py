"""The steer rate limit: one message every two seconds per person per running run, whether it comes as
``/subagents steer`` or as a message in the run's bound thread.

Memory holds only the steers of the last interval: older entries are dropped on every insert (entries are kept
in the order they were last sent, so the oldest are at the front), so no input can grow it beyond what fits in
two seconds.
"""

from __future__ import annotations

from collections.abc import Callable

STEER_INTERVAL_SECONDS = 2.0


class SteerLimit:
    def __init__(self, clock: Callable[[], float], interval: float = STEER_INTERVAL_SECONDS) -> None:
        self._clock = clock
        self.interval = interval
        self._last: dict[tuple[int | None, str], float] = {}  # (person, run id) → when they last steered it

    def wait_left(self, user_id: int | None, run_id: str) -> float:
        """Seconds until ``user_id`` may steer ``run_id`` again (0: now)."""
        last = self._last.get((user_id, run_id))
        return 0.0 if last is None else max(0.0, last + self.interval - self._clock())

    def sent(self, user_id: int | None, run_id: str) -> None:
        """``user_id`` steered ``run_id`` now."""
        now = self._clock()
        key = (user_id, run_id)
        self._last.pop(key, None)
        self._last[key] = now
        while (oldest := next(iter(self._last))) != key and self._last[oldest] + self.interval <= now:
            del self._last[oldest]  # the front is the oldest: it stops at the first entry still inside the interval

    def __len__(self) -> int:
        return len(self._last)
