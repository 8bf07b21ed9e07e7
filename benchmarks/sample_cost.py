"""Per-sample cost of the executor on a problem set, cold (empty cache) and warm (environments reused).

    python benchmarks/sample_cost.py [PROBLEMS] [--samples N] [--workers N]

Prints, for each pass, the session's wall time and the median and 90th percentile of the per-sample run time
(the inner test process, from the JSON report). Speed targets are judged from these figures, not from tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_repoexec.problem import find_manifests, load_problem


def run_session(problems: Path, cache: Path, report: Path, replay: Path | None, workers: int) -> float:
    command = [sys.executable, "-m", "pytest", str(problems), "-q", "-p", "no:cacheprovider", "--repoexec-fresh",
               f"--repoexec-cache={cache}", f"--repoexec-report={report}"]
    if replay:
        command.append(f"--repoexec-model=replay:{replay}")
    if workers:
        command += ["-n", str(workers)]
    started = time.perf_counter()
    subprocess.run(command, check=False, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="?", default="problems", type=Path)
    parser.add_argument("--samples", type=int, default=1, help="copies of the reference per problem")
    parser.add_argument("--workers", type=int, default=0, help="xdist workers (0: no xdist)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repoexec-bench-") as scratch:
        cache, report, replay = Path(scratch, "cache"), Path(scratch, "report.json"), None
        if args.samples > 1:
            replay = Path(scratch, "replay.jsonl")
            problems = [load_problem(m) for m in find_manifests([args.problems])]
            replay.write_text("".join(
                json.dumps({"problem": p.id, "completions": [p.reference] * args.samples}) + "\n" for p in problems
            ))
        for label in ("cold", "warm"):
            wall = run_session(args.problems, cache, report, replay, args.workers)
            samples = json.loads(report.read_text())["samples"]
            durations = sorted(s["duration"] for s in samples)
            passed = sum(s["passed"] for s in samples)
            p90 = durations[int(0.9 * (len(durations) - 1))]
            print(f"{label}: {len(samples)} samples ({passed} passed), session {wall:.2f} s, "
                  f"per sample median {statistics.median(durations):.3f} s, p90 {p90:.3f} s, "
                  f"workers {args.workers or 'none'}")


if __name__ == "__main__":
    main()
