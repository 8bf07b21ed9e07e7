"""Run a problem's tests against one candidate module, and bring back each test's outcome.

The one interface the rest of the engine uses is ``Executor.run``: given a project environment, a problem
and the source of its focal module with the candidate in place, return a ``SampleRun``. The implementation
here starts a fresh interpreter and pytest per sample, in a per-sample overlay of the cached source tree.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from .environment import ProjectEnv, StaleRuntimeError
from .problem import Problem
from .runtime import repoexec_protocol as protocol
from .runtime.repoexec_protocol import ErrorType, error_type_of

OUTPUT_LIMIT = 20000
# The tests see a fixed environment, like the original harness's container: nothing of the caller's shell
# (HOME, locale, time zone, PYTHON*, PYTEST_*) leaks into expected values.
_BASE_ENVIRONMENT = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"}
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class ProblemLayoutError(Exception):
    """The problem does not fit its project's source (module missing, test file in the way)."""


@dataclass(frozen=True)
class TestOutcome:
    name: str
    outcome: str  # passed, failed, error or skipped
    error_type: ErrorType | str | None = None  # the engine's kind, or the exception's type name
    message: str | None = None
    longrepr: str | None = None
    duration: float = 0.0


@dataclass(frozen=True)
class RunOptions:
    """What a run does beyond judging a sample once: what the admission gate and the assertion fixer ask."""

    tests_source: str | None = None  # the test module to run instead of the problem's (an instrumented copy)
    reruns: int = 1  # rounds of the whole session, in one process
    coverage: bool = False  # line and branch coverage of the focal module
    first_failure: bool = False  # stop at the first failing test (a mutant needs only one to be killed)
    expected: Path | None = None  # the expected-output folder to use instead of the problem's


@dataclass(frozen=True)
class SampleRun:
    tests: tuple[TestOutcome, ...]  # the first round's
    collect_errors: tuple[TestOutcome, ...]
    finished: bool  # the inner session reached its end (its stream has a Finish record)
    timed_out: bool  # the whole sample ran past its wall-clock limit
    returncode: int
    output: str  # the tail of the run's stdout and stderr: for people, never parsed
    duration: float
    deselected: int = 0  # quarantined tests left out
    collected: int | None = None  # tests to run; None when the process died before collection ended
    rerun_outcomes: tuple[dict[str, str], ...] = ()  # each later round's outcome of each test, by name
    unstable: tuple[tuple[str, int], ...] = ()  # (test, assertion site) whose value changed between rounds
    captures: tuple[dict[str, Any], ...] = ()  # the first round's captured assertion values
    coverage: dict[str, Any] | None = None  # coverage.py's figures for the focal module


class Executor(Protocol):
    def run(self, env: ProjectEnv, problem: Problem, module_source: str, options: RunOptions = ...) -> SampleRun: ...


def module_file(import_root: Path, module: str) -> Path:
    """The file of a dotted module under an import root: ``a/b.py`` or ``a/b/__init__.py``."""
    base = import_root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise ProblemLayoutError(f"module {module} is not in the project's source ({import_root})")


