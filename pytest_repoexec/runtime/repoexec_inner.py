"""The engine's plugin inside a project's virtualenv: it streams each test report to the engine as it happens.

This file runs under the project's interpreter with only pytest beside it, so it imports nothing from
pytest_repoexec, only ``repoexec_protocol`` and ``repoexec_guard``, copied beside it. The stream goes into a
pipe that the engine holds (never a file the sample could rewrite), and its ``Collected`` and ``Finish``
records carry a token read from another pipe before any candidate code ran. The engine never parses stdout;
a run that dies before the end of the session leaves the records it wrote and no ``Finish`` record, which the
engine counts as a crash that keeps the outcomes of the tests that ended before it.
"""

import base64
import dataclasses
import errno
import hashlib
import json
import os
import pickle
import re
import signal
import sys
import threading
import time
from ast import literal_eval

import pytest
import repoexec_judge
import repoexec_protocol as protocol
import repoexec_wire
from repoexec_guard import CandidateWatch, Integrity, apply_limits, deny_system_calls, limit_kind, watch_classes
from repoexec_protocol import ErrorType

# pytest's runner, whose phases a judge's plain test runs (``_Recorder._run_plain``): as pytest 8.0 and later have it
_PLAIN_PROTOCOL = getattr(pytest, "version_tuple", (0,)) >= (8,)
if _PLAIN_PROTOCOL:
    from _pytest.runner import CallInfo, _update_current_test_var, check_interactive_exception


def _give_back_flipped_names():
    """The engine's arguments name ``pytest.PytestAssertRewriteWarning`` (a ``-W`` filter, read before any conftest
    file loads) and pytest-timeout calls ``Config.addinivalue_line`` and ``pytest.fail``. A pytest whose names a
    benchmark flipped the case of (RepoClassBench's pytest, run as its own runner) lacks them: each is given back as
    an alias of its one case-flipped spelling, here, when the engine's plugin is imported, before either is used."""
    from _pytest.config import Config

    for owner, name in ((pytest, "PytestAssertRewriteWarning"), (pytest, "fail"), (Config, "addinivalue_line")):
        if not hasattr(owner, name):
            flipped = [other for other in dir(owner) if other.lower() == name.lower() and other != name]
            if len(flipped) == 1:
                setattr(owner, name, getattr(owner, flipped[0]))


_give_back_flipped_names()

MESSAGE_LIMIT = 2000
LONGREPR_LIMIT = 12000
# A sample's failures whose traceback is formatted in full. The engine keeps the first failure's (the result, the
# debugging rounds); formatting hundreds more (a wrong candidate fails most of its tests) was most of such a
# sample's time, so the rest get pytest's --tb=line form.
FULL_TRACEBACKS = 3
_RECORDER = None  # the session's recorder, which ``capture`` reports to
# What the tests read from the environment to judge with: a candidate that points it elsewhere games them.
_WATCHED_ENVIRONMENT = ("REPOEXEC_EXPECTED",)


