"""``replay:PATH``: saved completions, from a RepoExec ``generations.json`` or a JSONL of our own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_repoexec.collection import ProblemLoader, run_paths
from pytest_repoexec.generation import GenerationError, GeneratorRegistry, ReplayData, read_completions
from pytest_repoexec.problem import Problem, set_order


class ReplayGenerator:
    """Completions by problem id. A RepoExec list of lists maps to the problems by position in the set's order,
    the set being every problem under the run's paths, so that ``-k`` can still pick some of them."""

    saved = True  # nothing to generate: the sandbox is checked only where a sample will run

    def __init__(self, path: Path, data: ReplayData, problem_set: Sequence[Problem] = ()) -> None:
        self.path = path
        if isinstance(data, list):
            ordered = set_order(list(problem_set))
            if len(data) != len(ordered):
                raise GenerationError(
                    f"{path} holds {len(data)} lists of completions, but {len(ordered)} problems were found under "
                    "the run's paths; a list of lists maps to the problems by position, so give the whole set, "
                    'or use the JSONL form {"problem": id, "completions": [...]}'
                )
            data = {problem.id: texts for problem, texts in zip(ordered, data)}
        self.data: dict[str, list[str]] = data

    def count(self, problem: Problem, limit: int | None) -> int:
        texts = self.data.get(problem.id)
        if not texts:
            return 1  # one item, so that selecting the problem says what the file lacks
        return len(texts) if limit is None else min(limit, len(texts))

    def generate(self, problems: Sequence[Problem], limit: int | None) -> dict[str, list[str]]:
        missing = [problem.id for problem in problems if not self.data.get(problem.id)]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise GenerationError(f"{self.path} has no completions for {shown}")
        return {problem.id: self.data[problem.id][:limit] for problem in problems}


def _make(argument: str | None, config: pytest.Config) -> ReplayGenerator:
    if not argument:
        raise GenerationError("name the file: replay:PATH")
    path = Path(argument)
    data = read_completions(path)
    return ReplayGenerator(path, data, ProblemLoader().under(run_paths(config)) if isinstance(data, list) else ())


@pytest.hookimpl(optionalhook=True)
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("replay", _make, "saved completions: replay:generations.json or replay:completions.jsonl")
