"""A pytest plugin for one run of a project's own suite: which tests pass, and which lines each test's call
phase executes. It runs inside the project's virtualenv (coverage comes with the engine's runtime), as a
top-level module loaded with ``-p repoexec_suite``, and writes one JSON document to an inherited descriptor,
so nothing the tests write to stdout or to files is ever read as a result.

Coverage starts when the plugin loads, before conftest files and test modules import the project; the
context is switched to the test's node id around its call phase only (as pytest-cov's per-test contexts
do), so what fixtures run in set-up and tear-down is not counted as the test's.
"""

from __future__ import annotations

import json
import os

import coverage
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("repoexec-suite")
    group.addoption("--repoexec-suite-fd", type=int, help="descriptor to write the results to")
    group.addoption("--repoexec-suite-include", action="append", default=[], help="files to measure (globs)")


class SuiteRecorder:
    def __init__(self, include: list[str]) -> None:
        self.coverage = coverage.Coverage(data_file=None, include=include or None, branch=False, config_file=False)
        self.coverage.start()
        self.outcomes: dict[str, str] = {}
        self.durations: dict[str, float] = {}
        self.collect_errors: list[str] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        self.coverage.switch_context(item.nodeid)
        try:
            return (yield)
        finally:
            self.coverage.switch_context("")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed or hasattr(report, "wasxfail"):
            self.outcomes[report.nodeid] = "failed" if report.failed else "xfail"
        elif report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped")
        elif report.when == "call":
            self.outcomes.setdefault(report.nodeid, "passed")
            self.durations[report.nodeid] = report.duration

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(f"{report.nodeid}: {str(report.longrepr).strip().splitlines()[-1:]}")

    def results(self, exitstatus: int) -> dict:
        self.coverage.stop()
        data = self.coverage.get_data()
        lines: dict[str, dict[str, list[int]]] = {}
        for filename in data.measured_files():
            by_test: dict[str, list[int]] = {}
            for line, contexts in data.contexts_by_lineno(filename).items():
                for context in contexts:
                    if context:
                        by_test.setdefault(context, []).append(line)
            lines[filename] = {test: sorted(found) for test, found in by_test.items()}
        return {"exitstatus": int(exitstatus), "outcomes": self.outcomes, "durations": self.durations,
                "collect_errors": self.collect_errors, "lines": lines}


_recorder: SuiteRecorder | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _recorder
    _recorder = SuiteRecorder(config.getoption("repoexec_suite_include"))
    config.pluginmanager.register(_recorder, "repoexec-suite-recorder")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _recorder is None:
        return
    document = json.dumps(_recorder.results(getattr(config, "_repoexec_exitstatus", 0))).encode("utf-8")
    fd = config.getoption("repoexec_suite_fd")
    while document:
        document = document[os.write(fd, document):]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config._repoexec_exitstatus = exitstatus
