"""RepoClassBench validation: import ``../shared/repoclassbench`` into a scratch folder, then per repository state
run every reference and every emptied class (each method's body ``pass``) with ``-n WORKERS``; prints tasks,
imported, classes equal to the ground truth (code: strings and comments aside), references passing, emptied
classes failing, and the time. ``--projects a,b`` limits it to those states."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_repoexec.importer.repoclassbench import emptied, import_benchmark

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHARED = Path(__file__).resolve().parents[2] / "shared" / "repoclassbench"


def _passed(project: Path, workers: int, extra: list[str], scratch: Path) -> dict[str, bool]:
    """Problem name -> whether its sample passed, from the run's JSON report."""
    report = scratch / f"{project.name}-{len(extra)}.json"
    subprocess.run([sys.executable, "-m", "pytest", str(project), "-n", str(workers), "-p", "no:randomly", "-q",
                    f"--repoexec-report={report}", *extra], capture_output=True, text=True)
    if not report.is_file():
        return {}
    samples = json.loads(report.read_text()).get("samples", [])
    return {sample["problem"].rpartition("/")[2]: sample.get("passed", False) for sample in samples}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--projects", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rcb-validation-") as folder:
        out = Path(folder)
        started = time.monotonic()
        states = import_benchmark(SHARED, out / "imported", set(args.projects.split(",")) if args.projects else None)
        print(f"import: {time.monotonic() - started:.0f} s")
        print(f"{'project':28} {'tasks':>5} {'imported':>8} {'matches':>7} {'code':>4} {'refs pass':>9} "
              f"{'empty fail':>10} {'time':>6}")
        for state in states:
            began, project = time.monotonic(), out / "imported" / state.name
            imported = [task for task in state.tasks if task.imported]
            references = emptied_fail = 0
            if imported:
                references = sum(_passed(project, args.workers, [], out).values())
                replay = out / f"{state.name}.jsonl"
                replay.write_text("".join(json.dumps({"problem": f"{state.name}/{task.task.class_name}", "completions": [
                    emptied(tomllib.loads((project / task.task.class_name / "problem.toml").read_text())["reference"])
                ]}) + "\n" for task in imported))
                verdicts = _passed(project, args.workers, [f"--repoexec-model=replay:{replay}"], out)
                emptied_fail = sum(not passed for passed in verdicts.values())
            print(f"{state.name:28} {len(state.tasks):>5} {len(imported):>8} "
                  f"{sum(bool(t.matches) for t in imported):>7} {sum(bool(t.code_matches) for t in imported):>4} "
                  f"{references:>9} {emptied_fail:>10} {time.monotonic() - began:>5.0f}s")
            for task in state.tasks:
                if task.error:
                    print(f"    not imported: {task.task.task_id}: {task.error}")


if __name__ == "__main__":
    main()