class SubprocessExecutor:
    """A fresh ``python -m pytest`` in the project's virtualenv for every sample."""

    def __init__(self, test_timeout: float, sample_timeout: float) -> None:
        self.test_timeout = test_timeout
        self.sample_timeout = sample_timeout

    def run(
        self, env: ProjectEnv, problem: Problem, module_source: str, options: RunOptions = RunOptions()
    ) -> SampleRun:
        focal = module_file(env.import_root, problem.module).relative_to(env.source_root)
        test_path = focal.parent / problem.tests.name
        if (env.source_root / test_path).exists():
            raise ProblemLayoutError(f"{test_path} already exists in project {problem.project.name}'s source")
        tests = options.tests_source.encode("utf-8") if options.tests_source else problem.tests.read_bytes()
        with tempfile.TemporaryDirectory(prefix="repoexec-sample-") as scratch:
            sample_root = Path(scratch) / "root"
            overlay(
                env.source_root,
                sample_root,
                {focal: module_source.encode("utf-8"), test_path: tests},
            )
            return self._run_pytest(env, problem, sample_root, test_path, Path(scratch), focal, options)

    def _run_pytest(
        self, env: ProjectEnv, problem: Problem, sample_root: Path, test_path: Path, scratch: Path, focal: Path,
        options: RunOptions,
    ) -> SampleRun:
        results = scratch / "results.jsonl"
        config = scratch / "pytest.ini"
        config.write_text("[pytest]\n")
        test_timeout = problem.timeout or self.test_timeout
        # Where the tests see the source: the overlay itself, or the paths the project's tests expect (mounted).
        root = Path(env.project.mount) if env.project.mount else sample_root
        workdir = Path(env.project.workdir) if env.project.workdir else root
        command = [
            str(env.python), "-m", "pytest", str(root / test_path),
            "-p", "repoexec_inner", "-p", "pytest_timeout", f"--timeout={test_timeout}",
            f"--repoexec-results={results}",
            "-c", str(config), f"--rootdir={root}", "--noconftest", "-p", "no:cacheprovider",
            "-q", "--tb=short", "-rN", "--color=no",
            *(f"--repoexec-deselect={name}" for name in problem.quarantine),
        ]
        if options.reruns > 1:
            command.append(f"--repoexec-reruns={options.reruns}")
        if options.coverage:
            command.append(f"--repoexec-coverage=*/{focal}")  # wherever the tests see the source
        if options.first_failure:
            command.append("-x")
        bwrap = shutil.which("bwrap")
        if bwrap:  # the environment's checks make sure it is there when the project mounts its source
            command = [bwrap, *_binds(env, problem, sample_root, root, workdir), "--die-with-parent", *command]
        environment = _BASE_ENVIRONMENT | {
            "HOME": pwd.getpwuid(os.getuid()).pw_dir,
            "PATH": f"{env.python.parent}{os.pathsep}{_SYSTEM_PATH}",
            "TMPDIR": str(scratch),
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "REPOEXEC_EXPECTED": str(options.expected or problem.expected),
        }
        started = time.monotonic()
        with (scratch / "output.txt").open("w+b") as output:
            process = subprocess.Popen(
                command, cwd=sample_root, env=environment, stdin=subprocess.DEVNULL,
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )
            timed_out = False
            try:
                process.wait(timeout=self.sample_timeout * options.reruns)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(process)  # also whatever the candidate left running in the background
            output.seek(max(0, output.seek(0, os.SEEK_END) - OUTPUT_LIMIT))
            text = output.read().decode("utf-8", "replace")
        try:
            return _read_results(results, timed_out, process.returncode, text, time.monotonic() - started)
        except protocol.SchemaMismatch as exc:
            folders = " and ".join(str(path) for path in (env.runtime, env.python.parent.parent) if path)
            raise StaleRuntimeError(
                f"project {problem.project.name}: {exc}: the cached inner runtime is stale; delete {folders} "
                "(they are rebuilt on the next run)"
            ) from None


def _binds(env: ProjectEnv, problem: Problem, sample_root: Path, root: Path, workdir: Path) -> list[str]:
    """bubblewrap's view of the machine for one sample: everything as it is, except that the cached source,
    the virtualenv and the problem's own files are read-only (the overlay's symlinks lead into the cache, so a
    candidate writing through them would otherwise change every later sample), and that the overlay appears
    where the project's tests expect it."""
    read_only = dict.fromkeys([env.source_root, env.python.parent.parent, problem.folder])
    mounts = dict.fromkeys(path for path in (root, workdir) if path != sample_root)
    return [
        "--dev-bind", "/", "/",
        *(arg for path in read_only for arg in ("--ro-bind", str(path), str(path))),
        *(arg for path in mounts for arg in ("--bind", str(sample_root), str(path))),
        "--chdir", str(workdir),
    ]


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _read_results(path: Path, timed_out: bool, returncode: int, output: str, duration: float) -> SampleRun:
    """The run as its stream tells it. Without a Finish record the session did not end, but every test that
    reported keeps its outcome; the test the process died in counts as failed."""
    records, intact = _records(path)
    tests: dict[str, TestOutcome] = {}
    last_phase: dict[str, str] = {}
    collect_errors: list[TestOutcome] = []
    rounds: dict[int, dict[str, str]] = {}
    collected: protocol.Collected | None = None
    finish: protocol.Finish | None = None
    for record in records:
        if isinstance(record, protocol.Report):
            tests[record.nodeid] = _fold(tests.get(record.nodeid), record)
            last_phase[record.nodeid] = record.when
        elif isinstance(record, protocol.CollectError):
            collect_errors.append(TestOutcome(record.nodeid, "error", error_type_of(record.error_type),
                                              record.message, record.longrepr))
        elif isinstance(record, protocol.RoundOutcome):
            rounds.setdefault(record.round, {})[_name(record.nodeid)] = record.outcome
        elif isinstance(record, protocol.Collected):
            collected = record
        elif isinstance(record, protocol.Finish):
            finish = record
    for nodeid, when in last_phase.items():
        if when == "teardown" or tests[nodeid].outcome in ("failed", "error"):
            continue
        if finish is not None:  # pytest.exit stopped the session inside the test: it did not run to its end
            del tests[nodeid]
        else:
            tests[nodeid] = _died_in(tests[nodeid], when, timed_out)
    return SampleRun(
        tests=tuple(tests.values()),
        collect_errors=tuple(collect_errors),
        finished=finish is not None and intact and not timed_out,
        timed_out=timed_out,
        returncode=returncode,
        output=output,
        duration=duration,
        deselected=collected.deselected if collected else 0,
        collected=collected.collected if collected else None,
        rerun_outcomes=tuple(rounds[number] for number in sorted(rounds)),
        unstable=tuple((test, site) for test, site in finish.unstable) if finish else (),
        captures=tuple(finish.captures) if finish else (),
        coverage=finish.coverage if finish else None,
    )


