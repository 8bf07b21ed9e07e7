"""RepoClassBench validation: import ``../shared/repoclassbench`` into a scratch folder, then per repository state
run every reference and every emptied class (each method's body ``pass``) with ``-n WORKERS``; prints tasks,
imported, classes equal to the ground truth (code: strings and comments aside), references passing, known
failures (kept out of the metrics, with their reason in ``repoclassbench.toml``), emptied classes failing (of the
tasks that are not known failures), and the time, then each reference that fails with its error. Every sample
gets a verdict (``--repoexec-judge=apart-or-in-process``), and the references judged apart are counted apart
("apart": those the default mode judges; the others it gives no verdict), each other one named with why.
``--projects a,b`` limits it to those states; ``--sandbox`` is passed to the engine (``none`` where bubblewrap
cannot run the project's interpreter), ``--sample-timeout`` too."""

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


def _samples(project: Path, workers: int, extra: list[str], report: Path) -> dict[str, dict]:
    """Problem name -> its sample's record in the run's JSON report (known failures are listed apart there)."""
    subprocess.run([sys.executable, "-m", "pytest", str(project), "-n", str(workers), "-p", "no:randomly", "-q",
                    f"--repoexec-report={report}", *extra], capture_output=True, text=True)
    if not report.is_file():
        return {}
    run = json.loads(report.read_text())
    return {sample["problem"].rpartition("/")[2]: sample for sample in run["samples"] + run.get("known_failures", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--projects", default=None)
    parser.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap")
    parser.add_argument("--sample-timeout", type=float, default=120,
                        help="each sample's wall-clock limit (the engine's default): more for a loaded machine")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rcb-validation-") as folder:
        out = Path(folder)
        started = time.monotonic()
        states = import_benchmark(SHARED, out / "imported", set(args.projects.split(",")) if args.projects else None)
        print(f"import: {time.monotonic() - started:.0f} s")
        print(f"{'project':28} {'tasks':>5} {'imported':>8} {'matches':>7} {'code':>4} {'refs pass':>9} {'apart':>5} "
              f"{'known':>5} {'empty fail':>10} {'time':>6}")
        failures, not_apart = [], []
        for state in states:
            began, project = time.monotonic(), out / "imported" / state.name
            imported = [task for task in state.tasks if task.imported]
            references: dict[str, dict] = {}
            emptied_fail = 0
            if imported:
                engine = [f"--repoexec-sandbox={args.sandbox}", f"--repoexec-sample-timeout={args.sample_timeout}",
                          "--repoexec-judge=apart-or-in-process"]
                references = _samples(project, args.workers, engine, out / f"{state.name}-references.json")
                replay = out / f"{state.name}.jsonl"
                replay.write_text("".join(json.dumps({"problem": f"{state.name}/{task.task.class_name}", "completions": [
                    emptied(tomllib.loads((project / task.task.class_name / "problem.toml").read_text())["reference"])
                ]}) + "\n" for task in imported))
                verdicts = _samples(project, args.workers, [*engine, f"--repoexec-model=replay:{replay}"],
                                    out / f"{state.name}-emptied.json")
                emptied_fail = sum(not sample.get("passed") for name, sample in verdicts.items()
                                   if not references.get(name, {}).get("known_failure"))
            known = sum(bool(sample.get("known_failure")) for sample in references.values())
            print(f"{state.name:28} {len(state.tasks):>5} {len(imported):>8} "
                  f"{sum(bool(t.matches) for t in imported):>7} {sum(bool(t.code_matches) for t in imported):>4} "
                  f"{sum(bool(s.get('passed')) for s in references.values()):>9} "
                  f"{sum(bool(s.get('passed')) and s.get('judge') == 'apart' for s in references.values()):>5} "
                  f"{known:>5} {emptied_fail:>10} {time.monotonic() - began:>5.0f}s")
            not_apart += [f"    {state.name}/{name}: {sample['judge']}" for name, sample in sorted(references.items())
                          if sample.get("passed") and sample.get("judge") != "apart"]
            failures += [f"    {state.name}/{name}: " + (f"known: {sample['known_failure']}" if sample.get("known_failure")
                         else f"{sample.get('error_type')} {sample.get('tests_passed')}/{sample.get('tests_total')}: "
                         + " ".join((sample.get("error_log") or "").split())[:160])
                         for name, sample in sorted(references.items()) if not sample.get("passed")]
            failures += [f"    not imported: {task.task.task_id}: {task.error}" for task in state.tasks if task.error]
        print("\n".join(["references that do not pass, and tasks not imported:", *failures] if failures else []))
        print("\n".join(["references that pass only beside their candidate:", *not_apart] if not_apart else []))


if __name__ == "__main__":
    main()
