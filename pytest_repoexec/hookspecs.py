"""The hooks through which generators join the engine.

A generator turns problems into completions (raw model output). Plugins and conftest files add generators by
implementing ``pytest_repoexec_add_generators``; the ``generators`` package implements it for the built-in ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .generation import GeneratorRegistry

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    """Register generator factories under their names.

    ``registry.add(name, factory, help)`` makes ``--repoexec-model=name`` or ``--repoexec-model=name:ARG``
    call ``factory(arg, config)``, which returns a :class:`pytest_repoexec.generation.Generator`. Called once
    per session on the process that generates (the controller under xdist).
    """