def _records(path: Path) -> tuple[list[protocol.Record], bool]:
    """(the stream's records, whether every line was one). Only the test process writes the stream, so a line
    that is not a record was written by the code under test: the records before it stand, the run did not
    end as a session should. A stream of another schema raises SchemaMismatch."""
    records: list[protocol.Record] = []
    try:
        with path.open(encoding="utf-8", errors="replace") as stream:
            for record in protocol.read(stream):
                records.append(record)
    except OSError:  # missing or unreadable: the process died before the inner plugin started, or it was removed
        pass
    except protocol.SchemaMismatch:
        raise
    except protocol.ProtocolError:
        return records, False
    return records, True


def _name(nodeid: str) -> str:
    return nodeid.rpartition("::")[2]


def _fold(test: TestOutcome | None, report: protocol.Report) -> TestOutcome:
    """A test's outcome with one more of its phases: the first failure decides, a skip counts unless one did."""
    test = test or TestOutcome(_name(report.nodeid), "passed")
    test = replace(test, duration=test.duration + report.duration)
    if report.outcome == "skipped" and test.outcome == "passed":
        return replace(test, outcome="skipped", message=report.message)
    if report.outcome == "failed" and test.outcome in ("passed", "skipped"):
        return replace(test, outcome="failed" if report.when == "call" else "error",
                       error_type=error_type_of(report.error_type), message=report.message,
                       longrepr=report.longrepr)
    return test


def _died_in(test: TestOutcome, last_phase: str, timed_out: bool) -> TestOutcome:
    """The test the process died in (it reported no teardown): not passed, whatever its phases said."""
    kind, why = (
        (ErrorType.TIMEOUT, "the sample ran past its wall-clock limit during this test") if timed_out
        else (ErrorType.EARLY_EXIT, "the test process ended during this test")
    )
    return replace(test, outcome="error" if last_phase == "call" else "failed", error_type=kind, message=why)


def overlay(base: Path, target: Path, files: dict[Path, bytes]) -> None:
    """Make ``target`` look like ``base`` with ``files`` written in, without copying or touching ``base``.

    Every folder on the way to a written file is a real folder; everything else is a symlink into ``base``.
    """
    target.mkdir(parents=True)
    heads: dict[str, dict[Path, bytes]] = {}
    for path, content in files.items():
        if len(path.parts) == 1:
            (target / path).write_bytes(content)
        else:
            heads.setdefault(path.parts[0], {})[Path(*path.parts[1:])] = content
    for entry in os.scandir(base):
        if entry.name in heads:
            overlay(Path(entry.path), target / entry.name, heads.pop(entry.name))
        elif not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry.path, target_is_directory=entry.is_dir())
    for name, rest in heads.items():  # folders that only the written files need
        overlay_missing = target / name
        overlay_missing.mkdir()
        for path, content in rest.items():
            (overlay_missing / path).parent.mkdir(parents=True, exist_ok=True)
            (overlay_missing / path).write_bytes(content)
