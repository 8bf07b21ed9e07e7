"""Scoring runs read back from their JSON reports (``--repoexec-report``): what ``repoexec compare`` works from.

A report is checked before anything is computed from it: one that is cut short, written by an engine with
another report format, or not a scoring run is refused with the file and what is wrong with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .results import SampleResult

REPORT_FORMAT = 2  # the layout of the JSON report that this engine writes and reads; raise it when the layout changes
_REQUIRED = ("model", "settings", "samples")


class ReportError(ValueError):
    """A report that cannot be read as a scoring run; the message names the file and what is wrong."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(f"{path}: {what}")


@dataclass(frozen=True)
class Run:
    path: Path
    model: str
    engine: str
    settings: dict[str, Any]  # the run's --repoexec-* options as given
    samples: dict[str, list[SampleResult]]  # by problem id, known failures left out

    @property
    def problems(self) -> set[str]:
        return set(self.samples)


def read_run(path: Path) -> Run:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(path, f"cannot be read ({exc.strerror or exc})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(path, f"is not a complete JSON report (cut short?): {exc.msg} (line {exc.lineno}, "
                                f"column {exc.colno})") from None
    if not isinstance(document, dict):
        raise ReportError(path, "is not a repoexec JSON report (not an object)")
    if "summary" in document and "problems" in document and "samples" not in document:
        raise ReportError(path, "is an admission-gate report (--repoexec-validate), not a scoring run")
    found = document.get("format")
    if found != REPORT_FORMAT:
        written = "without a report format (an engine before format 2)" if found is None else f"in report format {found!r}"
        raise ReportError(path, f"was written {written}; this engine reads format {REPORT_FORMAT}: "
                                f"run it again with this engine")
    missing = [name for name in _REQUIRED if name not in document]
    if missing:
        raise ReportError(path, f"has no {', '.join(repr(name) for name in missing)} (cut short or edited?)")
    return Run(path, str(document["model"]), str(document.get("engine", {}).get("version", "?")),
               dict(document["settings"]), _samples(path, document["samples"]))


def _samples(path: Path, entries: Any) -> dict[str, list[SampleResult]]:
    if not isinstance(entries, list):
        raise ReportError(path, "'samples' is not a list")
    by_problem: dict[str, list[SampleResult]] = {}
    for index, entry in enumerate(entries):
        try:
            result = SampleResult.from_dict(entry)
        except (TypeError, KeyError) as exc:
            raise ReportError(path, f"samples[{index}] is not a sample result ({exc})") from None
        by_problem.setdefault(result.problem, []).append(result)
    return by_problem


def common_problems(runs: Sequence[Run]) -> list[str]:
    """The problems every run has, sorted; an error naming each run's count where there are none."""
    shared = set.intersection(*(run.problems for run in runs)) if runs else set()
    if not shared and len(runs) > 1:
        counts = ", ".join(f"{run.path} has {len(run.problems)}" for run in runs)
        raise ValueError(f"the runs have no problem in common ({counts}): nothing to compare")
    return sorted(shared)
