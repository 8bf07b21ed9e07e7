"""Scoring runs read back from their JSON reports (``--repoexec-report``, checked by ``document.load``): what
``repoexec compare`` and ``repoexec merge`` work from, and what tells the shards of one run from other runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .document import load, samples_of
from .results import SampleResult
from .shard import OPTION as SHARD_OPTION, Shard

# Options that say where a job ran and wrote (or which shard it was), not what the run is: the shards of one run
# may differ in them.
PLACE_OPTIONS = ("repoexec_shard", "repoexec_report", "repoexec_html", "repoexec_cache", "repoexec_exit_zero",
                 "repoexec_warm_processes", "repoexec_zygotes", "repoexec_fresh")


@dataclass(frozen=True)
class Run:
    path: Path
    model: str
    engine: str
    settings: dict[str, Any]  # the run's --repoexec-* options as given
    samples: dict[str, list[SampleResult]]  # by problem id, known failures left out
    code: str = ""  # the digest of the engine's code
    shard: Shard | None = None  # the part of a run this report holds (--repoexec-shard)

    @property
    def problems(self) -> set[str]:
        return set(self.samples)

    @property
    def identity(self) -> str:
        """What the shards of one run share: the engine and every option but where each job ran and wrote."""
        return json.dumps([self.engine, self.code, {name: value for name, value in sorted(self.settings.items())
                                                    if name not in PLACE_OPTIONS}])


def read_run(path: Path) -> Run:
    document = load(path)
    by_problem: dict[str, list[SampleResult]] = {}
    for result in samples_of(path, document["samples"]):
        by_problem.setdefault(result.problem, []).append(result)
    engine = document.get("engine") or {}
    shard = document.get("shard")
    return Run(path, str(document["model"]), str(engine.get("version", "?")), dict(document["settings"]), by_problem,
               str(engine.get("code", "")), Shard(shard["index"], shard["count"]) if isinstance(shard, dict) else None)


def common_problems(runs: Sequence[Run]) -> list[str]:
    """The problems every run has, sorted; an error naming each run's count where there are none."""
    shared = set.intersection(*(run.problems for run in runs)) if runs else set()
    if not shared and len(runs) > 1:
        counts = ", ".join(f"{run.path} has {len(run.problems)}" for run in runs)
        raise ValueError(f"the runs have no problem in common ({counts}): nothing to compare")
    return sorted(shared)


def refuse_shards_of_one_run(runs: Sequence[Run]) -> None:
    """Two shards of one run are halves of a whole, not rival runs: an error naming both and the option."""
    for index, first in enumerate(runs):
        for second in runs[index + 1:]:
            if first.shard and second.shard and first.shard != second.shard and first.identity == second.identity:
                raise ValueError(
                    f"{first.path} and {second.path} are shards {first.shard} and {second.shard} of one run "
                    f"({SHARD_OPTION}): they hold different problems of it, not rival runs; join them with "
                    f"`repoexec merge` and compare the merged report")
