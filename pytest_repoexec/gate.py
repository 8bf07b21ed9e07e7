"""The admission gate: whether a problem's tests are fit to judge candidates, and why not.

A problem is admitted when its tests are sane (they call the function and assert something about it), its
reference and tests do nothing destructive, the reference passes, every test gives the same outcome and the
same compared values over several runs, the tests cover the function well enough, and they fail when the
function's body is replaced by ``pass``. The mutation score is reported beside coverage, with a threshold
only when asked for. Runs are those of ``executor.py``: the project's virtualenv, the sandbox, the timeouts.

A program's own tests (``program_tests``, Exec-CSN's) hold their author's expected values, not values a fixer
captured from one run, so only their outcomes must hold over the runs; and a test that shows no check of the
function in its syntax is sane when it fails on the ``pass`` body, which shows that it reaches the function.
"""

from __future__ import annotations

import ast
from dataclasses import asdict, dataclass, field
from typing import Any

from . import testmodule
from .candidate import Candidate, candidate_module, focal_module
from .decoy import Decoys
from .environment import ProjectEnv
from .executor import Executor, RunOptions, SampleRun
from .mutation import mutants, pass_body
from .problem import Problem
from .results import first_failure, verdict
from .safety import scan
from .sandbox import limit_option
from .syntax import FUNCTION


@dataclass(frozen=True)
class GateSettings:
    reruns: int = 10
    min_coverage: float = 40.0  # percent of the function's lines
    min_mutation: float | None = None  # percent of mutants killed; None: reported, not enforced
    mutants: int = 10  # at most this many mutants (besides the `pass` body)


@dataclass(frozen=True)
class GateResult:
    problem: str
    reasons: tuple[str, ...]  # empty when the problem is admitted
    line_coverage: float | None = None  # percent of the function's lines run by the tests
    branch_coverage: float | None = None  # percent of its branches; None when it has none
    mutation_score: float | None = None  # percent of mutants killed
    mutants: int = 0
    flaky: tuple[str, ...] = ()
    quarantined: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()  # safety findings, the allowed ones included
    network: bool = False  # the problem declares that its tests need the network (the sandbox shares it)
    decoy: str | None = None  # why its samples can get no decoy check (``decoy``), or None where they can
    seconds: dict[str, float] = field(default_factory=dict)  # time spent: reference runs, mutants

    @property
    def passed(self) -> bool:
        return not self.reasons

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"passed": self.passed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateResult:
        data = {key: value for key, value in data.items() if key != "passed"}
        return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})


