"""The report document: the one dict a run's JSON report holds, from which the terminal table, the HTML page,
``repoexec compare`` and ``repoexec merge`` all read, so that none of them shows what the JSON does not hold.

Made from sample results (``scoring_document``: by the run's collector, and by ``merge`` from its shards'
samples), written whole or not at all (``write_json``), and read back checked (``load``): a report that is cut
short, written by an engine with another report format, or not a scoring run is refused with the file and what
is wrong with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .cgroups import ENGINE_ERROR, find_mechanism
from .metrics import KS, error_counts, summarise
from .postprocess import ANSWER_SHAPES
from .results import SampleResult
from .store import engine_digest

if TYPE_CHECKING:
    from .debugging import Revision, Round
    from .settings import Settings

REPORT_FORMAT = 2  # the layout of the JSON report that this engine writes and reads; raise it when the layout changes
_REQUIRED = ("model", "settings", "samples")
ENGINE_KEYS = ("sandbox", "format", "engine", "settings", "executor", "model", "metrics", "projects", "errors", "empty",
               "answers", "store", "judge", "decoy", "samples", "known_failures", "not_run", "engine_errors",
               "debugging", "shard")  # a scoring report's own keys


class ReportError(ValueError):
    """A report that cannot be read as a scoring run; the message names the file and what is wrong."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(f"{path}: {what}")


def header(settings: Settings) -> dict[str, Any]:
    """What every report starts with: where candidates ran (first: an unconfined run says so before anything
    else), the layout, the engine, and every --repoexec-* option as given."""
    return {"sandbox": containment(settings), "format": REPORT_FORMAT,
            "engine": {"version": __version__, "code": engine_digest()[:16]}, "settings": settings.options}


_WHERE_TESTS_RUN = {  # by --repoexec-judge
    "apart": "apart: in a process that never runs candidate code; a problem that cannot be judged so is not judged",
    "apart-or-in-process": "apart: in a process that never runs candidate code, where the problem allows; elsewhere "
                           "beside it (--repoexec-judge=apart-or-in-process)",
    "in-process": "beside the candidate (--repoexec-judge=in-process)",
}
_PASSES_HELD = {"apart": "the judge apart", "apart-or-in-process": "the judge apart; in-process, the decoy check",
                "in-process": "the decoy check"}


def containment(settings: Settings) -> dict[str, str]:
    """Where candidates ran and what held them, each limit with its mechanism on this host."""
    found = find_mechanism(sandboxed=settings.sandbox != "none")
    return {
        "kind": settings.sandbox,  # bwrap, or none: unconfined, on the host
        "processes": found.mechanism if found else "none (--repoexec-accept-no-process-limit)",
        "memory, file size, CPU time, open files": "rlimits, soft and hard, set before the candidate's code runs",
        "system calls": "seccomp: no keyrings, ptrace or process_vm_readv/writev",
        "tests": _WHERE_TESTS_RUN[settings.judge],
        "passes": _PASSES_HELD[settings.judge] if settings.decoy else "believed as reported (--repoexec-decoy=off)",
    }


def scoring_document(
    head: dict[str, Any],
    results: Sequence[SampleResult],
    known: Iterable[SampleResult] = (),
    not_run: Iterable[dict[str, str]] = (),
    debugging: dict[str, Any] | None = None,
    shard: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A scoring run's report: ``head`` (``header`` with ``executor`` and ``model``), then what the counted
    ``results`` (known failures left out), the ``known`` failures and the items that gave no result make."""
    results = sorted(results, key=lambda r: (r.problem, r.sample))
    known = sorted(known, key=lambda r: (r.problem, r.sample))
    document = head | {
        "metrics": summarise(results).as_metrics(),
        "projects": {
            name: {"problems": s.problems, "samples": s.samples, **s.as_metrics()}
            for name, group in by_project(results).items()
            for s in [summarise(group)]
        },
        "errors": error_counts(results),
        "empty": sum(r.empty for r in results),
        "answers": answer_counts(results),
        "store": store_counts([*results, *known]),
        "judge": judge_counts(results),
        "decoy": decoy_counts(results),
        "samples": [result.to_dict() for result in results],
        "known_failures": [result.to_dict() for result in known],
        "not_run": sorted(not_run, key=lambda entry: entry["item"]),
    }
    # not run for the host's failure (a sample set-up that failed twice): the run's exit status is then 3
    document["engine_errors"] = sum(entry["reason"].startswith(f"{ENGINE_ERROR}:") for entry in document["not_run"])
    if debugging is not None:
        document["debugging"] = debugging
    if shard is not None:
        document["shard"] = shard
    return document


def debugging_section(rounds: Sequence[Round], revisions: Sequence[Revision], error: str | None) -> dict[str, Any]:
    """The debugging rounds: each round's pass@1 and DIR over every sample's standing after it, and each answer."""
    return {
        "rounds": [{"round": entry.number, "revised": entry.revised, "fixed": entry.fixed,
                    "pass@1": summary.pass_at.get(1), "DIR": summary.dir}
                   for entry in rounds for summary in [summarise(entry.results)]],
        "revisions": [{"round": revision.round, "completion": revision.completion, **revision.result.to_dict()}
                      for revision in revisions],
        "error": error,
    }


def answer_counts(results: Iterable[SampleResult]) -> dict[str, int]:
    """How many samples' completions have each of the shapes a model's answer takes (``ANSWER_SHAPES``)."""
    results = list(results)
    return {shape: sum(shape in r.shapes for r in results) for shape in ANSWER_SHAPES}


def store_counts(results: Iterable[SampleResult]) -> dict[str, int]:
    """How the run's verdicts came about: read back from the result store (copies: the same module as another
    sample of the problem), evaluated, or evaluated again over an entry that could not be read."""
    results = list(results)
    return {
        "read": sum(r.store == "read" for r in results),
        "copies": sum(r.copied_from is not None for r in results),
        "evaluated": sum(r.store in ("evaluated", "replaced") for r in results),
        "replaced": sum(r.store == "replaced" for r in results),
    }


def judge_counts(results: Iterable[SampleResult]) -> dict[str, Any]:
    """Where the run's samples were judged: apart from their candidate, or in-process (a weaker guarantee: the
    tests beside the candidate's code), each such problem with why."""
    results = [r for r in results if r.judge]
    in_process = {r.problem: r.judge.partition(": ")[2] or "--repoexec-judge=in-process"
                  for r in results if r.judge != "apart"}
    return {"apart": sum(r.judge == "apart" for r in results), "in_process": len(results) - sum(
        r.judge == "apart" for r in results), "problems_in_process": dict(sorted(in_process.items()))}


