"""The one path from (problem, completion) to a verdict, for one process: its environments, executor, result
store, decoys and relative time limits. The pytest plugin's items (``scoring``) and the library's calls
(``api``) are two front doors onto it, so that a sample gets the same verdict through either."""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Sequence

from .decoy import Decoys
from .environment import EnvironmentBuildError, Environments, ProjectEnv
from .evaluation import REFERENCE, Evaluation, environment_name, evaluate, without_running
from .executor import SubprocessExecutor
from .problem import Problem
from .settings import Settings, make_executor
from .store import Pack, ResultStore


class Engine:
    """Made lazily: the executor (its sandbox checked) on the first sample, the environments as their problems
    come. ``run`` names this run in the result store's entries. ``close`` stops the warm processes."""

    def __init__(self, settings: Settings, run: str, environments: Environments | None = None) -> None:
        self.settings, self.run = settings, run
        self.environments = environments or Environments(settings.cache)
        self._environment_lock = threading.Lock()
        self._timeouts: dict[str, dict[str, float] | None] = {}  # relative test timeouts, by problem id

    @functools.cached_property
    def executor(self) -> SubprocessExecutor:
        return make_executor(self.settings)

    def close(self) -> None:
        if "executor" in vars(self):  # made: its warm processes stop now
            self.executor.close()

    def judge(self, problem: Problem, sample: int, completion: str, fail_fast: bool = False) -> Evaluation:
        """The sample's verdict, under the run's limits (a reference is its own yardstick: no relative limits).
        ``fail_fast``: this sample stops at its first failing test even where the run does not (its caller asks
        for no TR: a reward of pass or fail)."""
        limits = None if completion == problem.reference else self.relative_timeouts(problem)
        return evaluate(problem, sample, completion, self.environment(problem), self.executor, self.store,
                        self.settings.fail_fast or fail_fast, limits, self.decoys)

    def stored(self, problem: Problem, samples: Sequence[tuple[int, str]]) -> list[Evaluation] | None:
        """The verdicts of these samples (index, completion) of the problem where the result store holds them
        all (and their limits' reference's), else None: nothing is run. Read through the problem's pack for
        them (one file), which is written where it did not yet hold them all. A project whose environment cannot
        be built has none stored (its samples then fail as they run, each saying why)."""
        try:
            env = self.environment(problem)
        except EnvironmentBuildError:
            return None
        pack = self.store.pack(problem, environment_name(env), samples)
        try:
            limits = self.relative_timeouts(problem, run=False, pack=pack)
        except NotStored:
            return None
        found = []
        for sample, completion in samples:
            evaluation = without_running(problem, sample, completion, env, self.settings.judge, self.store,
                                         self.settings.fail_fast, None if completion == problem.reference else limits,
                                         pack)
            if evaluation is None:
                return None
            found.append(evaluation)
        self.store.write_pack(pack)
        return found

    def relative_timeouts(self, problem: Problem, run: bool = True, pack: Pack | None = None) -> dict[str, float] | None:
        """Each test's own limit, as EvalPlus sets them: the reference's time on it times
        --repoexec-timeout-factor, at least --repoexec-min-timeout, never above the run's limit. The reference
        runs once for its times (its verdict is kept in the store, and is also the reference sample's); a test
        it did not pass keeps the run's limit. None: no relative timeouts. ``run=False``: only from a verdict
        the store holds (``NotStored`` where it holds none), looked for in ``pack`` first (and read again with
        one, so that the pack holds it)."""
        settings = self.settings
        if not settings.timeout_factor:
            return None
        if problem.id not in self._timeouts or pack is not None:
            env = self.environment(problem)
            reference = evaluate(problem, REFERENCE, problem.reference, env, self.executor, self.store,
                                 settings.fail_fast, decoys=self.decoys) if run else \
                without_running(problem, REFERENCE, problem.reference, env, settings.judge, self.store,
                                settings.fail_fast, pack=pack)
            if reference is None:
                raise NotStored(problem.id)
            cap = problem.timeout or settings.test_timeout
            self._timeouts[problem.id] = {
                name: round(min(cap, max(settings.min_timeout, settings.timeout_factor * seconds)), 3)
                for name, seconds in (reference.durations or {}).items()
            } if reference.result.passed and reference.durations else None
        return self._timeouts[problem.id]

    @functools.cached_property
    def decoys(self) -> Decoys | None:
        """Every passing sample is checked against a decoy of its tests (``decoy``), unless the run said off."""
        return Decoys(self.settings.cache / "decoys") if self.settings.decoy else None

    @functools.cached_property
    def store(self) -> ResultStore:
        """Verdicts by content; the options that change a verdict are part of every key (fail-fast, which a sample
        may be given alone, is in each sample's: ``evaluation._aliased``)."""
        settings = self.settings
        context = {"test_timeout": settings.test_timeout, "sample_timeout": settings.sample_timeout,
                   "limits": dataclasses.asdict(settings.limits), "sandbox": settings.sandbox,
                   "decoy": settings.decoy}
        return ResultStore(settings.cache / "results", context, fresh=settings.fresh, run=self.run)

    def environment(self, problem: Problem) -> ProjectEnv:
        with self._environment_lock:  # debugging rounds judge in threads: one builds, the others wait
            return self.environments.get(problem.project)


class NotStored(LookupError):
    """A problem's reference has no verdict in the store: its samples' time limits need it run."""
