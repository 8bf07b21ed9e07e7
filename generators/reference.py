"""``reference``: the problem's own solution as the only completion; validates a problem set."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_repoexec.generation import GenerationError, GeneratorRegistry
from pytest_repoexec.problem import Problem


class ReferenceGenerator:
    def count(self, problem: Problem, limit: int | None) -> int:
        return 1

    def generate(self, problems: Sequence[Problem], limit: int | None) -> dict[str, list[str]]:
        return {problem.id: [problem.reference] for problem in problems}


def _make(argument: str | None, config: pytest.Config) -> ReferenceGenerator:
    if argument is not None:
        raise GenerationError("the reference generator takes no argument")
    return ReferenceGenerator()


@pytest.hookimpl(optionalhook=True)  # the hook is declared by the repoexec plugin, which -p no: may disable
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("reference", _make, "the reference solutions (the default: validates the problems)")
