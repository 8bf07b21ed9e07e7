"""The hooks of pytest-repoexec: the contract between the engine and its plugins.

Generators join through ``pytest_repoexec_add_generators`` (the ``generators`` package implements it for the
built-in ones; a conftest file or another plugin can add more). The debugging phase reports through
``pytest_repoexec_round_finished`` and ``pytest_repoexec_debugging_stopped``, which the results collector
implements; any plugin may listen to them too. A plugin that implements these hooks should mark them
``@pytest.hookimpl(optionalhook=True)``, so that ``-p no:repoexec`` leaves a plain pytest session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .debugging import Revision, Round
    from .generation import GeneratorRegistry

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    """Register generator factories under their names.

    ``registry.add(name, factory, help)`` makes ``--repoexec-model=name`` or ``--repoexec-model=name:ARG``
    call ``factory(arg, config)``, which returns a :class:`pytest_repoexec.generation.Generator`. Called once
    per session, at session start, on the process that generates (the controller under xdist).
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