def pytest_addoption(parser):
    parser.addoption("--repoexec-results-fd", type=int, help="the pipe to stream the records into")
    parser.addoption("--repoexec-token-fd", type=int, help="the pipe the run's token is read from")
    parser.addoption("--repoexec-attach", action="store_true",
                     help="the session is collected once and forked per sample: each sample's pipes (and a judge's "
                          "socket) come with attach(), which the fork calls before the tests run")
    parser.addoption("--repoexec-limits", default="", help="as=N,nproc=N,fsize=N,cpu=N,nofile=N: this process's limits")
    parser.addoption("--repoexec-focal-module", default="", help="the module the candidate's function is in")
    parser.addoption("--repoexec-candidate-lines", default="",
                     help="FIRST-LAST: the lines of the candidate's definition in the focal module")
    parser.addoption("--repoexec-test-timeouts", default="{}", help="JSON: test name -> its own time limit")
    parser.addoption("--repoexec-deselect", action="append", default=[],
                     help="leave out the tests of this name (a function name takes all its parameter sets)")
    parser.addoption("--repoexec-reruns", type=int, default=1, help="run the whole session's tests this many times")
    parser.addoption("--repoexec-coverage", default=None, help="measure line and branch coverage of this file")
    parser.addoption("--repoexec-judge-fd", type=int, default=None,
                     help="the socket to the candidate's process: this process is the judge, and runs no candidate code")
    parser.addoption("--repoexec-project-root", action="append", default=[],
                     help="a folder the project's modules are loaded from (their classes may cross from the candidate)")
    parser.addoption("--repoexec-plain-protocol", action="store_true",
                     help="a judge runs a test with no fixture and no mark but its time limit with the hooks and "
                          "reports of its call alone (no conftest file or plugin here hooks the other phases)")


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
    # the judge's own classes' (the candidate's process ended, a limit), never an attribute an object was given
    told = vars(type(excinfo.value)).get("repoexec_error_type") if type(excinfo.value).__module__ == "repoexec_judge" \
        else None
    if isinstance(told, str):
        return told
    if type(excinfo.value) is pytest.fail.Exception and "Timeout" in message and "pytest-timeout" in message:
        return ErrorType.TIMEOUT.value
    kind = limit_kind(excinfo.value)
    if kind is None and type(excinfo.value) is BlockingIOError and excinfo.value.errno == errno.EAGAIN:
        kind = ErrorType.PROCESS_LIMIT  # a refused fork's error, by its type (judged apart, its frames are not here)
    return kind.value if kind else excinfo.typename


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


class _Writer:
    """The one place records leave the process: a pipe, each line written at once, so a crash keeps it. Only
    this process writes: a copy of it that a candidate forked (and that goes on running the session) does not.
    Until it is opened (a session collected before its sample had pipes), records wait, their token filled in
    when it comes."""

    def __init__(self):
        self._handle = self._pid = self.token = None
        self._waiting = []

    def open(self, fd, token):
        os.set_inheritable(fd, False)
        self._handle = os.fdopen(fd, "w", encoding="utf-8")
        self._pid = os.getpid()
        self.token = token
        for record in self._waiting:
            self.write(dataclasses.replace(record, token=token) if hasattr(record, "token") else record)
        self._waiting = []

    def write(self, record):
        if self._handle is None:
            self._waiting.append(record)
        elif os.getpid() == self._pid:
            self._handle.write(protocol.encode(record))
            self._handle.flush()

    def close(self):
        if self._handle is not None and os.getpid() == self._pid:
            self._handle.close()


_RANK = {"passed": 0, "skipped": 1, "failed": 2}  # what a test's outcome in a round is, over its phases


def limit_tests(items, limits):
    """Each test named in ``limits`` bound by its own time limit (pytest-timeout takes a test's marker over
    ``--timeout``): at collection, or in a sample forked from a judge's zygote, whose session was collected
    without them."""
    for item in items:
        if item.name in limits:
            item.add_marker(pytest.mark.timeout(limits[item.name]))


# What a test judged apart may take past its time limit for each call it makes across (at most its limit again):
# about three times a round trip's wall time on a loaded 2-core machine (throughput.md, "channel_cost").
CROSSING_ALLOWANCE = 0.001


class _CrossingTimer:
    """A judge's test timer (pytest-timeout's ``pytest_timeout_set_timer`` hook): the test's limit, plus
    ``CROSSING_ALLOWANCE`` for each call it made to the candidate's process, at most the limit again. Beside its
    candidate a test's calls cost nothing; apart each is a round trip, the host's time, not the candidate's
    (pyMonet's ``memoize`` test makes 20,000 of them in its 5 s). The count is the judge's own: the calls it sent.
    Only tests that reach their limit pay for this, at the alarm; an alarm with time left is set again."""

    def pytest_timeout_set_timer(self, item, settings):
        channel = repoexec_judge._CHANNEL
        if channel is None or settings.method != "signal" or threading.current_thread() is not threading.main_thread():
            return None  # pytest-timeout's own timer, as beside the candidate
        import pytest_timeout

        started, first = time.monotonic(), channel.ids

        def alarm(signum, frame):
            __tracebackhide__ = True
            allowed = min(settings.timeout, (channel.ids - first) * CROSSING_ALLOWANCE)
            left = started + settings.timeout + allowed - time.monotonic()
            if left > 0:
                signal.setitimer(signal.ITIMER_REAL, left)
                return
            pytest_timeout.timeout_sigalrm(item, settings)

        def cancel():
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)

        item.cancel_timeout = cancel
        signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, settings.timeout)
        return True