def check(problem: Problem, env: ProjectEnv, executor: Executor, settings: GateSettings,
          decoys: Decoys | None = None) -> GateResult:
    """The gate's verdict on one problem (its test module parses: loading the problem made sure of that; a
    problem judged by the project's suite names tests of the project's source). With ``decoys``, it also says
    whether its samples can get the decoy check: not a reason to turn it away, but what a scoring run cannot
    check of its passes."""
    module = focal_module(problem, env)
    findings = scan(problem.reference, "reference", function_lines(module, problem.entry_point)[0])
    reruns = 1 if problem.known_failure else settings.reruns  # its reference cannot pass here: no flakiness to judge
    indirect: dict[str, str] = {}  # a program's tests that show no check of the function: the `pass` body decides
    if problem.tests is None:  # the project's own tests: chosen for running the function's body, which coverage
        # checks below; they stay as the project wrote them, so their outcomes (not their values) are compared
        reasons = []
        for name in sorted({node.partition("::")[0] for node in problem.suite}):
            findings += scan((env.source_root / name).read_text(encoding="utf-8"), name)
        options = RunOptions(reruns=reruns, coverage=True)
    elif problem.program_tests:  # its author's expected values, which no fixer captured: as the project's suite,
        # its outcomes are compared, not its values (a test may compare a time with itself); and a test that reaches
        # the function through other code (a constructor, a public method) is fit if it fails on the `pass` body
        tests = problem.tests.read_text(encoding="utf-8")
        reasons = []
        indirect = testmodule.unchecked_tests(testmodule.parse(tests), problem.function_name)
        findings += scan(tests, problem.tests.name)
        options = RunOptions(reruns=reruns, coverage=True)
    else:
        tests = problem.tests.read_text(encoding="utf-8")
        reasons = [f"test sanity: {line}" for line in testmodule.sanity_problems(tests, problem.function_name)]
        findings += scan(tests, problem.tests.name)
        sites = testmodule.assertion_sites(tests, problem.function_name)
        options = RunOptions(tests_source=testmodule.instrument(tests, sites), reruns=reruns, coverage=True)
    reasons += [f"unsafe: {finding}" for finding in findings if finding.kind not in problem.allow]

    run = executor.run(env, problem, module, options)
    _, error = verdict(run, problem.test_count)
    if error:
        test, log = first_failure(run, error)
        raise_it = limit_option(error)
        reasons.append(f"the reference fails: {error}" + (f" in {test}" if test else "") + f": {_last_line(log)}"
                       + (f" (raise {raise_it})" if raise_it else ""))
    flaky = flaky_tests(run)
    if flaky:
        listed = ", ".join(f'"{name}"' for name in flaky)
        reasons.append(f"flaky over {settings.reruns} runs: {', '.join(flaky)} (to leave them out of scoring, add "
                       f"quarantine = [{listed}] to {problem.manifest.name})")
    line, branch = function_coverage(run, module, problem)
    if run.finished and (line is None or line < settings.min_coverage):
        figure = "not measured" if line is None else f"{line:.1f}%"
        reasons.append(f"coverage of {problem.function_name}: {figure}, under --repoexec-min-coverage={settings.min_coverage:g}")
    seconds = {"reference": round(run.duration, 3)}

    score, count, decoy = None, 0, None
    not_judged = None if error else executor.not_judged(env, problem)
    if not_judged:  # a model's samples would get no verdict, nor would its mutants here
        reasons.append(f"not judged apart from its candidate: {not_judged} (--repoexec-judge=apart-or-in-process "
                       "judges it beside its candidate)")
    if error or not_judged:  # no `pass` body run: such a test stays unchecked
        reasons += [f"test sanity: {line}" for line in indirect.values()]
    else:
        mutation_reasons, score, count, seconds["mutants"] = _mutation(problem, env, executor, module, settings,
                                                                       indirect)
        reasons += mutation_reasons
        decoy = decoys.of(problem, env, executor, module).unavailable if decoys is not None else None
    return GateResult(
        problem=problem.id, reasons=tuple(reasons), line_coverage=line, branch_coverage=branch,
        mutation_score=score, mutants=count, flaky=tuple(flaky), quarantined=problem.quarantine,
        findings=tuple(str(finding) for finding in findings), seconds=seconds, network=problem.network,
        decoy=decoy,
    )


def flaky_tests(run: SampleRun) -> list[str]:
    """Tests whose outcome differs between rounds, or whose compared values do (where the tests were instrumented)."""
    first = {test.name: test.outcome for test in run.tests}
    names = {name for name in first if any(name in outcomes and outcomes[name] != first[name]
                                           for outcomes in run.rerun_outcomes)}  # absent: not run again
    names |= {test for test, _ in run.unstable}
    return sorted(names)


