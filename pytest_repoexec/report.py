"""The controller's view of a run: results gathered from every report, the summary table, the JSON report."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .debugging import Revision, Round
from .fixer import FIX_PROPERTY, FixResult
from .gate import GATE_ITEM_PROPERTY, GATE_PROPERTY, GateResult
from .metrics import KS, Summary, error_counts, mean, summarise
from .results import SAMPLE_PROPERTY, USER_PROPERTY, SampleResult


class ResultsCollector:
    """Registered on the controller only; under xdist it sees the reports of every worker."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, SampleResult] = {}
        self.errors: dict[str, str] = {}  # samples that could not run (environment, layout), by node id
        self.rounds: list[Round] = []  # filled by the debugging phase, when there is one
        self.revisions: list[Revision] = []
        self.debug_error: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if SAMPLE_PROPERTY not in properties:
            return  # not a sample: a plain test in the same session
        if USER_PROPERTY in properties:
            self.results[report.nodeid] = SampleResult.from_dict(properties[USER_PROPERTY])
        if report.failed and report.nodeid not in self.results:  # no verdict: the sample could not run
            self.errors[report.nodeid] = _crash_message(report)

    def ordered(self) -> list[SampleResult]:
        """The results that count, in problem and sample order; known failures are kept out."""
        return sorted((r for r in self.results.values() if not r.known_failure), key=lambda r: (r.problem, r.sample))

    def known_failures(self) -> dict[str, str]:
        return {r.problem: r.known_failure for r in self.results.values() if r.known_failure}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results and not self.errors:
            return
        model = self.config.getoption("repoexec_model")
        terminalreporter.write_sep("=", f"repoexec: {model}")
        for line in render_table(self.ordered()):
            terminalreporter.write_line(line)
        errors = error_counts(self.ordered())
        if errors:
            terminalreporter.write_line(
                "failed samples by error: " + ", ".join(f"{name} {count}" for name, count in errors.items())
            )
        empty = sum(r.empty for r in self.ordered())
        if empty:
            terminalreporter.write_line(f"empty completions (a body of only a docstring or pass): {empty} samples")
        if self.rounds:
            terminalreporter.write_line("")
            for line in render_rounds(self.rounds):
                terminalreporter.write_line(line)
        if self.debug_error:
            terminalreporter.write_line(self.debug_error, red=True)
        known = self.known_failures()
        if known:
            terminalreporter.write_line(f"known failures (run as xfail, left out of the metrics): {len(known)} problems")
        if self.errors:
            terminalreporter.write_line(f"{len(self.errors)} samples could not run (left out of the metrics):")
            for nodeid, message in list(self.errors.items())[:10]:
                terminalreporter.write_line(f"  {nodeid}: {message.splitlines()[0][:200]}")
        path = self.config.getoption("repoexec_report")
        if path:
            terminalreporter.write_line(f"report: {path}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("repoexec_report")
        if path and (self.results or self.errors):
            write_report(Path(self.config.invocation_params.dir, path), self.config, self)


def _crash_message(report: pytest.TestReport) -> str:
    """Why an item that gave no result failed: the exception's message, else the whole report."""
    crash = getattr(report.longrepr, "reprcrash", None)
    return (crash.message if crash else str(report.longrepr)).strip()[:4000]


def _by_project(results: list[SampleResult]) -> dict[str, list[SampleResult]]:
    groups: dict[str, list[SampleResult]] = {}
    for result in results:
        groups.setdefault(result.project, []).append(result)
    return dict(sorted(groups.items()))


def render_table(results: list[SampleResult]) -> list[str]:
    """One row per project and one for all, metrics in percent (pass@k only where every problem has k samples)."""
    header = ["project", "problems", "samples", *(f"pass@{k}" for k in KS), "DIR", "TR"]
    rows = [_row(name, summarise(group)) for name, group in _by_project(results).items()]
    rows.append(_row("all", summarise(results)))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in [header, *rows]]
    return [lines[0], "-" * len(lines[0]), *lines[1:-1], "-" * len(lines[0]), lines[-1], "(metrics in percent)"]


def render_rounds(rounds: list[Round]) -> list[str]:
    """pass@1 and DIR after each debugging round, as the paper's Table 4 lays them out."""
    lines = ["debugging rounds (greedy, one answer a round)", "round  revised  fixed  pass@1     DIR"]
    for entry in rounds:
        summary = summarise(entry.results)
        lines.append(f"{entry.number:>5}  {entry.revised:>7}  {entry.fixed:>5}  "
                     f"{_percent(summary.pass_at.get(1)):>6}  {_percent(summary.dir):>6}")
    return lines