def read_for_failures(items):
    """In a judge's zygote, before its samples are forked: what pytest reads to tell a failure, read once there
    rather than again in every sample that fails a test. That is each test module's lines and statement tree
    (the channel's frames are hidden: their source is never read), and inspect's map from files to modules,
    which its first look-up builds by resolving the path of every module imported: about 20 ms a sample here,
    more than the rest of telling the failure."""
    from _pytest._code import Code
    from _pytest._code import code as code_module

    functions = {item.obj.__code__.co_filename: item.obj for item in items
                 if hasattr(getattr(item, "obj", None), "__code__")}
    for function in functions.values():
        try:
            source = Code.from_function(function).fullsource
            if source is not None:
                code_module.getstatementrange_ast(function.__code__.co_firstlineno - 1, source)
        except Exception:  # what cannot be read here is read, or not, at the failure, as before
            pass


def _plain(item):
    """A test function with no fixture and no mark but its time limit (RepoExec's form): its set-up and
    tear-down are its nodes' alone, with nothing of its own to set up."""
    return (type(item) is pytest.Function and not item.fixturenames
            and all(mark.name == "timeout" for mark in item.iter_markers()))


class _Passed:
    """A phase of a plain test that passed, told to the recorder as pytest's report of it would tell it."""

    outcome, skipped, failed = "passed", False, False

    def __init__(self, nodeid, when, duration):
        self.nodeid, self.when, self.duration = nodeid, when, duration