def function_coverage(run: SampleRun, module: str, problem: Problem) -> tuple[float | None, float | None]:
    """(line, branch) coverage in percent of the function's (or class's methods') body, from coverage.py's
    figures for its module."""
    files = (run.coverage or {}).get("files", {})
    path = "/" + problem.module.replace(".", "/")
    measured = next((entry for name, entry in files.items()  # names are relative to the working directory
                     if ("/" + name).endswith((path + ".py", path + "/__init__.py"))), None)
    if measured is None:
        return None, None
    inside = body_lines(module, problem.entry_point)
    executed = sum(line in inside for line in measured["executed_lines"])
    missing = sum(line in inside for line in measured["missing_lines"])
    taken = sum(start in inside for start, _ in measured["executed_branches"])
    untaken = sum(start in inside for start, _ in measured["missing_branches"])
    line = 100 * executed / (executed + missing) if executed + missing else None
    branch = 100 * taken / (taken + untaken) if taken + untaken else None
    return line, branch


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _definition(module: str, qualname: str) -> ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | None:
    scope: ast.AST = testmodule.parse(module)
    node = None
    for part in qualname.split("."):
        found = [child for child in ast.walk(scope) if isinstance(child, (ast.ClassDef, *_FUNCTIONS))
                 and child.name == part]
        if not found:
            return None
        scope = node = found[-1]
    return node


def function_lines(module: str, qualname: str, body: bool = False) -> tuple[int, int]:
    """The first and last line of a function (or class) in its module: from its header, or from its first
    statement after the docstring (the header runs at import, tested or not)."""
    node = _definition(module, qualname)
    return (1, 0) if node is None else _span(node, body)


def body_lines(module: str, qualname: str) -> set[int]:
    """The lines whose coverage is the problem's: a function's body after its docstring; for a class, the bodies
    of its methods (its own statements and their headers run at import, tested or not)."""
    node = _definition(module, qualname)
    if node is None:
        return set()
    functions = [child for child in ast.walk(node) if isinstance(child, _FUNCTIONS)] if isinstance(
        node, ast.ClassDef) else [node]
    lines = set()
    for function in functions:
        first, last = _span(function, body=True)
        lines.update(range(first, last + 1))
    return lines


def _span(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef, body: bool) -> tuple[int, int]:
    statements = node.body
    if body and len(statements) > 1 and isinstance(statements[0], ast.Expr) and isinstance(
        getattr(statements[0], "value", None), ast.Constant
    ) and isinstance(statements[0].value.value, str):
        statements = statements[1:]
    start = statements[0].lineno if body else min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return start, node.end_lineno


def _mutation(
    problem: Problem, env: ProjectEnv, executor: Executor, module: str, settings: GateSettings,
    indirect: dict[str, str],
) -> tuple[list[str], float | None, int, float]:
    """Reasons, the mutation score, the number of mutants and the time they took. The ``indirect`` tests (by
    name, with their sanity line) must each fail on the `pass` body, so that one runs them all."""
    reasons, seconds = [], 0.0

    def run_of(function: str, first_failure: bool = True) -> SampleRun:
        nonlocal seconds
        run = executor.run(env, problem, candidate_module(problem, module, Candidate("", function)),
                           RunOptions(first_failure=first_failure))
        seconds += run.duration
        return run

    def survives(function: str) -> bool:
        return verdict(run_of(function), problem.test_count)[1] is None

    empty = run_of(pass_body(problem.reference), first_failure=not indirect)
    if verdict(empty, problem.test_count)[1] is None:
        reasons.append(f"the tests pass when {problem.function_name}'s body is `pass`" if problem.kind == FUNCTION
                       else f"the tests pass on an empty class `class {problem.function_name}: pass`")
    else:
        passing = {test.name.partition("[")[0] for test in empty.tests if test.outcome == "passed"}
        reasons += [f"test sanity: {line}, and passes when its body is `pass`" for name, line in indirect.items()
                    if name in passing]
    found = mutants(problem.reference, settings.mutants) if settings.mutants else []
    survivors = [mutant for mutant in found if survives(mutant.function)]
    score = 100 * (len(found) - len(survivors)) / len(found) if found else None
    if settings.min_mutation is not None and (score or 0) < settings.min_mutation:
        shown = "; ".join(mutant.description for mutant in survivors[:3])
        reasons.append(f"mutation score {score or 0:.0f}%, under --repoexec-min-mutation={settings.min_mutation:g} "
                       f"(surviving: {shown})")
    return reasons, score, len(found), round(seconds, 3)


def _last_line(log: str) -> str:
    lines = [line.strip() for line in log.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
