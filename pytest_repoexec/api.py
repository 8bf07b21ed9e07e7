"""The judge as a library call: open a problem set once, then score completions, one, a batch, or awaited.

A training loop scores hundreds of completions a step; starting a pytest session per batch would pay every
set-up again. ``ProblemSet`` keeps worker processes alive for its life, each with its own ``engine.Engine``
(environments, warm executor, zygotes, result store, decoys), as each xdist worker of a pytest run has one: a
sample gets the verdict the plugin's items would give it, through the same ``Engine.judge``. Samples of one
problem go to the worker that already holds its zygote where that does not leave another worker idle.

A failure of the host (a sample's sandbox or cgroup that could not be set up twice, an environment that could
not be built, a worker process that died) is no verdict: ``Verdict.counts`` is False and ``reward`` is None
(TRL's "no reward"), never 0.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import threading
import uuid
import zlib
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .cgroups import ENGINE_ERROR, SampleSetupError
from .collection import ProblemLoader
from .environment import EnvironmentBuildError, default_cache_dir
from .executor import JUDGE_MODES, NotJudgedApart
from .problem import ManifestError, Problem, find_manifests
from .prompts import build_prompt
from .results import SampleResult
from .sandbox import LIMIT_FIELDS, Limits, SandboxUnavailable, make_sandbox
from .settings import Mode, Settings

RewardShape = Literal["pass", "tr"]
NOT_JUDGED = "NotJudged"  # a problem the run's mode cannot judge (``executor.NotJudgedApart``): now or later


class UnknownProblem(KeyError):
    """A problem id that names no problem of the set (the message names the id)."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Verdict:
    """One completion's verdict: the plugin's ``SampleResult``, or why the host could not give one."""

    problem: str
    result: SampleResult | None  # None: not judged, for the host's failure or the problem's (``engine_error``)
    engine_error: str | None = None

    @property
    def counts(self) -> bool:
        """Whether it may reward: judged, on a problem whose reference passes here."""
        return self.result is not None and self.result.known_failure is None

    @property
    def passed(self) -> bool | None:
        return self.result.passed if self.result is not None else None

    @property
    def tests_passed(self) -> int | None:
        return self.result.tests_passed if self.result is not None else None

    @property
    def tests_total(self) -> int | None:
        return self.result.tests_total if self.result is not None else None

    @property
    def tr(self) -> float | None:
        """The share of the problem's tests passed; None where it was not measured (fail-fast) or not judged."""
        result = self.result
        if result is None or not result.tr_measured or not result.tests_total:
            return None
        return result.tests_passed / result.tests_total

    @property
    def error_type(self) -> str | None:
        if self.result is None:
            return NOT_JUDGED if (self.engine_error or "").startswith(f"{NOT_JUDGED}:") else ENGINE_ERROR
        return None if self.result.error_type is None else str(self.result.error_type)

    @property
    def lasting(self) -> bool:
        """Whether asking again cannot make it count: a known failure, or a problem the mode cannot judge (the
        host's failure may pass)."""
        return self.result is not None and self.result.known_failure is not None or self.error_type == NOT_JUDGED

    def reward(self, shape: RewardShape = "pass", unjudged: float | None = None) -> float | None:
        """``pass``: 1 or 0; ``tr``: the share of tests passed. A verdict that does not count is ``unjudged``
        (None by default: the trainer masks it; a number where the trainer cannot take None)."""
        if not self.counts:
            return unjudged
        if shape == "pass":
            return 1.0 if self.passed else 0.0
        if shape == "tr":
            tr = self.tr
            return unjudged if tr is None else tr
        raise ValueError(f"reward shape: {shape!r} is not one of pass, tr")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: the summary a caller reads, and the whole result."""
        result = self.result
        return {
            "problem": self.problem, "counts": self.counts, "passed": self.passed, "tr": self.tr,
            "tests_passed": self.tests_passed, "tests_total": self.tests_total,
            "error_type": self.error_type, "engine_error": self.engine_error,
            "result": result.to_dict() if result else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        result = data.get("result")
        return cls(data["problem"], SampleResult.from_dict(result) if result else None, data.get("engine_error"))


def settings_for(
    cache: Path | str | None = None, *, workers: int = 1, executor: str = "warm", sandbox: str = "bwrap",
    judge: str = "apart", decoy: bool = True, test_timeout: float = 5.0, sample_timeout: float = 120.0,
    fail_fast: bool = False, timeout_factor: float = 10.0, min_timeout: float = 1.0, fresh: bool = False,
    warm_processes: int = 4, zygotes: int = 8, accept_no_process_limit: bool = False,
    limits: dict[str, int] | None = None, description: str = "detailed",
) -> Settings:
    """The ``Settings`` a pytest run with the matching ``--repoexec-*`` options reads (their defaults alike)."""
    unknown = sorted(set(limits or {}) - set(LIMIT_FIELDS))
    if unknown:
        raise ValueError(f"limits: {', '.join(unknown)} is not a limit ({', '.join(LIMIT_FIELDS)})")
    checks = {  # keyword: (value, allowed, the pytest run's option)
        "workers": (workers, workers >= 1, "-n"),
        "executor": (executor, executor in ("warm", "process"), "--repoexec-executor"),
        "sandbox": (sandbox, sandbox in ("bwrap", "none"), "--repoexec-sandbox"),
        "judge": (judge, judge in JUDGE_MODES, "--repoexec-judge"),
        "test_timeout": (test_timeout, test_timeout > 0, "--repoexec-timeout"),
        "sample_timeout": (sample_timeout, sample_timeout > 0, "--repoexec-sample-timeout"),
        "min_timeout": (min_timeout, min_timeout > 0, "--repoexec-min-timeout"),
        "timeout_factor": (timeout_factor, timeout_factor >= 0, "--repoexec-timeout-factor"),
        "warm_processes": (warm_processes, warm_processes >= 1, "--repoexec-warm-processes"),
        "zygotes": (zygotes, zygotes >= 0, "--repoexec-zygotes"),
    }
    for name, (value, allowed, option) in checks.items():
        if not allowed:
            raise ValueError(f"{name}: {value!r} is not allowed (as {option})")
    return Settings(
        mode=Mode.SCORE, model="api", samples=None, cache=Path(cache).resolve() if cache else default_cache_dir(),
        report=None, html=None, test_timeout=test_timeout, sample_timeout=sample_timeout, debug_rounds=0,
        context=description, workers=workers, sandbox=sandbox, executor=executor, judge=judge,
        warm_processes=warm_processes, zygotes=zygotes, fresh=fresh, decoy=decoy,
        accept_no_process_limit=accept_no_process_limit, fail_fast=fail_fast, timeout_factor=timeout_factor,
        min_timeout=min_timeout, limits=Limits(**(limits or {})),
    )


def load_problems(paths: Iterable[Path | str], description: str = "detailed") -> dict[str, Problem]:
    """Every problem under ``paths`` by id; a manifest that cannot load, or an id found twice, is an error
    naming the file."""
    loader, problems, paths = ProblemLoader(), {}, [Path(path) for path in paths]
    manifests = find_manifests(paths)
    for manifest in manifests:
        problem = loader.load(manifest, description)
        if problem.id in problems:
            raise ManifestError(manifest, "(id)", f"{problem.id} is also {problems[problem.id].manifest}")
        problems[problem.id] = problem
    if not problems:
        raise ValueError(f"paths: no problem.toml under {', '.join(map(str, paths))}")
    return problems


def find_problem(problems: dict[str, Problem], problem_id: str) -> Problem:
    """A problem by its id, and only by its id: never a path."""
    try:
        return problems[problem_id]
    except (KeyError, TypeError):
        raise UnknownProblem(f"problem: {problem_id!r} is not a problem of this set") from None


def place(problem_ids: Sequence[str], load: list[int]) -> dict[str, int]:
    """Each problem's worker for a batch: all its samples on one (its zygote stays warm), the problems with the
    most samples first, each to the worker with the least to do (``load``: what each has already)."""
    sizes: dict[str, int] = {}
    for problem_id in problem_ids:
        sizes[problem_id] = sizes.get(problem_id, 0) + 1
    placed = {}
    for problem_id, size in sorted(sizes.items(), key=lambda item: -item[1]):
        placed[problem_id] = min(range(len(load)), key=lambda index: load[index])
        load[placed[problem_id]] += size
    return placed


class ProblemSet:
    """Problems opened once for scoring; ``close`` (or leaving its ``with``) stops its workers. Thread-safe:
    ``submit`` may be called from any thread, and ``ascore`` from any event loop."""

    def __init__(self, paths: Iterable[Path | str], settings: Settings | None = None, **options: Any) -> None:
        if settings is not None and options:
            raise TypeError("give settings or options, not both")
        self.settings = settings or settings_for(**options)
        self.problems = load_problems(paths, self.settings.context)
        try:
            make_sandbox(self.settings.sandbox)  # one that cannot run here stops the set before any worker starts
        except SandboxUnavailable as exc:
            raise ValueError(f"sandbox: {self.settings.sandbox}: {exc}") from None
        self.run = uuid.uuid4().hex  # one run in the result store, over all its workers
        self._lock = threading.Lock()
        self._workers = [self._start() for _ in range(self.settings.workers)]
        self._load = [0] * len(self._workers)  # samples submitted to each worker and not yet judged
        self._closed = False

    def __enter__(self) -> ProblemSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def problem(self, problem_id: str) -> Problem:
        return find_problem(self.problems, problem_id)

    def prompt(self, problem_id: str, style: str = "base", level: str = "full") -> str:
        """The paper's prompt of a problem as plain text (``prompts.build_prompt``)."""
        return build_prompt(self.problem(problem_id), style, level).text

    def submit(self, problem_id: str, completion: str, sample: int = 0, worker: int | None = None, *,
               tr: bool = True) -> Future[Verdict]:
        """Start judging one completion; the future's verdict is never an exception for the host's failure.
        ``tr=False``: its share of tests passed is not asked for (a reward of pass or fail), so a failing sample
        stops at its first failing test, as with ``fail_fast``: the same verdict and error type, ``tr`` None."""
        problem = self.problem(problem_id)
        if not isinstance(completion, str):
            raise TypeError(f"completion: expected a string, got {type(completion).__name__}")
        outer: Future[Verdict] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("this ProblemSet is closed")
            chosen = self._place(problem_id) if worker is None else worker
            self._load[chosen] += 1
        self._send(outer, chosen, problem, completion, sample, not tr, retried=False)
        return outer

    def score(self, problem_id: str, completion: str, sample: int = 0, *, tr: bool = True) -> Verdict:
        return self.submit(problem_id, completion, sample, tr=tr).result()

    def score_batch(self, samples: Sequence[tuple[str, str]], *, tr: bool = True) -> list[Verdict]:
        """Verdicts of (problem id, completion) pairs, in their order; each problem's samples on one worker,
        the problems spread so that the workers' shares are even. ``tr``: as ``submit``'s."""
        return [future.result() for future in self.submit_batch(samples, tr=tr)]

    def submit_batch(self, samples: Sequence[tuple[str, str]], *, tr: bool = True) -> list[Future[Verdict]]:
        for problem_id, _ in samples:
            self.problem(problem_id)  # every id checked before any sample starts
        placed = place([problem_id for problem_id, _ in samples], list(self._load))
        seen: dict[str, int] = {}
        futures = []
        for problem_id, completion in samples:
            seen[problem_id] = seen.get(problem_id, -1) + 1
            futures.append(self.submit(problem_id, completion, seen[problem_id], placed[problem_id], tr=tr))
        return futures

    async def ascore(self, problem_id: str, completion: str, sample: int = 0, *, tr: bool = True) -> Verdict:
        return await asyncio.wrap_future(self.submit(problem_id, completion, sample, tr=tr))

    async def ascore_batch(self, samples: Sequence[tuple[str, str]], *, tr: bool = True) -> list[Verdict]:
        return list(await asyncio.gather(*map(asyncio.wrap_future, self.submit_batch(samples, tr=tr))))

    def close(self) -> None:
        """Stop the workers once every submitted sample is judged (their warm processes end with them)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for pool in self._workers:
            try:
                pool.submit(_close_worker).result()
            except BrokenProcessPool:
                pass
            pool.shutdown(wait=True)

    def _start(self) -> concurrent.futures.ProcessPoolExecutor:
        # spawned, not forked: the caller may hold threads (an event loop, a web server) that a fork would copy
        return concurrent.futures.ProcessPoolExecutor(1, multiprocessing.get_context("spawn"), _start_worker,
                                                      (self.settings, self.run))

    def _place(self, problem_id: str) -> int:
        """The least loaded worker; among equals the problem's own (its zygote stays warm there)."""
        home = zlib.crc32(problem_id.encode("utf-8")) % len(self._workers)
        least = min(self._load)
        return home if self._load[home] == least else self._load.index(least)

    def _send(self, outer: Future[Verdict], worker: int, problem: Problem, completion: str, sample: int,
              fail_fast: bool, retried: bool) -> None:
        pool = self._workers[worker]
        try:
            inner = pool.submit(_judge, str(problem.manifest), sample, completion, fail_fast)
        except BrokenProcessPool as exc:
            inner = Future()
            inner.set_exception(exc)

        def done(inner: Future) -> None:
            exc = inner.exception()
            if isinstance(exc, BrokenProcessPool) and not retried:  # the worker died: a fresh one, once
                self._restart(worker, pool)
                self._send(outer, worker, problem, completion, sample, fail_fast, retried=True)
                return
            with self._lock:
                self._load[worker] -= 1
            if exc is not None:
                verdict = Verdict(problem.id, None, f"{ENGINE_ERROR}: the judging process failed: {exc!r}")
            else:
                verdict = Verdict.from_dict(inner.result())
            outer.set_result(verdict)

        inner.add_done_callback(done)

    def _restart(self, worker: int, broken: concurrent.futures.ProcessPoolExecutor) -> None:
        with self._lock:
            if self._closed or self._workers[worker] is not broken:
                return  # closing, or another sample of the same worker already restarted it
            self._workers[worker] = self._start()


