"""Build real PyPI projects with ``repoexec build`` and check what was built, as the builder issue asks.

    python benchmarks/build_projects.py [--out built] [--workers 2] [--classes] [--paraphrase] pypi:NAME==VERSION ...

For each release: ``repoexec build`` into ``OUT/NAME`` (timed; ``--classes``: class problems), then
``pytest OUT/NAME -n WORKERS`` with the references (every admitted problem must pass) and with a replay of every
reference's ``pass`` body (an empty class for a class: every one must fail). Prints a Markdown table: functions
(or classes) found, picked, with suite tests, admitted, tests per problem, mean line coverage and mutation score
of the admitted, build time, and the two runs' pass@1; with ``--paraphrase``, also ``repoexec paraphrase`` of
the built set into ``OUT/NAME-para`` and the share of its problems still admitted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem


def score(folder: Path, workers: str, *options: str) -> dict:
    """The JSON report of ``pytest folder`` (every sample evaluated afresh)."""
    with tempfile.TemporaryDirectory(prefix="repoexec-build-check-") as scratch:
        report = Path(scratch, "report.json")
        subprocess.run([sys.executable, "-m", "pytest", str(folder), "-n", workers, "-q", "-p", "no:cacheprovider",
                        "--repoexec-fresh", f"--repoexec-report={report}", *options],
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not report.exists():
            sys.exit(f"pytest {folder} {' '.join(options)} wrote no report")
        return json.loads(report.read_text())


def admitted(folder: Path) -> list[Path]:
    """The admitted problems' manifests (the rejected ones lie under ``rejected/``, out of ``pytest folder``)."""
    return [manifest for manifest in find_manifests([folder]) if "rejected" not in manifest.relative_to(folder).parts]


def check(release: str, out: Path, workers: str, classes: bool, paraphrase: bool) -> list[str]:
    name = release.removeprefix("pypi:").split("==")[0]
    folder = (out / name).resolve()
    started = time.perf_counter()
    built = subprocess.run(["repoexec", "build", release, "--out", str(folder), "-n", workers,
                            *(["--classes"] if classes else [])], check=False, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if built.returncode != 0:
        return [release, f"build failed: {(built.stderr or built.stdout).strip().splitlines()[-1]}"]
    figures = json.loads((folder / "build-report.json").read_text())
    tests = [problem["tests"] for problem in figures["problems"] if problem.get("verdict") == "admitted"]
    if not figures["admitted"]:
        return [release, str(figures["found"]), str(figures["picked"]), str(figures["with_tests"]), "0", "-", "-",
                "-", f"{seconds:.0f} s", "-", "-", *(["-"] if paraphrase else [])]
    references = score(folder, workers)
    problems = [load_problem(manifest) for manifest in admitted(folder)]
    with tempfile.TemporaryDirectory(prefix="repoexec-pass-bodies-") as scratch:
        replay = Path(scratch, "pass.jsonl")
        replay.write_text("".join(json.dumps({"problem": p.id, "completions": [pass_body(p.reference)]}) + "\n"
                                  for p in problems))
        bodies = score(folder, workers, f"--repoexec-model=replay:{replay}")
    passing = sum(sample["passed"] for sample in bodies["samples"])
    row = [release, str(figures["found"]), str(figures["picked"]), str(figures["with_tests"]),
           str(figures["admitted"]), f"{sum(tests) / len(tests):.1f}", f"{figures['mean_line_coverage']}%",
           f"{figures['mean_mutation_score']}%", f"{seconds:.0f} s", f"{100 * references['metrics']['pass@1']:.2f}",
           f"{100 * bodies['metrics']['pass@1']:.2f} ({passing} of {len(bodies['samples'])} pass)"]
    if paraphrase:
        para = out / f"{name}-para"
        subprocess.run(["repoexec", "paraphrase", str(folder), "--out", str(para), "-n", workers], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = para / "paraphrase-report.json"
        kept = [len(admitted(para.resolve())), figures["admitted"]] if report.exists() else None
        row.append(f"{kept[0]} of {kept[1]} ({100 * kept[0] / kept[1]:.0f}%)" if kept else "paraphrase failed")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="+", metavar="pypi:NAME==VERSION")
    parser.add_argument("--out", type=Path, default=Path("built"))
    parser.add_argument("--workers", default="2")
    parser.add_argument("--classes", action="store_true", help="class problems (repoexec build --classes)")
    parser.add_argument("--paraphrase", action="store_true", help="also paraphrase each built set, through the gate")
    args = parser.parse_args()
    header = ["release", "found", "picked", "with suite tests", "admitted", "tests each", "mean coverage",
              "mean mutation score", "build time", "pass@1, references", "pass@1, `pass` bodies",
              *(["admitted after paraphrase"] if args.paraphrase else [])]
    rows = []
    for release in args.releases:
        rows.append(check(release, args.out, args.workers, args.classes, args.paraphrase))
        print(" | ".join(rows[-1]), flush=True)
    print(f"\n| {' | '.join(header)} |\n|{'---|' * len(header)}")
    for row in rows:
        print(f"| {' | '.join(row)} |")


if __name__ == "__main__":
    main()
