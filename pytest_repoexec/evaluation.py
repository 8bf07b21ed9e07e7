"""One sample from completion to result: candidate, candidate module, run, verdict. Free of pytest items, so
that anything that needs a sample judged (a debugging round, a validation pass) calls the same code."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping
from typing import Any
from dataclasses import dataclass

from .cgroups import SampleSetupError
from .candidate import (Candidate, candidate_diff, candidate_module, dependency_share, focal_module,
                        make_candidate, module_syntax_error)
from .decoy import Decoys
from .environment import ProjectEnv
from .executor import Executor, RunOptions, SampleRun
from .problem import Problem
from .results import SampleResult, first_failure, verdict
from .store import Pack, ResultStore
from .runtime.repoexec_protocol import ErrorType

REFERENCE = -1  # the sample index of the reference's own run (the yardstick of relative timeouts)


@dataclass(frozen=True)
class Evaluation:
    result: SampleResult
    problem: Problem
    completion: str
    run: SampleRun | None  # None when the completion never got as far as running, or was read back
    durations: dict[str, float] | None = None  # each test's time in the run (this one, or the stored one)
    made: Candidate | None = None  # the candidate, where judging it needed it put together

    @functools.cached_property
    def candidate(self) -> Candidate:
        """Put together only to be shown: a verdict read back from the store needs none."""
        return self.made or make_candidate(self.problem, self.completion)


def evaluate(
    problem: Problem, sample: int, completion: str, env: ProjectEnv, executor: Executor,
    store: ResultStore | None = None, fail_fast: bool = False, test_timeouts: Mapping[str, float] | None = None,
    decoys: Decoys | None = None,
) -> Evaluation:
    """The sample's verdict: from the result store where the same module was judged before, else run (up to
    its first failing test with ``fail_fast``: enough for pass@k, not for TR; each test within its own limit
    from ``test_timeouts`` where it has one); a pass then stands only if the sample fails its ``decoys``."""
    options = _options(fail_fast, test_timeouts)
    if store is not None:  # by the completion's text: no candidate module to put together and hash
        environment, variant, alias = _aliased(problem, completion, env, getattr(executor, "judge", "apart"),
                                                store, options)
        found = store.through_alias(alias)
        if found is not None:
            return _read_back(problem, sample, completion, None, *found)
    candidate = make_candidate(problem, completion)
    if candidate.error_type is not None:
        return _judged(problem, sample, candidate, None, fail_fast)
    original = focal_module(problem, env)
    module = candidate_module(problem, original, candidate)
    if store is None:
        return _run(problem, sample, candidate, module, original, env, executor, options, decoys)
    key = store.key(problem, environment, module, variant)
    with store.slot(key) as slot:
        if slot.stored is not None:
            store.put_alias(alias, key, candidate.shapes(problem))
            return _read_back(problem, sample, completion, candidate, slot.stored, slot.durations)
        evaluation = _run(problem, sample, candidate, module, original, env, executor, options, decoys)
        slot.put(evaluation.result.to_dict(), evaluation.durations or {})
        store.put_alias(alias, key, evaluation.result.shapes)
        state = "replaced" if slot.unreadable else "evaluated"
        return dataclasses.replace(evaluation, result=dataclasses.replace(evaluation.result, store=state))


def without_running(
    problem: Problem, sample: int, completion: str, env: ProjectEnv, judge: str, store: ResultStore,
    fail_fast: bool = False, test_timeouts: Mapping[str, float] | None = None, pack: Pack | None = None,
) -> Evaluation | None:
    """The verdict ``evaluate`` gives where nothing need run for it: the result store's, found under the
    completion's own text (its alias; in the problem's ``pack`` first), or that of a completion that makes no
    candidate; else None. ``judge``: the run's mode (``executor.JUDGE_MODES``; no executor is made: its sandbox
    is not checked)."""
    options = _options(fail_fast, test_timeouts)
    found = store.through_alias(_aliased(problem, completion, env, judge, store, options)[2], pack)
    if found is not None:
        return _read_back(problem, sample, completion, None, *found)
    candidate = make_candidate(problem, completion)
    return _judged(problem, sample, candidate, None, fail_fast) if candidate.error_type is not None else None


def _options(fail_fast: bool, test_timeouts: Mapping[str, float] | None) -> RunOptions:
    return RunOptions(first_failure=fail_fast, test_timeouts=tuple(sorted((test_timeouts or {}).items())))


def _aliased(problem: Problem, completion: str, env: ProjectEnv, judge: str, store: ResultStore,
             options: RunOptions) -> tuple[str, dict[str, Any], str]:
    """(the environment's name, the run's variant, the completion's alias): what the store's keys take. A
    sample stopped at its first failing test has no TR: it is stored apart from one that ran every test."""
    environment = environment_name(env)
    variant = {"test_timeouts": options.test_timeouts, "judge": judge, "first_failure": options.first_failure}
    return environment, variant, store.alias(problem, environment, completion, variant)


def environment_name(env: ProjectEnv) -> str:
    """The environment as the store's keys name it: its folder, whose name covers what it was built from."""
    return env.python.parent.parent.name


def _read_back(problem: Problem, sample: int, completion: str, candidate: Candidate | None,
               stored: Mapping[str, Any], durations: dict[str, float] | None,
               shapes: list[str] | None = None) -> Evaluation:
    """A stored verdict as this sample's: the sample that was run is the one it copies (unless that is itself).
    The shapes are this completion's, not the stored sample's: kept in its alias, else found again."""
    result = SampleResult.from_dict(stored)
    copied = result.sample if result.sample not in (sample, REFERENCE) else result.copied_from
    if shapes is None:
        candidate = candidate or make_candidate(problem, completion)
        shapes = candidate.shapes(problem)
    result = dataclasses.replace(result, sample=sample, copied_from=copied, store="read", shapes=shapes)
    return Evaluation(result, problem, completion, None, durations, candidate)


def _run(problem: Problem, sample: int, candidate: Candidate, module: str, original: str, env: ProjectEnv,
         executor: Executor, options: RunOptions, decoys: Decoys | None) -> Evaluation:
    """Run the candidate module, unless it does not parse; a pass is then checked against the decoy."""
    error = module_syntax_error(problem, original, candidate)
    if error is not None:
        candidate = dataclasses.replace(candidate, error_type=ErrorType.SYNTAX_ERROR, error=error)
        return _judged(problem, sample, candidate, None, options.first_failure)
    try:
        run = executor.run(env, problem, module, options)
    except SampleSetupError:  # the host's failure, never the candidate's: once more, then the sample is not run
        run = executor.run(env, problem, module, options)
    evaluation = _judged(problem, sample, candidate, run, options.first_failure)
    if decoys is None or not evaluation.result.passed or evaluation.result.judge == "apart":
        return evaluation  # apart, the candidate could reach nothing of its tests: there is nothing to check
    started = time.perf_counter()
    state, why = decoys.check(problem, env, executor, module, original, options)
    phases = {**evaluation.result.phases, "decoy": time.perf_counter() - started}  # what the check cost this sample
    result = dataclasses.replace(evaluation.result, decoy=state, phases=phases)
    if why is not None:
        result = dataclasses.replace(result, passed=False, tests_passed=0, error_type=ErrorType.TAMPERED,
                                     failed_test=None, error_log=f"Tampered: {why}")
    return dataclasses.replace(evaluation, result=result)


def _judged(problem: Problem, sample: int, candidate: Candidate, run: SampleRun | None, fail_fast: bool) -> Evaluation:
    """The result of a candidate that ran (or that could not: ``run`` is None and the candidate says why)."""
    passed_tests, error_type = verdict(run, problem.test_count) if run else (0, candidate.error_type)
    failed_test, error_log = None, None
    if error_type is not None:
        failed_test, error_log = first_failure(run, error_type) if run else (None, f"{error_type}: {candidate.error}")
    result = SampleResult(
        problem=problem.id,
        project=problem.project.name,
        sample=sample,
        passed=error_type is None,
        tests_passed=passed_tests,
        tests_total=problem.test_count - (run.deselected if run else 0),
        error_type=error_type,
        dir=dependency_share(problem, candidate),
        duration=run.duration if run else 0.0,
        known_failure=problem.known_failure,
        empty=candidate.empty,
        shapes=candidate.shapes(problem),
        failed_test=failed_test,
        error_log=error_log,
        tr_measured=not (fail_fast and error_type is not None),
        phases=run.phases if run else {},
        cpu=run.cpu if run else {},
        diff=candidate_diff(problem, candidate),
        judge=run.judge if run else None,
    )
    durations = {test.name: test.duration for test in run.tests} if run else None
    return Evaluation(result, problem, candidate.completion, run, durations, candidate)
