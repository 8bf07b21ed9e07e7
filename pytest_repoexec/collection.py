"""Problems as pytest collects them: a manifest is a file node whose items the run's mode makes.

A problem folder's other files (its test module, its pickles) and a project's source are data, never
collected as tests. Problems are loaded once per process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .problem import (
    PROBLEM_MANIFEST, PROJECT_MANIFEST, ManifestError, Problem, find_manifests, load_problem, load_project,
)

ItemFactory = Callable[["ProblemFile", Problem], Iterable[pytest.Item]]


class ProblemLoader:
    """Each manifest loaded once per process, by its resolved path."""

    def __init__(self) -> None:
        self._problems: dict[Path, Problem] = {}

    def load(self, manifest: Path, description: str = "detailed") -> Problem:
        """The problem; a class problem's prompts hold its ``description`` form (the run's option)."""
        manifest = manifest.resolve()
        if manifest not in self._problems:
            self._problems[manifest] = load_problem(manifest, description)
        return self._problems[manifest]

    def under(self, paths: Iterable[Path]) -> list[Problem]:
        """The problems under files or folders, in path order; those that cannot load are left to collection
        to report."""
        problems = []
        for manifest in find_manifests(list(paths)):
            try:
                problems.append(self.load(manifest))
            except ManifestError:
                continue
        return problems


class ProblemFile(pytest.File):
    """A problem manifest. Its items come from the run's mode: samples when scoring, one gate item otherwise."""

    def __init__(self, *, make_items: ItemFactory, loader: ProblemLoader, quiet: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.make_items, self.loader, self.quiet = make_items, loader, quiet

    def collect(self) -> Iterator[pytest.Item]:
        try:
            problem = self.loader.load(self.path, self.config.getoption("repoexec_description", "detailed"))
        except ManifestError:
            if self.quiet:  # a collection made only to learn the selection: the real one reports the error
                return
            raise
        grouped = self.config.getoption("dist", "no") == "loadgroup"  # xdist reads the mark only then
        for item in self.make_items(self, problem):
            if grouped:
                item.add_marker(pytest.mark.xdist_group(name=problem.project.name))
            if problem.known_failure:
                item.add_marker(pytest.mark.xfail(reason=f"known failure: {problem.known_failure}", strict=False))
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, ManifestError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def is_problem_data(path: Path) -> bool:
    """A problem's own files (its test module, its pickles) and a project's source folder are not tests."""
    parent = path.parent
    if path.name != PROBLEM_MANIFEST and (parent / PROBLEM_MANIFEST).is_file():
        return True
    if path.is_dir() and (parent / PROJECT_MANIFEST).is_file():
        try:
            source = load_project((parent / PROJECT_MANIFEST).resolve()).source
        except ManifestError:
            return False
        return source.kind == "path" and Path(source.location) == path.resolve()
    return False


def run_paths(config: pytest.Config) -> list[Path]:
    """The files and folders the run was given (node ids without their ``::`` part)."""
    root = config.invocation_params.dir
    return [root / arg.split("::")[0] for arg in config.args]
