"""Workers on other hosts (xdist's ``--tx ssh=...``): what the controller checks before they start, what a remote
worker checks before its first sample, and the summary of what each host could not run.

A remote host runs its own copy of the problems, with its own cache. Before its first sample it compares the
copy with the controller's (a digest of each file the tests see, sent in ``workerinput``), refusing each problem
whose files differ, checks that its sandbox starts, and builds its environments, saying so in lines on its
stderr (which ssh brings to the controller's). A sample the host cannot run is an error of its set-up whose
message names the host, and the controller's summary lists such errors by host.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from .environment import EnvironmentBuildError, Environments, project_source_key
from .problem import Problem, Project

Digests = dict[str, dict[str, dict[str, str]]]  # "problems": id -> {file: sha256}; "projects": name -> {part: key}


def host_name(spec: Any) -> str | None:
    """Where an xdist gateway runs: its ssh or socket address, or None for a process on this host."""
    if spec.popen and not spec.via:
        return None
    return spec.ssh or spec.socket or spec.vagrant_ssh or f"popen via {spec.via}"


def check_paths(config: pytest.Config, specs: Sequence[Any]) -> None:
    """xdist 3 hands a path of the command line to another host only if it lies under an rsync root (a
    deprecated feature) and is given absolute; anything else stops it with an internal error, so say what works."""
    remote = [name for name in map(host_name, specs) if name]
    if not remote:
        return
    roots = [Path(root).resolve() for root in [*config.getoption("rsyncdir", []), *config.getini("rsyncdirs")]]
    for arg in config.invocation_params.args:
        path = Path(str(arg).split("::")[0])
        if str(arg).startswith("-") or not path.exists():
            continue
        if path.is_absolute() and any(path.resolve().is_relative_to(root) for root in roots):
            continue
        raise pytest.UsageError(
            f"{arg}: xdist cannot name this path to {remote[0]}: a path on the command line reaches another host "
            "only absolute and under an --rsyncdir (which xdist deprecates). Put the problems on each host, run "
            "from the folder that holds them without a path (testpaths or the folder itself), give each host's "
            "copy as the gateway's folder (--tx ssh=HOST//chdir=PATH) and select with -k; or pass "
            f"{path.resolve()} with --rsyncdir={path.resolve()} (see docs/tutorials/cluster.md, \"The xdist way\")"
        )


def files_digest(problems: Iterable[Problem]) -> Digests:
    """What the tests of each problem see: its manifest, test module and expected files, file by file, and its
    project's manifest and source (as its environment is keyed)."""
    digests: Digests = {"problems": {}, "projects": {}}
    for problem in problems:
        files = [problem.manifest, *([problem.tests] if problem.tests else [])]
        if problem.expected.is_dir():
            files += sorted(path for path in problem.expected.rglob("*") if path.is_file())
        digests["problems"][problem.id] = {os.path.relpath(path, problem.folder): _sha256(path) for path in files}
        digests["projects"][problem.project.name] = _project_digest(problem.project)
    return digests


def refusals(problems: Iterable[Problem], controller: Digests, host: str) -> dict[str, str]:
    """Why this host refuses each problem whose files are not the controller's, by problem id."""
    here = files_digest(problems)
    refused = {}
    for problem in problems:
        wanted = controller.get("problems", {}).get(problem.id)
        if wanted is None:
            refused[problem.id] = f"{host} refuses {problem.id}: the controller did not select it"
            continue
        differ = _differences(here["problems"][problem.id], wanted)
        differ += [f"project {problem.project.name}'s {part}" for part in
                   _differences(here["projects"][problem.project.name],
                                controller.get("projects", {}).get(problem.project.name, {}))]
        if differ:
            refused[problem.id] = (f"{host} refuses {problem.id}: its files differ from the controller's: "
                                   f"{', '.join(differ)} (in {problem.folder})")
    return refused


def prepare(environments: Environments, projects: Sequence[Project], workers: int, say: Any) -> None:
    """Build this host's environments before its first sample, saying which, and how each build ended."""
    todo = list({project.name: project for project in projects}.values())
    if not todo:
        return
    say(f"building the environments of {len(todo)} projects ({', '.join(p.name for p in todo)}) in "
        f"{environments.cache} before the first sample")
    started = time.monotonic()
    environments.prepare(todo, workers, False)
    failed = []
    for project in todo:
        try:
            environments.get(project)
        except EnvironmentBuildError as exc:
            failed.append(f"{project.name} failed: {str(exc).splitlines()[0][:200]}")
    say(f"environments ready in {time.monotonic() - started:.1f} s" + (f"; {'; '.join(failed)}" if failed else ""))


def announcer(config: pytest.Config, host: str) -> Any:
    """Lines on this worker's own stderr, outside pytest's capture: ssh carries them to the controller's."""
    capture = config.pluginmanager.getplugin("capturemanager")
    worker = config.workerinput.get("workerid", "worker")  # type: ignore[attr-defined]

    def say(line: str) -> None:
        with capture.global_and_fixture_disabled():
            sys.stderr.write(f"repoexec {worker} on {host}: {line}\n")
            sys.stderr.flush()

    return say


class HostErrors:
    """On the controller: the samples each remote host could not run, listed by host in the summary."""

    def __init__(self) -> None:
        self.errors: dict[str, dict[str, str]] = {}  # host -> node id -> first line of the reason

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = getattr(report, "node", None)
        host = host_name(node.gateway.spec) if node is not None else None
        if host is None or not report.failed or report.when != "setup":
            return
        crash = getattr(report.longrepr, "reprcrash", None)
        text = (crash.message if crash else str(report.longrepr)).strip().removeprefix("Failed: ")
        self.errors.setdefault(f"{host} ({node.gateway.id})", {})[report.nodeid] = text.splitlines()[0][:300]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.errors:
            return
        terminalreporter.write_sep("!", "repoexec: samples that hosts could not run", red=True)
        for host, errors in self.errors.items():
            terminalreporter.write_line(f"host {host}: {len(errors)} samples could not run", red=True)
            for reason in dict.fromkeys(errors.values()):
                terminalreporter.write_line(f"  {reason}")


def _project_digest(project: Project) -> dict[str, str]:
    return {"project.toml": _sha256(project.manifest), "source": project_source_key(project)}


def _differences(here: Mapping[str, str], controller: Mapping[str, str]) -> list[str]:
    """Each file (or part) whose digest is not the controller's, and how."""
    def how(name: str) -> str:
        return "changed" if name in here and name in controller else "missing here" if name in controller \
            else "not on the controller"

    names = sorted(set(here) | set(controller))
    return [f"{name} ({how(name)})" for name in names if here.get(name) != controller.get(name)]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
