"""Sharded runs (issue 25): shards 0..2 of 3 of the shipped set, each under ``-n 2``, merged by ``repoexec merge``,
equal a single run's report, metrics and every sample's verdict; merge refuses shards that do not make one run,
and compare refuses to rank two shards of one run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SHIPPED, write_replay
from pytest_repoexec.cli import main
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem
from pytest_repoexec.shard import Shard, shard_of

REFERENCES = {p.id: p.reference for p in (load_problem(manifest) for manifest in find_manifests([SHIPPED]))}
VERDICT = ("problem", "project", "sample", "passed", "tests_passed", "tests_total", "error_type", "dir", "empty",
           "failed_test", "known_failure")


def _run(folder: Path, cache: Path, name: str, *options: str) -> tuple[int, dict]:
    """A whole pytest session over the shipped set in a fresh process, with the engine copied once for the
    module (the shards of one run share an engine digest, which an edit of the tree between two of these runs
    would change); its exit status and JSON report."""
    report = folder / f"{name}.json"
    engine = folder / "engine"
    if not engine.exists():
        for package in ("pytest_repoexec", "generators"):
            shutil.copytree(REPO / package, engine / package, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-m", "pytest", str(SHIPPED), "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", f"--repoexec-cache={cache}", f"--repoexec-report={report}", *options],
                          cwd=folder, capture_output=True, text=True, timeout=900,
                          env=os.environ | {"PYTHONPATH": f"{engine}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done.returncode, json.loads(report.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, repoexec_cache: Path) -> dict[str, Path]:
    """For two generators (the references; a replay of two samples a problem, some failing): a single run, and
    its three shards under -n 2 with --repoexec-exit-zero; the exit statuses beside the reports."""
    folder = tmp_path_factory.mktemp("shards")
    ids = sorted(REFERENCES)
    replay = write_replay(folder / "replay.jsonl", {
        pid: [REFERENCES[pid] if i % 3 else pass_body(REFERENCES[pid]), pass_body(REFERENCES[pid]) if i % 2 else
              REFERENCES[pid]] for i, pid in enumerate(ids)})
    statuses = {}
    for generator, model in (("reference", "reference"), ("replay", f"replay:{replay}")):
        statuses[f"{generator}-single"], _ = _run(folder, repoexec_cache, f"{generator}-single",
                                                  f"--repoexec-model={model}")
        for index in range(3):
            name = f"{generator}-{index}"
            statuses[name], _ = _run(folder, repoexec_cache, name, f"--repoexec-model={model}",
                                     f"--repoexec-shard={index}/3", "-n", "2", "--repoexec-exit-zero")
    (folder / "statuses.json").write_text(json.dumps(statuses))
    return {path.stem: path for path in folder.glob("*.json")}


def _verdicts(report: dict) -> list[tuple]:
    return [tuple(sample[key] for key in VERDICT) for sample in report["samples"]]


@pytest.mark.parametrize("generator", ["reference", "replay"])
def test_three_shards_merged_equal_a_single_run(runs, generator, tmp_path):
    single = json.loads(runs[f"{generator}-single"].read_text())
    shards = [json.loads(runs[f"{generator}-{index}"].read_text()) for index in range(3)]
    owned = [{sample["problem"] for sample in shard["samples"]} for shard in shards]
    assert all(owned) and set.union(*owned) == set(REFERENCES) and sum(map(len, owned)) == len(REFERENCES)
    for index, shard in enumerate(shards):  # whole problems, each where the hash puts it
        assert shard["shard"] == {"index": index, "count": 3, "samples": len(shard["samples"]),
                                  "problems": sorted(REFERENCES)}
        assert all(shard_of(problem, 3) == index for problem in owned[index])
        assert shard["settings"]["repoexec_shard"] == f"{index}/3"

    out, page = tmp_path / "merged.json", tmp_path / "merged.html"
    # in a process of its own: matplotlib, which draws the page, must not be imported again in this one after an
    # in-process pytester run has dropped the modules it imported (its classes would then be two)
    done = subprocess.run([sys.executable, "-m", "pytest_repoexec.cli", "merge",
                           *(str(runs[f"{generator}-{index}"]) for index in (2, 0, 1)), "--out", str(out),
                           "--html", str(page)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"3 shards, 24 problems, {len(single['samples'])} samples" in done.stdout
    merged = json.loads(out.read_text())
    for key in ("metrics", "projects", "errors", "empty", "known_failures", "not_run", "model", "sandbox", "format"):
        assert merged[key] == single[key], key
    assert _verdicts(merged) == _verdicts(single)
    assert list(merged) == list(single) and "shard" not in merged
    assert merged["settings"]["repoexec_shard"] is None and merged["settings"]["repoexec_report"] == str(out)
    assert "<html" in page.read_text() and "slugify" in page.read_text()
    if generator == "replay":  # some samples fail: the metrics are not all 100, and pass@1 is not pass@2's
        assert 0 < single["metrics"]["pass@1"] < 1 and sum(not s["passed"] for s in single["samples"]) > 8


def test_a_shard_that_completed_exits_zero_with_exit_zero(runs):
    statuses = json.loads(runs["statuses"].read_text())
    assert statuses["replay-single"] == 1  # failing samples, without --repoexec-exit-zero
    assert all(any(not s["passed"] for s in json.loads(runs[f"replay-{i}"].read_text())["samples"]) for i in range(3))
    assert [statuses[f"replay-{index}"] for index in range(3)] == [0, 0, 0]
    assert statuses["reference-single"] == 0


def test_merge_refuses_shards_that_do_not_make_one_run(runs, tmp_path, capsys):
    def shard(generator: str, index: int) -> str:
        return str(runs[f"{generator}-{index}"])

    def edited(name: str, source: str, change) -> str:
        document = json.loads(Path(source).read_text())
        change(document)
        path = tmp_path / name
        path.write_text(json.dumps(document))
        return str(path)

    again = tmp_path / "again.json"
    shutil.copy(shard("replay", 1), again)
    text = Path(shard("replay", 1)).read_text()
    (tmp_path / "truncated.json").write_text(text[: len(text) // 2])
    other = json.loads(Path(shard("replay", 0)).read_text())["samples"][0]
    stolen = edited("stolen.json", shard("replay", 1), lambda d: d["samples"].append(other) or d["shard"].update(
        samples=d["shard"]["samples"] + 1))
    stopped = edited("stopped.json", shard("replay", 1), lambda d: d["samples"].pop())
    out = tmp_path / "merged.json"
    refused = {
        "overlapping": ([shard("replay", 0), shard("replay", 1), str(again), shard("replay", 2)],
                        f"{again}: is shard 1/3 again ({shard('replay', 1)} is too): each shard once"),
        "missing": ([shard("replay", 0), shard("replay", 2)], f"shard 1/3 of the run of {shard('replay', 0)} is "
                                                              "missing: "),
        "foreign": ([shard("replay", 0), shard("reference", 1), shard("replay", 2)],
                    f"{shard('reference', 1)}: is not a shard of the run of {shard('replay', 0)} (--repoexec-model: "
                    "'reference' here, 'replay:"),
        "truncated": ([shard("replay", 0), str(tmp_path / "truncated.json"), shard("replay", 2)],
                      f"{tmp_path / 'truncated.json'}: is not a complete JSON report (cut short?)"),
        "a problem of another shard": ([shard("replay", 0), stolen, shard("replay", 2)],
                                       f"{stolen}: holds {other['problem']}, which "),
        "a job stopped early": ([shard("replay", 0), stopped, shard("replay", 2)],
                                f"{stopped}: holds {len(json.loads(Path(stopped).read_text())['samples'])} of shard "
                                "1/3's"),
        "a whole run": ([shard("replay", 0), str(runs["replay-single"])],
                        f"{runs['replay-single']}: is the report of a whole run, not of a shard (--repoexec-shard)"),
    }
    for case, (paths, message) in refused.items():
        assert main(["merge", *paths, "--out", str(out), "--html", str(tmp_path / "page.html")]) == 2, case
        captured = capsys.readouterr()
        assert f"repoexec merge: {message}" in captured.err, (case, captured.err)
        assert captured.err.count("\n") == 1 and not captured.out, case  # one error, nothing else
        assert not out.exists() and not (tmp_path / "page.html").exists(), case  # no partial report


def test_compare_refuses_two_shards_of_one_run_and_takes_the_merged_report(runs, tmp_path, capsys):
    assert main(["compare", str(runs["replay-0"]), str(runs["replay-1"])]) == 2
    captured = capsys.readouterr()
    assert (f"repoexec compare: {runs['replay-0']} and {runs['replay-1']} are shards 0/3 and 1/3 of one run "
            "(--repoexec-shard)") in captured.err and not captured.out
    for generator in ("reference", "replay"):
        assert main(["merge", *(str(runs[f"{generator}-{i}"]) for i in range(3)), "--out",
                     str(tmp_path / f"{generator}.json")]) == 0
    assert main(["compare", str(tmp_path / "reference.json"), str(tmp_path / "replay.json")]) == 0
    assert "2 runs on the 24 problems they share" in capsys.readouterr().out


@pytest.mark.parametrize("spec, message", [
    ("3/3", "the index must be from 0 to 2 (shards are numbered from 0), got 3"),
    ("-1/3", "the index must be from 0 to 2"),
    ("0/0", "the number of shards must be at least 1, got 0"),
    ("1", "expected I/N"),
    ("a/b", "expected I/N"),
])
def test_a_bad_shard_spec_is_a_usage_error_naming_the_option(pytester, spec, message):
    result = pytester.runpytest(str(SHIPPED), f"--repoexec-shard={spec}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --repoexec-shard={spec}: {message}*"])


def test_the_split_is_the_same_on_every_machine():
    """sha256 of the id, not Python's hash (salted per process): these values hold in any process, anywhere."""
    assert [shard_of("textkit/slugify", n) for n in (1, 2, 3, 8)] == [0, 0, 1, 4]
    assert [shard_of("ledger/money_add", n) for n in (2, 3, 8)] == [0, 0, 6]
    assert Shard.parse(" 2/5 ") == Shard(2, 5) and str(Shard(2, 5)) == "2/5"
    sizes = [sum(shard_of(pid, 3) == index for pid in REFERENCES) for index in range(3)]
    assert sum(sizes) == 24 and min(sizes) >= 4  # a hash, not everything in one shard


