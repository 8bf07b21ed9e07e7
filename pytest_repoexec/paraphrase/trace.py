"""The problems' tests run once on the original repository with ``repoexec_trace`` (the builder's suite machinery:
the project's environment, its sandbox): the source sites where an instance of a benchmark class has a renamed
member read, for the rewriter to rename where it cannot type the object (a mixin's ``self.cls(...)``, a
factory's result, an instance made in another module). A failed trace costs those renames, never the paraphrase.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..build import BuildError
from ..build.suite import SuiteSettings, run_plugin
from ..environment import EnvironmentBuildError, Environments
from ..problem import ManifestError, load_project
from ..sandbox import SandboxUnavailable, make_sandbox
from .rename import Renames, Sites

PLUGIN = Path(__file__).with_name("repoexec_trace.py")


class TraceError(Exception):
    """The trace did not run (environment, sandbox, time); the message says why."""


def problem_tests(renames: Renames, folder: Path, manifest: dict[str, Any]) -> dict[Path, Path]:
    """A problem's own test modules (in ``folder``) -> where its runs place them: beside the focal module, by path
    relative to the source root (as the engine's executor does)."""
    focal = renames.index.files[manifest["module"]].relative_to(renames.index.root)
    return {test: focal.parent / test.name for test in sorted(folder.glob("test_*.py"))}


def trace(manifest: Path, renames: Renames, problems: dict[Path, dict[str, Any]], cache: Path, sandbox: str,
          settings: SuiteSettings = SuiteSettings()) -> tuple[Sites, list[str]]:
    """Run the tests of ``problems`` (folder -> manifest) of the project ``manifest`` once, tracing the benchmark
    classes of ``renames``; the sites seen (file relative to the source root -> (end line, end column, name)) and
    the plugin's notes (a class it could not trace). A ``TraceError`` when the run fails."""
    classes = [[module, name, sorted(renames.members((module, name)))] for module, name in sorted(renames.own)
               if (module, name) in renames.index.classes and renames.members((module, name))]
    if not classes:
        return {}, []
    nodes = sorted({node for problem in problems.values() for node in problem.get("suite", [])})
    written = {at: test.read_bytes() for folder, problem in problems.items()
               for test, at in problem_tests(renames, folder, problem).items()}
    try:
        env = Environments(cache).get(load_project(manifest))
        document, tail = run_plugin(env, make_sandbox(sandbox), PLUGIN, [
            f"--repoexec-trace-classes={json.dumps(classes)}", f"--repoexec-trace-source={env.source_root.resolve()}"],
            settings, [*nodes, *(str(at) for at in written)], written)
        data = json.loads(document)
    except (BuildError, EnvironmentBuildError, ManifestError, SandboxUnavailable, ValueError) as exc:
        raise TraceError(str(exc)) from None
    if not any(outcome == "passed" for outcome in data["outcomes"].values()):
        raise TraceError(f"no test passed:\n{tail}")
    sites: dict[str, set[tuple[int, int, str]]] = {}
    for filename, line, column, name, _ in data["sites"]:
        sites.setdefault(filename, set()).add((line, column, name))
    return {filename: frozenset(found) for filename, found in sites.items()}, data["errors"]
