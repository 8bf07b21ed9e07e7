"""Scoring a generator, the default mode: every completion of every selected problem against its tests.

The data path: problems are collected as items ``(problem, sample index)``, as many as the generator says it
will give; once pytest has applied the run's selection (``-k``, ``-m``, ``--deselect``, ``--lf``, node ids), the
generator is called once with the selected problems; each item then splices its completion into the module,
runs the tests (``engine.Engine.judge``, the path the library's calls take too) and puts its result on its
report, which the controller's ``ResultsCollector`` turns into metrics.

Under xdist the controller collects too (``selection.collect_on_controller``), only to learn the selection
before the workers start, and hands the completions to them in ``workerinput``; a worker on another host checks
its copy of the problems and builds its environments before its first sample (``remote``).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import progress, remote, transport
from .cgroups import SampleSetupError
from .collection import ProblemFile, ProblemLoader
from .debugging import DebugPhase
from .engine import Engine
from .environment import EnvironmentBuildError, Environments, default_cache_dir
from .evaluation import Evaluation
from .executor import NotJudgedApart, ProblemLayoutError
from .failure import SampleFailed, describe_failure
from .generation import GenerationError, Generator, GeneratorRegistry
from .problem import PROBLEM_MANIFEST, ManifestError, Problem
from .report import ResultsCollector
from .scheduling import ProblemScheduling
from .selection import Unread, collect_on_controller
from .settings import Settings
from .shard import ShardSelection
from .store import ProblemTimes


class ScoringSession:
    """Registered in every process of a scoring run; the controller also owns the results collector and, with
    ``--repoexec-debug-rounds``, the debugging phase."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        handed = getattr(config, "workerinput", None)
        self.host: str | None = handed.get(transport.HOST) if handed is not None else None  # another host's worker
        if self.host is not None:  # its own cache: REPOEXEC_CACHE there (//env: in its spec), else its user's
            settings = dataclasses.replace(settings, cache=default_cache_dir())
        self.config, self.settings = config, settings
        self.loader = ProblemLoader()
        self.environments = Environments(settings.cache)
        self.hosts: list[str] = []  # on the controller: the other hosts xdist starts workers on
        self.local_workers = True  # on the controller: whether any worker shares its files and cache
        self.digests: remote.Digests = {}  # on the controller: the selected problems' files, for other hosts
        self.refused: dict[str, str] = {}  # on another host's worker: why it will not run a problem, by id
        self.host_error: str | None = None  # on another host's worker: why it can run no sample
        self.generator: Generator | None = None
        self.counts: dict[str, int] = {}  # samples of each collected problem, by id
        self.completions: dict[str, list[str]] | None = None  # of the selected problems, once generated
        self.selected: dict[str, Problem] = {}
        self.scopes: dict[str, str] = {}  # on the controller: each selected problem's id, by its manifest's node id
        self.quiet = False  # while the controller collects only to learn the selection
        self.session: pytest.Session | None = None
        self.read: dict[str, Evaluation] = {}  # on the controller: verdicts it reads itself, by node id
        self.samples: list[SampleItem] = []  # on the controller: the selected samples
        if handed is not None:  # an xdist worker: the controller counted and generated
            self.counts = dict(handed.get(transport.COUNTS, {}))
            self.completions = dict(handed.get(transport.COMPLETIONS, {}))
            self.run = str(handed.get(transport.RUN, ""))
        else:
            self.run = uuid.uuid4().hex
        self.engine = Engine(settings, self.run, self.environments)  # the one path to a verdict (``engine``)
        self.unread = False  # on the controller: a test module was left to the workers to collect
        shard = ShardSelection(settings.shard) if settings.shard else None  # deselects on every process alike
        if shard is not None:
            config.pluginmanager.register(shard, "repoexec-shard")
        if handed is None:
            config.pluginmanager.register(ResultsCollector(settings, shard), "repoexec-results")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        if self.completions is not None:
            return
        config = self.config
        self.generator = GeneratorRegistry.from_hooks(config).create(self.settings.model, config)
        collector = config.pluginmanager.get_plugin("repoexec-results")
        if collector is not None and hasattr(self.generator, "timings"):
            collector.timings = self.generator.timings  # how long the model took, for the summary
        if self.settings.debug_rounds:
            if not hasattr(self.generator, "revise"):
                raise pytest.UsageError(
                    f"--repoexec-debug-rounds needs a model to answer the debugging prompts; {self.settings.model} "
                    "cannot (use a model generator: openai:, hf:, vllm: or an alias)"
                )
            config.pluginmanager.register(DebugPhase(self.settings, self.generator, self), "repoexec-debugging")

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """While the controller learns the selection it reads problem manifests and nothing else."""
        if self.quiet and collection_path.is_file() and collection_path.name != PROBLEM_MANIFEST:
            return True
        return None

    def pytest_pycollect_makemodule(self, module_path: Path, parent: pytest.Collector) -> pytest.File | None:
        if not self.quiet:
            return None
        self.unread = True
        return Unread.from_parent(parent, path=module_path)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.name != PROBLEM_MANIFEST:
            return None
        return ProblemFile.from_parent(parent, path=file_path, make_items=self._samples, loader=self.loader,
                                       quiet=self.quiet)

    def _samples(self, parent: ProblemFile, problem: Problem) -> Iterator[SampleItem]:
        for index in range(self._count(problem)):
            name = f"{problem.name}[{index}]"  # its id parsed from text, as pytest >= 9.2 parses the ids --lf
            yield SampleItem.from_parent(parent, name=name, nodeid=f"{parent.nodeid}::{name}", problem=problem,
                                         sample=index, scoring=self)  # saved ("[0]": parameters, not the name's)

    def _count(self, problem: Problem) -> int:
        if problem.id not in self.counts:
            if self.generator is None:
                raise ManifestError(problem.manifest, "(samples)", "the xdist controller did not collect this problem")
            count = self.generator.count(problem, self.settings.samples)
            self.counts[problem.id] = count if self.settings.samples is None else min(count, self.settings.samples)
        return self.counts[problem.id]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The selection is known: ask the generator about exactly the selected problems, once (after checking
        that the sandbox works and building the environments, so that a run that cannot start costs no
        generation; the xdist workers on this host then find the environments built). Saved completions are
        read first, and the sandbox checked only where a verdict is not in the store."""
        if session.config.option.collectonly:
            return
        if self.completions is not None:
            if self.host is not None:
                self._prepare_host(session)
            return
        self.samples = samples = [item for item in session.items if isinstance(item, SampleItem)]
        self.selected = {item.problem.id: item.problem for item in samples}
        self.scopes = {item.parent.nodeid: item.problem.id for item in samples if item.parent is not None}
        checked = self.selected and self.local_workers and not getattr(self.generator, "saved", False)
        if checked:
            self.engine.executor  # noqa: B018 (made now: a sandbox that cannot run stops the run before generation)
        if self.selected and self.local_workers:
            self.environments.prepare([problem.project for problem in self.selected.values()], self.settings.workers,
                                      progress.wanted(session.config))
        if self.hosts:
            self.digests = remote.files_digest(self.selected.values())
        self.completions = self._generate(list(self.selected.values())) if self.selected else {}
        self.read = self._read_on_controller(session, samples)
        if self.selected and self.local_workers and not checked and not self.read:
            self.engine.executor  # noqa: B018 (before any worker starts: a sandbox that cannot run stops the run)

    def _prepare_host(self, session: pytest.Session) -> None:
        """A worker on another host, before its first sample: refuse the problems whose files are not the
        controller's, check that the sandbox starts here, build the environments of the rest."""
        assert self.host is not None
        problems = {item.problem.id: item.problem for item in session.items if isinstance(item, SampleItem)}
        if not problems:
            return
        say = remote.announcer(self.config, self.host)
        self.refused = remote.refusals(problems.values(), self.config.workerinput.get(transport.DIGESTS, {}),
                                       self.host)
        for reason in self.refused.values():
            say(reason)
        try:
            self.engine.executor  # noqa: B018 (its sandbox checked here, where the samples run)
        except pytest.UsageError as exc:
            self.host_error = f"{self.host} cannot run samples: {exc}"
            say(self.host_error)
            return
        remote.prepare(self.environments, [problem.project for problem_id, problem in problems.items()
                                           if problem_id not in self.refused], os.cpu_count() or 1, say)

    def check_host(self, problem: Problem) -> None:
        """On another host's worker: a problem it refused, or a host that can run nothing, fails the sample."""
        if self.host_error or problem.id in self.refused:
            pytest.fail(self.host_error or self.refused[problem.id], pytrace=False)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> ProblemScheduling | None:
        """xdist's loadscope (the run's default, see ``plugin``) with the problems ordered by what their samples
        took when last run, and no worker left idle at the end (``scheduling``)."""
        if config.getvalue("dist") != "loadscope" or not self.scopes:
            return None
        times = self.times.read()
        return ProblemScheduling(config, log, self.scopes, {scope: times[problem] for scope, problem in
                                                            self.scopes.items() if problem in times})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """On the controller: what each problem's samples took, and its zygotes to start, for later runs' order."""
        collector = self.config.pluginmanager.get_plugin("repoexec-results")
        if collector is None or session.config.option.collectonly:
            return
        spent: dict[str, list[float]] = {}
        starts: dict[str, float] = {}
        for result in collector.results.values():
            spent.setdefault(result.problem, []).append(result.duration + result.phases.get("decoy", 0.0))
            starts[result.problem] = max(starts.get(result.problem, 0.0), result.phases.get("warm start", 0.0))
        self.times.record({problem: {"sample": sum(seconds) / len(seconds), "start": starts[problem]}
                           for problem, seconds in spent.items()})
        if not self.read and not self.hosts and self.completions:
            for _ in self._stored(self.samples):  # packed now, for the next run to read back (``store``)
                pass

    @functools.cached_property
    def times(self) -> ProblemTimes:
        return ProblemTimes(self.settings.cache / "results")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.engine.close()  # its warm processes stop with the session

    def _generate(self, problems: list[Problem]) -> dict[str, list[str]]:
        assert self.generator is not None
        spec = self.settings.model
        try:
            made = self.generator.generate(problems, self.settings.samples)
        except GenerationError as exc:
            raise pytest.UsageError(f"--repoexec-model={spec}: {exc}") from None
        completions = {problem.id: list(made.get(problem.id, ()))[: self.counts[problem.id]] for problem in problems}
        short = [f"{problem.id} ({len(completions[problem.id])} of {self.counts[problem.id]})"
                 for problem in problems if len(completions[problem.id]) < self.counts[problem.id]]
        if short:
            raise pytest.UsageError(f"--repoexec-model={spec} gave fewer completions than it announced for "
                                    + ", ".join(short))
        return completions

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        """Before any worker starts: the controller collects, so that generation sees the selection, and notes
        which workers run on other hosts (each gets the problems' digests; their errors are summed up by host)."""
        assert self.session is not None
        self.hosts = [name for name in map(remote.host_name, specs) if name]
        self.local_workers = len(self.hosts) < len(specs)
        remote.check_paths(config, specs)
        if self.hosts:
            config.pluginmanager.register(remote.HostErrors(), "repoexec-hosts")
        self.quiet = True
        try:
            collect_on_controller(self.session)
        finally:
            self.quiet = False
        if self.read:  # the controller reports every item itself: no worker (xdist starts the specs left in this list)
            specs.clear()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        """A run whose every verdict the controller read (``_read_on_controller``) is reported here, item by
        item, in place of pytest's loop or xdist's (which then started no worker)."""
        if not self.read:
            return None
        items = [item for item in self.samples if item.nodeid in self.read]
        session.testscollected = len(items)
        for item in items:
            _report_read(item, self.read[item.nodeid])
            if session.shouldfail:  # as pytest's own loop stops (-x, --maxfail)
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
        return True

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[transport.COUNTS] = self.counts
        node.workerinput[transport.COMPLETIONS] = self.completions or {}
        node.workerinput[transport.RUN] = self.run
        node.workerinput[transport.HOST] = host = remote.host_name(node.gateway.spec)
        if host is not None:
            node.workerinput[transport.DIGESTS] = self.digests

    # What the debugging phase asks of the samples it revises.

    def _read_on_controller(self, session: pytest.Session, samples: list[SampleItem]) -> dict[str, Evaluation]:
        """Every selected sample's verdict by node id where none needs running (a rerun: all in the result store)
        and the run holds nothing else, else none. Under xdist no worker is then started, which costs more than
        reading them all (and handing each verdict to a worker and its report back costs more than reading it);
        with or without it, the verdicts are reported with no set-up or teardown reports (``_report_read``). The
        first problem with a sample that must run stops the reading."""
        stopping = session.testsfailed and not session.config.option.continue_on_collection_errors
        if stopping or self.settings.fresh or self.hosts or self.unread or len(samples) != len(session.items):
            return {}  # (stopping: pytest's loop stops the run on its collection errors, as for any test module)
        read = {}
        for items, found in self._stored(samples):
            if found is None:
                return {}
            read.update((item.nodeid, evaluation) for item, evaluation in zip(items, found))
        return read

    def _stored(self, samples: list[SampleItem]) -> Iterator[tuple[list[SampleItem], list[Evaluation] | None]]:
        """Each problem's samples, and their verdicts where the store holds them all (read through the
        problem's pack, which is written where it did not hold them: ``Engine.stored``)."""
        by_problem: dict[str, list[SampleItem]] = {}
        for item in samples:
            by_problem.setdefault(item.problem.id, []).append(item)
        for problem_id, items in by_problem.items():
            yield items, self.engine.stored(items[0].problem, [(item.sample, self.completion(problem_id, item.sample))
                                                               for item in items])

    def problem(self, problem_id: str) -> Problem:
        return self.selected[problem_id]

    def completion(self, problem_id: str, sample: int) -> str:
        assert self.completions is not None
        return self.completions[problem_id][sample]

    def judge(self, problem: Problem, sample: int, completion: str) -> Evaluation:
        return self.engine.judge(problem, sample, completion)

    def pytest_repoexec_judge(self, problem: Problem, sample: int, completion: str) -> Evaluation:
        """A generator's oracle (see ``hookspecs``): the items' own judge."""
        return self.engine.judge(problem, sample, completion)