class Judge:
    """A judging process's side: one ``Engine`` for the process's life, as an xdist worker has one (a
    ``ProblemSet``'s worker holds one, and so does each Ray actor of ``raypool``)."""

    def __init__(self, settings: Settings, run: str) -> None:
        from .engine import Engine

        self.engine, self.loader, self.description = Engine(settings, run), ProblemLoader(), settings.context

    def judge(self, manifest: str, sample: int, completion: str, fail_fast: bool = False) -> dict[str, Any]:
        """A sample's verdict as ``Verdict.to_dict`` writes it; the host's failure as no verdict."""
        problem = self.loader.load(Path(manifest), self.description)
        try:
            result = self.engine.judge(problem, sample, completion, fail_fast).result
        except SampleSetupError as exc:
            return Verdict(problem.id, None, exc.describe()).to_dict()
        except NotJudgedApart as exc:
            return Verdict(problem.id, None, f"{NOT_JUDGED}: {exc}").to_dict()
        except EnvironmentBuildError as exc:
            return Verdict(problem.id, None, f"{ENGINE_ERROR}: the project's environment could not be built: {exc}"
                           ).to_dict()
        return Verdict(problem.id, result).to_dict()

    def close(self) -> None:
        self.engine.close()


_worker: dict[str, Judge] = {}  # a ProblemSet's worker process: its judge


def _start_worker(settings: Settings, run: str) -> None:
    _worker["judge"] = Judge(settings, run)


def _judge(manifest: str, sample: int, completion: str, fail_fast: bool) -> dict[str, Any]:
    return _worker["judge"].judge(manifest, sample, completion, fail_fast)


def _close_worker() -> None:
    judge = _worker.pop("judge", None)
    if judge is not None:
        judge.close()


def open_problems(paths: Iterable[Path | str] | Path | str, **options: Any) -> ProblemSet:
    """``ProblemSet`` over a folder (or several), with the ``--repoexec-*`` options as keywords
    (``settings_for``): ``with open_problems("problems", workers=2) as problems: problems.score(id, code)``."""
    return ProblemSet([paths] if isinstance(paths, (str, Path)) else paths, **options)

