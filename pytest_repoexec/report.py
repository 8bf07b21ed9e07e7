"""The controller's view of a run: results gathered from every report, the summary table, the JSON report.

Each mode's session registers one collector on the controller (under xdist, it sees every worker's reports).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from . import __version__, transport
from .debugging import Revision, Round
from .fixer import FixResult
from .gate import GateResult
from .metrics import KS, Summary, error_counts, mean, summarise
from .results import SampleResult
from .runs import REPORT_FORMAT
from .settings import Settings
from .store import engine_digest


class Collector:
    """What both collectors share: items that gave no result, the JSON report at the end, its path in the
    summary. A subclass says which reports are its own, what it reads from them and what it writes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.errors: dict[str, str] = {}  # items of ours that gave no result (environment, layout), by node id

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.owns(report):
            return  # a plain test in the same session
        if not self.read(report) and report.failed:
            self.errors.setdefault(report.nodeid, transport.crash_message(report))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = self.summary()
        if not lines:
            return
        for line in lines:
            if isinstance(line, tuple):
                terminalreporter.write_sep(*line)
            else:
                terminalreporter.write_line(line)
        for path in (self.settings.report, self.settings.html):
            if path is not None:
                terminalreporter.write_line(f"report: {path}")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        document = self.document()
        if document is None:
            return
        for sections in session.config.hook.pytest_repoexec_report_sections():
            document |= {key: value for key, value in (sections or {}).items() if key not in document}
        if self.settings.report is not None:
            _write_json(self.settings.report, document)
        if self.settings.html is not None:
            from .htmlreport import render_html, write_page  # matplotlib and the template load only when asked for

            write_page(self.settings.html, render_html(document))

    def sandbox_line(self) -> list[str]:
        """Said first when candidates ran unconfined."""
        if self.settings.sandbox == "none":
            return ["sandbox: none (--repoexec-sandbox=none): candidates ran unconfined, on the host"]
        return []

    def owns(self, report: pytest.TestReport) -> bool:
        raise NotImplementedError

    def read(self, report: pytest.TestReport) -> bool:
        """Take what the report carries; whether it carried a result."""
        raise NotImplementedError

    def summary(self) -> list[str | tuple[str, str]]:
        """Lines of the terminal summary (a tuple is a separator line: character and title)."""
        raise NotImplementedError

    def document(self) -> dict[str, Any] | None:
        """The JSON report, or None when there is nothing to report."""
        raise NotImplementedError


