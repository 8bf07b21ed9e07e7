"""``--repoexec-shard=I/N``: one of N independent jobs of a run (a Slurm array task, a Kubernetes indexed Job's
pod, a CI matrix entry), which ``repoexec merge`` joins into the report a single run would have written.

A shard takes whole problems, never part of one's samples (pass@k of a problem needs all of them), chosen by a
hash of the problem's id: the same split on every machine, whatever the order of collection, and a problem
stays in its shard when others are added or removed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import pytest

from . import transport

OPTION = "--repoexec-shard"
_SPEC = re.compile(r"(-?\d+)/(-?\d+)")


@dataclass(frozen=True)
class Shard:
    index: int  # from 0, as a Kubernetes completion index
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``I/N``; a ValueError that says what is wrong with it."""
        found = _SPEC.fullmatch(text.strip())
        if found is None:
            raise ValueError(f"expected I/N (this job's index from 0, and the number of shards), got {text!r}")
        index, count = int(found[1]), int(found[2])
        if count < 1:
            raise ValueError(f"the number of shards must be at least 1, got {count}")
        if not 0 <= index < count:
            raise ValueError(f"the index must be from 0 to {count - 1} (shards are numbered from 0), got {index}")
        return cls(index, count)

    def holds(self, problem_id: str) -> bool:
        return shard_of(problem_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(problem_id: str, count: int) -> int:
    """The shard of ``count`` that takes the problem: a hash of its id, not Python's salted ``hash``."""
    return int.from_bytes(hashlib.sha256(problem_id.encode()).digest()[:8], "big") % count


class ShardSelection:
    """Deselects the samples of other shards' problems after every other selection (``-k``, ``-m``, node ids),
    on the controller and on each xdist worker alike, and remembers the problems the whole run selected."""

    def __init__(self, shard: Shard) -> None:
        self.shard = shard
        self.problems: set[str] = set()  # of the whole run, before sharding
        self.samples = 0  # this shard's

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        kept, dropped = [], []
        for item in items:
            problem = transport.sample_problem(item)
            if problem is not None:
                self.problems.add(problem)
            (kept if problem is None or self.shard.holds(problem) else dropped).append(item)
        self.samples = sum(transport.sample_problem(item) is not None for item in kept)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def section(self) -> dict[str, Any]:
        """The report's ``shard``: which one, the whole run's problems (so that a merge tells a missing shard) and
        this shard's samples (so that it tells a job that stopped before its last)."""
        return {"index": self.shard.index, "count": self.shard.count, "samples": self.samples,
                "problems": sorted(self.problems)}
