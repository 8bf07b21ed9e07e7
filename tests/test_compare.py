"""``repoexec compare`` (issue 15): a leaderboard of real runs with bootstrap intervals that tell a real
difference from the luck of one problem, and clear errors for reports it cannot read."""

from __future__ import annotations

import json
import shutil

from conftest import SHIPPED, write_replay
from pytest_repoexec.cli import main
from pytest_repoexec.document import REPORT_FORMAT
from pytest_repoexec.leaderboard import compare
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem
from pytest_repoexec.runs import read_run

REFERENCES = {p.id: p.reference for p in (load_problem(manifest) for manifest in find_manifests([SHIPPED]))}


def test_a_better_run_is_told_apart_and_one_problem_of_difference_is_not(run_repoexec, pytester, capsys):
    ids = sorted(REFERENCES)
    failing = {"all.json": set(), "half.json": set(ids[::2]), "one.json": {ids[0]}}
    for name, wrong in failing.items():
        replay = write_replay(pytester.path / f"{name}.jsonl",
                              {pid: [pass_body(ref) if pid in wrong else ref] for pid, ref in REFERENCES.items()})
        result, report = run_repoexec(str(SHIPPED), f"--repoexec-model=replay:{replay}")
        assert report is not None, result.stdout.str()[-3000:]
        assert report["format"] == REPORT_FORMAT and report["settings"]["repoexec_model"] == f"replay:{replay}"
        assert [s["problem"] for s in report["samples"] if not s["passed"]] == sorted(wrong)
        shutil.copy(pytester.path / "report.json", pytester.path / name)

    board = compare([read_run(pytester.path / name) for name in failing])
    assert board.problems == len(ids) == 24
    assert [row.run.path.name for row in board.rows] == ["all.json", "one.json", "half.json"]  # best first
    differences = {(board.rows[d.first].run.path.name, board.rows[d.second].run.path.name): d
                   for d in board.differences if d.k == 1}
    assert differences["all.json", "half.json"].interval.excludes_zero
    assert differences["one.json", "half.json"].interval.excludes_zero
    one = differences["all.json", "one.json"].interval
    assert abs(one.estimate - 1 / 24) < 1e-9 and one.low <= 0 <= one.high and not one.excludes_zero
    for row in board.rows:  # each run's interval holds its own pass@1
        assert row.intervals[1].low <= row.summary.pass_at[1] <= row.intervals[1].high

    assert main(["compare", *(str(pytester.path / name) for name in failing), "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "3 runs on the 24 problems they share" in out
    assert "| all.json | half.json | pass@1 | +50.00 [" in out and "| all.json | one.json | pass@1 | +4.17 [" in out
    assert out.count("| yes |") == 2 and out.count("| no |") == 1

    sketchy = json.loads((pytester.path / "all.json").read_text())  # the same run, asked with the other description
    sketchy["settings"]["repoexec_description"] = "sketchy"
    (pytester.path / "sketchy.json").write_text(json.dumps(sketchy))
    rows = compare([read_run(pytester.path / name) for name in ("all.json", "sketchy.json")]).rows
    assert sorted(row.settings for row in rows) == ["description=detailed", "description=sketchy"]


def test_reports_that_cannot_be_compared_are_refused_naming_the_file(mini, run_repoexec, pytester, capsys):
    reports = {}
    for name in ("scaled", "swap"):
        result, report = run_repoexec(str(mini / name))
        assert report is not None, result.stdout.str()[-3000:]
        reports[name] = pytester.path / f"{name}.json"
        shutil.copy(pytester.path / "report.json", reports[name])
    text = reports["scaled"].read_text()
    truncated = pytester.path / "truncated.json"
    truncated.write_text(text[: len(text) // 2])
    older = pytester.path / "older.json"
    older.write_text(json.dumps(json.loads(text) | {"format": REPORT_FORMAT - 1}))
    result, _ = run_repoexec(str(mini / "scaled"), "--repoexec-validate", "--repoexec-mutants=0", "--repoexec-reruns=2")
    gate = pytester.path / "gate.json"
    shutil.copy(pytester.path / "report.json", gate)

    capsys.readouterr()  # the sessions' output
    expected = {
        truncated: "is not a complete JSON report (cut short?)",
        older: f"was written in report format {REPORT_FORMAT - 1}; this engine reads format {REPORT_FORMAT}",
        gate: "is an admission-gate report",
        pytester.path / "missing.json": "cannot be read",
    }
    for path, message in expected.items():
        assert main(["compare", str(reports["swap"]), str(path)]) == 2
        captured = capsys.readouterr()
        assert f"repoexec compare: {path}: {message}" in captured.err and not captured.out

    assert main(["compare", str(reports["scaled"]), str(reports["swap"])]) == 2
    captured = capsys.readouterr()
    assert "have no problem in common" in captured.err and str(reports["swap"]) in captured.err
    assert not captured.out  # no empty table
