"""Run a problem's tests against one candidate module, and bring back each test's outcome.

The one interface the rest of the engine uses is ``Executor.run``: given a project environment, a problem
and the source of its focal module with the candidate in place, return a ``SampleRun``. The implementation
here starts a fresh interpreter and pytest per sample, in the sandbox, over a per-sample tree of the cached
source (``sample_tree``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import math
import os
import secrets
import selectors
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from . import syntax
from .judge import split_plan
from .environment import ProjectEnv, StaleRuntimeError, legacy_ids
from .problem import Problem
from .rewritten import TREE_MTIME, cache_path, rewritten_pyc
from .cgroups import ProcessCgroup, SampleSetupError, new_nonce, setup_failure
from .sandbox import (
    EXPECTED, HOME, SAMPLE, Bubblewrap, DataFolder, Limits, Sandbox, Tree, View, make_sandbox, python_home,
)
from .runtime import repoexec_protocol as protocol
from .runtime.repoexec_protocol import ErrorType, error_type_of

OUTPUT_LIMIT = 20000  # the tail of a sample's output that is kept, for people
CONFIG = "repoexec-pytest.ini"  # an empty configuration beside the tests: the project's own is not read
_EXPECTED_KEPT = 16  # problems' expected folders an executor keeps read (a worker runs a problem's samples together)
_STREAM_LIMIT = 64 << 20  # no session writes this many records
_GRACE = 0.5  # seconds a sample's pipes may stay open after its process ended
STUCK_GRACE = 2.0  # seconds a test may run past its limit before the sample counts as stuck (see _Progress)
EXIT_GRACE = 5.0  # seconds a process may take to end after its session has
_DECISION_TRIES = 2  # times a problem's reference is compared both ways where a time limit made them differ
_SIGNAL_LIMITS = {signal.SIGXCPU: ErrorType.CPU_LIMIT, signal.SIGXFSZ: ErrorType.FILE_SIZE_LIMIT}
# The tests see a fixed environment, like the original harness's container: nothing of the caller's shell
# (HOME, locale, time zone, PYTHON*, PYTEST_*) leaks into expected values.
_BASE_ENVIRONMENT = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"}
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


# Where a sample's tests run (--repoexec-judge): apart from its candidate, and a problem that cannot be is not
# judged; apart, else beside the candidate; always beside it. Only the run's options pick a weaker one.
JUDGE_MODES = ("apart", "apart-or-in-process", "in-process")


TEST_TIMEOUTS = "--repoexec-test-timeouts="  # the inner plugin's option: each test's own limit, as JSON


class ProblemLayoutError(Exception):
    """The problem does not fit its project's source (module missing, test file in the way)."""


class NotJudgedApart(Exception):
    """The problem cannot be judged apart from its candidate and the run allows nothing weaker: no verdict, which
    is the problem's limit here, never the candidate's failure. The message names the problem, why and the option."""


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
    test_timeouts: tuple[tuple[str, float], ...] = ()  # (test name, seconds): limits below the run's own
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
    stopped: ErrorType | None = None  # the limit that ended the sample: Timeout, OutputLimit, CPULimit...
    tampered: str | None = None  # why the verdict stream cannot be believed (a grader game), if it cannot
    forks_refused: bool = False  # its cgroup refused a fork (the engine's count): a failure is ProcessLimit
    phases: dict[str, float] = field(default_factory=dict)  # seconds in each phase: start-up, collection, tests...
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of its process trees (``spent``), where counted
    judge: str = "in-process"  # "apart" (the tests in a process that never ran candidate code), or why not


class Executor(Protocol):
    def run(self, env: ProjectEnv, problem: Problem, module_source: str, options: RunOptions = ...) -> SampleRun: ...

    def not_judged(self, env: ProjectEnv, problem: Problem) -> str | None: ...


def module_file(import_root: Path, module: str) -> Path:
    """The file of a dotted module under an import root: ``a/b/__init__.py`` or ``a/b.py``, in the order Python's
    import looks (a release may ship both, as inflection 0.5.1's does: the package is what gets imported)."""
    base = import_root.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    raise ProblemLayoutError(f"module {module} is not in the project's source ({import_root})")


@dataclass(frozen=True)
class Launch:
    """One sample's run as any executor starts it: pytest's arguments (after ``python -m pytest``, before the
    pipes' descriptors), its environment, what it sees, and what bounds it from outside."""

    arguments: tuple[str, ...]
    environment: dict[str, str]
    view: View
    confined: bool
    timeout: float  # the whole sample's wall clock
    limits: Limits
    test_limit: float  # each test's (pytest-timeout's), the longest a test may run
    root: Path = Path()  # where the tests see the project's root (their rootdir)
    program: str = "pytest"  # the module run as ``python -m PROGRAM``: pytest, or the candidate's process
    once: bool = False  # run once for its problem (the judge's check of its reference): a zygote would not pay


