"""The engine's plugin inside a project's virtualenv: it writes each test's outcome to a JSON file.

This file runs under the project's interpreter with only pytest beside it, so it imports nothing from
pytest_repoexec. The engine reads the file, never the run's stdout; a run that dies before the end of the
session leaves no file (or one without ``finished``), which the engine counts as a crash.
"""

import base64
import hashlib
import json
import os
import pickle
import re
from ast import literal_eval

import pytest

MESSAGE_LIMIT = 2000
LONGREPR_LIMIT = 12000
_RECORDER = None  # the session's recorder, which ``capture`` reports to


def pytest_addoption(parser):
    parser.addoption("--repoexec-results", required=True, help="where to write the per-test outcomes (JSON)")
    parser.addoption("--repoexec-deselect", action="append", default=[],
                     help="leave out the tests of this name (a function name takes all its parameter sets)")
    parser.addoption("--repoexec-reruns", type=int, default=1, help="run the whole session's tests this many times")
    parser.addoption("--repoexec-coverage", default=None, help="measure line and branch coverage of this file")


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


def capture(site, side, value):
    """Called by an instrumented test module around both sides of an assertion: records the value (for the
    flakiness check and the assertion fixer) and hands it back unchanged."""
    if _RECORDER is not None:
        _RECORDER.capture(site, side, value)
    return value


def _fingerprint(value):
    """What tells two runs' values apart: their pickle, or else their repr without memory addresses."""
    try:
        data = pickle.dumps(value, protocol=4)
    except Exception:
        return None, re.sub(r" at 0x[0-9a-fA-F]+", "", _safe_repr(value))
    return data, hashlib.sha256(data).hexdigest()


def _safe_repr(value):
    try:
        return repr(value)
    except Exception as exc:
        return f"<unrepresentable {type(value).__name__}: {exc}>"


def _literal(value):
    """The value's repr where evaluating it as a literal gives the value back (same type, equal)."""
    text = _safe_repr(value)
    try:
        again = literal_eval(text)
        return text if type(again) is type(value) and again == value else None
    except Exception:
        return None


def _equal(left, right):
    try:
        return bool(left == right)
    except Exception:
        return None