class ResultsCollector(Collector):
    """A scoring run's samples, and the debugging rounds when there are some."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.results: dict[str, SampleResult] = {}
        self.rounds: list[Round] = []
        self.revisions: list[Revision] = []
        self.debug_error: str | None = None

    def owns(self, report: pytest.TestReport) -> bool:
        return transport.is_sample(report)

    def read(self, report: pytest.TestReport) -> bool:
        result = transport.sample_result(report)
        if result is not None:
            self.results[report.nodeid] = result
            self.errors.pop(report.nodeid, None)
        return report.nodeid in self.results

    @pytest.hookimpl(optionalhook=True)
    def pytest_repoexec_round_finished(self, round: Round, revisions: Sequence[Revision]) -> None:
        self.rounds.append(round)
        self.revisions += revisions

    @pytest.hookimpl(optionalhook=True)
    def pytest_repoexec_debugging_stopped(self, reason: str) -> None:
        self.debug_error = reason

    def ordered(self) -> list[SampleResult]:
        """The results that count, in problem and sample order; known failures are kept out."""
        return sorted((r for r in self.results.values() if not r.known_failure), key=lambda r: (r.problem, r.sample))

    def known_failures(self) -> dict[str, str]:
        return {r.problem: r.known_failure for r in self.results.values() if r.known_failure}

    def summary(self) -> list[str | tuple[str, str]]:
        if not self.results and not self.errors:
            return []
        results = self.ordered()
        lines: list[str | tuple[str, str]] = [("=", f"repoexec: {self.settings.model}"), *self.sandbox_line(),
                                              *render_table(results)]
        errors = error_counts(results)
        if errors:
            lines.append("failed samples by error: " + ", ".join(f"{name} {count}" for name, count in errors.items()))
        empty = sum(r.empty for r in results)
        if empty:
            lines.append(f"empty completions (a body of only a docstring or pass): {empty} samples")
        if any(not r.tr_measured for r in results):
            lines.append("TR: not measured (--repoexec-fail-fast stopped failing samples at their first failing test)")
        store = store_counts(self.results.values())
        if store["read"]:
            lines.append(f"result store: {store['read']} samples read back ({store['copies']} of them the same module "
                         f"as another sample), {store['evaluated']} evaluated"
                         + (f", {store['replaced']} unreadable entries evaluated again" if store["replaced"] else ""))
        if self.rounds:
            lines += ["", *render_rounds(self.rounds)]
        if self.debug_error:
            lines.append(self.debug_error)
        known = self.known_failures()
        if known:
            lines.append(f"known failures (run as xfail, left out of the metrics): {len(known)} problems")
        if self.errors:
            lines.append(f"{len(self.errors)} samples could not run (left out of the metrics):")
            lines += [f"  {nodeid}: {message.splitlines()[0][:200]}" for nodeid, message in list(self.errors.items())[:10]]
        return lines

    def document(self) -> dict[str, Any] | None:
        if not self.results and not self.errors:
            return None
        results = self.ordered()
        report: dict[str, Any] = {
            "sandbox": self.settings.sandbox,  # first: an unconfined run says so before anything else
            "format": REPORT_FORMAT,
            "engine": {"version": __version__, "code": engine_digest()[:16]},
            "settings": self.settings.options,
            "executor": self.settings.executor,
            "model": self.settings.model,
            "metrics": summarise(results).as_metrics(),
            "projects": {
                name: {"problems": s.problems, "samples": s.samples, **s.as_metrics()}
                for name, group in _by_project(results).items()
                for s in [summarise(group)]
            },
            "errors": error_counts(results),
            "empty": sum(r.empty for r in results),
            "store": store_counts(self.results.values()),
            "samples": [result.to_dict() for result in results],
            "known_failures": [
                result.to_dict() for result in sorted(self.results.values(), key=lambda r: (r.problem, r.sample))
                if result.known_failure
            ],
            "not_run": [{"item": nodeid, "reason": reason} for nodeid, reason in self.errors.items()],
        }
        if self.rounds or self.debug_error:
            report["debugging"] = {
                "rounds": [
                    {"round": entry.number, "revised": entry.revised, "fixed": entry.fixed,
                     "pass@1": summary.pass_at.get(1), "DIR": summary.dir}
                    for entry in self.rounds for summary in [summarise(entry.results)]
                ],
                "revisions": [
                    {"round": revision.round, "completion": revision.completion, **revision.result.to_dict()}
                    for revision in self.revisions
                ],
                "error": self.debug_error,
            }
        return report


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
                     f"{percent(summary.pass_at.get(1)):>6}  {percent(summary.dir):>6}")
    return lines


def _row(name: str, summary: Summary) -> list[str]:
    low, high = summary.samples_per_problem
    per_problem = str(low) if low == high else f"{low}-{high}"
    metrics = summary.as_metrics()
    return [name, str(summary.problems), per_problem, *(percent(metrics[f"pass@{k}"]) for k in KS),
            percent(summary.dir), percent(summary.tr)]


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


class GateCollector(Collector):
    """An admission-gate run (or the fixer's): each problem's verdict, the means, the fixer's diffs."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.results: dict[str, GateResult] = {}
        self.known: set[str] = set()  # problems whose reference is known to fail here (run as xfail)
        self.fixes: dict[str, FixResult] = {}

    def owns(self, report: pytest.TestReport) -> bool:
        return transport.is_gate_item(report)

    def read(self, report: pytest.TestReport) -> bool:
        fix = transport.fix_result(report)
        if fix is not None:
            self.fixes[fix.problem] = fix
        result = transport.gate_result(report)
        if result is None:
            return False
        self.results[result.problem] = result
        if hasattr(report, "wasxfail"):
            self.known.add(result.problem)
        return True

    def summary(self) -> list[str | tuple[str, str]]:
        lines: list[str | tuple[str, str]] = []
        for fix in self.fixes.values():
            lines.append(("-", f"assertion fixer: {fix.problem}"))
            lines += [f"  {line}" for line in [*fix.fixed, *(f"removed {entry}" for entry in fix.removed)]]
            lines.append(fix.diff.rstrip() or "  (nothing to change)")
        if not self.results and not self.errors:
            return lines
        lines += [("=", "repoexec: admission gate"), *self.sandbox_line(),
                  *render_gate(list(self.results.values()), self.known)]
        lines += [f"not checked: {nodeid}: {message.splitlines()[0][:200]}" for nodeid, message in self.errors.items()]
        return lines

    def document(self) -> dict[str, Any] | None:
        if not self.results and not self.errors:
            return None
        results = sorted(self.results.values(), key=lambda r: r.problem)
        return {
            "sandbox": self.settings.sandbox,  # first: an unconfined run says so before anything else
            "format": REPORT_FORMAT,
            "engine": {"version": __version__, "code": engine_digest()[:16]},
            "settings": self.settings.options,
            "mode": self.settings.mode.value,
            "summary": gate_summary(results, self.known),
            "problems": [result.to_dict() | {"known_failure": result.problem in self.known} for result in results],
            "fixes": [fix.to_dict() for fix in self.fixes.values()],
            "not_checked": [{"item": nodeid, "reason": reason} for nodeid, reason in self.errors.items()],
        }


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
        "network": sum(result.network for result in counted),  # problems whose tests need the network
    }


def render_gate(results: list[GateResult], known: set[str]) -> list[str]:
    header = ["problem", "verdict", "line%", "branch%", "mutants killed%", "flaky", "network", "reasons"]
    rows = []
    for result in sorted(results, key=lambda r: r.problem):
        verdict = "known failure" if result.problem in known else "admitted" if result.passed else "REJECTED"
        reasons = "; ".join(result.reasons)
        rows.append([result.problem, verdict, _figure(result.line_coverage), _figure(result.branch_coverage),
                     _figure(result.mutation_score) + (f" of {result.mutants}" if result.mutants else ""),
                     ", ".join(result.flaky) or "-", "yes" if result.network else "-",
                     reasons[:160] + ("…" if len(reasons) > 160 else "") or "-"])
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
