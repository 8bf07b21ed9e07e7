"""The engine's plugin inside a project's virtualenv: it writes each test's outcome to a JSON file.

This file runs under the project's interpreter with only pytest beside it, so it imports nothing from
pytest_repoexec. The engine reads the file, never the run's stdout; a run that dies before the end of the
session leaves no file (or one without ``finished``), which the engine counts as a crash.
"""

import json
import os

import pytest

MESSAGE_LIMIT = 2000
LONGREPR_LIMIT = 12000


def pytest_addoption(parser):
    parser.addoption("--repoexec-results", required=True, help="where to write the per-test outcomes (JSON)")


def pytest_pycollect_makeitem(collector, name, obj):
    """A problem's tests are the test functions its module defines, not what its star imports bring along
    (a ``TestCase`` class imported from the project would otherwise be collected as a test)."""
    if isinstance(collector, pytest.Module) and getattr(obj, "__module__", None) not in (None, collector.obj.__name__):
        return []
    return None


def _error_type(excinfo):
    if excinfo is None:
        return None
    message = str(excinfo.value)
    if excinfo.typename == "Failed" and "Timeout" in message and "pytest-timeout" in message:
        return "Timeout"
    return excinfo.typename


class _Recorder:
    def __init__(self, path):
        self.path = path
        self.tests = {}
        self.collect_errors = []

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.excinfo is not None and not report.skipped:
            report.repoexec_error = (_error_type(call.excinfo), str(call.excinfo.value)[:MESSAGE_LIMIT])

    def pytest_runtest_logreport(self, report):
        entry = self.tests.setdefault(
            report.nodeid, {"name": report.nodeid.rpartition("::")[2], "outcome": "passed", "error_type": None,
                            "message": None, "longrepr": None, "duration": 0.0}
        )
        entry["duration"] += report.duration
        if report.skipped and entry["outcome"] == "passed":
            entry["outcome"] = "skipped"
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            entry["message"] = str(reason)[:MESSAGE_LIMIT]
        elif report.failed and entry["outcome"] in ("passed", "skipped"):
            entry["outcome"] = "failed" if report.when == "call" else "error"
            entry["error_type"], entry["message"] = getattr(report, "repoexec_error", ("Error", None))
            entry["longrepr"] = str(report.longrepr)[:LONGREPR_LIMIT]

    def pytest_collectreport(self, report):
        if report.failed:
            longrepr = str(report.longrepr)
            # The report keeps only text; its last "E   Type: message" line names the exception.
            error_lines = [line[1:].strip() for line in longrepr.splitlines() if line.startswith("E ")]
            last = error_lines[-1] if error_lines else ""
            error_type = last.split(":")[0].strip() if ":" in last else ""
            self.collect_errors.append(
                {"nodeid": report.nodeid, "error_type": error_type if error_type.isidentifier() else "CollectionError",
                 "message": last[:MESSAGE_LIMIT], "longrepr": longrepr[:LONGREPR_LIMIT]}
            )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        result = {
            "finished": True,
            "exitstatus": int(exitstatus),
            "collected": session.testscollected,
            "tests": list(self.tests.values()),
            "collect_errors": self.collect_errors,
        }
        partial = self.path + ".partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(result, handle)
        os.replace(partial, self.path)


def pytest_configure(config):
    config.pluginmanager.register(_Recorder(config.getoption("--repoexec-results")), "repoexec-recorder")
