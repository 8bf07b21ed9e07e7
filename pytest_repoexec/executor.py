"""Run a problem's tests against one candidate module, and bring back each test's outcome.

The one interface the rest of the engine uses is ``Executor.run``: given a project environment, a problem
and the source of its focal module with the candidate in place, return a ``SampleRun``. The implementation
here starts a fresh interpreter and pytest per sample, in a per-sample overlay of the cached source tree.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .environment import ProjectEnv
from .problem import Problem

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
    error_type: str | None = None
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
    finished: bool  # the inner session reached its end and wrote its results
    timed_out: bool  # the whole sample ran past its wall-clock limit
    returncode: int
    output: str  # the tail of the run's stdout and stderr: for people, never parsed
    duration: float
    deselected: int = 0  # quarantined tests left out
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
        results = scratch / "results.json"
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
        return _read_results(results, timed_out, process.returncode, text, time.monotonic() - started)


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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        finished = data.get("finished") is True
    except (OSError, ValueError):
        data, finished = {}, False
    return SampleRun(
        tests=tuple(TestOutcome(**test) for test in data.get("tests", [])),
        collect_errors=tuple(
            TestOutcome(error["nodeid"], "error", error["error_type"], error["message"], error["longrepr"])
            for error in data.get("collect_errors", [])
        ),
        finished=finished and not timed_out,
        timed_out=timed_out,
        returncode=returncode,
        output=output,
        duration=duration,
        deselected=data.get("deselected", 0),
        rerun_outcomes=tuple(data.get("rerun_outcomes", ())),
        unstable=tuple((test, site) for test, site in data.get("unstable", ())),
        captures=tuple(data.get("captures", ())),
        coverage=data.get("coverage"),
    )


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
