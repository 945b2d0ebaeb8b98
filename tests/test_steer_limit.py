"""The memory behind the thread rules stays bounded: the steer rate limit keeps only the last interval's steers,
and the (thread, member) pairs told a thread is not theirs are kept up to a limit, least recently told dropped."""

from __future__ import annotations

from bot.core.threads.messages import Told
from bot.core.threads.steer_limit import SteerLimit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_steer_waits_out_the_interval_per_person_and_run():
    clock = Clock()
    limit = SteerLimit(clock)
    limit.sent(1, "run-a")
    assert limit.wait_left(1, "run-a") == 2.0
    assert limit.wait_left(2, "run-a") == 0 and limit.wait_left(1, "run-b") == 0  # another person, another run
    clock.now += 1.5
    assert limit.wait_left(1, "run-a") == 0.5
    clock.now += 0.5
    assert limit.wait_left(1, "run-a") == 0


def test_steers_older_than_the_interval_are_forgotten_as_new_ones_come():
    clock = Clock()
    limit = SteerLimit(clock)
    for n in range(10_000):  # one steer each of many runs, 1 ms apart: 10 s in all
        limit.sent(n % 7, f"run-{n}")
        clock.now += 0.001
    assert len(limit) <= 2001  # only the last 2 s
    limit.sent(3, "run-9999")
    assert limit.wait_left(3, "run-9999") == 2.0


def test_who_was_told_is_bounded_and_the_least_recently_told_go_first():
    told = Told(limit=3)
    assert told.first_time(10, 1) and told.first_time(10, 2) and told.first_time(11, 1)
    assert not told.first_time(10, 1)  # told already: now the most recent
    assert told.first_time(12, 5)  # over the limit: (10, 2) goes
    assert len(told) == 3
    assert not told.first_time(10, 1) and not told.first_time(11, 1)
    assert told.first_time(10, 2)
