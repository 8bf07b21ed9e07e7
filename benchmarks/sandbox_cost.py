"""What the sandbox costs a sample: the same samples run with --repoexec-sandbox=bwrap and =none, in turns.

    python benchmarks/sandbox_cost.py [PROBLEMS] [--samples N] [--rounds N]

Each round runs every sample once in each mode (one process, no xdist, warm environments), alternating which
mode goes first; a sample's time in a mode is its median over the rounds. Prints the median per-sample time in
each mode, the median and mean of the paired differences (the sandbox's cost), and bubblewrap's own start-up
(an empty sandbox around /bin/true against /bin/true alone). Verdicts must not differ between the modes.
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
from pytest_repoexec.sandbox import Bubblewrap, Tree, View, make_sandbox


def session(problems: Path, cache: Path, replay: Path, sandbox: str, report: Path) -> dict[tuple[str, int], dict]:
    command = [sys.executable, "-m", "pytest", str(problems), "-q", "-p", "no:cacheprovider", "--repoexec-fresh",
               f"--repoexec-cache={cache}", f"--repoexec-report={report}", f"--repoexec-model=replay:{replay}",
               f"--repoexec-sandbox={sandbox}"]
    subprocess.run(command, check=False, capture_output=True)
    return {(s["problem"], s["sample"]): s for s in json.loads(report.read_text())["samples"]}


def startup(repeat: int = 50) -> tuple[float, float]:
    """Median seconds of an interpreter doing nothing in an empty sandbox (its user namespace's launcher
    included, where the engine is root), and alone."""
    sandbox = make_sandbox("bwrap")
    assert isinstance(sandbox, Bubblewrap)
    empty, argv = trivial_sample()
    wrapped, _ = sandbox.wrap(empty, argv)
    times = {}
    for name, argv in (("bwrap", wrapped), ("bare", argv)):
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run(argv, check=True)
            runs.append(time.perf_counter() - started)
        times[name] = statistics.median(runs)
    return times["bwrap"], times["bare"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="?", default="problems", type=Path)
    parser.add_argument("--samples", type=int, default=5, help="copies of the reference per problem")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repoexec-sandbox-bench-") as scratch:
        cache, replay, report = Path(scratch, "cache"), Path(scratch, "replay.jsonl"), Path(scratch, "r.json")
        problems = [load_problem(manifest) for manifest in find_manifests([args.problems])]
        replay.write_text("".join(json.dumps({"problem": p.id, "completions": [p.reference] * args.samples}) + "\n"
                                  for p in problems))
        session(args.problems, cache, replay, "bwrap", report)  # environments built, out of the figures
        times: dict[str, dict[tuple[str, int], list[float]]] = {"bwrap": {}, "none": {}}
        verdicts: dict[str, dict[tuple[str, int], object]] = {"bwrap": {}, "none": {}}
        for number in range(args.rounds):
            for mode in (("bwrap", "none") if number % 2 == 0 else ("none", "bwrap")):
                for key, sample in session(args.problems, cache, replay, mode, report).items():
                    times[mode].setdefault(key, []).append(sample["duration"])
                    verdicts[mode][key] = (sample["passed"], sample["error_type"], sample["tests_passed"])
        keys = sorted(times["bwrap"])
        per_mode = {mode: {key: statistics.median(times[mode][key]) for key in keys} for mode in times}
        differences = [per_mode["bwrap"][key] - per_mode["none"][key] for key in keys]
        differing = [key for key in keys if verdicts["bwrap"][key] != verdicts["none"][key]]
        with_bwrap, bare = startup()
        print(f"{len(keys)} samples x {args.rounds} rounds in each mode (no xdist, warm environments)")
        for mode in ("none", "bwrap"):
            print(f"  {mode:5}: per sample median {1000 * statistics.median(per_mode[mode].values()):.1f} ms")
        print(f"  sandbox cost per sample: median {1000 * statistics.median(differences):.1f} ms, "
              f"mean {1000 * statistics.mean(differences):.1f} ms")
        print(f"  bubblewrap start-up: /bin/true in an empty sandbox {1000 * with_bwrap:.1f} ms, "
              f"alone {1000 * bare:.1f} ms ({1000 * (with_bwrap - bare):.1f} ms)")
        print(f"  verdicts that differ between the modes: {len(differing)} {differing[:5]}")


if __name__ == "__main__":
    main()
