"""The problem set we ship: its shape, its references passing under xdist, and wrong answers scoring 0."""

import ast
import re

import pytest

from conftest import SHIPPED, write_replay
from pytest_repoexec.problem import find_manifests, load_problem

PROBLEMS = [load_problem(manifest) for manifest in find_manifests([SHIPPED])]


def test_the_set_has_what_the_benchmark_needs():
    projects = {p.project.name for p in PROBLEMS}
    assert len(projects) >= 2 and len(PROBLEMS) >= 20
    assert all(not p.project.requirements and p.project.source.kind == "path" for p in PROBLEMS)
    assert sum("." in p.entry_point for p in PROBLEMS) >= 5  # methods
    pickled = [p for p in PROBLEMS if p.expected.is_dir() and any(p.expected.glob("*.pkl"))]
    assert len(pickled) >= 6
    raising = [p for p in PROBLEMS if "pytest.raises" in p.tests.read_text()]
    assert len(raising) >= 5
    assert sum(bool(p.dependencies) for p in PROBLEMS) >= len(PROBLEMS) * 3 // 4
    cross_file = [p for p in PROBLEMS if any(
        isinstance(node, ast.ImportFrom) and node.level > 0 for node in ast.parse(p.context_full).body
    )]
    assert len(cross_file) >= len(PROBLEMS) // 2


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.id)
def test_every_prompt_level_can_be_made(problem):
    full, medium, small = (problem.context(level) for level in ("full", "medium", "small"))
    assert len(small) <= len(medium) <= len(full)
    assert f"def {problem.function_name}(" in problem.signature
    assert problem.docstring


def _table(output: str) -> dict[str, list[str]]:
    rows = {}
    for line in output.splitlines():
        cells = line.split()
        if len(cells) == 8 and re.fullmatch(r"\d+", cells[1]):
            rows[cells[0]] = cells[3:]
    return rows


def test_references_pass_under_xdist_and_the_table_agrees_with_the_json(run_repoexec):
    result, report = run_repoexec(str(SHIPPED), "-n", "2", subprocess=True)
    result.assert_outcomes(passed=len(PROBLEMS))
    assert report["metrics"]["pass@1"] == 1.0 and report["metrics"]["TR"] == 1.0
    assert len(report["samples"]) == len(PROBLEMS)
    table = _table(result.stdout.str())
    metrics = report["metrics"]
    expected = [metrics["pass@1"], metrics["pass@5"], metrics["pass@10"], metrics["DIR"], metrics["TR"]]
    assert table["all"] == ["-" if value is None else f"{100 * value:.2f}" for value in expected]
    for name, project in report["projects"].items():
        assert table[name][0] == f"{100 * project['pass@1']:.2f}"


def test_wrong_answers_score_zero(run_repoexec, pytester):
    replay = write_replay(pytester.path / "wrong.jsonl", {
        p.id: [f"{p.signature}\n    return None\n", f"{p.signature}\n    raise NotImplementedError\n"]
        for p in PROBLEMS
    })
    result, report = run_repoexec(str(SHIPPED), f"--repoexec-model=replay:{replay}", "-n", "2", subprocess=True)
    result.assert_outcomes(failed=2 * len(PROBLEMS))
    assert report["metrics"]["pass@1"] == 0.0
    assert report["errors"].get("NotImplementedError") == len(PROBLEMS)
