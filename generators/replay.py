"""``replay:PATH``: saved completions, from a RepoExec ``generations.json`` or a JSONL of our own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_repoexec.generation import GenerationError, GeneratorRegistry, read_completions
from pytest_repoexec.problem import Problem, set_order


class ReplayGenerator:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = read_completions(path)

    def generate(self, problems: Sequence[Problem], samples: int | None) -> dict[str, list[str]]:
        if isinstance(self.data, list):
            ordered = set_order(list(problems))
            if len(self.data) != len(ordered):
                raise GenerationError(
                    f"{self.path} holds {len(self.data)} lists of completions, but {len(ordered)} problems were "
                    "found; a list of lists maps to the problems by position, so select the whole set, or use "
                    'the JSONL form {"problem": id, "completions": [...]}'
                )
            return {problem.id: texts for problem, texts in zip(ordered, self.data)}
        missing = [problem.id for problem in problems if problem.id not in self.data]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise GenerationError(f"{self.path} has no completions for {shown}")
        return {problem.id: self.data[problem.id] for problem in problems}


def _make(argument: str | None, config: pytest.Config) -> ReplayGenerator:
    if not argument:
        raise GenerationError("name the file: replay:PATH")
    return ReplayGenerator(Path(argument))


@pytest.hookimpl
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("replay", _make, "saved completions: replay:generations.json or replay:completions.jsonl")
