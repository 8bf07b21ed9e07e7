"""The verdict on one sample: the rules that turn a run into passed or failed, with its error type."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .executor import SampleRun, TestOutcome
from .runtime.repoexec_protocol import ErrorType

ERROR_LOG_LIMIT = 3000
LIMITS = frozenset({ErrorType.MEMORY_LIMIT, ErrorType.PROCESS_LIMIT, ErrorType.OUTPUT_LIMIT, ErrorType.CPU_LIMIT,
                    ErrorType.FILE_SIZE_LIMIT, ErrorType.DISK_LIMIT, ErrorType.OPEN_FILES_LIMIT})


@dataclass(frozen=True)
class SampleResult:
    problem: str
    project: str
    sample: int
    passed: bool
    tests_passed: int
    tests_total: int
    error_type: ErrorType | str | None  # the engine's kind, or the failing test's exception type name
    dir: float | None  # None for problems without dependencies
    duration: float = 0.0
    known_failure: str | None = None  # the problem's reference cannot pass here: kept out of the metrics
    empty: bool = False  # the candidate's body is only a docstring, pass or ... (the paper counts these)
    failed_test: str | None = None  # the first test that failed, by name (what a debugging round shows)
    error_log: str | None = None  # why it failed, as pytest told it (truncated)
    tr_measured: bool = True  # False where the sample stopped at its first failing test (--repoexec-fail-fast)
    copied_from: int | None = None  # the sample of the same problem, with the same module, whose run this shares
    store: str | None = None  # "read" (its verdict came from the result store), "evaluated", or "replaced"
    #   (evaluated, where the store held an entry that could not be read); None when nothing was run
    phases: dict[str, float] = field(default_factory=dict)  # seconds the run spent in each phase (executor.SampleRun)
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of its process trees (executor.spent)
    diff: str | None = None  # the candidate against the reference, as a unified diff; None without a candidate
    shapes: list[str] = field(default_factory=list)  # the completion's shapes (postprocess.ANSWER_SHAPES)
    decoy: str | None = None  # a passing sample's decoy check (``decoy``): "held", "caught" (then it is
    #   Tampered), or "unavailable: why"; None where no check ran (not passed, or not a scoring run)
    judge: str | None = None  # "apart": its tests ran in a process that never ran its code; else "in-process: why"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only: the error type as its string. Its fields hold nothing deeper than a list or a
        dict of plain values, copied one level (``dataclasses.asdict``'s deep copy was 7% of a rerun's time)."""
        data = {name: getattr(self, name) for name in _FIELDS}
        data.update(error_type=None if self.error_type is None else str(self.error_type), phases=dict(self.phases),
                    cpu=dict(self.cpu),
                    shapes=list(self.shapes))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleResult:
        kind = data["error_type"]  # the engine's own kind where it is one (``error_type_of``, without its raise)
        return cls(**data | {"error_type": _ERROR_TYPES.get(kind, kind) if isinstance(kind, str) else kind})


_FIELDS = tuple(item.name for item in fields(SampleResult))
_ERROR_TYPES = {str(kind): kind for kind in ErrorType}


def failing_tests(run: SampleRun) -> list[TestOutcome]:
    """What went wrong, in the order a person should read it: collection first, then tests."""
    return [*run.collect_errors, *(test for test in run.tests if test.outcome != "passed")]


def first_failure(run: SampleRun, error_type: ErrorType | str) -> tuple[str | None, str]:
    """(the failing test's name, its error log): what a person, or a model asked to debug, reads first."""
    if run.tampered:
        return None, f"Tampered: the verdict cannot be believed: {run.tampered}"
    if run.timed_out:
        return None, f"Timeout: the tests ran past the sample's wall-clock limit\n{run.output[-ERROR_LOG_LIMIT:]}"
    if run.stopped:
        return None, f"{run.stopped}: the sample was stopped at its limit\n{run.output[-ERROR_LOG_LIMIT:]}"
    failures = failing_tests(run)
    first = failures[0] if failures else None
    if first is not None and (first.longrepr or run.finished):
        log = first.longrepr or f"{first.error_type or ''}: {first.message or ''}"
        return first.name, log[-ERROR_LOG_LIMIT:]
    if not run.finished:  # the test it died in has no traceback: the process's last output says more
        died_in = next((test.name for test in failures if test.error_type == ErrorType.EARLY_EXIT), None)
        return died_in, f"the test process ended early (exit status {run.returncode})\n{run.output[-ERROR_LOG_LIMIT:]}"
    return None, f"{error_type}: {len(run.tests)} tests ran"


def verdict(run: SampleRun, declared: int) -> tuple[int, ErrorType | str | None]:
    """(tests passed, error type); the sample passes only when the error type is None.

    Passing needs a stream that proves itself, a finished session, no collection error, every test passed and
    exactly as many tests as the problem declares: exiting early, skipping or losing tests never passes. The tests passed count
    also where the process died or timed out later, so that TR counts them.
    """
    failures = failing_tests(run)
    if run.tampered or any(test.error_type == ErrorType.TAMPERED for test in failures):
        return 0, ErrorType.TAMPERED  # a grader game: nothing the run says can be believed
    passed = sum(test.outcome == "passed" for test in run.tests)
    if run.stopped:
        return passed, run.stopped
    if not run.finished:  # a limit that killed the session names itself where it could
        limits = [test.error_type for test in failures if test.error_type in LIMITS]
        return passed, limits[0] if limits else ErrorType.EARLY_EXIT
    if failures:
        first = failures[0]
        if run.forks_refused:  # the limit's, counted by the engine, not what the candidate's exception says
            return passed, ErrorType.PROCESS_LIMIT
        return passed, ErrorType.SKIPPED if first.outcome == "skipped" else first.error_type or ErrorType.ERROR
    if len(run.tests) + run.deselected != declared:
        return min(passed, declared), ErrorType.TEST_COUNT_MISMATCH
    return passed, None
