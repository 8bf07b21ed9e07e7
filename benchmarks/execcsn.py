"""Exec-CSN's examples as a new user runs them, from a fresh cache: ``repoexec import --format execcsn`` of
``../shared/execcsn/examples.json``, every project's environment built (timed on its own, ``--workers`` at a time),
then ``pytest OUT -n WORKERS`` with the reference generator, then a replay of wrong bodies (each problem's header
with ``...``, then with ``pass``), then, with ``--gate``, the admission gate. Prints each step's wall time (the
environments' also in CPU time, which a shared machine's load does not swell: uv's processes, all waited for; a
pytest run's sandboxed samples are not all reaped by processes this one waits for, so its CPU time would be
short), each environment's build time, what passed, and which problems were judged in-process and why."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_repoexec.environment import Environments
from pytest_repoexec.problem import find_manifests, load_problem

SHARED = Path(__file__).resolve().parents[2] / "shared" / "execcsn" / "examples.json"


def _cpu() -> float:
    """CPU seconds of this process and of every process it started and waited for (theirs too, recursively)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _pytest(out: Path, cache: Path, report: Path, workers: str, *options: str) -> tuple[str, dict]:
    began = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", str(out), "-n", workers, "-q", "-p", "no:cacheprovider",
                          f"--repoexec-cache={cache}", f"--repoexec-report={report}",
                          "--repoexec-judge=apart-or-in-process", *options],  # those the default would not judge, named
                         capture_output=True, text=True)
    took = f"{time.monotonic() - began:.1f} s"
    if not report.is_file():
        raise SystemExit(f"pytest {' '.join(options)} wrote no report:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
    return took, json.loads(report.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=Path, default=SHARED)
    parser.add_argument("--workers", default="2")
    parser.add_argument("--gate", action="store_true", help="also run the admission gate (10 reruns, mutants)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="execcsn-bench-") as scratch:
        out, cache = Path(scratch) / "imported", Path(scratch) / "cache"
        began = time.monotonic()
        subprocess.run(["repoexec", "import", "--format", "execcsn", str(args.examples), "--out", str(out)],
                       stdout=subprocess.DEVNULL)
        print(f"import: {time.monotonic() - began:.1f} s")
        problems = [load_problem(manifest) for manifest in find_manifests([out])]
        projects = list({problem.project.name: problem.project for problem in problems}.values())
        environments = Environments(cache)

        def build(project):
            started = time.monotonic()
            environments.get(project)
            return project.name, time.monotonic() - started

        began, cpu = time.monotonic(), _cpu()
        with ThreadPoolExecutor(int(args.workers)) as pool:
            built = list(pool.map(build, projects))
        print(f"environments: {len(projects)} built in {time.monotonic() - began:.1f} s wall, {_cpu() - cpu:.1f} s "
              f"CPU, {args.workers} at a time")
        for name, seconds in sorted(built, key=lambda pair: -pair[1]):
            print(f"    {name:40} {seconds:6.1f} s")

        took, report = _pytest(out, cache, Path(scratch) / "reference.json", args.workers, "--repoexec-model=reference")
        passed = [s["problem"] for s in report["samples"] if s["passed"]]
        print(f"reference: {len(passed)} of {len(report['samples'])} pass, {took}; judged apart "
              f"{report['judge']['apart']}, in-process {report['judge']['in_process']}")
        for problem, why in sorted(report["judge"]["problems_in_process"].items()):
            print(f"    in-process: {problem}: {why}")
        for sample in report["samples"]:
            if not sample["passed"]:
                print(f"    fails: {sample['problem']}: {sample['error_type']}")

        replay = Path(scratch) / "wrong.jsonl"
        replay.write_text("".join(json.dumps({"problem": problem.id, "completions": [
            f"{problem.signature}\n    ...\n", f"{problem.signature}\n    pass\n"]}) + "\n" for problem in problems))
        took, report = _pytest(out, cache, Path(scratch) / "wrong.json", args.workers, f"--repoexec-model=replay:{replay}")
        passing = sorted({s["problem"] for s in report["samples"] if s["passed"]})
        print(f"wrong bodies (`...`, `pass`): {len(report['samples'])} samples, {len(passing)} problems pass one, "
              f"{took}: {', '.join(passing) or 'none'}")

        if args.gate:
            took, report = _pytest(out, cache, Path(scratch) / "gate.json", args.workers, "--repoexec-validate")
            admitted = [row for row in report["problems"] if row["passed"]]
            print(f"gate: {len(admitted)} of {len(report['problems'])} admitted, {took}")
            for row in report["problems"]:
                if not row["passed"]:
                    print(f"    rejected: {row['problem']}: {'; '.join(row['reasons'])[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
