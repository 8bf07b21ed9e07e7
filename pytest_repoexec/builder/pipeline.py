"""``repoexec build``: the steps in order, into a staging folder beside ``--out`` that is moved into place
only once the build is complete, so an error never leaves a half-written set that looks finished."""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..environment import EnvironmentBuildError, Environments, ProjectEnv
from ..problem import PROJECT_MANIFEST, load_project
from ..sandbox import SandboxUnavailable, make_sandbox
from . import BuildError
from .admit import GateOutcome, run_gate, set_rejected_aside
from .classes import NO_REPOSITORY, ClassOptions, class_suite, pick_classes, suite_reason, tested_methods, \
    uses_repository
from .context import Modules, full_context
from .describe import NO_DESCRIPTION, NO_DOCSTRING, docstring_descriptions, model_descriptions
from .functions import Function, Options, pick
from .modeltests import NO_TEST, ModelTestSettings, model_problems, summary
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
    model: ModelTestSettings | None = None  # tests from a model: all with tests="model", else where the suite has none
    requirements: tuple[str, ...] = ()
    functions: Options = Options()
    classes: ClassOptions | None = None  # class problems instead of function problems (``--classes``)
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
        if options.classes is None:
            written = _function_problems(project, env, options, report, clock, say)
        else:
            written = _class_problems(project, env, options, options.classes, report, clock, say)
        if options.gate:
            with clock.step("gate"):
                say(f"repoexec build: {name}: {len(written)} problems through the admission gate")
                _gate(project, written, options, report)
        report.write(project)
        put_in_place(project, out)
    except (EnvironmentBuildError, SandboxUnavailable) as exc:
        raise BuildError(name, "environment", str(exc).removeprefix(f"project {name}: ")) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def _function_problems(project: Path, env: ProjectEnv, options: BuildOptions, report: BuildReport, clock: _Clock,
                       say: Callable[[str], None]) -> list[str]:
    name = project.name
    with clock.step("picking"):
        picked = pick(env.source_root, env.project.import_root, options.functions)
    _count_picked(report, name, "functions", picked.functions, picked.skipped, say,
                  "no function fits (see the reasons with --verbose, or widen --min-lines/--max-lines, --private)")
    tests = options.tests or ("suite" if has_tests(env.source_root) else "model")
    return _write_problems(project, env, picked.functions, tests, options, report, clock, say)


def _class_problems(project: Path, env: ProjectEnv, options: BuildOptions, classes: ClassOptions,
                    report: BuildReport, clock: _Clock, say: Callable[[str], None]) -> list[str]:
    """A problem for each class that uses its repository and whose methods the passing suite runs, judged by those
    tests, with its two descriptions (see ``classes`` and ``describe``)."""
    name = project.name
    report.kind = "classes"
    with clock.step("picking"):
        picked = pick_classes(env.source_root, env.project.import_root, classes)
    _count_picked(report, name, "classes", picked.classes, picked.skipped, say,
                  "no module-level class with a method fits (--private to include _names)")
    if not has_tests(env.source_root):
        raise BuildError(name, "tests", "class problems are judged by the project's own suite; it ships no test module")
    with clock.step("suite"):
        say(f"repoexec build: {name}: running the project's test suite under coverage")
        run = run_suite(env, picked.classes, make_sandbox(options.sandbox), options.suite)
    report.suite = _suite_summary(run)
    modules, names = Modules(env.import_root), problem_names(picked.classes)
    kept = []
    for klass in picked.classes:
        context = full_context(modules, klass)
        reason = (None if uses_repository(context, klass) else NO_REPOSITORY) or suite_reason(klass, run, classes)
        if reason:
            report.skipped.append((_label(klass), reason))
        else:
            kept.append((klass, context, class_suite(klass, run, options.suite.max_tests)))
    with clock.step("describing"):
        if classes.describe_model is not None:
            say(f"repoexec build: {name}: asking {classes.describe_model} to describe {len(kept)} classes")
            described = model_descriptions(name, (klass for klass, _, _ in kept), classes.describe_model,
                                           classes.describe_options)
        else:
            described = {_label(klass): docstring_descriptions(klass) for klass, _, _ in kept}
    written = []
    with clock.step("writing"):
        for klass, context, suite in kept:
            descriptions = described.get(_label(klass))
            if descriptions is None:
                report.skipped.append((_label(klass), NO_DOCSTRING if classes.describe_model is None
                                       else NO_DESCRIPTION))
                continue
            manifest = problem_manifest(klass, context, len(suite), suite)
            manifest["prompt"] |= {"description_detailed": descriptions[0], "description_sketchy": descriptions[1]}
            write_problem(project, names[klass], manifest)
            written.append(names[klass])
            report.problems.append({"name": names[klass], "class": _label(klass), "tests": len(suite),
                                    "methods": len(klass.methods), "tested_methods": len(tested_methods(klass, run)),
                                    "tests_from": "suite", "verdict": "written"})
    if not written:
        reasons = Counter(reason for _, reason in report.skipped)
        raise BuildError(name, "picking classes", f"no class uses its repository, has its methods run by passing "
                         f"tests and a description ({len(run.passed)} of {len(run.outcomes)} tests passed; "
                         f"classes left out: {'; '.join(f'{count} {reason}' for reason, count in reasons.items())})")
    return written


