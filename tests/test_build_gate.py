"""The build's last steps on a problem set in the engine's format: the admission gate's verdicts read from
its JSON report, rejected problems set aside where ``pytest DIR`` does not collect them, and the DepIT export
of what stays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mini_project import write_mini_project
from pytest_repoexec.builder.admit import run_gate, set_rejected_aside
from pytest_repoexec.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory, repoexec_cache: Path) -> Path:
    """The mini project with swap's tests made wrong, through the gate (once for the module), its rejected
    problem set aside."""
    project = write_mini_project(tmp_path_factory.mktemp("gated"))
    tests = project / "swap" / "test_swap.py"
    tests.write_text(tests.read_text().replace("== (2, 1)", "== (1, 2)"))  # the reference fails this one
    outcome = run_gate(project, repoexec_cache, "bwrap", 1, ["--repoexec-mutants=2"], 600)
    assert outcome.admitted == ["scaled"]
    assert outcome.verdicts["scaled"]["line_coverage"] == 100.0
    assert set_rejected_aside(project, outcome, ["scaled", "swap"]) == ["swap"]
    return project


def test_rejected_problems_are_set_aside_with_the_gates_reasons(gated: Path) -> None:
    assert (gated / "scaled" / "problem.toml").is_file() and not (gated / "swap").exists()
    rejected = tomllib.loads((gated / "rejected" / "swap" / "rejected.toml").read_text())
    assert any(reason.startswith("the reference fails: AssertionError") for reason in rejected["reasons"])
    collected = subprocess.run([sys.executable, "-m", "pytest", str(gated), "--collect-only", "-q",
                                "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=gated.parent)
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert "scaled/problem.toml::scaled" in collected.stdout and "swap" not in collected.stdout


def test_depit_export_writes_a_record_per_admitted_problem(gated: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "depit.jsonl"
    assert main(["export", "depit", str(gated), "--out", str(out)]) == 0
    assert "1 records written" in capsys.readouterr().out
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["id"] == "mini/scaled" and record["dependencies"] == ["SCALE", "clamp"]
    instruction = record["instruction"]
    assert instruction.startswith("from .util import SCALE, clamp\n") and "def clamp(value, low, high):" in instruction
    assert ("The provided code snippet includes necessary dependencies for implementing the `scaled` function. "
            "Write a Python function `def scaled(value)` to solve the following problem:\n"
            "Scale a value and clamp it to [0, 100].") in instruction
    assert record["response"].startswith("def scaled(value):\n") and "return clamp(value * SCALE, 0, 100)" in (
        record["response"])

    assert main(["export", "depit", str(gated), "--out", str(out), "--context", "small"]) == 0
    small = json.loads(out.read_text())
    assert "def clamp(value, low, high):\n" in small["instruction"] and "return max(" not in small["instruction"]
    assert main(["export", "depit", str(tmp_path / "nothing"), "--out", str(out)]) == 2
