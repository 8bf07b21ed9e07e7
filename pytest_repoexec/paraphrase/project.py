"""``repoexec paraphrase DIR --out DIR2``: the repository copied as ``DIR2/repo`` with the benchmark's identifiers
case-flipped in its code and tests (where the static reading cannot type an object, as the problems' tests run on the
original showed: ``trace``; not a member a base outside the repository defines too, which calls it by its name),
every admitted problem of DIR with its manifest in the new spellings, then the
admission gate on all of them: a problem whose tests no longer pass is dropped (set aside as the builder's
rejected ones) and reported. Built in a staging folder, moved into place only when complete."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from ..environment import EnvironmentBuildError, Environments
from ..problem import PROBLEM_MANIFEST, PROJECT_MANIFEST, ManifestError, load_project
from ..builder import BuildError
from ..builder.admit import REJECTED, run_gate, set_rejected_aside
from ..builder.pipeline import put_in_place
from ..builder.sources import Source, copy_tree
from . import ParaphraseError
from .index import ClassKey, Index, identifiers
from .manifest import benchmark_names, rewrite_manifest
from .names import choose
from .rename import Renames
from .trace import TraceError, Traced, problem_tests, trace

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPORT = "paraphrase-report.json"


@dataclass(frozen=True)
class ParaphraseOptions:
    folder: Path
    out: Path
    cache: Path
    sandbox: str = "bwrap"
    gate: bool = True
    workers: int = 1
    gate_options: tuple[str, ...] = ()
    gate_timeout: float = 3600.0
    trace: bool = True  # run the problems' tests on the original first, to rename what static typing cannot tell


@dataclass
class ParaphraseReport:
    project: str
    origin: str
    renamed: dict[str, str] = field(default_factory=dict)
    passed_over: list[str] = field(default_factory=list)  # flips taken by a name already in the repository
    problems: list[dict[str, Any]] = field(default_factory=list)
    traced_sites: int = 0  # member reads renamed only because the trace saw a benchmark instance's read there
    kept_as_interface: dict[str, str] = field(default_factory=dict)  # Class.member -> the base outside that defines it
    kept_as_inherited: dict[str, str] = field(default_factory=dict)  # Class.member -> the repository base defining it
    renamed_overrides: int = 0  # definitions renamed only because the trace saw them override a renamed member
    renamed_alongside: list[str] = field(default_factory=list)  # Class.member: a renamed read finds it too

    @property
    def admitted(self) -> int:
        return sum(problem["verdict"] == "admitted" for problem in self.problems)

    @property
    def kept_share(self) -> float:
        return self.admitted / len(self.problems) if self.problems else 0.0

    def table(self) -> list[str]:
        """The summary the command prints: the counts, each dropped problem, what the trace added."""
        lines = [f"{'problems in':>12} {'identifiers':>12} {'admitted':>9} {'dropped':>8} {'kept':>7}",
                 f"{len(self.problems):>12} {len(self.renamed):>12} {self.admitted:>9} "
                 f"{len(self.problems) - self.admitted:>8} {self.kept_share:>7.1%}"]
        lines += [f"dropped {p['name']} ({p['entry_point']}): {'; '.join(p['reasons']) or 'no reason given'}"
                  for p in self.problems if p["verdict"] == "dropped"]
        lines += [f"{self.traced_sites} member reads renamed from the trace of the tests (static typing could not "
                  "tell)",
                  f"{self.renamed_overrides} overrides renamed in subclasses outside the benchmark (the trace saw "
                  "them)"]
        if self.renamed_alongside:
            lines.append(f"{len(self.renamed_alongside)} members of other repository classes renamed with them (a "
                         f"renamed read finds their definitions too): {', '.join(self.renamed_alongside)}")
        if self.kept_as_inherited:
            lines.append(f"{len(self.kept_as_inherited)} members kept as written, a repository base outside the "
                         "benchmark defines them too: " + ", ".join(f"{member} ({base})"
                                                                    for member, base in self.kept_as_inherited.items()))
        if self.kept_as_interface:
            lines.append(f"{len(self.kept_as_interface)} members kept as written, a base outside the repository "
                         "defines them: " + ", ".join(f"{member} ({base})"
                                                      for member, base in self.kept_as_interface.items()))
        return lines

    def write(self, folder: Path) -> None:
        document = {"project": self.project, "from": self.origin, "problems_in": len(self.problems),
                    "renamed": self.renamed, "passed_over": self.passed_over, "traced_sites": self.traced_sites,
                    "kept_as_interface": self.kept_as_interface, "kept_as_inherited": self.kept_as_inherited,
                    "renamed_overrides": self.renamed_overrides,
                    "renamed_alongside": self.renamed_alongside,
                    "admitted": self.admitted,
                    "dropped": len(self.problems) - self.admitted,
                    "kept_share": self.kept_share,
                    "problems": self.problems}
        (folder / REPORT).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def paraphrase(options: ParaphraseOptions, say: Callable[[str], None] = print) -> ParaphraseReport:
    """Paraphrase the built project ``options.folder`` into ``options.out``; the report, also written there."""
    folder, out = options.folder.resolve(), options.out.resolve()
    name = out.name
    _check_out(out)
    manifests = _problems(folder)
    staging = out.parent / f".{name}.paraphrasing-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    project = staging / name
    report = ParaphraseReport(name, str(folder))
    try:
        say(f"repoexec paraphrase: {name}: copying the repository")
        import_root = _copy_source(folder, project, options.cache)
        renames = _choose(Index(project / "repo", import_root), manifests, report)
        report.kept_as_inherited = renames.keep_inherited()
        if options.trace:
            say(f"repoexec paraphrase: {name}: tracing the problems' tests on the original repository")
            traced = _trace(folder, manifests, renames, options, say)
            if traced is not None:
                report.kept_as_interface = _keep_interface(renames, traced.interface)
                report.renamed_alongside = traced.spread(renames)
                renames.sites, renames.overrides = traced.sites(renames), traced.overrides(renames)
        report.renamed = dict(renames.names)
        say(f"repoexec paraphrase: {name}: {len(renames.names)} identifiers renamed in the repository")
        renames.rewrite_files()
        for problem, manifest in manifests.items():
            _write_problem(folder / problem, project / problem, manifest, renames, report)
        report.traced_sites, report.renamed_overrides = renames.traced, renames.overridden
        if options.gate:
            say(f"repoexec paraphrase: {name}: {len(manifests)} problems through the admission gate")
            _gate(project, options, report)
        else:
            for entry in report.problems:
                entry.update(verdict="admitted", reasons=[])
        report.write(project)
        put_in_place(project, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def _check_out(out: Path) -> None:
    """``--out`` may be new, empty, or an earlier paraphrase (which is replaced); never anything else."""
    if out.exists() and any(out.iterdir()) and not (out / REPORT).is_file():
        raise ParaphraseError(f"{out} exists and is not an earlier paraphrase (no {REPORT}); give a new folder")


def _problems(folder: Path) -> dict[str, dict[str, Any]]:
    """The admitted problems' manifests (``rejected/`` left out), by folder name."""
    if not (folder / PROJECT_MANIFEST).is_file():
        raise ParaphraseError(f"{folder}: no {PROJECT_MANIFEST}: not a built project")
    found = {path.parent.name: tomllib.loads(path.read_text(encoding="utf-8"))
             for path in sorted(folder.glob(f"*/{PROBLEM_MANIFEST}")) if path.parent.name != REJECTED}
    if not found:
        raise ParaphraseError(f"{folder}: no problem to paraphrase")
    return found


