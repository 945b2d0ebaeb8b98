"""Which Discord shards this process runs, and the executor id they give it.

For example ``--shards 0-3 --shard-count 8``. Several processes share one store by each running some of the bot's shards
(Discord sends a guild's events to shard ``(guild_id >> 22) % shard_count``). Each process needs a stable executor id of
its own (DBOS recovers a process's workflows by it, and two live processes on one id would take each other's runs):
unless the config names one, it is derived from the shards, so the process that runs them again after a restart gets the
same id.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import DEFAULT_EXECUTOR_ID, Config


class ShardsError(ValueError):
    """``--shards`` / ``--shard-count`` that do not name shards of the count.

    Said in one line."""


@dataclass(frozen=True)
class Shards:
    ids: tuple[int, ...]
    count: int
    spec: str  # as given, normalised: "0-3", "0-1,4"

    @property
    def executor_id(self) -> str:
        return f"shards-{self.spec.replace(',', '_')}-of-{self.count}"


def parse_shards(spec: str | None, count_text: str | None) -> Shards | None:
    """The shards ``--shards`` names (``2``, ``0-3``, ``0-1,4``) out of ``--shard-count``; ``None`` without both."""
    if spec is None and count_text is None:
        return None
    if spec is None or count_text is None:
        raise ShardsError("--shards and --shard-count go together (e.g. --shards 0-3 --shard-count 8)")
    count = int(count_text) if count_text.strip().isdigit() else 0
    if count < 1:
        raise ShardsError(f"--shard-count must be a whole number of at least 1, not {count_text!r}")
    ids: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.strip().partition("-")
        try:
            low, high = int(first), int(last) if dash else int(first)
        except ValueError:
            raise ShardsError(f"--shards {spec!r}: expected shard numbers like 2, 0-3 or 0-1,4") from None
        if low > high:
            raise ShardsError(f"--shards {spec!r}: the range {low}-{high} is reversed (write {high}-{low})")
        if low < 0 or high >= count:
            raise ShardsError(f"--shards {spec!r}: shards are numbered 0 to {count - 1} with --shard-count {count}")
        ids += range(low, high + 1)
    if len(set(ids)) != len(ids):
        raise ShardsError(f"--shards {spec!r} names a shard twice")
    return Shards(ids=tuple(sorted(ids)), count=count, spec=",".join(p.strip() for p in spec.split(",")))


def with_shards(config: Config, shards: Shards | None) -> Config:
    """The config this process runs with: the executor id derived from its shards unless the config names one."""
    if shards is None or config.durability.executor_id != DEFAULT_EXECUTOR_ID:
        return config
    durability = config.durability.model_copy(update={"executor_id": shards.executor_id})
    return config.model_copy(update={"durability": durability})
