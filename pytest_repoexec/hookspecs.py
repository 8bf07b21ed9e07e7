"""The hooks of pytest-repoexec: the contract between the engine and its plugins.

Generators join through ``pytest_repoexec_add_generators`` (the ``generators`` package implements it for the
built-in ones; a conftest file or another plugin can add more); one that needs verdicts while it generates asks
``pytest_repoexec_judge``, and one that has more to tell adds to the JSON report through
``pytest_repoexec_report_sections``. The debugging phase reports through
``pytest_repoexec_round_finished`` and ``pytest_repoexec_debugging_stopped``, which the results collector
implements; any plugin may listen to them too. A plugin that implements these hooks should mark them
``@pytest.hookimpl(optionalhook=True)``, so that ``-p no:repoexec`` leaves a plain pytest session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from .debugging import Revision, Round
    from .evaluation import Evaluation
    from .generation import GeneratorRegistry
    from .problem import Problem

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    """Register generator factories under their names.

    ``registry.add(name, factory, help)`` makes ``--repoexec-model=name`` or ``--repoexec-model=name:ARG``
    call ``factory(arg, config)``, which returns a :class:`pytest_repoexec.generation.Generator`. Called once
    per session, at session start, on the process that generates (the controller under xdist).
    """


@hookspec(firstresult=True)
def pytest_repoexec_judge(problem: Problem, sample: int, completion: str) -> Evaluation | None:
    """Judge ``completion`` now, as the run's item ``problem[sample]`` would: the same evaluation, executor,
    sandbox, limits and result store, so that the item reads the verdict back instead of running it again.

    For a generator that needs verdicts while it generates (``agent:``, whose oracle is the tests). The scoring
    session answers on the controller, from the selection's collection on, so within ``Generator.generate``;
    None where nothing can judge (no scoring session). Safe to call from several threads at once.
    """


@hookspec
def pytest_repoexec_report_sections() -> dict[str, Any] | None:
    """Sections to add to the run's JSON report (the document of the HTML page too), by key, in plain JSON
    types; called once on the controller as the report is written. A key the engine writes is kept the engine's.
    """


@hookspec
def pytest_repoexec_round_finished(round: Round, revisions: Sequence[Revision]) -> None:
    """A debugging round has ended (``--repoexec-debug-rounds``), on the controller, after the items.

    ``round`` holds every sample's standing after it (round 0, the first generation, comes first, with no
    revisions); ``revisions`` are the answers the model gave in it, each with its verdict.
    """


@hookspec
def pytest_repoexec_debugging_stopped(reason: str) -> None:
    """The debugging rounds stopped before the last one (the model could not be asked); the rounds already
    reported through ``pytest_repoexec_round_finished`` stand."""