class SubprocessExecutor:
    """A fresh ``python -m pytest`` in the project's virtualenv for every sample, inside the sandbox.

    The inner plugin streams its records into a pipe that only the engine reads, and proves them with a token
    that it read from another pipe before any candidate code ran; stdout and stderr come through a third pipe,
    whose size is capped. Nothing the engine reads lies where the sample can write.
    """

    def __init__(
        self, test_timeout: float, sample_timeout: float, sandbox: Sandbox | None = None, limits: Limits = Limits(),
        accept_no_process_limit: bool = False, judge: str = "apart",
    ) -> None:
        self.test_timeout = test_timeout
        self.sample_timeout = sample_timeout
        self.sandbox = sandbox if sandbox is not None else make_sandbox("bwrap")
        self.limits = limits
        # the strongest bound on a sample's processes this host offers (cgroups); ProcessLimitUnavailable if none
        self.cgroup = ProcessCgroup.find(accept_none=True if accept_no_process_limit else None,
                                         sandboxed=isinstance(self.sandbox, Bubblewrap))
        self.judge = judge  # one of JUDGE_MODES
        self._apart: dict[str, tuple[str | None, str]] = {}  # judged_apart's answers, by problem
        self._expected: dict[tuple[Path, Path | None], tuple[tuple, DataFolder]] = {}  # _expected_folder's

    def run(
        self, env: ProjectEnv, problem: Problem, module_source: str, options: RunOptions = RunOptions()
    ) -> SampleRun:
        """The sample judged apart from the candidate where the problem allows (``judge.split_plan`` and the
        reference's check, ``judged_apart``); where it does not, ``NotJudgedApart``, or in-process if the run's
        mode allows. A run that is not a plain one (the gate's and the fixer's, of references and mutants, none
        a model's) is in-process."""
        focal = module_file(env.import_root, problem.module).relative_to(env.source_root)
        plain = not options.coverage and not options.tests_source and options.reruns == 1 and options.expected is None
        stub, why = self.judged_apart(env, problem, focal) if self.judge != "in-process" and plain else (None, "")
        if stub is None and plain and self.judge == "apart":
            raise NotJudgedApart(f"{problem.id} is not judged: it cannot be judged apart from its candidate ({why}); "
                                 "--repoexec-judge=apart-or-in-process judges it beside its candidate (a weaker "
                                 "guarantee)")
        return self._run(env, problem, focal, module_source, options, stub, why)

    def not_judged(self, env: ProjectEnv, problem: Problem) -> str | None:
        """Why a model's samples of the problem get no verdict under this executor's mode (they cannot be judged
        apart, and the mode allows nothing weaker), else None: what the gate turns a problem away for."""
        if self.judge != "apart":
            return None
        focal = module_file(env.import_root, problem.module).relative_to(env.source_root)
        stub, why = self.judged_apart(env, problem, focal)
        return None if stub else why

    def judged_apart(self, env: ProjectEnv, problem: Problem, focal: Path) -> tuple[str | None, str]:
        """(the judge's focal module, "") where the problem can be judged apart, else (None, why not). Its
        reference must get the same outcome of every test both ways: the answer is kept in the cache."""
        original = (env.source_root / focal).read_text("utf-8")
        plan = split_plan(problem, original)
        if plan.stub_module is None:
            return None, plan.in_process or ""
        tests = problem.tests.read_bytes() if problem.tests else None
        key = hashlib.sha256(repr((_judge_code(), _judge_only(tests), str(env.python), problem.module,
                                   problem.entry_point, problem.kind, tests or problem.suite, original,
                                   type(self.sandbox).__name__, problem.quarantine)).encode()).hexdigest()
        if key in self._apart:
            return self._apart[key]
        path = env.compiled.parent / "judge" / f"{key}.json"
        try:
            stored = json.loads(path.read_text())
            answer = (plan.stub_module if stored["apart"] else None, stored["why"])
        except (OSError, ValueError, KeyError):
            differ, why, timed = self._compare_reference(env, problem, focal, original, plan.stub_module)
            answer = (None if differ else plan.stub_module, why)
            if not timed:  # a decision that a time limit made is this run's only: a quieter run decides again
                path.parent.mkdir(parents=True, exist_ok=True)
                staged = path.with_suffix(f".{os.getpid()}.tmp")
                staged.write_text(json.dumps({"apart": not differ, "why": why}))
                staged.replace(path)
        self._apart[key] = answer
        return answer

    def _compare_reference(self, env: ProjectEnv, problem: Problem, focal: Path, original: str,
                           stub: str) -> tuple[list[str], str, bool]:
        """(the tests whose outcome differs between the reference in-process and apart, why that keeps the
        problem in-process, whether a time limit made the first difference). A test past its limit may be a
        loaded host's doing, not the split's: such a comparison is made ``_DECISION_TRIES`` times in all before
        the problem is kept beside its candidate for it."""
        for _ in range(_DECISION_TRIES):
            runs = [self._run(env, problem, focal, original, RunOptions(), None, "", once=True),
                    self._run(env, problem, focal, original, RunOptions(), stub, "")]
            together, apart = map(_outcomes, runs)
            differ = sorted(name for name in together.keys() | apart.keys() if together.get(name) != apart.get(name))
            timed = _first_difference_timed(runs, differ)
            if not timed:
                break
        why = "" if not differ else (
            f"the reference's outcomes differ under the judge ({len(differ)} tests: "
            + ", ".join(f"{name} {together.get(name, 'not run')} in-process, {apart.get(name, 'not run')} apart"
                        for name in differ[:3]) + ")"
            + ("; the first went past its time limit: a later run decides again" if timed else ""))
        return differ, why, timed

    def _run(self, env: ProjectEnv, problem: Problem, focal: Path, module_source: str, options: RunOptions,
             stub: str | None, in_process: str, once: bool = False) -> SampleRun:
        """One run: in-process (``stub`` None: the tests beside the candidate, ``in_process`` saying why), or
        split (the tests beside ``stub``, the candidate in a process of its own); ``once``: the only one of its
        kind for the problem."""
        files = {focal: (stub or module_source).encode("utf-8")}
        tests = None
        if problem.tests is not None:  # the problem's own module, beside the focal module, with a config of its own
            test_path = focal.parent / problem.tests.name
            if (env.source_root / test_path).exists():
                raise ProblemLayoutError(f"{test_path} already exists in project {problem.project.name}'s source")
            tests = files[test_path] = options.tests_source.encode("utf-8") if options.tests_source \
                else problem.tests.read_bytes()
            if isinstance(self.sandbox, Bubblewrap):  # at a path that every sample shares: compiled once
                try:
                    pyc = rewritten_pyc(files[test_path], str(seen_root(env) / test_path), env.compiled)
                except (SyntaxError, ValueError):
                    pass  # the sample's pytest says what is wrong with the module
                else:
                    files[cache_path(test_path)] = pyc
            files[test_path.parent / CONFIG] = b"[pytest]\n"
        tree = sample_tree(env.source_root, files)
        masks = masked_references(env, focal, files[focal])
        token = secrets.token_hex(16)
        with tempfile.TemporaryDirectory(prefix="repoexec-sample-") as scratch:
            if stub is None:
                launch = replace(self._plan(env, problem, tree, Path(scratch), focal, options, masks,
                                            candidate_lines(module_source, problem)), once=once)
                started = time.monotonic()
                watched = self._execute(env, problem, launch, token)
            else:
                (Path(scratch) / "judge").mkdir()
                (Path(scratch) / "candidate").mkdir()
                launch = self._plan(env, problem, tree, Path(scratch) / "judge", focal, options, masks)
                candidate = self._candidate_launch(env, problem, focal, module_source, Path(scratch) / "candidate",
                                                   options)
                roots = [f"--repoexec-project-root={root}" for root in project_roots(env, candidate)]
                # a judge's test may run past its limit by its calls across, at most the limit again
                # (``repoexec_inner._CrossingTimer``): the longest it may run before it counts as stuck
                launch = replace(launch, arguments=(*launch.arguments, *roots, *_judge_only(tests)),
                                 test_limit=2 * launch.test_limit)
                started = time.monotonic()
                watched = self._execute_split(env, problem, launch, candidate, token)
        try:
            run = _read_results(watched, token, launch.confined, time.monotonic() - started)
        except protocol.SchemaMismatch as exc:
            folders = " and ".join(str(path) for path in (env.runtime, env.python.parent.parent) if path)
            raise StaleRuntimeError(
                f"project {problem.project.name}: {exc}: the cached inner runtime is stale; delete {folders} "
                "(they are rebuilt on the next run)"
            ) from None
        return replace(run, judge="apart" if stub else f"in-process{': ' if in_process else ''}{in_process}")

    def _candidate_launch(self, env: ProjectEnv, problem: Problem, focal: Path, module_source: str, scratch: Path,
                          options: RunOptions) -> Launch:
        """The candidate's process: the sample's view with its module in place and nothing of the tests (no test
        module, no expected values), running ``repoexec_serve``."""
        files = {focal: module_source.encode("utf-8")}
        launch = self._plan(env, problem, sample_tree(env.source_root, files), scratch, focal, options,
                            masked_references(env, focal, files[focal]))
        environment = {name: value for name, value in launch.environment.items() if name != "REPOEXEC_EXPECTED"}
        arguments = (f"--repoexec-limits={launch.limits.rlimits()}", f"--repoexec-module={problem.module}",
                     f"--repoexec-path={launch.root / tests_package_root(env, focal)}",
                     *([f"--repoexec-class={problem.entry_point}"] if problem.kind == syntax.CLASS else []),
                     *(f"--repoexec-project-root={root}" for root in project_roots(env, launch)))
        return replace(launch, arguments=arguments, environment=environment, program="repoexec_serve",
                       view=replace(launch.view, data=None))

    def close(self) -> None:
        """Nothing outlives a sample here; the warm executor stops its processes."""

    def _plan(
        self, env: ProjectEnv, problem: Problem, tree: Tree, scratch: Path, focal: Path, options: RunOptions,
        masks: tuple[tuple[Path, bytes], ...] = (), candidate_lines: str | None = None,
    ) -> Launch:
        confined = isinstance(self.sandbox, Bubblewrap)
        limits = self.limits.overridden(problem.limits)
        if confined:  # the tree where the project's tests expect it: RepoExec's /package and /input/test-apps/NAME
            workdir, root = Path(env.project.workdir or env.project.mount or SAMPLE), seen_root(env)
            home, tmp, seen_expected = Path(HOME), Path("/tmp"), Path(EXPECTED)
        else:
            workdir = root = scratch / "root"
            home, tmp, seen_expected = scratch / "home", scratch / "tmp", scratch / "expected"
            home.mkdir()
            tmp.mkdir()
        if problem.tests is None:  # the project's own tests, in place: its conftest files and its configuration,
            # less the options it adds to every run (they may name plugins that its environment does not hold)
            # joined as text: a node id is no path (a parameter id's "//" must stay, as in "[https://...]")
            where = [*(f"{root}/{node}" for node in problem.suite), "-o", "addopts=", *legacy_ids(env)]
        else:
            test_path = focal.parent / problem.tests.name
            # pytest's unraisable-exception plugin only warns, and no configuration here makes a warning fail a
            # test; at its end it runs five full garbage collections (tenths of a second after hundreds of failures)
            where = [str(root / test_path), "-c", str(root / test_path.parent / CONFIG), "--noconftest",
                     "-p", "no:unraisableexception", *legacy_ids(env)]
        arguments = [
            *where,
            "-p", "repoexec_inner", "-p", "pytest_timeout", f"--timeout={problem.timeout or self.test_timeout}",
            # the limit times the test function, as RepoExec's timeout decorator did: not pytest making its report
            # (a long traceback, a deep recursion's, may take a second to format, and an alarm there loses it)
            "-o", "timeout_func_only=true",
            f"--repoexec-limits={limits.rlimits()}", f"--repoexec-focal-module={problem.module}",
            *([f"--repoexec-candidate-lines={candidate_lines}"] if candidate_lines else []),
            f"--rootdir={root}", "-p", "no:cacheprovider", "-q", "--tb=short", "-rN", "--color=no",
            # a warm process imported both plugins before pytest could rewrite them (they have no assertions)
            "-W", "ignore::pytest.PytestAssertRewriteWarning",
            *(f"--repoexec-deselect={name}" for name in problem.quarantine),
        ]
        if options.reruns > 1:
            arguments.append(f"--repoexec-reruns={options.reruns}")
        if options.coverage:
            arguments.append(f"--repoexec-coverage=*/{focal}")  # wherever the tests see the source
        if options.first_failure:
            arguments.append("-x")
        if options.test_timeouts:
            arguments.append(f"{TEST_TIMEOUTS}{json.dumps(dict(options.test_timeouts))}")
        binds = [python_home(env.python), env.python.parent.parent, *([env.runtime] if env.runtime else []),
                 env.source_root]
        view = View(
            tree=tree, tree_at=workdir, aliases=(root,) if root != workdir else (),
            binds=tuple(dict.fromkeys((path, path) for path in binds)),
            workdir=workdir, tmpfs_bytes=limits.tmpfs, network=problem.network, masks=masks,
            data=DataFolder.read(seen_expected, options.expected) if options.expected is not None
            else self._expected_folder(seen_expected, problem.expected), staging=scratch,
            tree_mtime=TREE_MTIME,
        )
        environment = _BASE_ENVIRONMENT | {
            "HOME": str(home),
            "PATH": f"{env.python.parent}{os.pathsep}{_SYSTEM_PATH}",
            "TMPDIR": str(tmp),
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "REPOEXEC_EXPECTED": str(seen_expected),
        }
        if problem.tests is None:  # the suite imports the project as if it were installed, whatever its layout
            environment["PYTHONPATH"] = str(root / env.project.import_root)
        return Launch(tuple(arguments), environment, view, confined, self.sample_timeout * options.reruns, limits,
                      problem.timeout or self.test_timeout, root)

    def _expected_folder(self, at: Path, folder: Path | None) -> DataFolder:
        """A problem's expected outputs, read again only when a file's size or time changed (the fixer writes
        them between runs): reading every file for every sample cost more than the rest of its plan."""
        signature = _files_signature(folder)
        kept = self._expected.get((at, folder))
        if kept is None or kept[0] != signature:
            if len(self._expected) >= _EXPECTED_KEPT:
                del self._expected[next(iter(self._expected))]
            self._expected[(at, folder)] = kept = (signature, DataFolder.read(at, folder))
        return kept[1]

    def _execute(self, env: ProjectEnv, problem: Problem, launch: Launch, token: str) -> Watched:
        """Start a fresh interpreter for the sample, in the sandbox (and its pids cgroup where there is one)."""
        # the sample's cgroup, and its launcher's entering it, can fail: SampleSetupError, the host's (never a verdict)
        with self.cgroup.sample(launch.limits.processes) if self.cgroup else contextlib.nullcontext() as cgroup:
            began = time.monotonic()
            pipes = Pipes(token)
            nonce = new_nonce()
            try:
                started = self._spawn(env, launch, cgroup, pipes.sample_ends(), nonce=nonce)
            except BaseException:
                pipes.close()
                raise
            finally:
                pipes.close_sample_ends()
            watched = watch(started, pipes, began, launch)
            if (failure := setup_failure(nonce, watched.output)) is not None:
                raise SampleSetupError(failure)
            return held(watched, refused=bool(cgroup and cgroup.refusals()))

    def _execute_split(self, env: ProjectEnv, problem: Problem, judge: Launch, candidate: Launch,
                       token: str) -> Watched:
        """The judge and the candidate's process, started side by side (in one pids cgroup, where there is
        one) and joined by a socket; the judge's stream is the sample's, and both write to its output."""
        processes = judge.limits.processes + candidate.limits.processes
        with self.cgroup.sample(processes) if self.cgroup else contextlib.nullcontext() as cgroup:
            began = time.monotonic()
            pipes = SplitPipes(token)
            nonce = new_nonce()
            started: list[Started] = []
            try:
                started.append(self._spawn(env, candidate, cgroup, pipes.candidate_ends(), nonce=nonce))
                started.insert(0, self._spawn(env, judge, cgroup, pipes.sample_ends(), pipes.judge_channel, nonce))
            except BaseException:
                for process in started:
                    process.kill()
                pipes.close()
                raise
            finally:
                pipes.close_sample_ends()
            pair = SplitSample(*started)
            watched = watch(pair, pipes, began, judge)
            if (failure := setup_failure(nonce, watched.output)) is not None:
                raise SampleSetupError(failure)
            return held(pair.candidate_limit(watched, judge.confined), refused=bool(cgroup and cgroup.refusals()))

    def _spawn(self, env: ProjectEnv, launch: Launch, cgroup: Any, fds: tuple[int, int, int],
               judge_fd: int | None = None, nonce: str = "") -> Started:
        """One process of a sample: ``fds`` are its output, its results (the candidate's: its channel to the
        judge) and its token; ``judge_fd``, the judge's channel to the candidate."""
        argv, binds = self.sandbox.wrap(launch.view, [str(env.python), "-m", launch.program, *launch.arguments])
        output, results, token = fds
        channel = () if judge_fd is None else (judge_fd,)
        try:
            process = subprocess.Popen(
                [*(cgroup.entering(argv, nonce) if cgroup else argv), f"--repoexec-results-fd={results}",
                 f"--repoexec-token-fd={token}", *(f"--repoexec-judge-fd={fd}" for fd in channel)],
                cwd=None if launch.confined else launch.view.workdir, env=launch.environment,
                stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=(results, token, *channel, *binds),
            )
        finally:
            for fd in binds:
                os.close(fd)
        return _Started(process)