def test_exit_zero_does_not_hide_samples_that_could_not_run(mini, run_repoexec, pytester):
    broken = pytester.path / "broken"
    shutil.copytree(mini, broken)
    manifest = broken / "project.toml"
    manifest.write_text(manifest.read_text().replace(
        "[source]", 'requirements = ["repoexec-no-such-package==0.0.1"]\n[source]', 1))
    result, report = run_repoexec(str(mini), str(broken), "--repoexec-exit-zero")
    assert report is not None and len(report["not_run"]) == 2 and all(s["passed"] for s in report["samples"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the run did not complete: two samples gave no verdict


def test_a_shard_the_hash_leaves_empty_still_reports_and_completes(run_repoexec):
    empty = min(set(range(40)) - {shard_of(problem, 40) for problem in REFERENCES})  # 24 problems, 40 shards
    result, report = run_repoexec(str(SHIPPED), f"--repoexec-shard={empty}/40", "--repoexec-exit-zero")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert report is not None and report["samples"] == [] and report["not_run"] == []
    assert report["shard"] == {"index": empty, "count": 40, "samples": 0, "problems": sorted(REFERENCES)}
    result, _ = run_repoexec(str(SHIPPED), f"--repoexec-shard={empty}/40")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED  # pytest's own status, without --repoexec-exit-zero


def test_a_gate_run_cannot_be_sharded(pytester):
    result = pytester.runpytest(str(SHIPPED), "--repoexec-validate", "--repoexec-shard=0/2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--repoexec-validate and --repoexec-shard=0/2 cannot be used together*"])