class _Recorder:
    def __init__(self, writer, reruns, focal_module, runner_under_test=False, judge=False):
        self.writer = writer
        self.reruns = reruns
        self.focal_module = focal_module
        self.runner_under_test = runner_under_test  # the candidate is part of the pytest that runs: no checks on it
        self.judge = judge  # the candidate runs in a process of its own: this one's end is nobody's behaviour
        self.integrity = None  # what the run relies on, as it was before the candidate was imported
        self.made = None  # says whether the candidate made a class with an __eq__ of its own
        self.watch = None  # the audit hook: says what it refused to the candidate
        self.round = 0
        self.timed_out = set()  # node ids of the tests that timed out in the first round
        self.round_outcomes = {}  # a later round's outcome of the running test, by node id
        self.deselected = 0
        self.failures = 0  # failed reports so far, in every round: after FULL_TRACEBACKS, briefly told
        self.current = None  # the node id of the test running now
        self.values = {}  # (node id, site, occurrence) -> [fingerprint in each round]
        self.captures = {}  # first round: (node id, site) -> [occurrence records]
        self.pending = {}  # (node id, site) -> (side, value) of the side captured first
        self.counts = {}  # (node id, site, round) -> the last occurrence's index
        self.coverage = None
        self.coverage_running = False
        self.session = None
        self.plain = frozenset()  # node ids of the tests that ``_run_plain`` runs

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
        for (nodeid, site, _), prints in self.values.items():
            if nodeid in self.timed_out:
                continue
            if len(prints) != self.reruns or len(set(prints)) > 1:
                found.add((nodeid.rpartition("::")[2], site))
        return sorted(found)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        self.current = item.nodeid
        if repoexec_judge._CHANNEL is not None:  # the candidate's process stops a call at the test's own limit
            marker = item.get_closest_marker("timeout")
            limit = marker.args[0] if marker and marker.args else item.config.getoption("timeout", 0)
            repoexec_judge._CHANNEL.limit = float(limit or 0)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        return self._run_plain(item, nextitem) if item.nodeid in self.plain else None

    def _run_plain(self, item, nextitem):
        """A judge's plain test (``_plain``), its phases as pytest's runner runs them, with fewer hooks: its call
        through pytest's hooks (the time limit, output capture, skips and xfails raised inside), and every
        phase that fails reported by pytest as always; a set-up or tear-down that passes (its nodes pushed or
        popped) is one record without hooks or a report, and a call that passes no record of its own (its time
        goes to the tear-down's). About a third of pytest's own work a test, where a sample runs hundreds."""
        ihook = item.ihook
        # what pytest's runner lets through a phase (``call_runtest_hook``): pytest.exit, and ^C unless in pdb
        reraise = (pytest.exit.Exception, *(() if item.config.getoption("usepdb", False) else (KeyboardInterrupt,)))

        def set_up():
            self.pytest_runtest_setup(item)
            _update_current_test_var(item, "setup")
            item.session._setupstate.setup(item)

        def tear_down():
            _update_current_test_var(item, "teardown")
            stopping = item.session.shouldfail or item.session.shouldstop  # as pytest's runner: all torn down
            item.session._setupstate.teardown_exact(None if stopping else nextitem)
            _update_current_test_var(item, None)
            self.pytest_runtest_teardown(item)

        carried, proceed = 0.0, True
        for when, run in (("setup", set_up), ("call", lambda: ihook.pytest_runtest_call(item=item)),
                          ("teardown", tear_down)):
            if when == "call" and not proceed:
                continue
            call = CallInfo.from_call(run, when=when, reraise=reraise)
            if call.excinfo is None:
                carried += call.duration
                if when != "call":
                    self.pytest_runtest_logreport(_Passed(item.nodeid, when, carried))
                    carried = 0.0
                continue
            report = ihook.pytest_runtest_makereport(item=item, call=call)
            ihook.pytest_runtest_logreport(report=report)
            if check_interactive_exception(call, report):
                ihook.pytest_exception_interact(node=item, call=call, report=report)
            proceed = proceed and report.passed
        item._request, item.funcargs = False, None  # as pytest's runner leaves a test that ran
        return True

    def stop(self, why):
        """The candidate's process is gone or stuck: no later test can be judged."""
        if self.session is not None:
            self.session.shouldstop = f"repoexec: {why}"

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item):
        self.flush()
        self.current = None

    @pytest.hookimpl(trylast=True)  # after pytest's own session-start plugins are registered
    def pytest_sessionstart(self, session):
        self.session = session
        if self.focal_module:  # before the snapshot: the class watch is ours
            self.made = watch_classes(self.focal_module)
        if not self.runner_under_test:
            self.integrity = Integrity(session.config.pluginmanager, (_Recorder, _Writer, protocol),
                                       _WATCHED_ENVIRONMENT)

    def pytest_collection_finish(self, session):
        if self.judge:
            repoexec_wire.tests_collected({item.module.__name__ for item in session.items
                                           if isinstance(getattr(item, "module", None), type(sys))})
        self.writer.write(protocol.Collected(collected=len(session.items), deselected=self.deselected,
                                             token=self.writer.token))
        self._check_integrity("repoexec::collection")

    def pytest_internalerror(self, excrepr, excinfo):
        """pytest itself failed: a limit that left it no room (memory, open files) is said as that limit."""
        kind = limit_kind(excinfo.value)
        if kind:
            self.writer.write(protocol.CollectError(nodeid="repoexec::internal", error_type=kind.value,
                                                    message=str(excinfo.value)[:MESSAGE_LIMIT],
                                                    longrepr=str(excrepr)[-LONGREPR_LIMIT:]))

    def _check_integrity(self, nodeid):
        """A patched runner or report, or a refused operation, means the run cannot be believed: say so as an
        error of its own."""
        broken = (self.integrity.broken() if self.integrity else None) or (self.watch.finding() if self.watch else None)
        if broken:
            self.writer.write(protocol.CollectError(
                nodeid=nodeid, error_type=ErrorType.TAMPERED.value, message=broken, longrepr=broken))
        return broken

    def pytest_collection_modifyitems(self, session, config, items):
        limit_tests(items, json.loads(config.getoption("--repoexec-test-timeouts")))
        if (_PLAIN_PROTOCOL and self.judge and self.reruns <= 1 and config.getoption("--repoexec-plain-protocol")
                and not config.option.collectonly):
            self.plain = frozenset(item.nodeid for item in items if _plain(item))
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
            items = session.items if number == 0 else [  # a test that timed out once would only time out again
                item for item in session.items if item.nodeid not in self.timed_out
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
        if call.excinfo is not None and self.failures >= FULL_TRACEBACKS:
            item._repr_failure_py = _brief  # what pytest's report formats a failure with, for this item alone
        outcome = yield
        report = outcome.get_result()
        if call.excinfo is not None and not report.skipped:
            report.repoexec_error = (_error_type(call.excinfo), str(call.excinfo.value)[:MESSAGE_LIMIT])
            remote = getattr(call.excinfo.value, "repoexec_remote", None)  # judged apart: where the candidate raised
            if isinstance(remote, str) and self.failures < FULL_TRACEBACKS:
                report.repoexec_remote = remote
        self.failures += report.failed

    def pytest_runtest_logreport(self, report):
        if self.round:
            outcome = max(self.round_outcomes.pop(report.nodeid, "passed"), report.outcome, key=_RANK.get)
            if report.when == "teardown":
                self.writer.write(protocol.RoundOutcome(round=self.round, nodeid=report.nodeid, outcome=outcome))
            else:
                self.round_outcomes[report.nodeid] = outcome
            return
        error_type = message = longrepr = None
        # once a test (its call, or the phase that failed in its place) is enough: what a setup or teardown
        # patches shows at the next test's call, or at the session's end
        checked = self.integrity and (report.when == "call" or report.failed)
        tampered = self.integrity.broken() if checked else None
        made = (self.made() if self.made else None) or (self.watch.finding() if self.watch else None)
        if tampered or made:
            self.writer.write(protocol.Report(
                nodeid=report.nodeid, when=report.when, outcome="failed", duration=report.duration,
                error_type=ErrorType.TAMPERED.value, message=tampered or made, longrepr=tampered or made,
            ))
            return
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
            message = str(reason)[:MESSAGE_LIMIT]
        elif report.failed:
            error_type, message = getattr(report, "repoexec_error", (ErrorType.ERROR.value, None))
            remote = getattr(report, "repoexec_remote", None)
            longrepr = (str(report.longrepr) + (f"\n\nraised in the candidate's process:\n{remote}" if remote else ""))
            longrepr = longrepr[-LONGREPR_LIMIT:] if remote else longrepr[:LONGREPR_LIMIT]
            if error_type == ErrorType.TIMEOUT:
                self.timed_out.add(report.nodeid)
        self.writer.write(protocol.Report(
            nodeid=report.nodeid, when=report.when, outcome=report.outcome, duration=report.duration,
            error_type=error_type, message=message, longrepr=longrepr,
        ))

    def pytest_exception_interact(self, node, call, report):
        """A collection's failure, before its report: its error type from the exception itself (what pytest's
        ``CollectError`` wraps), never from the report's text, which holds the message a candidate wrote."""
        if isinstance(report, pytest.CollectReport) and call.excinfo is not None:
            value = call.excinfo.value
            if isinstance(value, pytest.Collector.CollectError) and value.__cause__ is not None:
                value = value.__cause__
            report.repoexec_error = _error_type(pytest.ExceptionInfo.from_exception(value))

    def pytest_collectreport(self, report):
        if report.failed:
            longrepr = str(report.longrepr)
            error_lines = [line[1:].strip() for line in longrepr.splitlines() if line.startswith("E ")]
            last = error_lines[-1] if error_lines else ""
            self.writer.write(protocol.CollectError(
                nodeid=report.nodeid,
                error_type=getattr(report, "repoexec_error", None) or ErrorType.COLLECTION_ERROR.value,
                message=last[:MESSAGE_LIMIT], longrepr=longrepr[:LONGREPR_LIMIT],
            ))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self._check_integrity("repoexec::session")
        self.writer.write(protocol.Finish(
            exitstatus=int(exitstatus),
            unstable=[list(entry) for entry in self.unstable()],
            captures=[
                {"test": nodeid.rpartition("::")[2], "site": site, "occurrences": occurrences}
                for (nodeid, site), occurrences in self.captures.items()
            ],
            coverage=self.coverage_report(),
            token=self.writer.token,
        ))
        if not self.judge:  # beside the candidate, the process's end is still the candidate's to pass: a thread
            return  # it left running, or an exit function that hangs, fails the sample as it would any program
        if exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
            return  # a usage or internal error: pytest tells it after this hook, and the engine reads that output
        # A judge's verdict is written. What pytest does after it (its summary of every failure, each scanning
        # every report; its plugins' clean-up; the interpreter's end) reaches no one: the engine reads the output
        # only of a session that did not finish. So the judge ends here, with the status the record names.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(int(exitstatus))

    def pytest_unconfigure(self, config):
        self.writer.close()


def _brief(excinfo, style=None):
    """A failure as ``--tb=line`` tells it (where it was raised, and the exception), without the traceback's
    source: pytest reads, parses and lays out the source of every frame for a full one."""
    tb, where = excinfo.tb, None
    while tb is not None:  # its last frame that pytest shows (the channel's are hidden)
        frame = tb.tb_frame
        if where is None or not frame.f_locals.get("__tracebackhide__", frame.f_globals.get("__tracebackhide__")):
            where = f"{frame.f_code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    raised = re.findall(r'File "([^"]+)", line (\d+)', getattr(excinfo.value, "repoexec_remote", None) or "")
    if raised:  # judged apart: where the candidate's process raised it
        where = ":".join(raised[-1])
    return (f"{where}: {excinfo.exconly()[:MESSAGE_LIMIT]}\n"
            f"(repoexec: only the first {FULL_TRACEBACKS} failures of a sample have their traceback)")


def _parse_each_source_once():
    """pytest parses a test file's whole source again for every failure it reports, and walks all of its tree,
    to find the failing statement's lines: a module of hundreds of tests that all fail (a wrong candidate)
    spent seconds on that. Here each source is parsed once, and the walk covers only the top-level statement
    the line is in and the one after it, which hold every statement boundary the answer can be (the start:
    the last at or before the line; the end: the first after it). What pytest reports does not change."""
    import ast
    import bisect
    import warnings

    import _pytest._code.code as code
    import _pytest._code.source as source_module

    find, startend = code.getstatementrange_ast, source_module.get_statement_startend2
    parsed, firsts = {}, {}

    def getstatementrange_ast(lineno, source, assertion=False, astnode=None):
        if astnode is None:
            text = str(source)
            astnode = parsed.get(text)
            if astnode is None:
                with warnings.catch_warnings():  # as pytest parses it: its warnings were shown at import
                    warnings.simplefilter("ignore")
                    astnode = parsed[text] = ast.parse(text, "source", "exec")
        return find(lineno, source, assertion, astnode)

    def get_statement_startend2(lineno, node):
        if not isinstance(node, ast.Module) or not node.body:
            return startend(lineno, node)
        known = firsts.get(id(node))
        if known is None or known[0] is not node:
            lines = [min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))]) - 1
                     for statement in node.body]
            known = firsts[id(node)] = (node, lines, {})
        index = bisect.bisect_right(known[1], lineno) - 1
        if index < 0:
            return startend(lineno, node)
        part = known[2].get(index)  # kept: pytest 9.2 and later keep a node's walk on the node
        if part is None:
            part = known[2][index] = ast.Module(body=node.body[index:index + 2], type_ignores=[])
        return startend(lineno, part)

    code.getstatementrange_ast = getstatementrange_ast
    source_module.get_statement_startend2 = get_statement_startend2


def _rewritten(path):
    """Where pytest keeps a test module's rewritten code (which the engine may have put there)."""
    from _pytest.assertion.rewrite import PYC_TAIL

    folder, name = os.path.split(path)
    return os.path.join(folder, "__pycache__", name[:-3] + PYC_TAIL)


def _part_of_runner(module):
    """Whether the candidate's module belongs to pytest itself (the runner's package: pytest's own suite)."""
    return module.partition(".")[0] in ("pytest", "_pytest")


def pytest_configure(config):
    global _RECORDER
    focal = config.getoption("--repoexec-focal-module")
    runner_under_test = _part_of_runner(focal)
    judge = config.getoption("--repoexec-judge-fd") is not None or config.getoption("--repoexec-attach")
    if judge:  # the candidate runs in a process of its own: nothing here to watch
        _parse_each_source_once()
        focal, runner_under_test = "", True
    elif runner_under_test:  # pytest's own suite, under its own pytest (runner = "project")
        print(f"repoexec: the candidate's module {focal} is part of the pytest that runs its tests: its code runs "
              "the session, walks frames, opens the tests' files and makes the reports, as a runner must, and its "
              "tests patch the environment through it; so the audit hook on the candidate's code, the class watch "
              "and the integrity check are off, and pytest's reporting is left unpatched")
        focal = ""
    else:
        _parse_each_source_once()
    writer = _Writer()
    writer.write(protocol.Start())
    _RECORDER = _Recorder(writer, config.getoption("--repoexec-reruns"), focal, runner_under_test, judge)
    if judge:
        config.pluginmanager.register(_CrossingTimer(), "repoexec-crossing-timer")
    if config.getoption("--repoexec-attach"):  # the sample's part comes with attach(), once it is forked
        config.pluginmanager.register(_RECORDER, "repoexec-recorder")
        return
    results, token = config.getoption("--repoexec-results-fd"), config.getoption("--repoexec-token-fd")
    if results is None or token is None:
        raise pytest.UsageError("repoexec_inner needs --repoexec-results-fd and --repoexec-token-fd, or "
                                "--repoexec-attach")
    attach(config, results, token, config.getoption("--repoexec-judge-fd"))
    if focal:
        lines = config.getoption("--repoexec-candidate-lines")
        first, _, last = lines.partition("-")
        protected = [argument.partition("::")[0] for argument in config.args]  # the tests' files
        protected += [_rewritten(path) for path in protected if path.endswith(".py")]  # and their rewritten code
        protected += [os.environ["REPOEXEC_EXPECTED"]] if os.environ.get("REPOEXEC_EXPECTED") else []
        _RECORDER.watch = CandidateWatch(focal, (int(first), int(last)) if lines else None, protected)
        _RECORDER.watch.install()
    config.pluginmanager.register(_RECORDER, "repoexec-recorder")
    target = config.getoption("--repoexec-coverage")
    if target:
        import coverage  # only here: a normal sample does not pay for importing it

        _RECORDER.coverage = coverage.Coverage(data_file=None, branch=True, include=[target], config_file=False)
        _RECORDER.coverage.start()
        _RECORDER.coverage_running = True


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """A judge's channel opens before the project's conftest files are imported: they may use the target at once
    (pylint's tests make their linter, and with it the class under test, when their conftest is imported)."""
    known = early_config.known_args_namespace
    if getattr(known, "repoexec_judge_fd", None) is not None:
        repoexec_judge.open_channel(known.repoexec_judge_fd, known.repoexec_project_root,
                                    lambda why: _RECORDER.stop(why) if _RECORDER is not None else None)


def attach(config, results_fd, token_fd, judge_fd):
    """The stream, the limits, and a judge's channel, before any candidate code runs, here or across. Called at
    configuration; or, for a session collected before its sample was forked (``--repoexec-attach``, a judge's
    zygote), by the fork, with the sample's pipes and channel, before any test runs."""
    token = os.read(token_fd, 256).decode("ascii")  # before any candidate code runs, and then gone
    os.close(token_fd)
    _RECORDER.writer.open(results_fd, token)
    cramped = apply_limits(config.getoption("--repoexec-limits"))
    if cramped:  # said now: the process may not live to say it
        _RECORDER.writer.write(protocol.CollectError(nodeid="repoexec::limits",
                                                     error_type=ErrorType.MEMORY_LIMIT.value,
                                                     message=cramped, longrepr=cramped))
    unfiltered = deny_system_calls()
    if unfiltered:
        print(f"repoexec: no seccomp filter: {unfiltered}")
    if judge_fd is not None and repoexec_judge._CHANNEL is None:  # not opened before the conftest files
        repoexec_judge.open_channel(judge_fd, config.getoption("--repoexec-project-root"), _RECORDER.stop)
