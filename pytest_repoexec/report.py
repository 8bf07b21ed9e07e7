"""The controller's view of a run: results gathered from every report, the summary table, the JSON report.

Each mode's session registers one collector on the controller (under xdist, it sees every worker's reports).
The scoring collector makes the report document (``document``) and shows the terminal table from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from . import transport
from .debugging import Revision, Round
from .document import (METRICS_HEADER, containment, debugging_section, header, metrics_rows, percent, scoring_document,
                       write_json, write_text)
from .fixer import FixResult
from .gate import GateResult
from .cgroups import ENGINE_ERROR
from .metrics import mean
from .results import SampleResult
from .settings import Settings
from .shard import ShardSelection


class Collector:
    """What both collectors share: items that gave no result, the JSON report at the end, its path in the
    summary. A subclass says which reports are its own, what it reads from them and what it writes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.errors: dict[str, str] = {}  # items of ours that gave no result (environment, layout), by node id
        self.written: dict[str, Any] | None = None  # the report as written at the session's end

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
        self.written = document  # the terminal summary, which comes after, shows it
        if self.settings.report is not None:
            write_json(self.settings.report, document)
        if self.settings.html is not None:
            from .htmlreport import render_html  # matplotlib and the template load only when asked for

            write_text(self.settings.html, render_html(document))

    def sandbox_line(self) -> list[str]:
        """Said first: where candidates ran, and what bounded their processes."""
        held = containment(self.settings)
        if self.settings.sandbox == "none":
            return [f"sandbox: none (--repoexec-sandbox=none): candidates ran unconfined, on the host; processes: "
                    f"{held['processes']}"]
        return [f"sandbox: {held['kind']}; processes: {held['processes']}; passes: {held['passes']}"]

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

    def __init__(self, settings: Settings, shard: ShardSelection | None = None) -> None:
        super().__init__(settings)
        self.shard = shard
        self.results: dict[str, SampleResult] = {}
        self.rounds: list[Round] = []
        self.revisions: list[Revision] = []
        self.debug_error: str | None = None
        self.verdicts_failed = 0  # failed reports that are a sample's verdict (not an item that could not run)
        self.timings: Sequence[Any] = ()  # a model generator's calls of its backend (generators.model.Timing)

    def owns(self, report: pytest.TestReport) -> bool:
        return transport.is_sample(report)

    def read(self, report: pytest.TestReport) -> bool:
        result = transport.sample_result(report)
        if result is not None:
            self.results[report.nodeid] = result
            self.errors.pop(report.nodeid, None)
            self.verdicts_failed += report.failed
        return report.nodeid in self.results

    @pytest.hookimpl(optionalhook=True)
    def pytest_repoexec_round_finished(self, round: Round, revisions: Sequence[Revision]) -> None:
        self.rounds.append(round)
        self.revisions += revisions

    @pytest.hookimpl(optionalhook=True)
    def pytest_repoexec_debugging_stopped(self, reason: str) -> None:
        self.debug_error = reason

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        super().pytest_sessionfinish(session)
        if self.completed(session):
            session.exitstatus = pytest.ExitCode.OK
        if engine_errors(self.errors):  # the host's failure: never a passing run, never a verdict's exit status
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def completed(self, session: pytest.Session) -> bool:
        """With --repoexec-exit-zero: the run failed only by its samples' verdicts (every selected sample gave
        one, nothing else failed), or is a shard that the hash left without problems: a CI matrix should see
        neither as a failed job."""
        if not self.settings.exit_zero:
            return False
        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            return self._empty_shard()
        return (session.exitstatus == pytest.ExitCode.TESTS_FAILED and not self.errors
                and session.testsfailed == self.verdicts_failed)

    def _empty_shard(self) -> bool:
        """A shard none of whose run's problems hash to it (the run has some): its report says so, for merge."""
        return self.shard is not None and bool(self.shard.problems) and not self.results and not self.errors

    def summary(self) -> list[str | tuple[str, str]]:
        document = self.written or self.document()
        if document is None:
            return []
        results = [SampleResult.from_dict(entry) for entry in document["samples"]]
        lines: list[str | tuple[str, str]] = [("=", f"repoexec: {self.settings.model}"), *self.sandbox_line()]
        if self.shard is not None:
            lines.append(f"shard {self.shard.shard} (--repoexec-shard): {len({r.problem for r in results})} of the "
                         f"run's {len(self.shard.problems)} problems; `repoexec merge` joins the shards' reports")
        lines += render_table(document)
        lines += [timing.describe() for timing in self.timings]
        if document["errors"]:
            lines.append("failed samples by error: " + ", ".join(f"{name} {count}"
                                                                 for name, count in document["errors"].items()))
        if document["empty"]:
            lines.append(f"empty completions (a body of only a docstring or pass): {document['empty']} samples")
        answers = document.get("answers") or {}
        if any(answers.values()):
            lines.append("answers: " + ", ".join(f"{shape.replace('_', ' ')} {count}"
                                                 for shape, count in answers.items() if count)
                         + f" (of {len(results)} samples; see the report's answers)")
        if any(not r.tr_measured for r in results):
            lines.append("TR: not measured (--repoexec-fail-fast stopped failing samples at their first failing test)")
        store = document["store"]
        if store["read"]:
            lines.append(f"result store: {store['read']} samples read back ({store['copies']} of them the same module "
                         f"as another sample), {store['evaluated']} evaluated"
                         + (f", {store['replaced']} unreadable entries evaluated again" if store["replaced"] else ""))
        judge = document.get("judge") or {}
        if judge.get("apart") or judge.get("in_process"):
            lines.append(f"judge: {judge['apart']} samples apart from their candidate, {judge['in_process']} in-process"
                         + (f" ({len(judge['problems_in_process'])} problems: why in the report's "
                            "judge.problems_in_process)" if judge["problems_in_process"] else ""))
        decoy = document["decoy"]
        if decoy["held"] or decoy["caught"] or decoy["unchecked"]:
            problems = sorted({entry["problem"] for entry in decoy["unchecked"]})
            lines.append(f"decoy check of the passes: {decoy['held']} held, {decoy['caught']} caught (Tampered)"
                         + (f"; {len(decoy['unchecked'])} passing samples of {len(problems)} problems could not get "
                            f"it ({', '.join(problems[:3])}{', ...' if len(problems) > 3 else ''}: see the report's "
                            "decoy.unchecked)" if decoy["unchecked"] else ""))
        debugging = document.get("debugging")
        if debugging and debugging["rounds"]:
            lines += ["", *render_rounds(debugging["rounds"])]
        if debugging and debugging["error"]:
            lines.append(debugging["error"])
        known = {entry["problem"] for entry in document["known_failures"]}
        if known:
            lines.append(f"known failures (run as xfail, left out of the metrics): {len(known)} problems")
        if document.get("engine_errors"):
            lines.append(f"{ENGINE_ERROR}: {document['engine_errors']} samples were not run: this host could not set up "
                         "their sandbox, cgroup or limits (the host's failure, not the candidates'; left out of the "
                         "metrics; the run's exit status is 3)")
        if document["not_run"]:
            lines.append(f"{len(document['not_run'])} samples could not run (left out of the metrics):")
            lines += [f"  {entry['item']}: {entry['reason'].splitlines()[0][:200]}"
                      for entry in document["not_run"][:10]]
        return lines

    def document(self) -> dict[str, Any] | None:
        if not self.results and not self.errors and not self._empty_shard():
            return None
        head = header(self.settings) | {"executor": self.settings.executor, "model": self.settings.model}
        counted = [result for result in self.results.values() if not result.known_failure]
        debugged = self.rounds or self.debug_error
        return scoring_document(
            head, counted, [result for result in self.results.values() if result.known_failure],
            [{"item": nodeid, "reason": reason} for nodeid, reason in self.errors.items()],
            debugging_section(self.rounds, self.revisions, self.debug_error) if debugged else None,
            self.shard.section() if self.shard is not None else None,
        )