@dataclass(frozen=True)
class Watched:
    """What came back from one sample's process."""

    stream: bytes  # the records, as they came through the pipe
    output: str  # the tail of stdout and stderr
    returncode: int
    stopped: ErrorType | None  # what the engine stopped it for: Timeout or OutputLimit
    phases: dict[str, float] = field(default_factory=dict)  # seconds from the start to each record kind
    warm_start: float = 0.0  # seconds spent starting the warm process this sample was the first of
    forks_refused: bool = False  # the sample's cgroup refused a fork: its process limit was reached
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of each of its process trees (``spent``)


def spent(**trees: tuple[float, float] | None) -> dict[str, float]:
    """CPU seconds of a sample's process trees, where the warm process counted them (``os.wait4`` on each
    tree's init: every process of the tree that was waited for): each tree's user and system time together,
    and its system time alone (forks, page faults, exits: what a process costs the kernel). A tree that was
    not counted is left out."""
    figures = {}
    for name, cpu in trees.items():
        if cpu is not None:
            figures[name] = round(cpu[0] + cpu[1], 6)
            figures[f"{name} system"] = round(cpu[1], 6)
    return figures


def held(watched: Watched, refused: bool) -> Watched:
    """What the sample's cgroup counted: a fork refused (a failure then is the process limit's, by the engine's
    own count, whatever the candidate raised), and a sample stopped at its time limit while forks were refused
    (a fork flood, held, then stopped)."""
    if refused and watched.stopped is ErrorType.TIMEOUT:
        return replace(watched, stopped=ErrorType.PROCESS_LIMIT, forks_refused=True)
    return replace(watched, forks_refused=refused) if refused else watched


