"""The admission gate over the real RepoExec problems: our coverage of each focal function beside the figures
in RepoExec's own coverage reports, and what the gate costs next to a single run.

    python benchmarks/repoexec_coverage.py [--data ../shared/repoexec] [--projects a,b] [--workers 2] [--cache DIR]

Imports the data into a scratch folder, runs `pytest --repoexec-validate --repoexec-mutants=0` over it (ten
runs of every test, coverage of the function), then a plain single run for the time. For each problem it puts
our line coverage of the function next to two figures from `pytest_rp/.../coverage.json`: the module's line
coverage (what the report's summary says) and the report's executed lines restricted to the function's body
in our source (comparable with ours where the release's file is the one RepoExec measured).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def original_figures(data: Path, project: str, module: str, entry_point: str, source: str) -> tuple | None:
    from pytest_repoexec.gate import function_lines

    """(module line coverage, function line coverage) in RepoExec's report for this problem, or None."""
    function = entry_point.rpartition(".")[2]
    reports = sorted((data / "data_with_test_case" / "pytest_rp").glob(
        f"test-apps+{project}*/{module.replace('.', '+')}/{function}/coverage.json"))
    if not reports:
        return None
    files = json.loads(reports[0].read_text())["files"]
    suffix = "/" + module.replace(".", "/")
    entry = next((e for name, e in files.items() if name.endswith((suffix + ".py", suffix + "/__init__.py"))), None)
    if entry is None:
        return None
    first, last = function_lines(source, entry_point, body=True)
    executed = [line for line in entry["executed_lines"] if first <= line <= last]
    missing = [line for line in entry["missing_lines"] if first <= line <= last]
    inside = 100 * len(executed) / (len(executed) + len(missing)) if executed or missing else None
    return entry["summary"]["percent_covered"], inside


KINDS = {"flaky": "flaky", "coverage": "coverage under 40%", "the tests pass": "survives a pass body",
         "the reference fails": "reference fails"}


def reason_kind(reason: str) -> str:
    """A gate reason without its particulars: "unsafe: network", "test sanity: never calls", "flaky", ..."""
    if reason.startswith("unsafe: "):
        return "unsafe: " + reason.split(": ")[2]
    if reason.startswith("test sanity: "):
        return "test sanity: " + ("never calls" if " never calls " in reason else "asserts nothing")
    return next((kind for prefix, kind in KINDS.items() if reason.startswith(prefix)), reason[:40])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "repoexec")
    parser.add_argument("--projects", default=None)
    parser.add_argument("--workers", default="2")
    parser.add_argument("--cache", type=Path, default=None, help="a cache kept between runs (default: a fresh one)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pytest_repoexec.environment import Environments
    from pytest_repoexec.executor import module_file
    from pytest_repoexec.problem import load_problem

    with tempfile.TemporaryDirectory(prefix="repoexec-coverage-") as scratch:
        out, gate_path = Path(scratch, "imported"), Path(scratch, "gate.json")
        cache = args.cache or Path(scratch, "cache")
        command = [sys.executable, "-m", "pytest_repoexec.cli", "import", str(args.data), "--out", str(out)]
        run(command + (["--projects", args.projects] if args.projects else []))
        session = [sys.executable, "-m", "pytest", str(out), "-n", args.workers, "-p", "no:cacheprovider", "-q",
                   f"--repoexec-cache={cache}"]
        if not cache.is_dir():
            run(session)  # builds the environments, so that both timings below are warm
        single = run(session)
        gate = run([*session, "--repoexec-validate", "--repoexec-mutants=0", f"--repoexec-report={gate_path}"])
        report = json.loads(gate_path.read_text())
        environments = Environments(cache)
        rows, ours_all, theirs_module, theirs_function, pairs = [], [], [], [], []
        for entry in report["problems"]:
            project, name = entry["problem"].split("/")
            problem = load_problem(out / project / name / "problem.toml")
            source = module_file(environments.get(problem.project).import_root, problem.module).read_text()
            figures = original_figures(args.data, project, problem.module, problem.entry_point, source)
            ours = entry["line_coverage"]
            module_figure, function_figure = figures or (None, None)
            rows.append((entry["problem"], ours, module_figure, function_figure, entry["passed"], entry["known_failure"]))
            if entry["known_failure"] or ours is None:
                continue
            ours_all.append(ours)
            if module_figure is not None:
                theirs_module.append(module_figure)
            if function_figure is not None:
                theirs_function.append(function_figure)
                pairs.append((ours, function_figure))

    def show(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    print("| problem | ours (function) | RepoExec (module) | RepoExec (function lines) | admitted |")
    print("| --- | --- | --- | --- | --- |")
    for problem, ours, module_figure, function_figure, passed, known in rows:
        verdict = "known failure" if known else "yes" if passed else "no"
        print(f"| {problem} | {show(ours)} | {show(module_figure)} | {show(function_figure)} | {verdict} |")
    summary = report["summary"]
    print(f"\n{summary['admitted']} of {summary['problems']} admitted ({summary['known_failures']} known failures "
          f"not counted); flaky tests found: {summary['flaky_tests']}")
    print(f"mean line coverage of the function, ours: {statistics.mean(ours_all):.2f}% over {len(ours_all)} problems")
    print(f"RepoExec's module coverage, mean: {statistics.mean(theirs_module):.2f}% over {len(theirs_module)}")
    print(f"RepoExec's executed lines within the function, mean: {statistics.mean(theirs_function):.2f}% "
          f"over {len(theirs_function)}")
    kinds = collections.Counter()
    for entry in report["problems"]:
        if not entry["passed"] and not entry["known_failure"]:
            print(f"rejected {entry['problem']}: {'; '.join(entry['reasons'])[:300]}")
            kinds.update({reason_kind(reason) for reason in entry["reasons"]})
    print("rejections by reason (a problem may have several): "
          + ", ".join(f"{kind} {count}" for kind, count in kinds.most_common()))
    same = sum(abs(a - b) < 0.5 for a, b in pairs)
    print(f"ours and RepoExec's function figure agree (within 0.5 points) on {same} of {len(pairs)} problems")
    print(f"warm single run {single:.1f} s; gate (10 runs of each test, coverage, no mutants) {gate:.1f} s "
          f"= {gate / single:.2f}x, with -n {args.workers}")


if __name__ == "__main__":
    main()