def _copy_source(folder: Path, project: Path, cache: Path) -> str:
    """The repository copied into ``project/repo`` (a PyPI pin materialised by the engine's cache first), and a
    ``project.toml`` that points there with the original's other fields; the import root."""
    manifest = folder / PROJECT_MANIFEST
    try:
        original = load_project(manifest)
        root = Path(original.source.location) if original.source.kind == "path" else \
            Environments(cache).get(original).source_root
    except (ManifestError, EnvironmentBuildError) as exc:
        raise ParaphraseError(str(exc)) from None
    try:
        copy_tree(Source("folder", str(root)), project / "repo", project.name)
    except BuildError as exc:
        raise ParaphraseError(str(exc)) from None
    fields = tomllib.loads(manifest.read_text(encoding="utf-8"))
    fields["source"] = {"path": "repo"}
    (project / PROJECT_MANIFEST).write_text(tomli_w.dumps(fields), encoding="utf-8")
    return original.import_root


def _choose(index: Index, manifests: dict[str, dict[str, Any]], report: ParaphraseReport) -> Renames:
    """The benchmark's identifiers and their new spellings, away from every name the repository uses."""
    top: set[ClassKey] = set()
    own: dict[ClassKey, set[str]] = {}
    old: list[str] = []
    renames = Renames(index, {})
    for manifest in manifests.values():
        key, names = benchmark_names(renames, manifest["module"], manifest["entry_point"])
        top.add(key)
        own.setdefault(key, set()).update(names[1:])
        old += names
    existing: dict[str, str] = {}
    for module, tree in index.trees.items():
        where = str(index.files[module].relative_to(index.root))
        for name in identifiers(tree):
            existing.setdefault(name, where)
    renames.names, report.passed_over = choose(old, existing)
    renames.top, renames.own = top, own
    return renames