class Pipes:
    """A sample's three pipes: the token (written now), the records, and stdout with stderr. The sample's
    ends go to it and are closed here once it has them; the engine keeps the others."""

    def __init__(self, token: str) -> None:
        self.stream, self.results = os.pipe()
        self.token, token_write = os.pipe()
        os.write(token_write, token.encode("ascii"))
        os.close(token_write)
        self.reader, self.output = os.pipe()
        self._open = [self.stream, self.results, self.token, self.reader, self.output]

    def sample_ends(self) -> tuple[int, int, int]:
        """(output, results, token): what the test process writes and reads."""
        return self.output, self.results, self.token

    def close_sample_ends(self) -> None:
        self._close(self.output, self.results, self.token)

    def close(self) -> None:
        self._close(*self._open)

    def _close(self, *fds: int) -> None:
        for fd in fds:
            if fd in self._open:
                self._open.remove(fd)
                os.close(fd)


class SplitPipes(Pipes):
    """A split sample's pipes: the sample's three, which the judge gets, and the socket that joins the judge to
    the candidate's process. The candidate's process gets the output pipe, its end of the socket in place of the
    results pipe, and a token pipe with nothing in it."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.judge_channel, self.candidate_channel = ours.detach(), theirs.detach()
        self.silent, closed = os.pipe()
        os.close(closed)
        self._open += [self.judge_channel, self.candidate_channel, self.silent]

    def candidate_ends(self) -> tuple[int, int, int]:
        return self.output, self.candidate_channel, self.silent

    def close_sample_ends(self) -> None:
        super().close_sample_ends()
        self._close(self.judge_channel, self.candidate_channel, self.silent)


class Started(Protocol):
    """A sample's process, however it was started: polled while its pipes are read, killed at the end."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float) -> int | None:
        """Its exit status once it has ended, or None if it has not within ``timeout`` seconds."""

    def kill(self) -> int:
        """Kill whatever is left of the sample; its exit status."""


