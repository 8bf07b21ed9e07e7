"""``repoexec build``: the steps in order, into a staging folder beside ``--out`` that is moved into place
only once the build is complete, so an error never leaves a half-written set that looks finished."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..environment import EnvironmentBuildError, Environments, ProjectEnv
from ..problem import PROJECT_MANIFEST, load_project
from ..sandbox import SandboxUnavailable, make_sandbox
from . import BuildError
from .admit import run_gate, set_rejected_aside
from .context import Modules, full_context
from .functions import Function, Options, pick
from .report import REPORT, BuildReport
from .requirements import declared_dependencies, requirement_files, extras_for_tests
from .sources import Source, copy_tree, parse_source
from .suite import SuiteRun, SuiteSettings, has_tests, run_suite, suite_for
from .writer import problem_manifest, problem_names, project_manifest, write_problem, write_project


@dataclass(frozen=True)
class BuildOptions:
    source: str
    out: Path
    cache: Path
    tests: str | None = None  # "suite" (the default where the project has tests) or "model"
    requirements: tuple[str, ...] = ()
    functions: Options = Options()
    suite: SuiteSettings = SuiteSettings()
    sandbox: str = "bwrap"
    gate: bool = True
    workers: int = 1
    gate_options: tuple[str, ...] = ()
    gate_timeout: float = 3600.0


@dataclass
class _Clock:
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started


def build(options: BuildOptions, say: Callable[[str], None] = print) -> BuildReport:
    """Build the project; the report, also written as ``build-report.json`` in ``--out``."""
    out = options.out.resolve()
    name = out.name
    source = parse_source(options.source, name)
    _check_out(out, name)
    staging = out.parent / f".{name}.building-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    project = staging / name
    clock = _Clock()
    report = BuildReport(name, options.source, seconds=clock.seconds)
    try:
        with clock.step("environment"):
            say(f"repoexec build: {name}: source and environment")
            env = _environment(source, project, options, staging)
        with clock.step("picking"):
            picked = pick(env.source_root, env.project.import_root, options.functions)
        report.found, report.picked = len(picked.functions) + len(picked.skipped), len(picked.functions)
        report.skipped += picked.skipped
        say(f"repoexec build: {name}: {len(picked.functions)} of {report.found} functions picked")
        if not picked.functions:
            raise BuildError(name, "picking functions", "no function fits (see the reasons with --verbose, or "
                             "widen --min-lines/--max-lines, --private)")
        tests = options.tests or ("suite" if has_tests(env.source_root) else "model")
        if tests != "suite":
            raise BuildError(name, "tests", "tests from a model (--tests=model) are not built yet; this project "
                             "ships no test module" if options.tests is None else "--tests=model is not built yet")
        with clock.step("suite"):
            say(f"repoexec build: {name}: running the project's test suite under coverage")
            run = run_suite(env, picked.functions, make_sandbox(options.sandbox), options.suite)
        report.suite = {"tests": len(run.outcomes), "passed": len(run.passed),
                        "not_passed": sorted(t for t, o in run.outcomes.items() if o != "passed"),
                        "collect_errors": run.collect_errors, "seconds": round(run.seconds, 2)}
        with clock.step("writing"):
            written = _write_problems(project, env, picked.functions, run, options, report)
        if not written:
            raise BuildError(name, "mapping tests", f"no picked function is run by a passing test of the suite "
                             f"({len(run.passed)} of {len(run.outcomes)} tests passed)")
        if options.gate:
            with clock.step("gate"):
                say(f"repoexec build: {name}: {len(written)} problems through the admission gate")
                _gate(project, written, options, report)
        report.write(project)
        _put_in_place(project, out)
    except (EnvironmentBuildError, SandboxUnavailable) as exc:
        raise BuildError(name, "environment", str(exc)) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def _check_out(out: Path, name: str) -> None:
    """``--out`` may be new, empty, or an earlier build (which is replaced); never anything else."""
    if out.exists() and any(out.iterdir()) and not (out / REPORT).is_file():
        raise BuildError(name, "output", f"{out} exists and is not an earlier build (no {REPORT}); "
                         "give a new folder")


def _environment(source: Source, project: Path, options: BuildOptions, staging: Path) -> ProjectEnv:
    """The project's manifest written and its environment built; a PyPI release is materialised first (by
    the engine's cache, under the same key the built project will use) to read what its tests need."""
    environments = Environments(options.cache)
    if source.kind == "pypi":
        probe = staging / "probe" / project.name
        write_project(probe, project_manifest(source, ".", []))
        root = environments.get(load_project(probe / PROJECT_MANIFEST)).source_root
        extras = extras_for_tests(root)
        pin = source.location.replace("==", f"[{','.join(extras)}]==", 1) if extras else source.location
        requirements = [pin, *requirement_files(root)]
    else:
        copy_tree(source, project / "repo", project.name)
        root = project / "repo"
        requirements = [*declared_dependencies(root), *requirement_files(root)]
    requirements = list(dict.fromkeys([*requirements, *options.requirements]))
    write_project(project, project_manifest(source, import_root(root), requirements))
    return environments.get(load_project(project / PROJECT_MANIFEST))


def import_root(root: Path) -> str:
    """``src`` for a src layout (packages under ``src/``, none beside it), else the source root."""
    src = root / "src"
    if src.is_dir() and any((child / "__init__.py").is_file() for child in src.iterdir() if child.is_dir()):
        return "src"
    return "."


def _write_problems(project: Path, env: ProjectEnv, functions: list[Function], run: SuiteRun,
                    options: BuildOptions, report: BuildReport) -> list[str]:
    modules = Modules(env.import_root)
    names = problem_names(functions)
    written = []
    for function in functions:
        label = f"{function.module}:{function.qualname}"
        suite = suite_for(function, run, options.suite.max_tests)
        if not suite:
            report.skipped.append((label, "no passing test runs its body"))
            continue
        manifest = problem_manifest(function, full_context(modules, function), suite)
        write_problem(project, names[function], manifest)
        written.append(names[function])
        report.problems.append({"name": names[function], "function": label, "tests": len(suite),
                                "verdict": "written"})
    return written


def _gate(project: Path, written: list[str], options: BuildOptions, report: BuildReport) -> None:
    outcome = run_gate(project, options.cache, options.sandbox, options.workers, list(options.gate_options),
                       options.gate_timeout)
    rejected = set(set_rejected_aside(project, outcome, written))
    for problem in report.problems:
        entry = outcome.verdicts.get(problem["name"], {})
        problem["verdict"] = "rejected" if problem["name"] in rejected else "admitted"
        problem["reasons"] = list(entry.get("reasons", []))
        for key in ("line_coverage", "branch_coverage", "mutation_score"):
            problem[key] = entry.get(key)


def _put_in_place(project: Path, out: Path) -> None:
    """The finished build replaces ``out`` (an earlier build, or nothing) in two renames."""
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.parent / f".{out.name}.replaced-{os.getpid()}"
    if out.exists():
        out.rename(old)
    project.rename(out)
    shutil.rmtree(old, ignore_errors=True)