def _trace(folder: Path, manifests: dict[str, dict[str, Any]], renames: Renames, options: ParaphraseOptions,
           say: Callable[[str], None]) -> Traced | None:
    """What the trace saw; nothing, with a warning naming the project, where it fails."""
    name = options.out.name
    try:
        traced = trace(folder / PROJECT_MANIFEST, renames, {folder / problem: manifest for problem, manifest
                                                            in manifests.items()}, options.cache, options.sandbox)
    except TraceError as exc:
        say(f"repoexec paraphrase: {name}: warning: the trace of the tests failed, static renames only: {exc}")
        return None
    for note in traced.notes:
        say(f"repoexec paraphrase: {name}: warning: not traced: {note}")
    return traced


def _keep_interface(renames: Renames, interface: dict[tuple[ClassKey, str], str]) -> dict[str, str]:
    """The members that a base outside the repository defines as well kept as written (its own methods call them
    by name); ``Class.member`` -> that base, for each class's own members."""
    kept = {f"{key[1]}.{member}": owner for (key, member), owner in sorted(interface.items())
            if member in renames.own.get(key, ())}
    for key, member in sorted(interface):
        renames.keep(key, member)
    return kept


def _write_problem(source: Path, target: Path, manifest: dict[str, Any], renames: Renames,
                   report: ParaphraseReport) -> None:
    """The problem's folder copied, its manifest and its own test modules in the new spellings."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _, own = benchmark_names(renames, manifest["module"], manifest["entry_point"])
    rewritten = rewrite_manifest(manifest, renames, own)
    (target / PROBLEM_MANIFEST).write_text(tomli_w.dumps(rewritten, multiline_strings=True), encoding="utf-8")
    package = manifest["module"].rpartition(".")[0]
    for test, runs_at in problem_tests(renames, target, manifest).items():
        module = f"{package}.{test.stem}" if package else test.stem
        test.write_text(renames.rewrite(test.read_text(encoding="utf-8"), module, path=runs_at.as_posix()),
                        encoding="utf-8")
    report.problems.append({"name": target.name, "entry_point": manifest["entry_point"],
                            "new_entry_point": rewritten["entry_point"], "verdict": "written"})


def _gate(project: Path, options: ParaphraseOptions, report: ParaphraseReport) -> None:
    try:
        outcome = run_gate(project, options.cache, options.sandbox, options.workers, list(options.gate_options),
                           options.gate_timeout)
    except BuildError as exc:
        raise ParaphraseError(str(exc)) from None
    dropped = set(set_rejected_aside(project, outcome, [entry["name"] for entry in report.problems]))
    for entry in report.problems:
        entry["verdict"] = "dropped" if entry["name"] in dropped else "admitted"
        entry["reasons"] = list(outcome.verdicts.get(entry["name"], {}).get("reasons", []))