def _count_picked(report: BuildReport, name: str, kind: str, picked: list[Any], skipped: list[tuple[str, str]],
                  say: Callable[[str], None], none_fits: str) -> None:
    """The report's counts of what was found and picked; a build with nothing picked stops here."""
    report.found, report.picked = len(picked) + len(skipped), len(picked)
    report.skipped += skipped
    say(f"repoexec build: {name}: {len(picked)} of {report.found} {kind} picked")
    if not picked:
        raise BuildError(name, f"picking {kind}", none_fits)


def _suite_summary(run: SuiteRun) -> dict[str, Any]:
    return {"tests": len(run.outcomes), "passed": len(run.passed),
            "not_passed": sorted(t for t, o in run.outcomes.items() if o != "passed"),
            "collect_errors": run.collect_errors, "seconds": round(run.seconds, 2)}


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


def _write_problems(project: Path, env: ProjectEnv, functions: list[Function], tests: str, options: BuildOptions,
                    report: BuildReport, clock: _Clock, say: Callable[[str], None]) -> list[str]:
    """A problem for each function with tests: the suite's where passing ones run it (``tests == "suite"``),
    the model's for the others, or for all (``"model"``); the problems written."""
    name = project.name
    if tests == "model" and options.model is None:
        raise BuildError(name, "tests", "tests from a model need --model=NAME" + (
            "; this project ships no test module" if options.tests is None else ""))
    modules, names = Modules(env.import_root), problem_names(functions)
    written, untested = [], functions
    if tests == "suite":
        with clock.step("suite"):
            say(f"repoexec build: {name}: running the project's test suite under coverage")
            run = run_suite(env, functions, make_sandbox(options.sandbox), options.suite)
        report.suite = _suite_summary(run)
        with clock.step("writing"):
            written, untested = _write_suite_problems(project, modules, names, functions, run, options, report)
        if options.model is None:
            report.skipped += [(_label(function), "no passing test runs its body") for function in untested]
            if not written:
                raise BuildError(name, "mapping tests", f"no picked function is run by a passing test of the suite "
                                 f"({len(run.passed)} of {len(run.outcomes)} tests passed)")
    if options.model is not None and untested:
        with clock.step("model tests"):
            from_model = _write_model_problems(project, modules, names, untested, options, report, say)
        if not written and not from_model:
            raise BuildError(name, "generating tests", f"{options.model.model} gave no usable test for any of the "
                             f"{len(untested)} functions ({summary(report.generated)})")
        written += from_model
    return written


def _write_suite_problems(project: Path, modules: Modules, names: dict[Function, str], functions: list[Function],
                          run: SuiteRun, options: BuildOptions, report: BuildReport
                          ) -> tuple[list[str], list[Function]]:
    """A problem for each function that passing suite tests run; (the problems written, the other functions)."""
    written, untested = [], []
    for function in functions:
        suite = suite_for(function, run, options.suite.max_tests)
        if not suite:
            untested.append(function)
            continue
        write_problem(project, names[function], problem_manifest(function, full_context(modules, function),
                                                                 len(suite), suite))
        written.append(names[function])
        report.problems.append({"name": names[function], "function": _label(function), "tests": len(suite),
                                "tests_from": "suite", "verdict": "written"})
    return written, untested


def _write_model_problems(project: Path, modules: Modules, names: dict[Function, str], functions: list[Function],
                          options: BuildOptions, report: BuildReport, say: Callable[[str], None]) -> list[str]:
    """Problems with tests from ``options.model``; a function it gives no usable test is skipped."""
    def fix(problems: list[str]) -> GateOutcome:
        return run_gate(project, options.cache, options.sandbox, options.workers,
                        [*options.gate_options, "--repoexec-mutants=0"], options.gate_timeout, problems, fix=True)

    written, report.generated = model_problems(project, modules, functions, names, options.model, fix, say)
    for function in functions:
        label = _label(function)
        if names[function] not in written:
            report.skipped.append((label, NO_TEST))
            continue
        report.problems.append({"name": names[function], "function": label,
                                "tests": len(report.generated[label]["kept"]), "tests_from": "model",
                                "verdict": "written"})
    return written


def _label(function: Function) -> str:
    return f"{function.module}:{function.qualname}"


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


def put_in_place(project: Path, out: Path) -> None:
    """The finished build replaces ``out`` (an earlier build, or nothing) in two renames."""
    out.parent.mkdir(parents=True, exist_ok=True)
    old = out.parent / f".{out.name}.replaced-{os.getpid()}"
    if out.exists():
        out.rename(old)
    project.rename(out)
    shutil.rmtree(old, ignore_errors=True)
