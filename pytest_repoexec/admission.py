"""The admission gate (``--repoexec-validate``) and the assertion fixer (``--repoexec-fix-assertions``) as a
session: one item per problem, which checks the problem's tests against its reference (``gate.check``), after
fixing them first in the fixer's mode. No generator is involved.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from . import transport
from .collection import ProblemFile, ProblemLoader
from .cgroups import SampleSetupError
from .environment import EnvironmentBuildError, Environments
from .executor import ProblemLayoutError, SubprocessExecutor
from .fixer import FixError, fix_assertions
from .decoy import Decoys
from .gate import check
from .problem import PROBLEM_MANIFEST, ManifestError, Problem, load_problem
from .report import GateCollector
from .settings import Mode, Settings, make_executor


class GateSession:
    """Registered in every process of a gate or fixer run; the controller also owns the gate's collector."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.settings = settings
        self.loader = ProblemLoader()
        self.environments = Environments(settings.cache)
        if not hasattr(config, "workerinput"):
            config.pluginmanager.register(GateCollector(settings), "repoexec-gate")

    @functools.cached_property
    def executor(self) -> SubprocessExecutor:
        return make_executor(self.settings)

    @functools.cached_property
    def decoys(self) -> Decoys:
        return Decoys(self.settings.cache / "decoys")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if "executor" in vars(self):  # made: its warm processes stop with the session
            self.executor.close()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if any(isinstance(item, GateItem) for item in session.items) and not session.config.option.collectonly:
            self.executor  # noqa: B018 (made now: a sandbox that cannot run stops the run before any problem)

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.name != PROBLEM_MANIFEST:
            return None
        return ProblemFile.from_parent(parent, path=file_path, make_items=self._item, loader=self.loader)

    def _item(self, parent: ProblemFile, problem: Problem) -> Iterator[GateItem]:
        yield GateItem.from_parent(parent, name=problem.name, problem=problem, gate=self)

    def check(self, problem: Problem, item: GateItem) -> None:
        env = self.environments.get(problem.project)
        if self.settings.mode is Mode.FIX:
            try:
                fixed = fix_assertions(problem, env, self.executor)
            except FixError as exc:
                raise GateFailed([f"the assertion fixer: {exc}"]) from None
            item.user_properties.append((transport.FIX_RESULT, fixed.to_dict()))
            problem = load_problem(problem.manifest)  # the test module and count the fixer wrote
        result = check(problem, env, self.executor, self.settings.gate, self.decoys)
        item.user_properties.append((transport.GATE_RESULT, result.to_dict()))
        if result.passed and result.decoy:  # at the manifest: a gate item has no line of its own
            warnings.warn_explicit(pytest.PytestWarning(f"{problem.id}: its passing samples get no decoy check: "
                                                        f"{result.decoy}"), None, str(problem.manifest), 1)
        if not result.passed:
            raise GateFailed(list(result.reasons))


class GateItem(pytest.Item):
    """A problem's admission gate, after its fixer in the fixer's mode."""

    def __init__(self, *, problem: Problem, gate: GateSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem, self.gate = problem, gate
        self.user_properties.append((transport.GATE_ITEM, problem.id))

    def runtest(self) -> None:
        self.gate.check(self.problem, self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, GateFailed):
            return f"{self.problem.id} fails the admission gate:\n" + "\n".join(
                f"  - {reason}" for reason in excinfo.value.reasons
            )
        if isinstance(excinfo.value, SampleSetupError):
            return excinfo.value.describe()
        if isinstance(excinfo.value, (EnvironmentBuildError, ProblemLayoutError, ManifestError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.problem.id} admission gate"


class GateFailed(Exception):
    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons
