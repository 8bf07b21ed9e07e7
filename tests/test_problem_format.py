"""Malformed manifests and bad inputs: each error names the file and the field, and nothing else breaks."""

import json
import shutil
from pathlib import Path

import pytest

from pytest_repoexec.problem import ManifestError, load_problem, set_order


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ('entry_point = "scaled"\n', "", "entry_point", "required field is missing"),
        ("test_count = 4", 'test_count = "4"', "test_count", "expected int"),
        ("test_count = 4", "test_count = 5", "test_count", "is 5 but test_scaled.py defines 4 tests"),
        ('module = "mini.core"', 'module = "mini/core"', "module", "not a dotted module name"),
        ("number = 1", "numbr = 1", "numbr", "unknown field"),
        ("def scaled(value):", "def scaled(value)", "reference", "does not parse"),
        ("def scaled(value):", "def scale(value):", "reference", "does not define function 'scaled'"),
        ("[prompt.context]\nfull", "[prompt.context]\nfulll", "prompt.context.fulll", "unknown field"),
        ("number = 1", "number = [", "(toml)", ""),
    ],
)
def test_manifest_errors_name_file_and_field(mini, old, new, field, message):
    manifest = mini / "scaled" / "problem.toml"
    _edit(manifest, old, new)
    with pytest.raises(ManifestError) as caught:
        load_problem(manifest)
    assert caught.value.path == manifest.resolve()
    assert caught.value.field == field
    assert message in str(caught.value)
    assert str(manifest.resolve()) in str(caught.value)


@pytest.mark.parametrize(
    ("content", "field", "message"),
    [
        ("[source]\n", "source.", "exactly one of path, pypi or git"),
        ('[source]\npath = "nowhere"\n', "source.path", "does not exist"),
        ('[source]\npypi = "python-string-utils>=1"\n', "source.pypi", "pin one release"),
        ('[source]\ngit = "https://example.invalid/x.git"\n', "source.rev", "needs a revision"),
        ('python = "three"\n[source]\npath = "repo"\n', "python", "not a version constraint"),
        ('requirements = ["not a requirement!"]\n[source]\npath = "repo"\n', "requirements[0]", "not a requirement"),
    ],
)
def test_project_errors_name_file_and_field(mini, content, field, message):
    (mini / "project.toml").write_text(content)
    with pytest.raises(ManifestError) as caught:
        load_problem(mini / "scaled" / "problem.toml")
    assert caught.value.path == (mini / "project.toml").resolve()
    assert caught.value.field == field
    assert message in str(caught.value)


def test_a_malformed_problem_is_a_collection_error(mini, run_repoexec):
    _edit(mini / "swap" / "problem.toml", "test_count = 2", "test_count = 0")
    result, _ = run_repoexec(str(mini))
    result.assert_outcomes(errors=1)  # pytest stops on collection errors, as for any test module
    result.stdout.fnmatch_lines(["*swap/problem.toml: test_count: must be at least 1*"])
    result, report = run_repoexec(str(mini), "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    assert [s["problem"] for s in report["samples"]] == ["mini/scaled"]


def test_unknown_model_is_a_usage_error_listing_the_generators(mini, run_repoexec):
    result, report = run_repoexec(str(mini), "--repoexec-model=gpt-17")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown generator 'gpt-17'*", "*reference*", "*replay*"])
    assert report is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"problem": "mini/scaled", "completions": ["x"]}\n', "has no completions for mini/swap"),
        ('{"problem": "mini/scaled", "completions": "x"}\n', "line 1 (problem mini/scaled): completions must be a list"),
        ("not json\n", "line 1: not JSON"),
        ('[["a"], ["b"], ["c"]]', "holds 3 lists of completions, but 2 problems were found"),
        ('[["a"], "b"]', "entry 1: completions must be a list of strings"),
    ],
)
def test_a_broken_replay_file_stops_the_run_before_anything_runs(mini, run_repoexec, pytester, content, message):
    replay = pytester.path / "replay.jsonl"
    replay.write_text(content)
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert report is None


def test_missing_replay_file_is_named(mini, run_repoexec, pytester):
    result, _ = run_repoexec(str(mini), f"--repoexec-model=replay:{pytester.path / 'absent.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "absent.json" in result.stderr.str()


def test_repoexec_generations_json_maps_lists_to_problems_in_set_order(mini, run_repoexec, pytester):
    problems = set_order([load_problem(m) for m in sorted(mini.glob("*/problem.toml"))])
    assert [p.id for p in problems] == ["mini/scaled", "mini/swap"]  # by their `number`
    generations = pytester.path / "generations.json"
    generations.write_text(json.dumps([
        ["def scaled(value):\n    return clamp(value * SCALE, 0, 100)\n", "def scaled(value):\n    return 0\n"],
        ["def swap(pair):\n    return pair[::-1]\n", "def swap(pair):\n    return pair[::-1]\n"],
    ]))
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{generations}")
    result.assert_outcomes(passed=3, failed=1)
    assert [(s["problem"], s["sample"], s["passed"]) for s in report["samples"]] == [
        ("mini/scaled", 0, True), ("mini/scaled", 1, False), ("mini/swap", 0, True), ("mini/swap", 1, True)
    ]
    assert report["metrics"]["pass@1"] == pytest.approx((0.5 + 1.0) / 2)


def test_a_project_whose_virtualenv_cannot_be_built_errors_alone(mini, run_repoexec, pytester):
    broken = pytester.path / "broken"
    shutil.copytree(mini, broken)
    _edit(broken / "project.toml", "[source]", 'requirements = ["repoexec-no-such-package==0.0.1"]\n[source]')
    result, report = run_repoexec(str(mini), str(broken))
    result.assert_outcomes(passed=2, errors=2)
    output = result.stdout.str()
    assert "project broken: installing its requirements" in output and "repoexec-no-such-package" in output
    assert "not found in the package registry" in output or "No solution found" in output  # the installer's own words
    assert all("EnvironmentBuildError: project broken: installing" in e["reason"] for e in report["not_run"])
    assert [s["problem"] for s in report["samples"]] == ["mini/scaled", "mini/swap"]
    assert len(report["not_run"]) == 2


def test_a_python_constraint_that_this_interpreter_misses_is_reported(mini, run_repoexec):
    _edit(mini / "project.toml", "[source]", 'python = "<3.0"\n[source]')
    result, _ = run_repoexec(str(mini))
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*project mini needs Python <3.0*this interpreter is 3.*"])