def _report_read(item: SampleItem, evaluation: Evaluation) -> None:
    """A verdict the controller read is reported as xdist reports a worker's: a report made elsewhere (here, from
    the store's verdict), logged. It is the call's report the item would have made, with a known failure's xfail
    as pytest's skipping plugin makes it; no hook of the item's runs (nothing of it runs), and there is no set-up
    or teardown report (pytest's failure sections scan every passed one for each failure: a cost that grows with
    the square of the run)."""
    result, config = evaluation.result, item.config
    item.user_properties.append((transport.SAMPLE_RESULT, result.to_dict()))
    longrepr = None if result.passed else describe_failure(SampleFailed(item.problem, evaluation), config)
    report = pytest.TestReport(item.nodeid, item.location, {name: 1 for name in item.keywords},
                               "passed" if result.passed else "failed", longrepr, "call",
                               user_properties=list(item.user_properties))
    known = item.get_closest_marker("xfail")  # a known failure's (``collection``): never strict, any exception
    if known is not None and not config.option.runxfail:
        report.wasxfail = known.kwargs.get("reason", "")  # type: ignore[attr-defined]
        report.outcome = "passed" if result.passed else "skipped"
    hook = item.ihook
    hook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


class SampleItem(pytest.Item):
    """One completion of one problem, run against the problem's tests in the project's environment."""

    def __init__(self, *, problem: Problem, sample: int, scoring: ScoringSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem, self.sample, self.scoring = problem, sample, scoring
        self.user_properties.append((transport.SAMPLE, problem.id))

    def setup(self) -> None:
        self.scoring.check_host(self.problem)
        try:
            self.scoring.engine.environment(self.problem)  # built (or found) here: a build that fails is a setup error
        except EnvironmentBuildError as exc:
            if self.scoring.host is None:
                raise
            pytest.fail(f"{self.scoring.host} could not build the environment: {exc}", pytrace=False)

    def runtest(self) -> None:
        completions = self.scoring.completions or {}
        if self.problem.id not in completions:
            raise ManifestError(self.problem.manifest, "(completions)",
                                f"no completions were handed over for {self.problem.id}")
        evaluation = self.scoring.judge(self.problem, self.sample, completions[self.problem.id][self.sample])
        self.user_properties.append((transport.SAMPLE_RESULT, evaluation.result.to_dict()))
        if not evaluation.result.passed:
            raise SampleFailed(self.problem, evaluation)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, SampleFailed):
            return describe_failure(excinfo.value, self.config)
        if isinstance(excinfo.value, SampleSetupError):
            return excinfo.value.describe()
        if isinstance(excinfo.value, (EnvironmentBuildError, ProblemLayoutError, ManifestError, NotJudgedApart)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.problem.id} sample {self.sample}"