class _Recorder:
    def __init__(self, path, reruns):
        self.path = path
        self.reruns = reruns
        self.round = 0
        self.tests = {}  # the first round's outcomes, by node id
        self.rerun_outcomes = []  # for each later round: {name: outcome}
        self.collect_errors = []
        self.deselected = 0
        self.current = None  # the node id of the test running now
        self.values = {}  # (node id, site, occurrence) -> [fingerprint in each round]
        self.captures = {}  # first round: (node id, site) -> [occurrence records]
        self.pending = {}  # (node id, site) -> (side, value) of the side captured first
        self.counts = {}  # (node id, site, round) -> the last occurrence's index
        self.coverage = None
        self.coverage_running = False

    def capture(self, site, side, value):
        if self.current is None:
            return
        key = (self.current, site)
        first = self.pending.pop(key, None)
        if first is not None and first[0] != side:  # the second side of one evaluation of the assertion
            sides = {first[0]: first[1], side: value}
            self._record(key, sides["actual"], _equal(sides["actual"], sides["expected"]))
            return
        if first is not None and first[0] == "actual":  # that evaluation had no second side
            self._record(key, first[1], None)
        self.pending[key] = (side, value)

    def flush(self):
        """Assertions with an actual side only (no comparison to fix) are recorded once the test ends."""
        for key, (side, value) in self.pending.items():
            if side == "actual":
                self._record(key, value, None)
        self.pending.clear()

    def _record(self, key, actual, held):
        data, fingerprint = _fingerprint(actual)
        index = self.counts[(*key, self.round)] = self.counts.get((*key, self.round), -1) + 1
        self.values.setdefault((*key, index), []).append(fingerprint)
        if self.round == 0:
            record = {"held": held, "repr": _safe_repr(actual)[:MESSAGE_LIMIT]}
            if held is False:  # what the fixer needs to put the actual value in the expected one's place
                record["literal"] = _literal(actual)
                record["pickle"] = base64.b64encode(data).decode("ascii") if data is not None else None
            self.captures.setdefault(key, []).append(record)

    def stop_coverage(self):
        if self.coverage is not None and self.coverage_running:
            self.coverage.stop()
            self.coverage_running = False

    def coverage_report(self):
        """The measured file's executed and missing lines and branches, as coverage.py's JSON report has them."""
        if self.coverage is None:
            return None
        self.stop_coverage()
        report = os.path.join(os.environ.get("TMPDIR", "/tmp"), "repoexec-coverage.json")
        try:
            self.coverage.json_report(outfile=report)
        except Exception as exc:  # coverage.py's NoDataError: the file never ran
            return {"error": f"{type(exc).__name__}: {exc}"}
        with open(report, encoding="utf-8") as handle:
            files = json.load(handle)["files"]
        return {"files": {name: {key: entry[key] for key in
                                 ("executed_lines", "missing_lines", "executed_branches", "missing_branches")}
                          for name, entry in files.items()}}

    def unstable(self):
        """(test name, site) whose values differ between rounds, or that ran a different number of times."""
        found = set()
        timed_out = {nodeid for nodeid, entry in self.tests.items() if entry["error_type"] == "Timeout"}
        for (nodeid, site, _), prints in self.values.items():
            if nodeid in timed_out:
                continue
            if len(prints) != self.reruns or len(set(prints)) > 1:
                found.add((nodeid.rpartition("::")[2], site))
        return sorted(found)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.current = item.nodeid

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item):
        self.flush()
        self.current = None

    def pytest_collection_modifyitems(self, session, config, items):
        names = set(config.getoption("--repoexec-deselect"))
        if not names:
            return
        kept = [item for item in items if item.name not in names and item.name.partition("[")[0] not in names]
        if len(kept) < len(items):
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            self.deselected = len(items) - len(kept)
            items[:] = kept

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        """With reruns, every test runs once per round, a round being the whole session in its usual order;
        fixtures are torn down between rounds, so a round starts as the first one did. Tests that timed out in
        the first round are not run again (and so not compared)."""
        if self.reruns <= 1 or session.testsfailed or session.config.option.collectonly:
            return None
        for number in range(self.reruns):
            self.round = number
            if number:
                self.rerun_outcomes.append({})
            items = session.items if number == 0 else [  # a test that timed out once would only time out again
                item for item in session.items if self.tests.get(item.nodeid, {}).get("error_type") != "Timeout"
            ]
            for index, item in enumerate(items):
                following = items[index + 1] if index + 1 < len(items) else None
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=following)
                if session.shouldstop or session.shouldfail:
                    raise session.Interrupted(str(session.shouldstop or session.shouldfail))
            self.stop_coverage()  # a single run's coverage, as RepoExec measured it; later rounds run untraced
        return True

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if call.excinfo is not None and not report.skipped:
            report.repoexec_error = (_error_type(call.excinfo), str(call.excinfo.value)[:MESSAGE_LIMIT])

    def pytest_runtest_logreport(self, report):
        if self.round:
            outcomes = self.rerun_outcomes[-1]
            name = report.nodeid.rpartition("::")[2]
            if report.failed or (report.skipped and outcomes.get(name, "passed") == "passed"):
                outcomes[name] = "failed" if report.failed else "skipped"
            else:
                outcomes.setdefault(name, "passed")
            return
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
            "deselected": self.deselected,
            "tests": list(self.tests.values()),
            "collect_errors": self.collect_errors,
            "rerun_outcomes": self.rerun_outcomes,
            "unstable": self.unstable(),
            "captures": [
                {"test": nodeid.rpartition("::")[2], "site": site, "occurrences": occurrences}
                for (nodeid, site), occurrences in self.captures.items()
            ],
            "coverage": self.coverage_report(),
        }
        partial = self.path + ".partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(result, handle)
        os.replace(partial, self.path)


def pytest_configure(config):
    global _RECORDER
    _RECORDER = _Recorder(config.getoption("--repoexec-results"), config.getoption("--repoexec-reruns"))
    config.pluginmanager.register(_RECORDER, "repoexec-recorder")
    target = config.getoption("--repoexec-coverage")
    if target:
        import coverage  # only here: a normal sample does not pay for importing it

        _RECORDER.coverage = coverage.Coverage(data_file=None, branch=True, include=[target], config_file=False)
        _RECORDER.coverage.start()
        _RECORDER.coverage_running = True
