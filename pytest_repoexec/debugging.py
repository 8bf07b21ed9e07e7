"""Multi-round debugging, as the paper's Appendix F: every failing sample goes back to the model with the test
it fails and the error it got, and the model's one greedy answer takes its place; this repeats for a fixed
number of rounds. Answers are judged by the same ``evaluate`` as the items, so a round's verdicts mean what
the first run's do.

``DebugPhase`` runs the rounds on the controller once every item has run, and tells each finished round to
whoever listens, through the ``pytest_repoexec_round_finished`` hook (the results collector does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import pytest

from . import progress, syntax, transport
from .candidate import make_candidate
from .evaluation import Evaluation
from .generation import GenerationError
from .problem import Problem
from .prompts import Prompt, debug_prompt
from .results import SampleResult
from .settings import Settings

Judge = Callable[[Problem, int, str], Evaluation]  # (problem, sample, completion) -> its evaluation
SampleKey = tuple[str, int]  # (problem id, sample)


class Reviser(Protocol):
    """A generator that can also answer debugging prompts (the model generators can; replay cannot)."""

    def revise(self, prompts: Mapping[str, Prompt]) -> Mapping[str, str]:
        """One greedy answer to each prompt, by the prompt's name."""


@dataclass(frozen=True)
class Revision:
    round: int
    completion: str
    result: SampleResult


@dataclass(frozen=True)
class Round:
    number: int  # 0 is the first generation
    results: tuple[SampleResult, ...]  # every sample's standing after this round
    revised: int  # samples sent back to the model in this round
    fixed: int  # of which now pass


def run_rounds(
    rounds: int,
    problems: Mapping[str, Problem],
    start: Sequence[tuple[SampleResult, str]],
    reviser: Reviser,
    judge: Judge,
    level: str,
    workers: int = 1,
    announce: Callable[[str], None] = lambda line: None,
    shown: bool = False,
) -> Iterator[tuple[Round, list[Revision]]]:
    """Debug the failing samples of ``start`` (each result with its completion) for ``rounds`` rounds.

    Yields each round as it ends (round 0 is ``start`` itself) with the answers the model gave in it, so that
    a caller keeps the rounds already done when a later one cannot be asked. ``announce`` hears a line as each
    round starts; ``shown`` draws a bar of its judging.
    """
    standing: dict[SampleKey, tuple[SampleResult, str]] = {(r.problem, r.sample): (r, c) for r, c in start}
    yield Round(0, tuple(result for result, _ in standing.values()), 0, 0), []
    for number in range(1, rounds + 1):
        failing = [key for key, (result, _) in standing.items() if not result.passed]
        announce(f"debugging round {number}: {len(failing)} failing samples go back to the model")
        prompts = {_name(key): prompt_for(problems[key[0]], *standing[key], level) for key in failing}
        answers = reviser.revise(prompts) if prompts else {}

        def judged(key: SampleKey) -> Evaluation:
            evaluation = judge(problems[key[0]], key[1], answers[_name(key)])
            shown_bar.update()
            return evaluation

        with progress.bar(len(failing), f"debugging round {number}", "sample", shown and bool(failing)) as shown_bar, \
                ThreadPoolExecutor(max(1, workers)) as pool:
            evaluations = list(pool.map(judged, failing))
        revisions = []
        for key, evaluation in zip(failing, evaluations):
            standing[key] = (evaluation.result, evaluation.candidate.completion)
            revisions.append(Revision(number, evaluation.candidate.completion, evaluation.result))
        fixed = sum(evaluation.result.passed for evaluation in evaluations)
        yield Round(number, tuple(result for result, _ in standing.values()), len(failing), fixed), revisions


def prompt_for(problem: Problem, result: SampleResult, completion: str, level: str) -> Prompt:
    """The debugging prompt of one failing sample: its function, the test it failed first, the error log."""
    candidate = make_candidate(problem, completion)
    return debug_prompt(
        problem,
        level,
        solution=candidate.function or completion,
        test_case=failing_test(problem, result),
        error_log=result.error_log or result.error_type or "the tests failed",
    )


def failing_test(problem: Problem, result: SampleResult) -> str:
    """What a model is shown of the test a sample failed: that test's source; every test where none is named
    (a collection error or a timeout puts them all in question); the node ids of the project's suite, whose
    files the model never saw."""
    if problem.tests is None:
        return "\n".join(f"# {node}" for node in problem.suite)
    tests = problem.tests.read_text(encoding="utf-8")
    test_case = syntax.find_function(tests, result.failed_test.partition("[")[0]) if result.failed_test else None
    return test_case or tests


def _name(key: SampleKey) -> str:
    return f"{key[0]}#{key[1]}"


class Samples(Protocol):
    """What the debugging phase needs of the run it debugs (the scoring session)."""

    def problem(self, problem_id: str) -> Problem: ...

    def completion(self, problem_id: str, sample: int) -> str: ...

    def judge(self, problem: Problem, sample: int, completion: str) -> Evaluation: ...


class DebugPhase:
    """The controller's debugging rounds: after the items (which judge the first generation), before the
    session finishes and its report is written."""

    def __init__(self, settings: Settings, reviser: Reviser, samples: Samples) -> None:
        self.settings, self.reviser, self.samples = settings, reviser, samples
        self.first: dict[SampleKey, SampleResult] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = transport.sample_result(report)
        if result is not None and not result.known_failure:
            self.first[(result.problem, result.sample)] = result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> object:
        outcome = yield  # an interrupted loop raises here, and no round runs
        if not (session.config.option.collectonly or session.shouldstop or session.shouldfail):
            self._run(session.config)
        return outcome

    def _run(self, config: pytest.Config) -> None:
        start = [(result, self.samples.completion(*key)) for key, result in sorted(self.first.items())]
        problems = {result.problem: self.samples.problem(result.problem) for result, _ in start}
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        rounds = run_rounds(
            self.settings.debug_rounds, problems, start, self.reviser, self.samples.judge, self.settings.context,
            self.settings.workers, announce=lambda line: reporter and reporter.write_line(f"repoexec: {line}"),
            shown=progress.wanted(config),
        )
        try:
            for finished, revisions in rounds:
                config.hook.pytest_repoexec_round_finished(round=finished, revisions=revisions)
        except GenerationError as exc:
            config.hook.pytest_repoexec_debugging_stopped(reason=f"the debugging rounds stopped: {exc}")
