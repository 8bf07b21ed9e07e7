"""``repoexec compare``: runs side by side on the problems they share, each pass@k with a bootstrap interval,
and for each pair of runs the paired difference with its interval.

The bootstrap resamples problems (not samples: a problem's samples are not independent), with the same
resampled problem sets for every run, so that a pair's difference is paired problem by problem. An interval
that excludes zero says the difference is unlikely to be the luck of which problems were drawn.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy

from .document import percent
from .metrics import KS, Summary, pass_at_k, summarise
from .runs import Run, common_problems, refuse_shards_of_one_run

# Options that make one run differ from another (what a row shows when runs differ in it); paths, caches and
# output files do not.
_DEFINING = ("repoexec_model", "repoexec_prompt", "repoexec_context", "repoexec_temperature", "repoexec_top_p",
             "repoexec_max_tokens", "repoexec_n", "repoexec_debug_rounds", "repoexec_fail_fast",
             "repoexec_timeout", "repoexec_timeout_factor", "repoexec_min_timeout", "repoexec_executor",
             "repoexec_sandbox", "repoexec_description", "repoexec_agent_calls", "repoexec_agent_tools",
             "repoexec_agent_protocol")


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class Row:
    run: Run
    settings: str  # the defining options in which this run differs from the others
    summary: Summary  # over the common problems
    intervals: dict[int, Interval]  # pass@k where every common problem has k samples


@dataclass(frozen=True)
class Difference:
    first: int  # rows' indices: first minus second
    second: int
    k: int
    interval: Interval


@dataclass(frozen=True)
class Leaderboard:
    rows: list[Row]  # best pass@1 first
    differences: list[Difference]
    problems: int  # in common
    confidence: float
    resamples: int


def compare(runs: Sequence[Run], resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> Leaderboard:
    refuse_shards_of_one_run(runs)
    problems = common_problems(runs)
    chosen = numpy.random.default_rng(seed).integers(0, len(problems), size=(resamples, len(problems)))
    tail = 100 * (1 - confidence) / 2

    def interval(scores: numpy.ndarray) -> Interval:
        low, high = numpy.percentile(scores[chosen].mean(axis=1), [tail, 100 - tail])
        return Interval(float(scores.mean()), float(low), float(high))

    scores = [_per_problem(run, problems) for run in runs]
    differing = _differing_settings(runs)
    rows = [Row(run, differing[index], summarise(s for p in problems for s in run.samples[p]),
                {k: interval(by_k) for k, by_k in scores[index].items()}) for index, run in enumerate(runs)]
    order = sorted(range(len(rows)), key=lambda i: -rows[i].summary.pass_at.get(1, -1.0))
    differences = [
        Difference(order.index(a), order.index(b), k, interval(scores[a][k] - scores[b][k]))
        for a, b in itertools.combinations(order, 2) for k in KS if k in scores[a] and k in scores[b]
    ]
    return Leaderboard([rows[i] for i in order], differences, len(problems), confidence, resamples)


def _per_problem(run: Run, problems: list[str]) -> dict[int, numpy.ndarray]:
    """Each problem's pass@k estimate, for the k that every one of the problems has samples enough for."""
    counts = [(len(run.samples[p]), sum(s.passed for s in run.samples[p])) for p in problems]
    return {k: numpy.array([pass_at_k(n, c, k) for n, c in counts]) for k in KS if min(n for n, _ in counts) >= k}


def _differing_settings(runs: Sequence[Run]) -> list[str]:
    varying = [name for name in _DEFINING if len({repr(run.settings.get(name)) for run in runs}) > 1]
    return [", ".join(f"{name.removeprefix('repoexec_').replace('_', '-')}={run.settings.get(name)}"
                      for name in varying if name != "repoexec_model") or "-" for run in runs]


def render(board: Leaderboard, markdown: bool = False) -> list[str]:
    """The leaderboard and the paired differences, as aligned text or as Markdown tables."""
    tables = board_tables(board)
    lines = [tables.caption, ""]
    lines += _table(tables.header, tables.rows, markdown)
    if tables.differences:
        lines += ["", tables.differences_caption, ""]
        lines += _table(DIFFERENCE_HEADER, tables.differences, markdown)
    return lines


DIFFERENCE_HEADER = ["first", "second", "metric", "difference", "excludes zero"]


@dataclass(frozen=True)
class Tables:
    """The leaderboard's cells, as every rendering (text, Markdown, HTML) shows them."""

    caption: str
    header: list[str]
    rows: list[list[str]]
    differences_caption: str
    differences: list[list[str]]


def board_tables(board: Leaderboard) -> Tables:
    level = f"{board.confidence:.0%}"
    return Tables(
        caption=f"{len(board.rows)} runs on the {board.problems} problems they share; pass@k in percent with "
                f"{level} intervals (bootstrap over problems, {board.resamples} resamples)",
        header=["run", "generator", "settings", "problems", *(f"pass@{k}" for k in KS), "DIR", "TR"],
        rows=[[row.run.path.name, _generator(row.run.model), row.settings, str(len(row.run.problems)),
               *(_with_interval(row.intervals.get(k)) for k in KS), percent(row.summary.dir), percent(row.summary.tr)]
              for row in board.rows],
        differences_caption=f"paired differences, first run minus second ({level} interval; 'yes' where it "
                            "excludes zero)",
        differences=[[board.rows[d.first].run.path.name, board.rows[d.second].run.path.name, f"pass@{d.k}",
                       _with_interval(d.interval, signed=True), "yes" if d.interval.excludes_zero else "no"]
                      for d in board.differences],
    )


def _generator(model: str) -> str:
    """The generator's name, with a path argument (``replay:/long/path/run.jsonl``) cut to its file name."""
    name, colon, argument = model.partition(":")
    return name + colon + (Path(argument).name if "/" in argument else argument)


def _table(header: list[str], rows: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return [f"| {' | '.join(header)} |", f"|{'|'.join('---' for _ in header)}|",
                *(f"| {' | '.join(row)} |" for row in rows)]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [header, *rows]]
    return [text[0], "-" * len(text[0]), *text[1:]]


def _with_interval(interval: Interval | None, signed: bool = False) -> str:
    if interval is None:
        return "-"
    sign = "+" if signed else ""
    return f"{100 * interval.estimate:{sign}.2f} [{100 * interval.low:{sign}.2f}, {100 * interval.high:{sign}.2f}]"
