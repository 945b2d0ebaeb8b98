"""The sub-agent lane's order: freed slots go round-robin across members, then across a member's top-level runs,
first come first served inside one; a waiter that is cancelled or withdrawn neither loses nor leaks a slot."""

from __future__ import annotations

import asyncio

import pytest

from bot.core.runs.fair_lane import FairLane, Member


class Occupants:
    """Runs that enter the lane and hold their slot until the test ends them, recording the order they start."""

    def __init__(self, slots: int) -> None:
        self.lane = FairLane(slots)
        self.started: list[str] = []
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._ends: dict[str, asyncio.Event] = {}

    async def enter(self, ticket: str, member: Member, root: str | None = None) -> None:
        self._ends[ticket] = asyncio.Event()
        self.tasks[ticket] = asyncio.create_task(self._hold(ticket, member, root or ticket))
        await _turns()

    async def end(self, ticket: str) -> None:
        self._ends[ticket].set()
        await self.tasks[ticket]
        await _turns()

    async def close(self) -> None:
        for task in self.tasks.values():
            task.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    async def _hold(self, ticket: str, member: Member, root: str) -> None:
        async with self.lane.slot(ticket, member, root):
            self.started.append(ticket)
            await self._ends[ticket].wait()


@pytest.fixture
async def lane():
    """``lane(slots)`` makes an :class:`Occupants`; whatever still holds or waits is cancelled at the end."""
    made: list[Occupants] = []

    def make(slots: int) -> Occupants:
        made.append(Occupants(slots))
        return made[-1]

    yield make
    for occupants in made:
        await occupants.close()


async def _turns() -> None:
    """Let every task that can move take its steps (entering the lane is a handful of them, none of them I/O)."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_free_slots_go_round_robin_across_members_and_none_is_a_member_of_its_own(lane):
    runs = lane(slots=1)
    await runs.enter("held", member=9)
    for ticket in ("a1", "a2", "a3"):
        await runs.enter(ticket, member=1)
    await runs.enter("b1", member=2)
    await runs.enter("cron", member=None)
    await runs.enter("b2", member=2)

    assert runs.lane.order() == ["a1", "b1", "cron", "a2", "b2", "a3"]
    for ticket in ("held", "a1", "b1", "cron", "a2", "b2"):
        await runs.end(ticket)
    assert runs.started == ["held", "a1", "b1", "cron", "a2", "b2", "a3"]


async def test_inside_a_member_slots_go_round_robin_across_top_level_runs_in_arrival_order(lane):
    runs = lane(slots=1)
    await runs.enter("held", member=9)
    for child in ("c1", "c2", "c3"):
        await runs.enter(child, member=1, root="fan-out")
    await runs.enter("d1", member=1, root="other")

    assert runs.lane.order() == ["c1", "d1", "c2", "c3"]
    for ticket in ("held", "c1", "d1", "c2"):
        await runs.end(ticket)
    assert runs.started == ["held", "c1", "d1", "c2", "c3"]


async def test_a_new_members_first_run_waits_for_one_turnover_behind_a_long_fan_out(lane):
    runs = lane(slots=2)
    for i in range(40):
        await runs.enter(f"a{i}", member=1, root="a")
    await runs.enter("b", member=2)

    assert runs.started == ["a0", "a1"]
    await runs.end("a0")
    await runs.end("a1")
    assert runs.started == ["a0", "a1", "a2", "b"]


async def test_a_cancelled_waiter_leaves_its_place_and_the_lane_keeps_its_slots(lane):
    runs = lane(slots=1)
    await runs.enter("held", member=9)
    await runs.enter("w1", member=1)
    await runs.enter("w2", member=2)

    runs.tasks["w1"].cancel()
    await _turns()
    assert runs.lane.order() == ["w2"]
    await runs.end("held")
    await runs.end("w2")
    assert runs.started == ["held", "w2"]

    await runs.enter("x", member=3)
    await runs.enter("y", member=4)
    assert runs.started == ["held", "w2", "x"]  # one slot: neither lost (x starts) nor leaked (y waits)
    assert runs.lane.order() == ["y"]


async def test_a_withdrawn_waiter_gives_its_place_to_the_next_and_costs_its_member_no_turn(lane):
    runs = lane(slots=1)
    await runs.enter("held", member=9)
    await runs.enter("a1", member=1)
    await runs.enter("a2", member=1)
    await runs.enter("b1", member=2)

    assert runs.lane.withdraw("a1")
    assert not runs.lane.withdraw("held")  # it holds a slot: not waiting
    runs.tasks["a1"].cancel()
    await _turns()
    assert runs.lane.order() == ["a2", "b1"]
    await runs.end("held")
    assert runs.started == ["held", "a2"]


async def test_a_slot_handed_to_a_task_cancelled_before_it_resumed_goes_on_to_the_next(lane):
    runs = lane(slots=1)
    holder = runs.lane.slot("held", 9, "held")
    await holder.__aenter__()
    await runs.enter("w1", member=1)
    await runs.enter("w2", member=2)

    await holder.__aexit__(None, None, None)  # hands the slot to w1, which has not run since
    runs.tasks["w1"].cancel()
    await _turns()
    with pytest.raises(asyncio.CancelledError):
        await runs.tasks["w1"]
    assert runs.started == ["w2"]
    await runs.end("w2")
    await runs.enter("x", member=3)
    await runs.enter("y", member=4)
    assert runs.started == ["w2", "x"]


async def test_a_waiter_cancelled_as_the_slot_frees_is_passed_over(lane):
    runs = lane(slots=1)
    holder = runs.lane.slot("held", 9, "held")
    await holder.__aenter__()
    await runs.enter("w1", member=1)
    await runs.enter("w2", member=2)

    runs.tasks["w1"].cancel()
    await holder.__aexit__(None, None, None)  # before w1 has run to take itself out of the queue
    await _turns()
    assert runs.started == ["w2"]
    assert runs.lane.order() == []
