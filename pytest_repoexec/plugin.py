"""The pytest plugin: options, generation before collection, one item per (problem, sample), and the
controller-side collection of results.

Completions are made once, by the process that drives the run (the controller under xdist), and handed to
the workers as a file, so a model is never asked twice for the same run. Workers send each sample's result
back on its report (``user_properties``); only the controller aggregates them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import hookspecs
from .environment import EnvironmentBuildError, Environments, ProjectEnv, default_cache_dir
from .debugging import Reviser, run_rounds
from .evaluation import Evaluation, evaluate
from .executor import ProblemLayoutError, SubprocessExecutor
from .failure import SampleFailed, describe_failure
from .fixer import FIX_PROPERTY, FixError, fix_assertions
from .gate import GATE_ITEM_PROPERTY, GATE_PROPERTY, GateSettings, check
from .generation import GenerationError, GeneratorRegistry, read_completions, write_completions
from .problem import (
    PROBLEM_MANIFEST,
    PROJECT_MANIFEST,
    ManifestError,
    Problem,
    find_manifests,
    load_problem,
    load_project,
)
from .report import GateCollector, ResultsCollector
from .results import SAMPLE_PROPERTY, USER_PROPERTY

HANDOFF_KEY = "repoexec_completions"
state_key = pytest.StashKey["RepoexecState"]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("repoexec", "repository-level code generation benchmarks")
    group.addoption("--repoexec-model", default="reference", metavar="NAME[:ARG]",
                    help="generator of the completions: reference (default), replay:PATH, ...")
    group.addoption("--repoexec-n", type=int, default=None, metavar="N", help="at most N samples per problem")
    group.addoption("--repoexec-cache", default=None, metavar="DIR",
                    help="where project sources and virtualenvs are kept (default: the user cache folder)")
    group.addoption("--repoexec-report", default=None, metavar="PATH", help="write metrics and samples as JSON")
    group.addoption("--repoexec-timeout", type=float, default=5.0, metavar="SECONDS",
                    help="limit for each inner test (default 5)")
    group.addoption("--repoexec-sample-timeout", type=float, default=120.0, metavar="SECONDS",
                    help="wall-clock limit for all the tests of one sample (default 120)")
    group.addoption("--repoexec-validate", action="store_true",
                    help="run the admission gate on each problem's reference instead of scoring a model")
    group.addoption("--repoexec-fix-assertions", action="store_true",
                    help="rewrite failing expected values with the reference's output, then run the gate")
    group.addoption("--repoexec-reruns", type=int, default=10, metavar="N",
                    help="gate: runs of each test to find flaky ones (default 10)")
    group.addoption("--repoexec-min-coverage", type=float, default=40.0, metavar="PERCENT",
                    help="gate: least line coverage of the function by its tests (default 40)")
    group.addoption("--repoexec-min-mutation", type=float, default=None, metavar="PERCENT",
                    help="gate: least share of mutants killed (default: reported, not enforced)")
    group.addoption("--repoexec-mutants", type=int, default=10, metavar="N",
                    help="gate: at most N mutants of each reference (default 10; 0: none)")
    group.addoption("--repoexec-debug-rounds", type=int, default=0, metavar="R",
                    help="send failing samples back to the model R times with the test and error (the paper: 3)")


class RepoexecState:
    """What one process knows about the run: its environments, its executor and the completions."""

    def __init__(self, config: pytest.Config) -> None:
        cache = config.getoption("repoexec_cache")
        self.environments = Environments(Path(cache).resolve() if cache else default_cache_dir())
        self.executor = SubprocessExecutor(
            config.getoption("repoexec_timeout"), config.getoption("repoexec_sample_timeout")
        )
        self.completions: dict[str, list[str]] = {}
        self.problems: dict[Path, Problem] = {}
        self.handoff: Path | None = None

    def problem(self, manifest: Path) -> Problem:
        if manifest not in self.problems:
            self.problems[manifest] = load_problem(manifest)
        return self.problems[manifest]


def pytest_configure(config: pytest.Config) -> None:
    n = config.getoption("repoexec_n")
    if n is not None and n < 1:
        raise pytest.UsageError(f"--repoexec-n must be at least 1, got {n}")
    if config.getoption("repoexec_debug_rounds") < 0:
        raise pytest.UsageError("--repoexec-debug-rounds must be 0 or more")
    if config.getoption("repoexec_reruns") < 2:
        raise pytest.UsageError("--repoexec-reruns must be at least 2: flakiness shows between runs")
    if config.getoption("repoexec_mutants") < 0:
        raise pytest.UsageError("--repoexec-mutants must be 0 or more")
    mode = _gate_mode(config)
    if mode and (config.getoption("repoexec_model") != "reference" or config.getoption("repoexec_debug_rounds")):
        raise pytest.UsageError(
            f"--repoexec-{'fix-assertions' if mode == 'fix' else 'validate'} checks the problems' references: "
            "it takes no --repoexec-model or --repoexec-debug-rounds"
        )
    config.stash[state_key] = RepoexecState(config)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(ResultsCollector(config), "repoexec-results")
        if mode:
            config.pluginmanager.register(GateCollector(config), "repoexec-gate")


def _gate_mode(config: pytest.Config) -> str | None:
    """"fix" or "validate" when the run checks problems instead of scoring a model."""
    if config.getoption("repoexec_fix_assertions"):
        return "fix"
    return "validate" if config.getoption("repoexec_validate") else None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(state_key, None)
    if state is not None and state.handoff is not None:
        state.handoff.unlink(missing_ok=True)


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    state = config.stash[state_key]
    if hasattr(config, "workerinput"):
        handoff = config.workerinput.get(HANDOFF_KEY)
        state.completions = read_completions(Path(handoff)) if handoff else {}
        return
    problems = _discover(config, state)
    if not problems or _gate_mode(config):
        return
    registry = GeneratorRegistry()
    config.hook.pytest_repoexec_add_generators(registry=registry)
    spec = config.getoption("repoexec_model")
    generator = registry.create(spec, config)
    limit = config.getoption("repoexec_n")
    try:
        completions = generator.generate(problems, limit)
    except GenerationError as exc:
        raise pytest.UsageError(f"--repoexec-model={spec}: {exc}") from None
    state.completions = {problem: list(texts)[:limit] for problem, texts in completions.items()}
    empty = [problem.id for problem in problems if not state.completions.get(problem.id)]
    if empty:
        raise pytest.UsageError(f"--repoexec-model={spec} gave no completion for {', '.join(empty)}")
    if config.getoption("repoexec_debug_rounds"):
        if not hasattr(generator, "revise"):
            raise pytest.UsageError(
                f"--repoexec-debug-rounds needs a model to answer the debugging prompts; {spec} cannot "
                "(use a model generator: openai:, hf:, vllm: or an alias)"
            )
        config.pluginmanager.register(DebugPhase(config, generator), "repoexec-debugging")


def _discover(config: pytest.Config, state: RepoexecState) -> list[Problem]:
    """The problems the run's arguments point at, loaded now so that generation sees them all at once."""
    root = config.invocation_params.dir
    manifests = find_manifests([root / arg.split("::")[0] for arg in config.args])
    problems = []
    for manifest in manifests:
        try:
            problems.append(state.problem(manifest))
        except ManifestError:
            continue  # its collector reports the error, naming the file and field
    return problems


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: give each worker the controller's completions instead of generating again."""
    state = node.config.stash[state_key]
    if state.handoff is None and state.completions:
        descriptor, name = tempfile.mkstemp(prefix="repoexec-completions-", suffix=".jsonl")
        os.close(descriptor)
        state.handoff = Path(name)
        write_completions(state.handoff, state.completions)
    if state.handoff is not None:
        node.workerinput[HANDOFF_KEY] = str(state.handoff)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A problem's own files (its test module, its pickles) and a project's source are data, not tests."""
    parent = collection_path.parent
    if collection_path.name != PROBLEM_MANIFEST and (parent / PROBLEM_MANIFEST).is_file():
        return True
    if collection_path.is_dir() and (parent / PROJECT_MANIFEST).is_file():
        try:
            source = load_project((parent / PROJECT_MANIFEST).resolve()).source
        except ManifestError:
            return None
        if source.kind == "path" and Path(source.location) == collection_path.resolve():
            return True
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == PROBLEM_MANIFEST:
        return ProblemFile.from_parent(parent, path=file_path)
    return None


class ProblemFile(pytest.File):
    """A problem manifest; its items are the problem's samples."""

    def collect(self) -> Iterator[SampleItem]:
        state = self.config.stash[state_key]
        problem = state.problem(self.path.resolve())
        if _gate_mode(self.config):
            item = GateItem.from_parent(self, name=problem.name, problem=problem)
            item.add_marker(pytest.mark.xdist_group(name=problem.project.name))
            if problem.known_failure:
                item.add_marker(pytest.mark.xfail(reason=f"known failure: {problem.known_failure}", strict=False))
            yield item
            return
        completions = state.completions.get(problem.id)
        if completions is None:
            raise ManifestError(self.path, "(completions)", f"no completions were generated for {problem.id}")
        for index, completion in enumerate(completions):
            item = SampleItem.from_parent(
                self, name=f"{problem.name}[{index}]", problem=problem, sample=index, completion=completion
            )
            item.add_marker(pytest.mark.xdist_group(name=problem.project.name))
            if problem.known_failure:
                item.add_marker(pytest.mark.xfail(reason=f"known failure: {problem.known_failure}", strict=False))
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, ManifestError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class SampleItem(pytest.Item):
    """One completion of one problem, run against the problem's tests in the project's environment."""

    def __init__(self, *, problem: Problem, sample: int, completion: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.sample = sample
        self.completion = completion
        self.env: ProjectEnv | None = None
        self.user_properties.append((SAMPLE_PROPERTY, problem.id))

    def setup(self) -> None:
        self.env = self.config.stash[state_key].environments.get(self.problem.project)

    def runtest(self) -> None:
        assert self.env is not None
        evaluation = evaluate(
            self.problem, self.sample, self.completion, self.env, self.config.stash[state_key].executor
        )
        self.user_properties.append((USER_PROPERTY, evaluation.result.to_dict()))
        if not evaluation.result.passed:
            raise SampleFailed(self.problem, evaluation)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, SampleFailed):
            return describe_failure(excinfo.value, self.config)
        if isinstance(excinfo.value, (EnvironmentBuildError, ProblemLayoutError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.problem.id} sample {self.sample}"


class DebugPhase:
    """The controller's debugging rounds, after every item has run and before the results are reported."""

    def __init__(self, config: pytest.Config, reviser: Reviser) -> None:
        self.config, self.reviser = config, reviser

    @pytest.hookimpl(tryfirst=True)  # before the results collector writes its report
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return
        config, state = self.config, self.config.stash[state_key]
        collector: ResultsCollector = config.pluginmanager.get_plugin("repoexec-results")
        problems = {problem.id: problem for problem in state.problems.values()}
        start = [(result, state.completions[result.problem][result.sample]) for result in collector.ordered()]
        for project in {problems[result.problem].project for result, _ in start if not result.passed}:
            state.environments.get(project)  # built once here, not by several threads at once
        reporter = config.pluginmanager.get_plugin("terminalreporter")

        def judge(problem: Problem, sample: int, completion: str) -> Evaluation:
            return evaluate(problem, sample, completion, state.environments.get(problem.project), state.executor)

        rounds = run_rounds(
            config.getoption("repoexec_debug_rounds"), problems, start, self.reviser, judge,
            config.getoption("repoexec_context", "full"), config.getoption("numprocesses", None) or 1,
            progress=lambda line: reporter and reporter.write_line(f"repoexec: {line}"),
        )
        try:
            for finished, revisions in rounds:
                collector.rounds.append(finished)
                collector.revisions += revisions
        except GenerationError as exc:
            collector.debug_error = f"the debugging rounds stopped: {exc}"


class GateItem(pytest.Item):
    """A problem's admission gate (``--repoexec-validate``), after its fixer (``--repoexec-fix-assertions``)."""

    def __init__(self, *, problem: Problem, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem
        self.user_properties.append((GATE_ITEM_PROPERTY, problem.id))

    def runtest(self) -> None:
        config, state = self.config, self.config.stash[state_key]
        env = state.environments.get(self.problem.project)
        problem = self.problem
        if _gate_mode(config) == "fix":
            try:
                fixed = fix_assertions(problem, env, state.executor)
            except FixError as exc:
                raise GateFailed([f"the assertion fixer: {exc}"]) from None
            self.user_properties.append((FIX_PROPERTY, fixed.to_dict()))
            problem = load_problem(problem.manifest)  # the test module and count the fixer wrote
        settings = GateSettings(
            reruns=config.getoption("repoexec_reruns"),
            min_coverage=config.getoption("repoexec_min_coverage"),
            min_mutation=config.getoption("repoexec_min_mutation"),
            mutants=config.getoption("repoexec_mutants"),
        )
        result = check(problem, env, state.executor, settings)
        self.user_properties.append((GATE_PROPERTY, result.to_dict()))
        if not result.passed:
            raise GateFailed(list(result.reasons))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, GateFailed):
            return f"{self.problem.id} fails the admission gate:\n" + "\n".join(
                f"  - {reason}" for reason in excinfo.value.reasons
            )
        if isinstance(excinfo.value, (EnvironmentBuildError, ProblemLayoutError, ManifestError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.problem.id} admission gate"


class GateFailed(Exception):
    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons
