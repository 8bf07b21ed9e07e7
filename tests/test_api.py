"""The judge as a library call (``api``): the same verdicts as a pytest run, sample for sample, through the
same ``Engine.judge``; the host's failure as no reward, never 0; ids that name no problem refused."""

import asyncio

import pytest

from conftest import SHIPPED, write_replay
from one_problem import KEPT_STATE, KEPT_STATE_TESTS, write_one_problem
from pytest_repoexec import cgroups
from pytest_repoexec.api import ProblemSet, UnknownProblem, open_problems
from pytest_repoexec.cgroups import ENGINE_ERROR
from pytest_repoexec.mutation import mutants, pass_body
from pytest_repoexec.problem import find_manifests, load_problem
from pytest_repoexec.rewards import NoReward, openrlhf_answer

PROBLEMS = [load_problem(manifest) for manifest in find_manifests([SHIPPED])]
COMPARED = ("passed", "tests_passed", "tests_total", "error_type", "failed_test", "tr_measured", "decoy", "judge")


def shipped_completions() -> dict[str, list[str]]:
    """Each shipped problem's reference, its `pass` body, a mutant and a wrong return: passes and failures."""
    completions = {}
    for problem in PROBLEMS:
        mutant = mutants(problem.reference, limit=1)
        completions[problem.id] = [problem.reference, pass_body(problem.reference),
                                   mutant[0].function if mutant else f"{problem.signature}\n    return None\n"]
    return completions


def test_the_api_gives_a_pytest_runs_verdicts_sample_for_sample(run_repoexec, pytester, repoexec_cache):
    completions = shipped_completions()
    replay = write_replay(pytester.path / "samples.jsonl", completions)
    # limits no honest test nears on a loaded machine: a verdict here depends on the code, not on the load (and
    # the store keys the verdicts apart from the default limits' that other tests read)
    limits = {"test_timeout": 30.0, "timeout_factor": 0.0, "sample_timeout": 300.0}
    result, report = run_repoexec(str(SHIPPED), f"--repoexec-model=replay:{replay}", "-n", "2", "--repoexec-fresh",
                                  "--repoexec-timeout=30", "--repoexec-timeout-factor=0",
                                  "--repoexec-sample-timeout=300", subprocess=True)
    assert report is not None and report["engine_errors"] == 0, result.stdout.str()[-3000:]
    by_pytest = {(sample["problem"], sample["sample"]): sample for sample in report["samples"]}
    assert len(by_pytest) == 3 * len(PROBLEMS)
    with open_problems(SHIPPED, cache=repoexec_cache, workers=2, fresh=True, **limits) as problems:
        samples = [(problem_id, completion) for problem_id, texts in completions.items() for completion in texts]
        verdicts = problems.score_batch(samples)
    seen = {}
    for (problem_id, _), verdict in zip(samples, verdicts):
        index = seen[problem_id] = seen.get(problem_id, -1) + 1
        assert verdict.counts and verdict.result is not None and verdict.result.store in ("evaluated", "read")
        ours, theirs = verdict.result.to_dict(), by_pytest[(problem_id, index)]
        assert {name: ours[name] for name in COMPARED} == {name: theirs[name] for name in COMPARED}, problem_id
    passes = sum(verdict.passed for verdict in verdicts)
    assert passes >= len(PROBLEMS) and passes < len(verdicts)  # every reference passes, the `pass` bodies fail
    assert [verdict.reward("pass") for verdict in verdicts[:3]] == [1.0, 0.0, float(verdicts[2].passed)]


def test_one_completion_and_awaited_ones_get_their_own_verdicts_in_order(repoexec_cache):
    problem = PROBLEMS[0]
    wrong = f"{problem.signature}\n    raise NotImplementedError\n"
    with ProblemSet([SHIPPED], cache=repoexec_cache, workers=1) as problems:
        assert problems.score(problem.id, problem.reference).reward("tr") == 1.0
        verdicts = asyncio.run(problems.ascore_batch([(problem.id, wrong), (problem.id, problem.reference)]))
        single = asyncio.run(problems.ascore(problem.id, "   "))
        assert problem.signature in problems.prompt(problem.id)
    assert [verdict.passed for verdict in verdicts] == [False, True]
    assert verdicts[0].error_type == "NotImplementedError" and verdicts[0].reward("tr") == 0.0
    assert single.error_type == "EmptyCompletion" and single.reward() == 0.0  # the candidate's fault: judged