def decoy_counts(results: Iterable[SampleResult]) -> dict[str, Any]:
    """The decoy check of the run's passes: held, caught (those samples are Tampered), and the passing samples
    that could not get it, with why."""
    results = list(results)
    return {
        "held": sum(r.decoy == "held" for r in results),
        "caught": sum(r.decoy == "caught" for r in results),
        "unchecked": [{"problem": r.problem, "sample": r.sample, "why": r.decoy.partition(": ")[2]}
                      for r in results if r.decoy and r.decoy.startswith("unavailable")],
    }


def by_project(results: Iterable[SampleResult]) -> dict[str, list[SampleResult]]:
    groups: dict[str, list[SampleResult]] = {}
    for result in results:
        groups.setdefault(result.project, []).append(result)
    return dict(sorted(groups.items()))


METRICS_HEADER = ["project", "problems", "samples", *(f"pass@{k}" for k in KS), "DIR", "TR"]


def metrics_rows(document: dict[str, Any]) -> list[list[str]]:
    """The metrics table's rows, as the terminal and the HTML page show them: one per project, then ``all``;
    samples per problem (a range where problems differ), metrics in percent."""
    counts: dict[str, dict[str, int]] = {}
    for sample in document["samples"]:
        project = counts.setdefault(sample["project"], {})
        project[sample["problem"]] = project.get(sample["problem"], 0) + 1
    every = [n for project in counts.values() for n in project.values()]

    def row(name: str, problems: int, samples: list[int], metrics: dict[str, Any]) -> list[str]:
        low, high = min(samples, default=0), max(samples, default=0)
        return [name, str(problems), str(low) if low == high else f"{low}-{high}",
                *(percent(metrics.get(key)) for key in METRICS_HEADER[3:])]

    return [*(row(name, entry["problems"], list(counts.get(name, {}).values()), entry)
              for name, entry in document["projects"].items()),
            row("all", len(every), every, document["metrics"])]


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a report whole or not at all (a reader never finds half of one): a field a line, and a list's
    items (the samples) one a line. Written so, and not with ``indent``, which takes the standard library's
    Python encoder instead of its C one: ten times as long for a run of thousands of samples."""
    fields = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            value_text = "[\n  " + ",\n  ".join(map(json.dumps, value)) + "\n ]"
        else:
            value_text = json.dumps(value)
        fields.append(f" {json.dumps(key)}: {value_text}")
    write_text(path, "{\n" + ",\n".join(fields) + "\n}\n")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def load(path: Path) -> dict[str, Any]:
    """A scoring run's report, checked: an error naming the file for anything else."""
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
    return document


def samples_of(path: Path, entries: Any, key: str = "samples") -> list[SampleResult]:
    """A report's list of sample results; an error naming the file and the entry that is not one."""
    if not isinstance(entries, list):
        raise ReportError(path, f"{key!r} is not a list")
    results = []
    for index, entry in enumerate(entries):
        try:
            results.append(SampleResult.from_dict(entry))
        except (TypeError, KeyError) as exc:
            raise ReportError(path, f"{key}[{index}] is not a sample result ({exc})") from None
    return results
