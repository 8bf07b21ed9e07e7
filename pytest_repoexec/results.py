"""The verdict on one sample, and the record of it that travels from xdist workers to the controller."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .executor import SampleRun, TestOutcome

USER_PROPERTY = "repoexec"  # the key under which an item's result rides on its report
SAMPLE_PROPERTY = "repoexec-sample"  # on every sample's reports: tells them from other tests' reports
ERROR_LOG_LIMIT = 3000


@dataclass(frozen=True)
class SampleResult:
    problem: str
    project: str
    sample: int
    passed: bool
    tests_passed: int
    tests_total: int
    error_type: str | None
    dir: float | None  # None for problems without dependencies
    duration: float = 0.0
    known_failure: str | None = None  # the problem's reference cannot pass here: kept out of the metrics
    empty: bool = False  # the candidate's body is only a docstring, pass or ... (the paper counts these)
    failed_test: str | None = None  # the first test that failed, by name (what a debugging round shows)
    error_log: str | None = None  # why it failed, as pytest told it (truncated)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleResult:
        return cls(**data)


def failing_tests(run: SampleRun) -> list[TestOutcome]:
    """What went wrong, in the order a person should read it: collection first, then tests."""
    return [*run.collect_errors, *(test for test in run.tests if test.outcome != "passed")]


def first_failure(run: SampleRun, error_type: str) -> tuple[str | None, str]:
    """(the failing test's name, its error log): what a person, or a model asked to debug, reads first."""
    if run.timed_out:
        return None, f"Timeout: the tests ran past the sample's wall-clock limit\n{run.output[-ERROR_LOG_LIMIT:]}"
    failures = failing_tests(run)
    if failures:
        first = failures[0]
        log = first.longrepr or f"{first.error_type or ''}: {first.message or ''}"
        return first.name, log[-ERROR_LOG_LIMIT:]
    if not run.finished:
        return None, f"the test process ended early (exit status {run.returncode})\n{run.output[-ERROR_LOG_LIMIT:]}"
    return None, f"{error_type}: {len(run.tests)} tests ran"


def verdict(run: SampleRun, declared: int) -> tuple[int, str | None]:
    """(tests passed, error type); the sample passes only when the error type is None.

    Passing needs a finished session, no collection error, every test passed and exactly as many tests as
    the problem declares: exiting early, skipping or losing tests never passes.
    """
    passed = sum(test.outcome == "passed" for test in run.tests)
    if run.timed_out:
        return passed, "Timeout"
    if not run.finished:
        return passed, "EarlyExit"
    failures = failing_tests(run)
    if failures:
        first = failures[0]
        return passed, "Skipped" if first.outcome == "skipped" else first.error_type or "Error"
    if len(run.tests) + run.deselected != declared:
        return min(passed, declared), "TestCountMismatch"
    return passed, None