def test_a_sample_whose_tr_is_not_asked_for_stops_at_its_first_failing_test(repoexec_cache):
    """``tr=False`` (a reward of pass or fail, issue 42): a failing sample stops at its first failing test, with
    the verdict and error type of a full run and no TR; it is stored apart from a full run's, so that a call
    asking for TR afterwards runs every test rather than reading the shorter run back."""
    problem = next(problem for problem in PROBLEMS if problem.id == "textkit/roman_encode")
    head, tail = problem.reference.rsplit('    """\n', 1)
    wrong = f'{head}    """\n    if number == 4:\n        return "IIII"\n{tail}'  # fails its first test and 2 more
    limits = {"test_timeout": 30.0, "timeout_factor": 0.0, "sample_timeout": 300.0}
    with open_problems(SHIPPED, cache=repoexec_cache, workers=1, fresh=True, **limits) as problems:
        quick = problems.score(problem.id, wrong, tr=False)
        full = problems.score(problem.id, wrong)
        passing = problems.score(problem.id, problem.reference, tr=False)
    assert (quick.passed, quick.error_type, quick.tests_passed, quick.tr) == (False, "AssertionError", 0, None)
    assert not quick.result.tr_measured and quick.result.failed_test == "test_subtractive_pairs"
    assert (full.passed, full.error_type, full.result.store) == (False, "AssertionError", "evaluated")
    assert full.result.tr_measured and (full.tests_passed, full.tests_total) == (5, 8) and full.reward("tr") == 5 / 8
    assert passing.passed and passing.tr == 1.0  # a pass runs every test either way


@pytest.mark.parametrize("name", ["../ledger/add_months", "/etc/passwd", "textkit", "textkit/../ledger/add_months"])
def test_an_id_that_names_no_problem_is_refused_by_name(repoexec_cache, name):
    with ProblemSet([SHIPPED], cache=repoexec_cache) as problems:
        with pytest.raises(UnknownProblem, match="problem: .* is not a problem of this set"):
            problems.score(name, "return 1")


def test_a_host_that_cannot_set_up_a_sample_gives_no_reward_never_zero(mini, monkeypatch, repoexec_cache):
    mechanism = cgroups.ProcessCgroup.find(sandboxed=False)
    monkeypatch.setenv(cgroups.INJECT_ENV, "cgroup" if isinstance(mechanism, cgroups.ProcessCgroup) else "namespace")
    wrong = "def scaled(value):\n    return value\n"
    with open_problems(mini, cache=repoexec_cache, sandbox="none", fresh=True, timeout_factor=0) as problems:
        verdict = problems.score("mini/scaled", wrong)
    assert verdict.result is None and not verdict.counts and verdict.error_type == ENGINE_ERROR
    assert verdict.engine_error.startswith("EngineError: this host could not set up the sample")
    assert verdict.reward("pass") is None and verdict.reward("tr") is None and verdict.reward(unjudged=-1.0) == -1.0
    monkeypatch.delenv(cgroups.INJECT_ENV)  # the same sample where the host sets it up: a verdict, 0
    with open_problems(mini, cache=repoexec_cache, sandbox="none", fresh=True, timeout_factor=0) as problems:
        verdict = problems.score("mini/scaled", wrong)
    assert verdict.counts and verdict.reward("pass") == 0.0


def test_a_judging_process_that_dies_is_replaced_and_its_sample_judged(repoexec_cache):
    problem = PROBLEMS[0]
    with ProblemSet([SHIPPED], cache=repoexec_cache, workers=1) as problems:
        assert problems.score(problem.id, problem.reference).passed
        pool = problems._workers[0]
        for process in list(pool._processes.values()):
            process.kill()
            process.join()
        verdict = problems.score(problem.id, problem.reference)
        assert problems._workers[0] is not pool
    assert verdict.passed and verdict.counts


def test_options_that_are_not_allowed_are_named(repoexec_cache):
    with pytest.raises(ValueError, match="workers: 0"):
        ProblemSet([SHIPPED], cache=repoexec_cache, workers=0)
    with pytest.raises(ValueError, match="limits: nothing is not a limit"):
        ProblemSet([SHIPPED], cache=repoexec_cache, limits={"nothing": 1})
    with pytest.raises(ValueError, match="paths: no problem.toml under"):
        ProblemSet([SHIPPED / "textkit" / "project.toml"], cache=repoexec_cache)


def test_a_problem_that_cannot_be_judged_apart_is_no_reward_now_or_later(repoexec_cache, tmp_path):
    """Under the default mode a problem the judge cannot split gets no verdict (issue 40): no reward, labelled
    apart from the host's failures, and lasting, so that a service answers it 422 rather than 503 (no retry
    helps); the mode that allows it judges it beside its candidate."""
    project = write_one_problem(tmp_path, KEPT_STATE, "remember", KEPT_STATE_TESTS)
    reference = load_problem(project / "remember" / "problem.toml").reference
    with open_problems(project, cache=repoexec_cache, workers=1) as problems:
        verdict = problems.score("keeper/remember", reference)
    assert (verdict.result, verdict.counts, verdict.error_type, verdict.lasting) == (None, False, "NotJudged", True)
    assert "cannot be judged apart" in verdict.engine_error and verdict.reward("pass") is None
    with pytest.raises(NoReward, match="cannot be judged apart") as raised:
        openrlhf_answer([verdict], "pass", None)
    assert raised.value.lasting
    with open_problems(project, cache=repoexec_cache, workers=1, judge="apart-or-in-process") as problems:
        verdict = problems.score("keeper/remember", reference)
    assert verdict.passed and verdict.result.judge.startswith("in-process: ") and not verdict.lasting
