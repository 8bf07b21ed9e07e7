import pytest

from pytest_repoexec.metrics import error_counts, pass_at_k, summarise
from pytest_repoexec.results import SampleResult


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),
        (10, 3, 5, 1 - 21 / 252),  # C(7,5)=21, C(10,5)=252
        (10, 3, 10, 1.0),
        (10, 0, 5, 0.0),
        (5, 5, 5, 1.0),
        (10, 9, 5, 1.0),  # fewer than k failures: some k-subset always passes
        (2, 1, 1, 0.5),
        (6, 2, 3, 1 - 4 / 20),  # C(4,3)=4, C(6,3)=20
    ],
)
def test_pass_at_k_matches_hand_computed_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 1, 5), (3, 4, 1), (3, 1, 0)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def _result(problem, sample, passed, tests_passed=1, tests_total=1, dir=None, error=None):
    return SampleResult(problem, problem.split("/")[0], sample, passed, tests_passed, tests_total,
                        None if passed else error or "AssertionError", dir)


def test_summary_averages_pass_at_k_over_problems_and_skips_k_above_n():
    results = [_result("p/a", i, i < 2) for i in range(5)] + [_result("p/b", i, True) for i in range(5)]
    summary = summarise(results)
    assert summary.problems == 2
    assert summary.samples_per_problem == (5, 5)
    assert summary.pass_at[1] == pytest.approx((0.4 + 1.0) / 2)
    assert summary.pass_at[5] == pytest.approx(1.0)
    assert 10 not in summary.pass_at
    assert summary.as_metrics()["pass@10"] is None


def test_dir_leaves_out_problems_without_dependencies_and_tr_is_the_mean_share():
    results = [
        _result("p/a", 0, True, 4, 4, dir=1.0),
        _result("p/a", 1, False, 1, 4, dir=0.5),
        _result("p/b", 0, False, 0, 2, dir=None),
    ]
    summary = summarise(results)
    assert summary.dir == pytest.approx(0.75)
    assert summary.tr == pytest.approx((1.0 + 0.25 + 0.0) / 3)


def test_error_counts_name_the_most_common_error_first():
    results = [_result("p/a", 0, False, error="TypeError")] + [
        _result("p/a", i, False, error="AssertionError") for i in range(1, 3)
    ] + [_result("p/a", 3, True)]
    assert list(error_counts(results).items()) == [("AssertionError", 2), ("TypeError", 1)]