def _row(name: str, summary: Summary) -> list[str]:
    low, high = summary.samples_per_problem
    per_problem = str(low) if low == high else f"{low}-{high}"
    metrics = summary.as_metrics()
    return [name, str(summary.problems), per_problem, *(_percent(metrics[f"pass@{k}"]) for k in KS),
            _percent(summary.dir), _percent(summary.tr)]


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def write_report(path: Path, config: pytest.Config, collector: ResultsCollector) -> None:
    results = collector.ordered()
    report = {
        "model": config.getoption("repoexec_model"),
        "metrics": summarise(results).as_metrics(),
        "projects": {
            name: {"problems": s.problems, "samples": s.samples, **s.as_metrics()}
            for name, group in _by_project(results).items()
            for s in [summarise(group)]
        },
        "errors": error_counts(results),
        "empty": sum(r.empty for r in results),
        "samples": [result.to_dict() for result in results],
        "known_failures": [
            result.to_dict() for result in sorted(collector.results.values(), key=lambda r: (r.problem, r.sample))
            if result.known_failure
        ],
        "not_run": [{"item": nodeid, "reason": reason} for nodeid, reason in collector.errors.items()],
    }
    if collector.rounds or collector.debug_error:
        report["debugging"] = {
            "rounds": [
                {"round": entry.number, "revised": entry.revised, "fixed": entry.fixed,
                 "pass@1": summary.pass_at.get(1), "DIR": summary.dir}
                for entry in collector.rounds for summary in [summarise(entry.results)]
            ],
            "revisions": [
                {"round": revision.round, "completion": revision.completion, **revision.result.to_dict()}
                for revision in collector.revisions
            ],
            "error": collector.debug_error,
        }
    _write_json(path, report)


class GateCollector:
    """The controller's view of an admission-gate run: each problem's verdict, the means, the fixer's diffs."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: dict[str, GateResult] = {}
        self.known: set[str] = set()  # problems whose reference is known to fail here (run as xfail)
        self.fixes: dict[str, FixResult] = {}
        self.errors: dict[str, str] = {}  # problems whose gate could not run, or that the fixer gave up on

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        properties = dict(report.user_properties)
        if GATE_PROPERTY in properties:
            result = GateResult.from_dict(properties[GATE_PROPERTY])
            self.results[result.problem] = result
            if hasattr(report, "wasxfail"):
                self.known.add(result.problem)
        if FIX_PROPERTY in properties:
            fix = FixResult.from_dict(properties[FIX_PROPERTY])
            self.fixes[fix.problem] = fix
        if GATE_ITEM_PROPERTY in properties and report.failed and GATE_PROPERTY not in properties:
            self.errors[report.nodeid] = _crash_message(report)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for fix in self.fixes.values():
            terminalreporter.write_sep("-", f"assertion fixer: {fix.problem}")
            for line in [*fix.fixed, *(f"removed {entry}" for entry in fix.removed)]:
                terminalreporter.write_line(f"  {line}")
            terminalreporter.write_line(fix.diff.rstrip() or "  (nothing to change)")
        if not self.results and not self.errors:
            return
        terminalreporter.write_sep("=", "repoexec: admission gate")
        for line in render_gate(list(self.results.values()), self.known):
            terminalreporter.write_line(line)
        for nodeid, message in self.errors.items():
            terminalreporter.write_line(f"not checked: {nodeid}: {message.splitlines()[0][:200]}")
        path = self.config.getoption("repoexec_report")
        if path:
            terminalreporter.write_line(f"report: {path}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("repoexec_report")
        if not path or not (self.results or self.errors):
            return
        results = sorted(self.results.values(), key=lambda r: r.problem)
        report = {
            "mode": "fix-assertions" if self.fixes else "validate",
            "summary": gate_summary(results, self.known),
            "problems": [result.to_dict() | {"known_failure": result.problem in self.known} for result in results],
            "fixes": [fix.to_dict() for fix in self.fixes.values()],
            "not_checked": [{"item": nodeid, "reason": reason} for nodeid, reason in self.errors.items()],
        }
        _write_json(Path(self.config.invocation_params.dir, path), report)


def gate_summary(results: list[GateResult], known: set[str]) -> dict[str, Any]:
    """Counts and means over the problems that count (known failures left out)."""
    counted = [result for result in results if result.problem not in known]
    return {
        "problems": len(counted),
        "admitted": sum(result.passed for result in counted),
        "rejected": sum(not result.passed for result in counted),
        "known_failures": len(results) - len(counted),
        "mean_line_coverage": mean([r.line_coverage for r in counted if r.line_coverage is not None]),
        "mean_branch_coverage": mean([r.branch_coverage for r in counted if r.branch_coverage is not None]),
        "mean_mutation_score": mean([r.mutation_score for r in counted if r.mutation_score is not None]),
        "flaky_tests": sum(len(result.flaky) for result in counted),
    }


def render_gate(results: list[GateResult], known: set[str]) -> list[str]:
    header = ["problem", "verdict", "line%", "branch%", "mutants killed%", "flaky", "reasons"]
    rows = []
    for result in sorted(results, key=lambda r: r.problem):
        verdict = "known failure" if result.problem in known else "admitted" if result.passed else "REJECTED"
        reasons = "; ".join(result.reasons)
        rows.append([result.problem, verdict, _figure(result.line_coverage), _figure(result.branch_coverage),
                     _figure(result.mutation_score) + (f" of {result.mutants}" if result.mutants else ""),
                     ", ".join(result.flaky) or "-", reasons[:160] + ("…" if len(reasons) > 160 else "") or "-"])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row[:-1], widths)), row[-1]]) for row in [header, *rows]]
    summary = gate_summary(results, known)
    lines += [
        "-" * min(len(lines[0]), 120),
        f"{summary['admitted']} of {summary['problems']} problems admitted"
        + (f" ({summary['known_failures']} known failures not counted)" if summary["known_failures"] else ""),
        f"mean coverage of the function: lines {_figure(summary['mean_line_coverage'])}%, "
        f"branches {_figure(summary['mean_branch_coverage'])}%; "
        f"mean mutation score {_figure(summary['mean_mutation_score'])}%",
    ]
    return lines


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, path)
