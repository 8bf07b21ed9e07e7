"""The assertion fixer: tests written by hand or by a model, made to agree with the reference.

Every assertion that compares what the function gave with an expected value, and fails against the reference,
gets the reference's actual value in place of the expected one: a literal where its repr gives it back,
otherwise a pickle in the problem's expected-output folder, loaded by the test (as RepoExec's pipeline did).
Tests that fail otherwise (another exception, an assertion the fixer cannot rewrite) are removed, as the
paper's execution filter dropped them. The values come from the same capture as the gate's flakiness check.
Only the problem's own files change: its test module, its expected folder and its declared test count.
"""

from __future__ import annotations

import ast
import base64
import difflib
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import tomlkit

from . import testmodule
from .environment import ProjectEnv
from .executor import Executor, RunOptions, module_file
from .problem import Problem
from .testmodule import AssertionSite

LITERAL_LIMIT = 400  # longer values go to a pickle, so that the test stays readable
MAX_PASSES = 20  # a test stops at its first failing assertion: each pass fixes the next one

_LOADER = '''

def _repoexec_expected(name):
    """A value the reference gave, pickled by pytest-repoexec's assertion fixer."""
    import os
    import pickle

    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], name), "rb") as handle:
        return pickle.load(handle)
'''


@dataclass(frozen=True)
class FixResult:
    problem: str
    fixed: tuple[str, ...]  # "test_x line 4: 30 -> 31"
    removed: tuple[str, ...]  # "test_y: TypeError: ..." (the test is gone from the module)
    diff: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FixResult:
        return cls(data["problem"], tuple(data["fixed"]), tuple(data["removed"]), data["diff"])


def fix_assertions(problem: Problem, env: ProjectEnv, executor: Executor) -> FixResult:
    """Rewrite the problem's tests until every remaining test passes against the reference."""
    if problem.tests is None:
        raise FixError("the problem is judged by the project's own suite, which the fixer does not rewrite")
    if problem.program_tests:  # the gate compares such tests' outcomes only, which a captured value would not bear
        raise FixError("the problem's tests are a program's own (program_tests), whose expected values the fixer "
                       "does not rewrite")
    original_tests = problem.tests.read_text(encoding="utf-8")
    module = module_file(env.import_root, problem.module).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="repoexec-fixer-") as scratch:
        expected = Path(scratch, "expected")  # the problem's pickles and the new ones, until all is settled
        if problem.expected.is_dir():
            shutil.copytree(problem.expected, expected)
        source, fixed, removed, pickles, removed_items = _settle(problem, env, executor, module, expected)
    original_manifest = problem.manifest.read_text(encoding="utf-8")
    manifest = _with_test_count(original_manifest, problem.test_count - removed_items)
    _write(problem, source, manifest, pickles)
    diff = "".join([
        *difflib.unified_diff(original_tests.splitlines(True), source.splitlines(True),
                              str(problem.tests), str(problem.tests)),
        *difflib.unified_diff(original_manifest.splitlines(True), manifest.splitlines(True),
                              str(problem.manifest), str(problem.manifest)),
        *(f"new file {problem.expected / name}\n" for name in pickles),
    ])
    return FixResult(problem.id, tuple(fixed), tuple(f"{name}: {why}" for name, why in removed.items()), diff)


def _settle(
    problem: Problem, env: ProjectEnv, executor: Executor, module: str, expected: Path
) -> tuple[str, list[str], dict[str, str], dict[str, bytes], int]:
    """Run, fix and remove until every test passes: (tests, fixed, removed, pickles, tests removed)."""
    source = problem.tests.read_text(encoding="utf-8")
    fixed: list[str] = []
    removed: dict[str, str] = {}
    pickles: dict[str, bytes] = {}
    removed_items = 0
    for _ in range(MAX_PASSES):
        sites = testmodule.assertion_sites(source, problem.function_name)
        options = RunOptions(tests_source=testmodule.instrument(source, sites), expected=expected)
        run = executor.run(env, problem, module, options)
        if run.collect_errors or not run.finished:
            what = run.collect_errors[0].message if run.collect_errors else f"exit status {run.returncode}"
            raise FixError(f"{problem.tests.name} does not run against the reference: {what}")
        failing = [test for test in run.tests if test.outcome != "passed"]
        if not failing:
            break
        captures = {(c["test"], c["site"]): c["occurrences"] for c in run.captures}
        replacements: dict[testmodule.Span, str] = {}
        dropped = set()
        for test in failing:
            site = _fixable(test.name, sites, captures) if test.error_type == "AssertionError" else None
            if site is None:
                why = "an assertion the fixer cannot rewrite" if test.error_type == "AssertionError" else (
                    f"{test.error_type}: {(test.message or '').strip().splitlines()[0] if test.message else ''}")
                removed[test.name.partition("[")[0]] = why
                dropped.add(test.name.partition("[")[0])
                continue
            value = captures[(test.name, site.id)][0]
            ordinal = [s.id for s in sites if s.test == site.test].index(site.id)
            text = _source_text(source, site.expected)
            if value["literal"] is not None and len(value["literal"]) <= LITERAL_LIMIT:
                replacements[site.expected] = value["literal"]
            else:
                name = f"{site.test}_{ordinal}.pkl"
                pickles[name] = base64.b64decode(value["pickle"])
                (expected / name).parent.mkdir(parents=True, exist_ok=True)
                (expected / name).write_bytes(pickles[name])
                replacements[site.expected] = f'_repoexec_expected("{name}")'
            fixed.append(f"{site.test} line {site.line}: {text} -> {replacements[site.expected]}")
        removed_items += sum(test.name.partition("[")[0] in dropped for test in run.tests)
        source = testmodule.remove_functions(testmodule.replace_spans(source, replacements), dropped)
        if pickles and "def _repoexec_expected" not in source:
            source = _add_loader(source)
    else:
        raise FixError(f"{problem.tests.name}: still failing after {MAX_PASSES} passes")
    return source, fixed, removed, pickles, removed_items


class FixError(Exception):
    """The test module cannot be fixed: it does not run, or does not settle."""


def _fixable(test: str, sites: list[AssertionSite], captures: dict) -> AssertionSite | None:
    """The failing assertion of a test, where it compares one value with an expected one and ran once."""
    if "[" in test:  # one assertion shared by parameter sets has no single right value
        return None
    for site in sites:
        occurrences = captures.get((test, site.id), [])
        if site.test == test and site.expected is not None and len(occurrences) == 1 and occurrences[0]["held"] is False:
            if occurrences[0]["literal"] is not None or occurrences[0]["pickle"] is not None:
                return site
    return None


def _source_text(source: str, span: testmodule.Span) -> str:
    return source.encode("utf-8")[span.start : span.end].decode("utf-8")


def _add_loader(source: str) -> str:
    """The pickle loader, after the module's last top-level import."""
    tree = testmodule.parse(source)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = source.splitlines(keepends=True)
    at = imports[-1].end_lineno if imports else 0
    return "".join(lines[:at]) + _LOADER + "".join(lines[at:])


def _with_test_count(manifest: str, count: int) -> str:
    document = tomlkit.parse(manifest)
    if document.get("test_count") == count:
        return manifest
    document["test_count"] = count
    return tomlkit.dumps(document)


def _write(problem: Problem, tests: str, manifest: str, pickles: dict[str, bytes]) -> None:
    if pickles:
        problem.expected.mkdir(parents=True, exist_ok=True)
    for name, data in pickles.items():
        (problem.expected / name).write_bytes(data)
    problem.tests.write_text(tests, encoding="utf-8")
    problem.manifest.write_text(manifest, encoding="utf-8")
