"""RepoClassBench's references, once, as a new user would run them: ``repoexec import --format repoclassbench``
of ``../shared/repoclassbench`` into ``--out`` (a scratch folder by default), then ``pytest OUT -n WORKERS`` over
every state at once; prints each state's references and how many pass (known failures apart: run as xfail,
out of the metrics), the total, and each reference that fails. Exits 1 where fewer than ``--at-least`` pass.
``noxfile.py``'s ``repoclassbench`` session runs it with the newest releases."""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "repoclassbench"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=SHARED, help="the benchmark's data (its README)")
    parser.add_argument("--out", type=Path, default=None, help="where to import (default: a scratch folder)")
    parser.add_argument("--workers", default="2")
    parser.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap")
    parser.add_argument("--sample-timeout", type=float, default=600,
                        help="each sample's wall-clock limit (the engine's is 120 s; more for a loaded machine)")
    parser.add_argument("--at-least", type=int, default=0, help="fail unless this many references pass")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rcb-references-") as scratch:
        out = args.out or Path(scratch) / "rcb"
        started = time.monotonic()
        if not out.is_dir():
            # exit status 1 where some tasks could not be imported (scikit-learn's and pyvista's: the README says why)
            subprocess.run(["repoexec", "import", "--format", "repoclassbench", str(args.shared), "--out", str(out)],
                           stdout=subprocess.DEVNULL)
            if not (out / "import-report.json").is_file():
                print(f"repoexec import --format repoclassbench {args.shared} wrote no report in {out}")
                return 1
            print(f"import: {time.monotonic() - started:.0f} s")
        report = Path(scratch) / "references.json"
        began = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "pytest", str(out), "-n", args.workers, "-p", "no:randomly", "-q",
                              f"--repoexec-report={report}", f"--repoexec-sandbox={args.sandbox}",
                              f"--repoexec-sample-timeout={args.sample_timeout}"], capture_output=True, text=True)
        if not report.is_file():
            print(run.stdout[-4000:] + run.stderr[-4000:])
            return 1
        document = json.loads(report.read_text())
    counted, known = document["samples"], document["known_failures"]
    states: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for sample in counted:
        states[sample["project"]][0] += 1
        states[sample["project"]][1] += bool(sample["passed"])
    for sample in known:
        states[sample["project"]][2] += 1
    print(f"{'state':28} {'references':>10} {'pass':>5} {'known failures':>14}")
    for state, (total, passed, failing) in sorted(states.items()):
        print(f"{state:28} {total:>10} {passed:>5} {failing:>14}")
    passed = sum(bool(sample["passed"]) for sample in counted)
    print(f"{passed} of {len(counted)} references pass ({len(known)} known failures apart, "
          f"{document.get('engine_errors', 0)} not run for the host's failure, {len(document['not_run'])} not run in "
          f"all); sandbox: {document['sandbox']['kind']}, processes: {document['sandbox']['processes']}; "
          f"{time.monotonic() - began:.0f} s")
    for sample in counted:
        if not sample["passed"]:
            print(f"    {sample['problem']}: {sample['error_type']} {sample['tests_passed']}/{sample['tests_total']}: "
                  + " ".join((sample.get("error_log") or "").split())[:200])
    for entry in document["not_run"]:
        print(f"    not run: {entry['item']}: {entry['reason'][:200]}")
    return 0 if passed >= args.at_least else 1


if __name__ == "__main__":
    sys.exit(main())
