"""The problems' tests run once on the original repository with ``repoexec_trace`` (the builder's suite machinery:
the project's environment, its sandbox): the source sites where an instance of a benchmark class has a renamed
member read, for the rewriter to rename where it cannot type the object (a mixin's ``self.cls(...)``, a
factory's result, an instance made in another module); the members a base outside the repository defines too,
which keep their names (its code calls them); the overrides that subclasses outside the benchmark define, whose
definitions follow the base; a repository class whose own definition a renamed read also finds (a sibling's
``expire`` that the common base calls), which is renamed with it. A failed trace costs those, never the paraphrase.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from ..builder import BuildError
from ..builder.suite import SuiteSettings, run_plugin
from ..environment import EnvironmentBuildError, Environments
from ..problem import ManifestError, load_project
from ..sandbox import SandboxUnavailable, make_sandbox
from .index import ClassKey
from .rename import Definitions, Renames, Sites

PLUGIN = Path(__file__).with_name("repoexec_trace.py")


class Read(NamedTuple):
    """A read of a renamed member seen by the trace."""

    file: str
    line: int  # where the attribute ends
    column: int  # in bytes
    member: str
    traced: ClassKey  # the benchmark class whose wrapper saw it
    found: ClassKey | None  # the class whose definition it found (None: an instance's own attribute)

    @property
    def site(self) -> tuple[int, int, str]:
        return self.line, self.column, self.member


class TraceError(Exception):
    """The trace did not run (environment, sandbox, time); the message says why."""


@dataclass(frozen=True)
class Traced:
    """What the run saw, each read or definition with the benchmark class it was seen for (a paraphrase that keeps
    a member as written for that class leaves it too): ``notes`` name the classes the plugin could not trace."""

    reads: list[Read]
    definitions: list[tuple[str, int, str, ClassKey]]  # file, first line, member, class
    interface: dict[tuple[ClassKey, str], str]  # (class, member) -> the class outside the repository defining it
    notes: list[str]

    def spread(self, renames: Renames) -> list[str]:
        """Until none is left: a read renamed (for its class) at a site where another read finds a repository
        class's own definition that is not renamed (the base's ``self.expire()`` on a sibling's instance): that
        class renames it too (not where it was kept as written). ``Class.member`` for each."""
        added: list[str] = []
        while True:
            renamed = {(read.file, read.site) for read in self.reads if _renamed(renames, read)}
            grow = {(read.found, read.member) for read in self.reads
                    if (read.file, read.site) in renamed and read.found in renames.index.classes
                    and not _renamed(renames, read)
                    and not any((cls, read.member) in renames.kept for cls in renames.lineage(read.found))}
            if not grow:
                return added
            for key, member in sorted(grow):
                renames.own.setdefault(key, set()).add(member)
                added.append(f"{key[1]}.{member}")

    def sites(self, renames: Renames) -> Sites:
        """The reads ``renames`` renames (for the class whose definition they find), by file."""
        return _by_file((read.file, read.site) for read in self.reads if _renamed(renames, read))

    def overrides(self, renames: Renames) -> Definitions:
        """The overrides' definitions of members ``renames`` still renames for their class, by file."""
        return _by_file((found[0], found[1:3]) for found in self.definitions if found[2] in renames.members(found[3]))


def _by_file(found: Iterable[tuple[str, tuple[Any, ...]]]) -> dict[str, frozenset[Any]]:
    grouped: dict[str, set[Any]] = {}
    for filename, item in found:
        grouped.setdefault(filename, set()).add(item)
    return {filename: frozenset(items) for filename, items in grouped.items()}


def _renamed(renames: Renames, read: Read) -> bool:
    """The member is renamed for the repository class whose definition the read found, else for the traced one."""
    return read.member in renames.members(read.found if read.found in renames.index.classes else read.traced)


def _key(label: str) -> ClassKey | None:
    module, _, name = label.rpartition(".")
    return (module, name) if label else None


def problem_tests(renames: Renames, folder: Path, manifest: dict[str, Any]) -> dict[Path, Path]:
    """A problem's own test modules (in ``folder``) -> where its runs place them: beside the focal module, by path
    relative to the source root (as the engine's executor does)."""
    focal = renames.index.files[manifest["module"]].relative_to(renames.index.root)
    return {test: focal.parent / test.name for test in sorted(folder.glob("test_*.py"))}


def _as_path_keeps_it(node: str) -> str:
    """The node id, or its test function's where a path would fold its parameter id (``[http://x]``: ``//``
    becomes ``/``): the suite runner joins node ids to the tree's root as paths, and one id that names no test
    makes pytest run none of them (marshmallow's trace ran no test). Every parameter set of the function runs then,
    which a trace, recording only, can afford."""
    return node if str(PurePosixPath(node)) == node else node.split("[", 1)[0]


def trace(manifest: Path, renames: Renames, problems: dict[Path, dict[str, Any]], cache: Path, sandbox: str,
          settings: SuiteSettings = SuiteSettings()) -> Traced:
    """Run the tests of ``problems`` (folder -> manifest) of the project ``manifest`` once, tracing the benchmark
    classes of ``renames`` (files relative to the source root). A ``TraceError`` when the run fails."""
    classes = [[module, name, sorted(renames.members((module, name)))] for module, name in sorted(renames.own)
               if (module, name) in renames.index.classes and renames.members((module, name))]
    if not classes:
        return Traced([], [], {}, [])
    packages = sorted({module.partition(".")[0] for module in renames.index.files})
    nodes = sorted({_as_path_keeps_it(node) for problem in problems.values() for node in problem.get("suite", [])})
    written = {at: test.read_bytes() for folder, problem in problems.items()
               for test, at in problem_tests(renames, folder, problem).items()}
    try:
        env = Environments(cache).get(load_project(manifest))
        document, tail = run_plugin(env, make_sandbox(sandbox), PLUGIN, [
            f"--repoexec-trace-classes={json.dumps(classes)}", f"--repoexec-trace-packages={json.dumps(packages)}",
            f"--repoexec-trace-source={env.source_root.resolve()}"],
            settings, [*nodes, *(str(at) for at in written)], written)
        data = json.loads(document)
    except (BuildError, EnvironmentBuildError, ManifestError, SandboxUnavailable, ValueError) as exc:
        raise TraceError(str(exc)) from None
    if not any(outcome == "passed" for outcome in data["outcomes"].values()):
        raise TraceError(f"no test passed:\n{tail}")
    return Traced([Read(*site[:4], _key(site[4]), _key(site[5])) for site in data["sites"]],
                  [(*found[:3], _key(found[3])) for found in data["overrides"]],
                  {((module, name), member): owner for module, name, member, owner in data["interface"]},
                  data["errors"])