class _Started:
    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process

    def poll(self) -> int | None:
        return self.process.poll()

    def wait(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> int:
        """The sample's process group (with bubblewrap, its whole PID namespace dies with it)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.process.wait()


_CANDIDATE_GRACE = 0.5  # seconds a split sample's candidate has to report its end once the judge's is known


class SplitSample:
    """A split sample's two processes as ``watch`` sees one: the judge's end is the sample's, and where its
    session passed (status 0) the candidate's process must end too, as a program does: one that a thread it
    left running keeps alive is stopped ``EXIT_GRACE`` after the session, as it would be beside its tests.
    Killing it kills both. What stopped the candidate's process (its CPU or file size limit) is the sample's."""

    def __init__(self, judge: Started, candidate: Started) -> None:
        self.judge, self.candidate = judge, candidate
        self.candidate_status: int | None = None
        self.unended = False  # the session passed, and the candidate's process never ended

    def poll(self) -> int | None:
        status = self.judge.poll()
        if status == 0 and self.candidate_status is None:
            self.candidate_status = self.candidate.poll()
        return status if status != 0 or self.candidate_status is not None else None

    def wait(self, timeout: float) -> int | None:
        until = time.monotonic() + timeout
        status = self.judge.wait(timeout)
        if status == 0 and self.candidate_status is None:
            self.candidate_status = self.candidate.wait(max(until - time.monotonic(), 0.0))
        return status if status != 0 or self.candidate_status is not None else None

    def kill(self) -> int:
        # a candidate's process that ended (a limit) may not have said so yet: a moment to say it, never lost
        if self.candidate_status is None:
            self.candidate_status = self.candidate.wait(_CANDIDATE_GRACE)
        if self.candidate_status is None:
            self.candidate.kill()
            self.unended = self.judge.poll() == 0
        return self.judge.kill()

    def candidate_limit(self, watched: Watched, confined: bool) -> Watched:
        if watched.stopped is not None:
            return watched
        if self.unended:  # its output closed early, say: the loop above did not see it outlive the session
            return replace(watched, stopped=ErrorType.TIMEOUT, output=watched.output
                           + "\n[repoexec] stopped: the candidate's process had not ended after its session\n")
        limit = _SIGNAL_LIMITS.get(_signal_of(self.candidate_status, confined)) if self.candidate_status else None
        return replace(watched, stopped=limit) if limit else watched


_KIND_PREFIX = b'{"kind": "'  # how every record's line starts (``protocol.encode``)
_BATCH = 0.005  # seconds the engine lets a running sample's records gather before it reads them again


class _Progress:
    """How far the run has come, from its records as they arrive: when each kind first came (the phase
    figures), and by when the next one must come. Once collection has ended, pytest-timeout bounds every test
    by the run's test limit, so a run that writes no record for that long and STUCK_GRACE more is stuck where
    the signal cannot reach it (a loop inside C code); one whose session has finished has EXIT_GRACE to end
    (a thread it left running keeps it alive). Either is stopped then, as its wall-clock limit would stop it
    later: no test that would have run is left out, since the stuck one never ends."""

    _PHASES = {"collected": "collected", "finish": "finished"}  # record kind -> phase mark

    def __init__(self, began: float, test_limit: float) -> None:
        self.began, self.test_limit = began, test_limit
        self.marks: dict[str, float] = {}
        self.due, self.why = math.inf, ""
        self._partial = b""

    def feed(self, data: bytes, now: float) -> None:
        self.marks.setdefault("started", now - self.began)
        *lines, self._partial = (self._partial + data).split(b"\n")
        self._partial = self._partial[-_STREAM_LIMIT:]
        for line in lines:  # the engine judges the stream later; here it only keeps time, so a line's kind is
            if not line.startswith(_KIND_PREFIX):  # read where ``protocol.encode`` puts it, nothing decoded
                continue
            kind = line[len(_KIND_PREFIX):line.find(b'"', len(_KIND_PREFIX))].decode("ascii", "replace")
            if kind in self._PHASES:
                self.marks.setdefault(self._PHASES[kind], now - self.began)
            if kind == "finish":
                self.due, self.why = now + EXIT_GRACE, f"its process had not ended {EXIT_GRACE:.0f} s after its session"
            elif kind in ("collected", "report", "round"):
                self.due = now + self.test_limit + STUCK_GRACE
                self.why = (f"a test ran {STUCK_GRACE:.0f} s past its {self.test_limit:g} s limit without ending "
                            "(pytest-timeout's signal could not interrupt it)")


def watch(started: Started, pipes: Pipes, began: float, launch: Launch) -> Watched:
    """Read the sample's stream and output until it ends, its time is up (or it is stuck: ``_Progress``) or its
    output passes the limit; whatever it started is killed with it."""
    output, stream = bytearray(), bytearray()
    written, stopped = 0, None
    progress = _Progress(began, launch.test_limit)
    deadline = began + launch.timeout
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(pipes.reader, selectors.EVENT_READ, "output")
            selector.register(pipes.stream, selectors.EVENT_READ, "stream")
            while selector.get_map():
                if started.poll() is not None:  # its pipes end with it, unless something it left holds them open
                    progress.marks.setdefault("exited", time.monotonic() - began)
                    deadline = min(deadline, time.monotonic() + _GRACE)
                remaining = min(deadline, progress.due) - time.monotonic()
                if remaining <= 0:
                    stopped = ErrorType.TIMEOUT if started.poll() is None else None
                    if stopped and progress.due < deadline:
                        output += f"\n[repoexec] stopped: {progress.why}\n".encode()
                    break
                ready = selector.select(min(remaining, _GRACE))
                for key, _ in ready:
                    data = os.read(key.fd, 1 << 16)
                    if not data:
                        selector.unregister(key.fd)
                    elif key.data == "stream":
                        progress.feed(data, time.monotonic())
                        stream += data[: _STREAM_LIMIT - len(stream)]
                    else:
                        written += len(data)
                        output = (output + data)[-OUTPUT_LIMIT:]
                        if written > launch.limits.output:
                            stopped = ErrorType.OUTPUT_LIMIT
                if stopped:
                    break
                if ready and "finished" not in progress.marks:  # a read a record costs more than the record: a
                    time.sleep(_BATCH)  # few milliseconds of them read at once (a pipe holds 64 KiB meanwhile)
        # its pipes closed as it ended: it gets a moment to end before anything left of it is killed
        ended = None if stopped else started.wait(max(min(deadline - time.monotonic(), _GRACE), 0))
        killed = started.kill()
        returncode = killed if ended is None else ended
        progress.marks.setdefault("exited", time.monotonic() - began)
    finally:
        pipes.close()
    return Watched(bytes(stream), output.decode("utf-8", "replace"), returncode, stopped, progress.marks)


def _files_signature(folder: Path | None) -> tuple:
    """Every file under ``folder`` with its size and modification time, in a walk that reads no file."""
    found, pending = [], [str(folder)] if folder is not None else []
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                status = entry.stat()
                found.append((entry.path, status.st_size, status.st_mtime_ns))
    return tuple(sorted(found))


def project_roots(env: ProjectEnv, launch: Launch) -> list[str]:
    """The folders a sample's project modules are loaded from (its tree, where the tests see it, and the cached
    source its links lead to): their classes may cross between the judge and the candidate."""
    return list(dict.fromkeys(str(path) for path in (launch.view.tree_at, launch.root, *launch.view.aliases,
                                                     env.source_root)))


def _judge_only(tests: bytes | None) -> tuple[str, ...]:
    """pytest's arguments for a judge, which holds no code of the candidate's, where the problem has a test
    module of its own (None: the project's own suite, whose conftest files' plugins may hook any phase of any
    test): a test with no fixture and no mark runs with the hooks and reports of its call alone
    (``repoexec_inner._Recorder._run_plain``); and where the module asks for no ``caplog``, no logging plugin (a
    handler set up and torn down at every phase of every test). Output is still captured at the descriptors, not
    at Python's level alone: code that asks ``sys.stdout`` for its descriptor (httpie's, as its tests run) fails
    under pytest's Python-level capture. Part of the key of the judge's decision on the problem, as its code is."""
    if tests is None:
        return ()
    return ("--repoexec-plain-protocol", *(("-p", "no:logging") if b"caplog" not in tests else ()))


@functools.cache
def _judge_code() -> str:
    """What decides whether a problem can be judged apart, besides the problem: a change asks every one again."""
    runtime = Path(__file__).with_name("runtime")
    return hashlib.sha256(b"".join((runtime / name).read_bytes() for name in (
        "repoexec_judge.py", "repoexec_serve.py", "repoexec_wire.py", "repoexec_futures.py", "repoexec_mirror.py",
        "repoexec_inner.py"))).hexdigest()


def _first_difference_timed(runs: list[SampleRun], differ: list[str]) -> bool:
    """Whether the first test whose outcome differs (in the order the runs ran them) went past its time limit
    in either run: a difference a loaded host can make. The later ones may follow from it (a candidate's
    process stuck past its limit stops the judge's session); a first difference of another kind is the split's."""
    order = {name: index for index, name in enumerate(dict.fromkeys(test.name for run in runs for test in run.tests))}
    first = min(differ, key=lambda name: order.get(name, len(order)), default=None)
    return any(test.name == first and test.error_type == ErrorType.TIMEOUT for run in runs for test in run.tests)


def _outcomes(run: SampleRun) -> dict[str, str]:
    """Each test's outcome, and each collection error, by name: what the reference must get both ways."""
    found = {test.name: test.outcome for test in run.tests}
    found.update({f"collect {error.name}": "error" for error in run.collect_errors})
    return found


def seen_root(env: ProjectEnv) -> Path:
    """Where a confined sample sees its project's root (its tests' rootdir)."""
    return Path(env.project.mount or env.project.workdir or SAMPLE)


def _signal_of(returncode: int, confined: bool) -> int | None:
    """The signal the test process died of: bubblewrap passes it on as 128 + N, subprocess as -N."""
    if returncode < 0:
        return -returncode
    return returncode - 128 if confined and 128 < returncode < 128 + 65 else None


def _read_results(watched: Watched, token: str, confined: bool, duration: float) -> SampleRun:
    """The run as its stream tells it, believed only as far as the stream proves itself (the token, the order
    of records, nothing after the end) and agrees with how the process ended. Without a Finish record the
    session did not end, but every test that reported keeps its outcome; the test the process died in counts
    as failed."""
    records, tampered = _records(watched.stream, token)
    stopped = watched.stopped or _SIGNAL_LIMITS.get(_signal_of(watched.returncode, confined))
    timed_out = stopped is ErrorType.TIMEOUT
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
    if finish is not None and finish.exitstatus != watched.returncode and not stopped and not tampered:
        tampered = f"the session ended with status {finish.exitstatus}, its process with {watched.returncode}"
    for nodeid, when in last_phase.items():
        if when == "teardown" or tests[nodeid].outcome in ("failed", "error"):
            continue
        if finish is not None:  # pytest.exit stopped the session inside the test: it did not run to its end
            del tests[nodeid]
        else:
            tests[nodeid] = _died_in(tests[nodeid], when, stopped)
    return SampleRun(
        tests=tuple(tests.values()),
        collect_errors=tuple(collect_errors),
        finished=finish is not None and not stopped and not tampered,
        timed_out=timed_out,
        returncode=watched.returncode,
        output=watched.output,
        duration=duration,
        deselected=collected.deselected if collected else 0,
        collected=collected.collected if collected else None,
        rerun_outcomes=tuple(rounds[number] for number in sorted(rounds)),
        unstable=tuple((test, site) for test, site in finish.unstable) if finish else (),
        captures=tuple(finish.captures) if finish else (),
        coverage=finish.coverage if finish else None,
        stopped=stopped,
        tampered=tampered,
        forks_refused=watched.forks_refused,
        phases=_phases(watched.phases) | ({"warm start": round(watched.warm_start, 6)} if watched.warm_start else {}),
        cpu=dict(watched.cpu),
    )


_PHASES = (("started", "start-up"), ("collected", "collection"), ("finished", "tests"), ("exited", "exit"))


def _phases(marks: dict[str, float]) -> dict[str, float]:
    """Seconds in each phase, from when each kind of record came: start-up (the sandbox or the fork, the
    interpreter, pytest), collection (the test module and the project's imports), tests, exit. A phase whose
    record never came is counted in the next one; but a session that collected and never finished (stopped at
    its limit, or its process died) was in its tests until it ended, not in its exit."""
    if "finished" not in marks and "collected" in marks and "exited" in marks:
        marks = {**marks, "finished": marks["exited"]}
    durations, previous = {}, 0.0
    for mark, name in _PHASES:
        if mark in marks:
            durations[name] = round(max(marks[mark] - previous, 0.0), 6)
            previous = marks[mark]
    return durations


def _records(stream: bytes, token: str) -> tuple[list[protocol.Record], str | None]:
    """(the stream's records, why it cannot be believed or None). Only the test process writes the stream, so a
    line that is not a record, a record out of its place, or an end without the run's token was written by the
    code under test: the records before it stand, and the sample is failed as tampered with. A stream of
    another schema raises SchemaMismatch."""
    records: list[protocol.Record] = []
    if len(stream) >= _STREAM_LIMIT:
        return records, f"more than {_STREAM_LIMIT >> 20} MiB of records"
    state = "collecting"  # then "running", then "finished"
    try:
        for record in protocol.read(io.StringIO(stream.decode("utf-8", "replace"))):
            kind = type(record)
            if state == "finished" or (kind is protocol.Start and records):
                return records, f"a {kind.__name__} record after the session's end or start"
            if kind in (protocol.Report, protocol.RoundOutcome) and state != "running":
                return records, f"a {kind.__name__} record before collection ended"
            if kind in (protocol.Collected, protocol.Finish):
                if record.token != token:
                    return records, f"a {kind.__name__} record without the run's token"
                state = "running" if kind is protocol.Collected else "finished"
            records.append(record)
    except protocol.SchemaMismatch:
        raise
    except protocol.ProtocolError as exc:
        return records, f"a line that is not a record: {exc}"
    return records, None


def _name(nodeid: str) -> str:
    return nodeid.rpartition("::")[2]


def _fold(test: TestOutcome | None, report: protocol.Report) -> TestOutcome:
    """A test's outcome with one more of its phases: the first failure decides, a skip counts unless one did."""
    if test is None:
        test = TestOutcome(_name(report.nodeid), "passed")
    duration = test.duration + report.duration  # one new outcome a record (``replace`` cost a tenth of a read)
    if report.outcome == "skipped" and test.outcome == "passed":
        return TestOutcome(test.name, "skipped", test.error_type, message=report.message, longrepr=test.longrepr,
                           duration=duration)
    if report.outcome == "failed" and test.outcome in ("passed", "skipped"):
        return TestOutcome(test.name, "failed" if report.when == "call" else "error",
                           error_type_of(report.error_type), message=report.message, longrepr=report.longrepr,
                           duration=duration)
    return TestOutcome(test.name, test.outcome, test.error_type, message=test.message, longrepr=test.longrepr,
                       duration=duration)


def _died_in(test: TestOutcome, last_phase: str, stopped: ErrorType | None) -> TestOutcome:
    """The test the process died in (it reported no teardown): not passed, whatever its phases said."""
    kind, why = (
        (stopped, f"the sample was stopped during this test: {stopped}") if stopped
        else (ErrorType.EARLY_EXIT, "the test process ended during this test")
    )
    return replace(test, outcome="error" if last_phase == "call" else "failed", error_type=kind, message=why)


def candidate_lines(module_source: str, problem: Problem) -> str | None:
    """FIRST-LAST: the lines of the entry point's definition in the module (the candidate's code, which the
    inner plugin's audit hook watches), or None where it cannot be found (the whole module is watched)."""
    try:
        definition = syntax.find_definition(module_source, problem.entry_point, problem.kind)
    except syntax.DefinitionNotFound:
        return None
    data = module_source.encode("utf-8")
    first, last = (data.count(b"\n", 0, offset) + 1 for offset in (definition.start_byte, definition.end_byte))
    return f"{first}-{last}"


def tests_package_root(env: ProjectEnv, focal: Path) -> Path:
    """The folder pytest's default import mode puts on sys.path for tests beside the focal module (the first one
    up without an ``__init__.py``), relative to the source root: the focal module is imported from it by name."""
    base = focal.parent
    while base != Path() and (env.source_root / base / "__init__.py").is_file():
        base = base.parent
    return base


def masked_references(env: ProjectEnv, focal: Path, content: bytes) -> tuple[tuple[Path, bytes], ...]:
    """Every copy of the reference in a sample's reach (``reference_copies``) shown with ``content`` in its place
    (their bytecode empty)."""
    return tuple((path, content if path.suffix == ".py" else b"") for path in reference_copies(env, focal))


@functools.lru_cache(maxsize=256)
def reference_copies(env: ProjectEnv, focal: Path) -> tuple[Path, ...]:
    """Every file in a sample's reach that holds the focal module as the project has it (the reference in
    place): the cached source's, the release's copy installed in the virtualenv, any other copy with the
    same bytes, and their bytecode. The sandbox shows them with the sample's own module in their place."""
    original = env.source_root / focal
    content = original.read_bytes()
    installed = sorted(env.python.parent.parent.glob("lib/python*/site-packages"))
    module = original.relative_to(env.import_root) if original.is_relative_to(env.import_root) else None
    copies = [original, *(site / module for site in installed if module is not None)]
    for folder in (env.source_root, *installed):
        for path in folder.rglob(original.name):
            if path.is_file() and path.stat().st_size == len(content) and path.read_bytes() == content:
                copies.append(path)
    found = [path for path in dict.fromkeys(copies) if path.is_file()]
    bytecode = [pyc for path in found for pyc in sorted((path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"))]
    return tuple(found + bytecode)


def sample_tree(base: Path, files: dict[Path, bytes]) -> Tree:
    """``base`` with ``files`` written in, without copying or touching ``base``: every folder on the way to a
    written file is a real folder, everything else a symlink into ``base``."""
    folders: list[Path] = []
    links: list[tuple[Path, Path]] = []

    def walk(source: Path | None, at: Path, written: dict[Path, bytes]) -> None:
        heads: dict[str, dict[Path, bytes]] = {}
        for path in written:
            if len(path.parts) > 1:
                heads.setdefault(path.parts[0], {})[Path(*path.parts[1:])] = written[path]
        for entry in sorted(os.scandir(source), key=lambda entry: entry.name) if source else ():
            if entry.name in heads:
                folders.append(at / entry.name)
                walk(Path(entry.path), at / entry.name, heads.pop(entry.name))
            elif Path(entry.name) not in written:
                links.append((at / entry.name, Path(entry.path)))
        for name, rest in heads.items():  # folders that only the written files need
            folders.append(at / name)
            walk(None, at / name, rest)

    walk(base, Path(), files)
    return Tree(tuple(folders), tuple(links), tuple(files.items()))
