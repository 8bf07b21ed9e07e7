"""How a failing sample reads in pytest's report: which inner test failed and why, and, with ``-v``, the
tracebacks and the candidate beside the reference."""

from __future__ import annotations

import difflib
from itertools import zip_longest

import pytest

from .evaluation import Evaluation
from .problem import Problem
from .results import failing_tests
from .runtime.repoexec_protocol import ErrorType


class SampleFailed(Exception):
    def __init__(self, problem: Problem, evaluation: Evaluation) -> None:
        result = evaluation.result
        super().__init__(f"{result.problem} sample {result.sample}: {result.error_type}")
        self.problem, self.evaluation = problem, evaluation


def describe_failure(failure: SampleFailed, config: pytest.Config) -> str:
    evaluation = failure.evaluation
    result, run = evaluation.result, evaluation.run
    lines = [
        f"{result.problem} sample {result.sample} failed: {result.error_type} "
        f"({result.tests_passed}/{result.tests_total} tests passed)"
    ]
    if evaluation.made is not None and evaluation.made.error:  # a verdict read back had none: it ran
        lines.append(f"  the candidate: {evaluation.made.error}")
    if run is not None:
        if run.timed_out:
            lines.append("  the sample ran past its wall-clock limit (--repoexec-sample-timeout) and was killed")
        elif not run.finished:
            started = f", {len(run.tests)} of {run.collected} tests started" if run.collected is not None else ""
            lines.append(f"  the test process ended before its session did (exit status {run.returncode}{started})")
        for test in failing_tests(run):
            message = (test.message or "").strip().splitlines()
            lines.append(f"  {test.outcome.upper()} {test.name}: {test.error_type or ''} {message[0] if message else ''}")
        if result.error_type == ErrorType.TEST_COUNT_MISMATCH:
            lines.append(f"  {len(run.tests)} tests ran; the problem declares {failure.problem.test_count}")
            lines += [f"  pytest: {line}" for line in run.output.splitlines() if line.startswith("ERROR: ")][:3]
    elif result.store == "read":  # its verdict came from the result store: what the first failure said then
        lines.append(f"  FAILED {result.failed_test or '(the session)'}: {result.error_type} (from the result store"
                     + (f", the same module as sample {result.copied_from}" if result.copied_from is not None else "")
                     + ")")
    if config.get_verbosity() <= 0:
        lines.append("  (-v shows the tracebacks and the candidate beside the reference)")
        return "\n".join(lines)
    if run is not None:
        for test in failing_tests(run):
            if test.longrepr:
                lines += ["", f"---- {test.name} ----", test.longrepr.rstrip()]
        if run.timed_out or not run.finished:
            lines += ["", "---- output of the test process (tail) ----", run.output.rstrip()]
    elif result.error_log:
        lines += ["", f"---- {result.failed_test or 'the session'} ----", result.error_log.rstrip()]
    width, candidate = config.get_terminal_writer().fullwidth, evaluation.candidate
    lines += ["", side_by_side("reference", failure.problem.reference, "candidate",
                               candidate.function or candidate.completion, width)]
    return "\n".join(lines)


def side_by_side(left_title: str, left: str, right_title: str, right: str, width: int) -> str:
    """Two sources in columns, lines aligned as a diff aligns them: '|' changed, '<' left only, '>' right only."""
    column = max(20, (width - 3) // 2)
    a, b = left.expandtabs().splitlines(), right.expandtabs().splitlines()
    rows = [(left_title, " ", right_title), ("-" * column, " ", "-" * column)]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [(line, " ", line) for line in a[i1:i2]]
            continue
        for old, new in zip_longest(a[i1:i2], b[j1:j2]):
            mark = "|" if old is not None and new is not None else "<" if new is None else ">"
            rows.append((old or "", mark, new or ""))
    return "\n".join(f"{_fit(l, column)} {mark} {_fit(r, column)}".rstrip() for l, mark, r in rows)


def _fit(text: str, column: int) -> str:
    return text.ljust(column) if len(text) <= column else text[: column - 1] + "…"