def engine_errors(errors: dict[str, str]) -> int:
    """How many items were not run for their host's failure (``SampleSetupError``), among those with no result."""
    return sum(reason.startswith(f"{ENGINE_ERROR}:") for reason in errors.values())


def render_table(document: dict[str, Any]) -> list[str]:
    """One row per project and one for all, metrics in percent (pass@k only where every problem has k samples)."""
    rows = metrics_rows(document)
    widths = [max(len(row[i]) for row in [METRICS_HEADER, *rows]) for i in range(len(METRICS_HEADER))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in [METRICS_HEADER, *rows]]
    return [lines[0], "-" * len(lines[0]), *lines[1:-1], "-" * len(lines[0]), lines[-1], "(metrics in percent)"]


def render_rounds(rounds: list[dict[str, Any]]) -> list[str]:
    """pass@1 and DIR after each debugging round (the report's ``debugging.rounds``), as the paper's Table 4."""
    lines = ["debugging rounds (greedy, one answer a round)", "round  revised  fixed  pass@1     DIR"]
    for entry in rounds:
        lines.append(f"{entry['round']:>5}  {entry['revised']:>7}  {entry['fixed']:>5}  "
                     f"{percent(entry['pass@1']):>6}  {percent(entry['DIR']):>6}")
    return lines


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
        return header(self.settings) | {
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
