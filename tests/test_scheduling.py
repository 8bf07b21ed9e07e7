"""The order of a run under xdist: a problem's samples on one worker, the slowest problems first (by the times
recorded in the store), and a worker that runs out of problems takes the rest of another's."""

from __future__ import annotations

import json
import re

from conftest import write_replay
from mini_project import SCALED_REFERENCE, write_mini_project

from pytest_repoexec.store import ProblemTimes

QUICK = ("--repoexec-timeout-factor=0", "--repoexec-decoy=off", "-v")


def slow_swap(seconds: float) -> str:
    """A right answer that takes ``seconds`` a call (each distinct ``seconds`` a module of its own)."""
    return f"def swap(pair):\n    __import__('time').sleep({seconds})\n    return (pair[1], pair[0])\n"


def ran(output: str) -> list[tuple[str, str]]:
    """(worker, sample) of each sample's verdict line, in the order the controller got them (``-v``)."""
    return re.findall(r"\[(gw\d+)\][^\n]*? PASSED \S*::(\w+\[\d+\])", output)


def test_the_problems_whose_samples_took_longest_run_first(run_repoexec, pytester):
    mini = write_mini_project(pytester.path, "order")  # problem ids of its own: no other test records their times
    replay = write_replay(pytester.path / "order.jsonl", {
        "order/scaled": [SCALED_REFERENCE] * 3, "order/swap": [slow_swap(0.4), slow_swap(0.41)],
    })
    first, _ = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", "-n", "1", *QUICK, subprocess=True)
    first.assert_outcomes(passed=5)
    assert ran(first.stdout.str())[0][1] == "scaled[0]"  # nothing recorded: the larger problem first, as xdist's
    again, _ = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", "-n", "1", "--repoexec-fresh", *QUICK,
                            subprocess=True)
    again.assert_outcomes(passed=5)
    order = [sample for _, sample in ran(again.stdout.str())]
    assert order[:2] == ["swap[0]", "swap[1]"], order  # 2 samples of 0.8 s before 3 of about 0.1 s


def test_a_worker_out_of_problems_takes_the_later_samples_of_a_busy_one(run_repoexec, pytester):
    mini = write_mini_project(pytester.path, "steal")
    replay = write_replay(pytester.path / "steal.jsonl", {
        "steal/scaled": [SCALED_REFERENCE], "steal/swap": [slow_swap(0.3 + index / 100) for index in range(6)],
    })
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", "-n", "2", *QUICK, subprocess=True)
    result.assert_outcomes(passed=7)
    swaps = [(worker, sample) for worker, sample in ran(result.stdout.str()) if sample.startswith("swap")]
    assert sorted(sample for _, sample in swaps) == [f"swap[{index}]" for index in range(6)]  # each once
    assert {worker for worker, _ in swaps} == {"gw0", "gw1"}, swaps
    assert report["metrics"]["pass@1"] == 1.0


def test_times_are_recorded_per_problem_and_merged(tmp_path):
    times = ProblemTimes(tmp_path)
    assert times.read() == {}
    times.record({"a/one": {"sample": 0.5, "start": 0.25}, "a/two": {"sample": 2.0, "start": 1.0}})
    times.record({"a/two": {"sample": 1.0, "start": 0.5}})
    assert times.read() == {"a/one": {"sample": 0.5, "start": 0.25}, "a/two": {"sample": 1.0, "start": 0.5}}
    (tmp_path / "times.json").write_text(json.dumps({"a/one": "slow", "a/two": {"sample": 3, "start": True}}))
    assert times.read() == {"a/two": {"sample": 3.0}}  # what is not a number of seconds is left out
    (tmp_path / "times.json").write_text("{cut off")
    assert times.read() == {}


def test_a_plain_test_modules_tests_stay_on_one_worker(run_repoexec, pytester):
    """Only problems are split between workers: a test module beside them keeps loadscope's promise."""
    mini = write_mini_project(pytester.path, "plain")
    replay = write_replay(pytester.path / "plain.jsonl", {"plain/scaled": [SCALED_REFERENCE]})
    module = pytester.path / "test_slow.py"
    module.write_text("import time\nimport pytest\n\n\n@pytest.mark.parametrize('index', range(6))\n"
                      "def test_slow(index):\n    time.sleep(0.3)\n")
    result, _ = run_repoexec(str(mini / "scaled"), str(module), f"--repoexec-model=replay:{replay}", "-n", "2",
                             "--repoexec-n=1", *QUICK, subprocess=True)
    result.assert_outcomes(passed=7)
    workers = set(re.findall(r"\[(gw\d+)\][^\n]*? PASSED \S*test_slow\.py::test_slow", result.stdout.str()))
    assert len(workers) == 1, result.stdout.str()


def test_a_worker_takes_the_problems_of_the_project_it_keeps_warm_first(run_repoexec, pytester, repoexec_cache):
    """Costliest first alone would alternate between the two projects here, each problem starting its project's
    warm process again (one kept, ``--repoexec-warm-processes=1``); a worker takes the costliest problem of the
    project it keeps first, then the costliest of the rest."""
    projects = [write_mini_project(pytester.path, name) for name in ("keepa", "keepb")]
    ProblemTimes(repoexec_cache / "results").record({  # recorded as if by an earlier run
        "keepa/swap": {"sample": 4.0, "start": 0.1}, "keepb/swap": {"sample": 3.0, "start": 0.1},
        "keepa/scaled": {"sample": 2.0, "start": 0.1}, "keepb/scaled": {"sample": 1.0, "start": 0.1},
    })
    result, _ = run_repoexec(*map(str, projects), "--repoexec-model=reference", "-n", "1",
                             "--repoexec-warm-processes=1", *QUICK, subprocess=True)
    result.assert_outcomes(passed=4)
    order = re.findall(r" PASSED \S*?(keep[ab]/\w+)/problem\.toml::", result.stdout.str())
    assert order == ["keepa/swap", "keepa/scaled", "keepb/swap", "keepb/scaled"], order
