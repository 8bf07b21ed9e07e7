"""Benchmark metrics over sample results: pass@k (unbiased), DIR and the test pass rate (TR)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from math import comb

from .results import SampleResult
from .runtime.repoexec_protocol import ErrorType

KS = (1, 5, 10)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimator 1 - C(n-c, k) / C(n, k) of the chance that one of k samples passes."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c})")
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass(frozen=True)
class Summary:
    problems: int
    samples: int
    samples_per_problem: tuple[int, int]  # fewest and most
    pass_at: dict[int, float]  # only the k that every problem has enough samples for
    dir: float | None
    tr: float | None

    def as_metrics(self) -> dict[str, float | None]:
        metrics: dict[str, float | None] = {f"pass@{k}": self.pass_at.get(k) for k in KS}
        return metrics | {"DIR": self.dir, "TR": self.tr}


def summarise(results: Iterable[SampleResult]) -> Summary:
    by_problem: dict[str, list[SampleResult]] = defaultdict(list)
    for result in results:
        by_problem[result.problem].append(result)
    samples = [result for group in by_problem.values() for result in group]
    counts = [len(group) for group in by_problem.values()]
    pass_at = {
        k: mean([pass_at_k(len(group), sum(r.passed for r in group), k) for group in by_problem.values()])
        for k in KS
        if counts and min(counts) >= k
    }
    with_dependencies = [r.dir for r in samples if r.dir is not None]
    return Summary(
        problems=len(by_problem),
        samples=len(samples),
        samples_per_problem=(min(counts, default=0), max(counts, default=0)),
        pass_at={k: v for k, v in pass_at.items() if v is not None},
        dir=mean(with_dependencies),
        # a sample stopped at its first failing test (--repoexec-fail-fast) did not measure it: no TR at all
        tr=None if any(not r.tr_measured for r in samples)
        else mean([r.tests_passed / r.tests_total for r in samples if r.tests_total]),
    )


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def error_counts(results: Iterable[SampleResult]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for result in results:
        if not result.passed:
            counts[str(result.error_type or ErrorType.ERROR)] += 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
