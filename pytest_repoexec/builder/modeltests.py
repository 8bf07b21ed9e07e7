"""Tests from a model, for the functions the project's suite does not test (or all, with ``--tests=model``).

The paper's pipeline: its prompt, the answers sifted (``harvest.py``: tests that parse and call the function),
the kept tests written as the problem's own test module, then the assertion fixer and the gate's reruns in one
engine run (``--repoexec-fix-assertions``: expected values from the reference; tests that fail otherwise are
removed by the fixer, flaky ones here). While the gate's line coverage of the function is under its bar, the
paper's coverage-enhancement prompt asks for more, for ``coverage_rounds`` rounds, and the new tests go through
the same filters. A function left with no test is skipped, with what became of each of its tests in the report.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generators.standalone import ModelOptions, ask, model_generator

from .. import testmodule
from ..generation import GenerationError
from ..prompts import Prompt
from . import BuildError
from .admit import GateOutcome
from .context import Modules, full_context, module_imports
from .functions import Function
from .harvest import count_tests, extend, harvest, new_module, shown_tests
from .testprompts import coverage_prompt, initial_prompt
from .writer import problem_manifest, tests_path, write_problem

NO_TEST = "no usable test from the model"
_BROKEN = ("the assertion fixer:", "not checked:")  # the fixer could not run the module: its tests are lost


@dataclass(frozen=True)
class ModelTestSettings:
    model: str  # any name --repoexec-model accepts
    options: ModelOptions
    samples: int = 5  # answers asked per prompt
    coverage_rounds: int = 2


@dataclass
class _Draft:
    """A function on its way to a problem: what it is asked with, and what became of its tests."""

    function: Function
    context: str
    imports: list[str]
    log: dict[str, Any] = field(default_factory=lambda: {"kept": [], "dropped": [], "fixed": [], "rounds": []})
    line_coverage: float | None = None
    under_bar: bool = True


Fix = Callable[[list[str]], GateOutcome]  # the fixer and the gate (without mutants) on these problems


def model_problems(project: Path, modules: Modules, functions: list[Function], names: dict[Function, str],
                   settings: ModelTestSettings, fix: Fix, say: Callable[[str], None]) -> tuple[list[str], dict]:
    """Write a problem with model tests for each function that gets some; (the problems written, the log of
    each function's tests by ``module:qualname``)."""
    try:
        generator = model_generator(settings.model, settings.options)
    except GenerationError as exc:
        raise BuildError(project.name, "generating tests", str(exc)) from None
    drafts = {names[f]: _Draft(f, full_context(modules, f), module_imports(modules.tree(f.module)[1]))
              for f in functions}

    def asked(prompts: dict[str, Prompt], whole: bool) -> dict[str, list[str]]:
        try:
            return ask(generator, prompts, settings.samples, whole)
        except GenerationError as exc:
            raise BuildError(project.name, "generating tests", str(exc)) from None

    say(f"repoexec build: {project.name}: asking {settings.model} for tests of {len(drafts)} functions")
    answers = asked({name: initial_prompt(d.function, d.context) for name, d in drafts.items()}, whole=False)
    new = []
    for name, draft in drafts.items():
        found = harvest(answers[name], draft.function, generator.backend.continues)
        draft.log["dropped"] += _dropped(found.dropped)
        if found.tests:
            module = extend(new_module(draft.function, draft.imports, settings.model), found)
            _write(project, name, draft, module)
            new.append(name)
    written = _settle(project, drafts, new, fix, {})
    for number in range(1, settings.coverage_rounds + 1):
        low = [name for name in written if drafts[name].under_bar]
        if not low:
            break
        say(f"repoexec build: {project.name}: coverage round {number}: {len(low)} functions under the bar")
        kept = _coverage_round(project, {name: drafts[name] for name in low}, number, asked, fix)
        written = [name for name in written if name not in low or name in kept]
    for name, draft in drafts.items():
        draft.log["kept"] = _test_names(project, name) if name in written else []
        draft.log["line_coverage"] = draft.line_coverage if name in written else None
    return written, {f"{d.function.module}:{d.function.qualname}": d.log for d in drafts.values()}


def _coverage_round(project: Path, drafts: dict[str, _Draft], number: int,
                    asked: Callable[[dict[str, Prompt], bool], dict[str, list[str]]], fix: Fix) -> list[str]:
    """Round ``number`` of coverage enhancement for ``drafts``: the problems that still have tests."""
    before = {name: tests_path(project, name).read_text(encoding="utf-8") for name in drafts}
    answers = asked({name: coverage_prompt(draft.function, draft.context, shown_tests(before[name]), number)
                     for name, draft in drafts.items()}, True)
    added = []
    for name, draft in drafts.items():
        found = harvest(answers[name], draft.function, False, before[name])
        draft.log["rounds"].append({"round": number, "line_coverage": draft.line_coverage, "added": list(found.tests)})
        draft.log["dropped"] += _dropped(found.dropped)
        if found.tests:
            _write(project, name, draft, extend(before[name], found))
            added.append(name)
    return [name for name in drafts if name not in added] + _settle(project, drafts, added, fix, before)


def _settle(project: Path, drafts: dict[str, _Draft], names: list[str], fix: Fix,
            before: dict[str, str]) -> list[str]:
    """The fixer and the gate's reruns on ``names``: what they removed and fixed logged, flaky tests removed;
    the problems that still have tests. A module the fixer cannot run goes back to ``before`` (the module
    ahead of a coverage round), or the problem is removed."""
    if not names:
        return []
    outcome = fix(names)
    survivors = []
    for name in names:
        draft = drafts[name]
        fixes = outcome.fixes.get(name, {})
        draft.log["fixed"] += fixes.get("fixed", [])
        for entry in fixes.get("removed", []):
            test, _, why = entry.partition(": ")
            draft.log["dropped"] += _dropped([(test, f"fails with the reference: {why}")])
        verdict = outcome.verdicts.get(name, {"reasons": ["not checked: the fixer gave no verdict"]})
        reasons = list(verdict.get("reasons", []))
        broken = [reason for reason in reasons if reason.startswith(_BROKEN)]
        module = tests_path(project, name).read_text(encoding="utf-8")
        if broken:
            lost = sorted(_names_of(module) - _names_of(before.get(name, "")))
            draft.log["dropped"] += _dropped((test, broken[0]) for test in lost)
            if name not in before:
                shutil.rmtree(project / name)
                continue
            _write(project, name, draft, before[name])
            survivors.append(name)
            continue
        flaky = {test.partition("[")[0] for test in verdict.get("flaky", [])}
        draft.log["dropped"] += _dropped((test, "flaky over the gate's reruns") for test in sorted(flaky))
        module = testmodule.remove_functions(module, flaky) if flaky else module
        if not count_tests(module):
            shutil.rmtree(project / name)
            continue
        _write(project, name, draft, module)
        draft.line_coverage = verdict.get("line_coverage")
        draft.under_bar = any(reason.startswith("coverage of ") for reason in reasons)
        survivors.append(name)
    return survivors


def _write(project: Path, name: str, draft: _Draft, module: str) -> None:
    manifest = problem_manifest(draft.function, draft.context, count_tests(module))
    write_problem(project, name, manifest, module)


def _dropped(pairs: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"test": test, "reason": reason} for test, reason in pairs]


def _names_of(module: str) -> set[str]:
    return {test.name for test in testmodule.test_functions(testmodule.parse(module))} if module else set()


def _test_names(project: Path, name: str) -> list[str]:
    return sorted(_names_of(tests_path(project, name).read_text(encoding="utf-8")))


def summary(logs: dict[str, dict]) -> str:
    """What became of the dropped tests, most frequent reason first (for a build that kept none)."""
    reasons: dict[str, int] = {}
    for log in logs.values():
        for entry in log["dropped"]:
            kind = entry["reason"].partition(":")[0]
            reasons[kind] = reasons.get(kind, 0) + 1
    return ", ".join(f"{count} {kind}" for kind, count in sorted(reasons.items(), key=lambda pair: -pair[1])) or (
        "no test in any answer")
