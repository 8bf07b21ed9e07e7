"""A standalone program's environment: the third-party modules it imports, the distributions that give them, and
those distributions resolved to exact releases (the newest that uv finds, under ``execcsn.toml``'s caps), so that
the environment built from the pins is the same on every run."""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import uv
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SETTINGS = Path(__file__).with_name("execcsn.toml")
_RESOLVERS = 4  # sets of requirements resolved at once
# what a failed import raises: a ``try`` that catches one of these makes its imports optional
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_VERSION_NAMES = {"version_info", "version", "PY2", "PY3", "PY34", "PYTHON2", "PYTHON3"}  # imports under them: optional


class ResolutionError(Exception):
    """A set of distributions that uv cannot resolve; the message carries uv's reason."""


@dataclass(frozen=True)
class Settings:
    """``execcsn.toml``: import names spelled otherwise on PyPI, fixed requirements, caps."""

    distributions: dict[str, str] = field(default_factory=dict)
    pinned: dict[str, str] = field(default_factory=dict)
    caps: dict[str, str] = field(default_factory=dict)


def load_settings(path: Path = SETTINGS) -> Settings:
    with path.open("rb") as handle:
        table = tomllib.load(handle)
    return Settings(table.get("distributions", {}), table.get("pinned", {}), table.get("caps", {}))


def third_party_imports(tree: ast.Module) -> set[str]:
    """The dotted names of the modules a program imports that are neither the standard library's nor optional
    (imported inside a ``try`` that catches the ImportError, or under a test of the Python version: ``urllib2``
    where ``sys.version_info < (3,)``); relative imports are left out (a standalone program has no package)."""
    found: set[str] = set()

    def visit(node: ast.AST, optional: bool) -> None:
        if isinstance(node, ast.If) and _names_a_version(node.test):
            for child in ast.iter_child_nodes(node):
                visit(child, True)
            return
        if isinstance(node, ast.Try):
            caught = {name.id for handler in node.handlers for name in ast.walk(handler.type or ast.Name("Exception"))
                      if isinstance(name, ast.Name)}
            for child in node.body:
                visit(child, optional or bool(caught & _IMPORT_ERRORS))
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, optional)
            return
        if not optional:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child, optional)

    visit(tree, False)
    return {name for name in found if name.partition(".")[0] not in sys.stdlib_module_names}


def _names_a_version(test: ast.expr) -> bool:
    """A condition on the interpreter's version: ``sys.version_info``, ``sys.version``, six's ``PY2``/``PY3``."""
    return any((isinstance(node, ast.Attribute) and node.attr in _VERSION_NAMES)
               or (isinstance(node, ast.Name) and node.id in _VERSION_NAMES) for node in ast.walk(test))


def distribution_of(module: str, settings: Settings) -> str:
    """The distribution that gives ``module``: the longest dotted prefix ``execcsn.toml`` names, else the top-level
    name itself."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in settings.distributions:
            return settings.distributions[".".join(parts[:end])]
    return parts[0]


def requirements_of(distributions: list[str], settings: Settings) -> list[str]:
    """What uv is asked for: each distribution as ``execcsn.toml`` fixes or caps it, else unconstrained."""
    pinned = {canonicalize_name(name): text for name, text in settings.pinned.items()}
    capped = {canonicalize_name(name): cap for name, cap in settings.caps.items()}
    asked = []
    for name in distributions:
        key = canonicalize_name(name)
        asked.append(pinned.get(key) or f"{name}{capped.get(key, '')}")
    return asked


def resolve_all(sets: list[list[str]]) -> list[list[str] | ResolutionError]:
    """Each set of requirements resolved (``resolve``), ``_RESOLVERS`` at once: uv spends most of a resolution
    waiting on the index. A set that cannot be resolved gives its ResolutionError in its place."""
    uv_bin = uv.find_uv_bin()  # once, here: sysconfig's first reading is not safe across threads

    def one(requirements: list[str]) -> list[str] | ResolutionError:
        try:
            return resolve(requirements, uv_bin=uv_bin)
        except ResolutionError as exc:
            return exc

    with ThreadPoolExecutor(_RESOLVERS) as pool:
        return list(pool.map(one, sets))


def resolve(requirements: list[str], python: str = sys.executable, uv_bin: str | None = None) -> list[str]:
    """Every distribution the requirements need, at the newest releases that go together for this interpreter, as
    ``name==version`` lines (uv's resolver, from the configured index)."""
    if not requirements:
        return []
    result = subprocess.run(
        [uv_bin or uv.find_uv_bin(), "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--python", python, "-"],
        input="".join(f"{line}\n" for line in requirements), capture_output=True, text=True,
    )
    if result.returncode != 0:
        raise ResolutionError(f"uv cannot resolve {', '.join(requirements)}: "
                              f"{(result.stdout + result.stderr).strip()[-1500:]}")
    pins = [line.strip() for line in result.stdout.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for line in pins:
        Requirement(line)  # uv's output is requirements; anything else is a failure of ours, loudly
    return pins
