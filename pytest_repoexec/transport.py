"""What travels between processes under xdist, in the channels xdist itself provides.

Controller to workers, in ``workerinput`` (set in ``pytest_configure_node``): how many samples each collected
problem has, the completions of the selected problems (so that a worker on another host needs nothing but
the problems), the run's name, which its result store entries carry, and for a worker on another host, that
host's name and the digests of the problems' files, which it compares with its own copy. Workers to controller,
on each item's report (``user_properties``): the item's result as a plain dict. Only the controller turns
reports back into results.
"""

from __future__ import annotations

from typing import Any

import pytest

from .fixer import FixResult
from .gate import GateResult
from .results import SampleResult

COUNTS = "repoexec_counts"  # workerinput: problem id -> number of samples (every collected problem)
COMPLETIONS = "repoexec_completions"  # workerinput: problem id -> completions (the selected problems)
RUN = "repoexec_run"  # workerinput: the run's name in the result store's entries
HOST = "repoexec_host"  # workerinput: the worker's host as the controller names it; None on the controller's host
DIGESTS = "repoexec_digests"  # workerinput: each selected problem's files as the controller has them (``remote``)

SAMPLE = "repoexec-sample"  # on every sample item's reports: tells them from other tests' reports
SAMPLE_RESULT = "repoexec"  # a sample's SampleResult
GATE_ITEM = "repoexec-gate-item"  # on every gate item's reports
GATE_RESULT = "repoexec-gate"  # a problem's GateResult
FIX_RESULT = "repoexec-fix"  # the assertion fixer's FixResult


def sample_result(report: pytest.TestReport) -> SampleResult | None:
    data = _property(report, SAMPLE_RESULT)
    return SampleResult.from_dict(data) if data is not None else None


def gate_result(report: pytest.TestReport) -> GateResult | None:
    data = _property(report, GATE_RESULT)
    return GateResult.from_dict(data) if data is not None else None


def fix_result(report: pytest.TestReport) -> FixResult | None:
    data = _property(report, FIX_RESULT)
    return FixResult.from_dict(data) if data is not None else None


def is_sample(report: pytest.TestReport) -> bool:
    return _property(report, SAMPLE) is not None


def sample_problem(item: pytest.Item | pytest.TestReport) -> str | None:
    """The problem id of a sample item (or its report), None for anything else."""
    return _property(item, SAMPLE)


def is_gate_item(report: pytest.TestReport) -> bool:
    return _property(report, GATE_ITEM) is not None


def crash_message(report: pytest.TestReport) -> str:
    """Why an item that gave no result failed: the exception's message, else the whole report."""
    crash = getattr(report.longrepr, "reprcrash", None)
    return (crash.message if crash else str(report.longrepr)).strip()[:4000]


def _property(carrier: pytest.Item | pytest.TestReport, key: str) -> Any:
    return next((value for name, value in carrier.user_properties if name == key), None)
