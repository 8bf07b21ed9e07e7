"""Import the real RepoExec data and run every reference: the per-project table, and the time it took.

    python benchmarks/repoexec_validation.py [--data ../shared/repoexec] [--projects a,b] [--workers 2] [--cache DIR]

Runs `repoexec import` into a scratch folder, then `pytest -n WORKERS` twice over it (cold: an empty cache unless
--cache is given; warm: the same cache again), and prints a Markdown table per project: problems published,
imported, reference passing, and the failures by error type and by known cause.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_repoexec.executor import JUDGE_MODES


def run(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def table(imported: dict, report: dict) -> list[str]:
    samples = collections.defaultdict(list)
    for sample in [*report["samples"], *report["known_failures"]]:
        samples[sample["project"]].append(sample)
    not_run = collections.Counter(entry["item"].split("/")[0] for entry in report["not_run"]
                                  if " is not judged: " not in entry["reason"])
    not_judged = collections.Counter(entry["item"].split("/")[0] for entry in report["not_run"]
                                     if " is not judged: " in entry["reason"])
    lines = ["| project | release | found | published | imported | reference passes | fails (error types) | known failures |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    totals = collections.Counter()
    for name, row in imported.items():
        runs = samples.get(name, [])
        passed = sum(s["passed"] for s in runs)
        errors = collections.Counter(s["error_type"] for s in runs if not s["passed"] and not s["known_failure"])
        known = sum(1 for s in runs if s["known_failure"])
        if not_run[name]:
            errors["environment not built"] += not_run[name]
        if not_judged[name]:
            errors["not judged apart"] += not_judged[name]
        described = ", ".join(f"{kind} {count}" for kind, count in errors.most_common()) or "-"
        lines.append(f"| {name} | {row['release'] or '-'} | {row['found'] or '-'} | {row['published']} | "
                     f"{row['imported']} | {passed}/{row['imported']} | {described} | {known} |")
        totals.update(published=row["published"], imported=row["imported"], passed=passed, known=known)
    lines.append(f"| all | | | {totals['published']} | {totals['imported']} | {totals['passed']}/{totals['imported']}"
                 f" | | {totals['known']} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "repoexec")
    parser.add_argument("--projects", default=None)
    parser.add_argument("--workers", default="2")
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--judge", choices=JUDGE_MODES, default="apart-or-in-process",
                        help="--repoexec-judge (default apart-or-in-process: every reference gets a verdict, and those "
                             "judged beside their candidate are the ones the default mode gives none)")
    parser.add_argument("--keep", type=Path, default=None, help="copy the cold run's JSON report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repoexec-validation-") as scratch:
        out, report_path = Path(scratch, "imported"), Path(scratch, "report.json")
        cache = args.cache or Path(scratch, "cache")
        command = [sys.executable, "-m", "pytest_repoexec.cli", "import", str(args.data), "--out", str(out)]
        import_time = run(command + (["--projects", args.projects] if args.projects else []))
        session = [sys.executable, "-m", "pytest", str(out), "-n", args.workers, "-p", "no:cacheprovider", "-q",
                   "--repoexec-fresh",  # every run evaluates: the result store would answer a second run
                   f"--repoexec-cache={cache}", f"--repoexec-report={report_path}", f"--repoexec-judge={args.judge}"]
        cold = run(session)
        report = json.loads(report_path.read_text())
        if args.keep:
            args.keep.write_text(report_path.read_text())
        warm = run(session)
        imported = json.loads((out / "import-report.json").read_text())
        print("\n".join(table(imported, report)))
        judge = report.get("judge") or {}
        if judge:
            print(f"\njudge: {judge['apart']} references apart, {judge['in_process']} in-process (not judged under "
                  "the default --repoexec-judge=apart):")
            for problem, why in judge["problems_in_process"].items():
                print(f"- {problem}: {why}")
        print(f"\nimport {import_time:.1f} s; validation with -n {args.workers}: "
              f"{'cold' if not args.cache else 'first'} {cold:.1f} s, warm {warm:.1f} s")


if __name__ == "__main__":
    main()
