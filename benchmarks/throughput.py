"""Samples per second of the executors, on one workload, in one run on this machine.

    python benchmarks/throughput.py [--data ../shared/repoexec] [--projects a,b] [--workers 2] [--mutants 8]
                                    [--duplicates 2]

The workload: every imported RepoExec problem whose reference is expected to pass, with samples made from its
reference deterministically: the reference itself, its ``pass`` body, and up to ``--mutants`` mutants from
the admission gate's mutation operators, so that samples pass and fail in every way (wrong values,
exceptions, loops that time out); then the first ``--duplicates`` of them once more, as a model repeats itself
(a repeated module is read from the result store). It runs the workload with ``--repoexec-executor=process``,
with the warm executor as it was before problem zygotes (``--repoexec-zygotes=0``, xdist's default
distribution), each executor with the tests beside the candidate as before the judge (``-in-process``), and
with the warm executor as it is, the judge apart (all ``--repoexec-fresh``: every distinct module evaluated,
nothing read from earlier runs), then ``warm`` again reading the result store, all with ``-n WORKERS`` and the
default cache (its environments are built by a first, untimed run of one sample per project). It prints
samples/s of each, their ratios, every sample whose verdict differs, the rerun's time, the share of each phase
of a sample's run, the CPU of a sample's process trees (the judge's, the candidate's: where the warm executor
counted them), the warm processes' peak memory in each run, and the CPU seconds of each run with every
process it started (where a cgroup v1 ``cpuacct`` hierarchy lets us count them: a figure other load does not skew).

Last, a resume: the warm run once more over an empty result store (the default cache's store moved aside
meanwhile, and put back), killed with SIGKILL once half the verdicts are stored and started again; it prints how
many verdicts the killed run had stored, how many the second run read and evaluated, whether its metrics are
the warm run's, and each sample whose verdict is not.
``--executors`` names the runs to make (``process``, ``process-in-process``, ``warm-without-zygotes``,
``warm-in-process``, ``warm``; all by default, ``warm`` always), ``--skip-resume`` leaves out the resume,
``--fail-fast`` runs them all with ``--repoexec-fail-fast`` (each sample stops at its first failing test). The
rerun from the store is timed in CPU seconds too (under xdist the controller reads it alone: issue 42), and
each verdict's mean sample time says what a failure costs beside a pass.

``--decoy-cost`` measures the decoy check instead: the warm run with ``--repoexec-decoy=off``, then with it on
(both fresh, one after the other), and prints each one's time, what the check added in all and per passing
sample, its share of the run, the same share measured inside the checked run alone (the decoy runs' part of the
summed sample time, which a change of load between the two runs does not skew), its outcome (held, caught,
could not be checked: the workload holds no cheat, so nothing may be caught) and every sample whose verdict
differs between the two runs. ``--reports DIR`` keeps each run's report.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import operator
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pytest_repoexec.collection import ProblemLoader
from pytest_repoexec.environment import default_cache_dir
from pytest_repoexec.mutation import mutants, pass_body


def workload(problems: list, mutant_count: int, duplicates: int) -> dict[str, list[str]]:
    """Completions by problem id: the reference, its pass body, its mutants, then the first ``duplicates``
    of those again."""
    samples = {}
    for problem in problems:
        try:
            made = [pass_body(problem.reference), *(m.function for m in mutants(problem.reference, mutant_count))]
        except (ValueError, SyntaxError):
            made = []  # a reference that is not one function: it runs as itself only
        texts = [problem.reference, *made]
        samples[problem.id] = [*texts, *texts[:duplicates]]
    return samples


class MemoryPeak(threading.Thread):
    """The largest total of the warm processes' proportional set size (their shared pages split among them)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            total = 0
            for proc in Path("/proc").iterdir():
                try:
                    if proc.name.isdigit() and b"repoexec_warm" in (proc / "cmdline").read_bytes() \
                            and b"bwrap" not in (proc / "cmdline").read_bytes().split(b"\0")[0]:
                        for line in (proc / "smaps_rollup").read_text().splitlines():
                            if line.startswith("Pss:"):
                                total += int(line.split()[1]) << 10
                except OSError:
                    continue
            self.peak = max(self.peak, total)
            time.sleep(1.0)


# the runs compared, each with -n WORKERS: a fresh interpreter a sample; the warm executor as it was before
# problem zygotes (xdist's default distribution, which deals items out one by one); the warm executor now. Every
# sample gets a verdict: a problem that cannot be judged apart is judged beside its candidate, as before issue 40
EXECUTORS = {
    "process": ("--repoexec-executor=process", "--repoexec-judge=apart-or-in-process"),
    "process-in-process": ("--repoexec-executor=process", "--repoexec-judge=in-process"),
    "warm-without-zygotes": ("--repoexec-executor=warm", "--repoexec-zygotes=0", "--dist=load",
                             "--repoexec-judge=apart-or-in-process"),
    "warm-in-process": ("--repoexec-executor=warm", "--repoexec-judge=in-process"),
    "warm": ("--repoexec-executor=warm", "--repoexec-judge=apart-or-in-process"),
}


COMPARE = {">=": operator.ge, "<=": operator.le, "<": operator.lt}


class CpuMeter:
    """The CPU seconds of a run and every process it starts (the sandboxes and warm processes included, which
    ``getrusage`` misses: they are not all waited for by their parents), from a cgroup v1 ``cpuacct`` group of
    their own: a figure that other load on the machine does not skew, as it skews wall time. Where the host has
    no such hierarchy, or it is not ours to write (not root), it measures nothing."""

    ROOT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self) -> None:
        self.group = self.ROOT / f"repoexec-throughput-{os.getpid()}"
        try:
            self.group.mkdir(exist_ok=True)
        except OSError:
            self.group = None

    def enter(self) -> None:
        """In the child, before it runs the session."""
        (self.group / "tasks").write_text(str(os.getpid()))

    def used(self) -> float | None:
        return int((self.group / "cpuacct.usage").read_text()) / 1e9 if self.group else None

    def close(self) -> None:
        if self.group:
            with contextlib.suppress(OSError):  # a process of a run still ending: the empty group stays behind
                self.group.rmdir()


CPU = CpuMeter()


def session(out: Path, replay: Path, workers: str, report: Path, *options: str) -> float:
    command = [sys.executable, "-m", "pytest", str(out), "-n", workers, "-p", "no:cacheprovider", "-q",
               f"--repoexec-model=replay:{replay}", f"--repoexec-report={report}", *options]
    started = time.perf_counter()
    done = subprocess.run(command, check=False, capture_output=True, text=True,
                          preexec_fn=CPU.enter if CPU.group else None)
    elapsed = time.perf_counter() - started
    if not report.exists():
        sys.exit(f"{' '.join(command)} wrote no report:\n{(done.stdout + done.stderr)[-3000:]}")
    return elapsed


def plain_pytest(scratch: Path, report: dict, workers: str, tb: str) -> float:
    """pytest's own time for a module of as many tests as the report has samples, failing as many (each with a
    one-line ``pytest.fail``): the floor a rerun from the store is measured against."""
    failing = [not sample["passed"] for sample in report["samples"]]
    module = scratch / "plain" / "test_plain.py"
    module.parent.mkdir(exist_ok=True)
    module.write_text(f"import pytest\n\nFAILING = {failing!r}\n\n\n"
                      "@pytest.mark.parametrize('index', range(len(FAILING)))\n"
                      "def test_sample(index):\n    if FAILING[index]:\n        pytest.fail('failed')\n")
    command = [sys.executable, "-m", "pytest", str(module), "-n", workers, "-p", "no:cacheprovider", "-q", f"--tb={tb}"]
    started = time.perf_counter()
    subprocess.run(command, check=False, capture_output=True, cwd=module.parent)
    return time.perf_counter() - started


def resume(out: Path, replay: Path, workers: str, samples: int, uninterrupted: dict, distinct: int) -> None:
    """Kill -9 a run once half the samples' verdicts are stored, start it again, compare with ``uninterrupted``.
    Over an empty result store: the default cache's is moved aside meanwhile (its environments are used as they
    are) and put back at the end."""
    results = default_cache_dir() / "results"
    aside = results.with_name("results.before-resume")
    results.rename(aside)
    try:
        report = out.parent / "resumed.json"
        command = [sys.executable, "-m", "pytest", str(out), "-n", workers, "-p", "no:cacheprovider", "-q",
                   f"--repoexec-model=replay:{replay}", f"--repoexec-report={report}"]
        killed = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        started = time.perf_counter()
        while killed.poll() is None and len(list(results.glob("*/*.json"))) < samples // 2:
            time.sleep(0.5)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        stored = len(list(results.glob("*/*.json")))  # samples' verdicts, and the references' timing runs
        print(f"kill -9 after {time.perf_counter() - started:.0f} s with {stored} entries stored")
        session(out, replay, workers, report)
        resumed = json.loads(report.read_text())
    finally:
        shutil.rmtree(results, ignore_errors=True)
        aside.rename(results)
    counts = resumed["store"]
    # each distinct module is either read back by its own sample (stored by the killed run) or evaluated now
    once = counts["read"] - counts["copies"] + counts["evaluated"] == distinct and not counts["replaced"]
    print(f"the second run read {counts['read']} (with {counts['copies']} copies), evaluated {counts['evaluated']}, "
          f"replaced {counts['replaced']}; each of the {distinct} distinct modules evaluated once over the two runs: "
          f"{once}; metrics as the uninterrupted warm run's: {resumed['metrics'] == uninterrupted['metrics']}")
    before, after = verdicts(uninterrupted), verdicts(resumed)
    for key in sorted(key for key in before if before[key] != after.get(key)):
        print(f"  {key[0]} sample {key[1]}: uninterrupted {before[key]}, resumed {after.get(key)}")


def verdicts(report: dict) -> dict[tuple[str, int], tuple]:
    return {(s["problem"], s["sample"]): (s["passed"], s["error_type"], s["tests_passed"])
            for s in report["samples"]}


def phase_shares(report: dict) -> dict[str, float]:
    totals: collections.Counter[str] = collections.Counter()
    for sample in report["samples"]:
        totals.update(sample.get("phases") or {})
    whole = sum(totals.values()) or 1.0
    return {name: seconds / whole for name, seconds in totals.most_common()}


def tree_cpu(report: dict) -> str:
    """Milliseconds of CPU a sample's process trees took, on average over the samples that counted them (the warm
    executor's: ``executor.spent``), with their system time."""
    counted = [sample["cpu"] for sample in report["samples"] if sample.get("cpu")]
    if not counted:
        return "not counted"
    names = sorted({name for cpu in counted for name in cpu if not name.endswith(" system")})
    return ", ".join(f"{name} {1000 * sum(cpu.get(name, 0.0) for cpu in counted) / len(counted):.0f} ms "
                     f"({1000 * sum(cpu.get(name + ' system', 0.0) for cpu in counted) / len(counted):.0f} system)"
                     for name in names) + f" a sample, over {len(counted)} samples"


def decoy_cost(out: Path, replay: Path, workers: str, keep: Path) -> None:
    """The decoy check's cost, and that it changes no honest verdict (see the module's docstring)."""
    reports, times = {}, {}
    keep.mkdir(parents=True, exist_ok=True)
    for decoy in ("off", "check"):
        path = keep / f"decoy-{decoy}.json"
        times[decoy] = session(out, replay, workers, path, "--repoexec-fresh", f"--repoexec-decoy={decoy}")
        reports[decoy] = json.loads(path.read_text())
    passing = sum(sample["passed"] for sample in reports["off"]["samples"])
    added = times["check"] - times["off"]
    for decoy in ("off", "check"):
        print(f"decoy {decoy}: {len(reports[decoy]['samples'])} samples in {times[decoy]:.1f} s "
              f"(pass@1 {reports[decoy]['metrics'].get('pass@1')})")
    print(f"the decoy check added {added:.1f} s ({added / times['off']:+.1%} of the run without it), "
          f"{added / max(passing, 1):.3f} s of wall time per passing sample ({passing} passed)")
    # the same cost measured inside the checked run alone, which a change of load between the two runs does not skew
    checks = [sample["phases"]["decoy"] for sample in reports["check"]["samples"] if "decoy" in sample["phases"]]
    summed = sum(sample["duration"] for sample in reports["check"]["samples"]) + sum(checks)
    print(f"in the checked run: {len(checks)} decoy runs took {sum(checks):.1f} s of sample time, "
          f"{sum(checks) / max(len(checks), 1):.3f} s each, {sum(checks) / summed:.1%} of all sample time "
          f"({summed:.1f} s)")
    checked = reports["check"]["decoy"]
    unchecked = {entry["problem"] for entry in checked["unchecked"]}
    print(f"decoy outcome: {checked['held']} held, {checked['caught']} caught, {len(checked['unchecked'])} passing "
          f"samples of {len(unchecked)} problems could not be checked")
    for why, count in collections.Counter(entry["why"] for entry in checked["unchecked"]).most_common():
        print(f"  {count}: {why}")
    tampered = [sample for sample in reports["check"]["samples"] if sample["error_type"] == "Tampered"]
    print(f"Tampered: {len(tampered)}")
    for sample in tampered:
        print(f"  {sample['problem']} sample {sample['sample']}: {(sample['error_log'] or '')[:300]}")
    before, after = verdicts(reports["off"]), verdicts(reports["check"])
    differ = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
    print(f"verdicts that differ: {len(differ)}")
    for key in differ:
        print(f"  {key[0]} sample {key[1]}: without {before.get(key)}, with {after.get(key)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "repoexec")
    parser.add_argument("--projects", default=None)
    parser.add_argument("--workers", default="2")
    parser.add_argument("--mutants", type=int, default=8)
    parser.add_argument("--duplicates", type=int, default=2)
    parser.add_argument("--executors", default=",".join(EXECUTORS),
                        help="the runs to make, among " + ", ".join(EXECUTORS) + " (warm is always made)")
    parser.add_argument("--skip-resume", action="store_true")
    parser.add_argument("--fail-fast", action="store_true", help="every run with --repoexec-fail-fast")
    parser.add_argument("--decoy-cost", action="store_true", help="measure the decoy check instead (see above)")
    parser.add_argument("--reports", type=Path, default=None,
                        help="a folder to keep each run's report in (else they are let go)")
    args = parser.parse_args()
    chosen = {name.strip() for name in args.executors.split(",") if name.strip()} | {"warm"}
    if chosen - EXECUTORS.keys():
        parser.error(f"--executors: no run named {', '.join(sorted(chosen - EXECUTORS.keys()))}; "
                     f"the runs are {', '.join(EXECUTORS)}")
    with tempfile.TemporaryDirectory(prefix="repoexec-throughput-") as scratch:
        out, replay = Path(scratch, "imported"), Path(scratch, "workload.jsonl")
        subprocess.run([sys.executable, "-m", "pytest_repoexec.cli", "import", str(args.data), "--out", str(out),
                        *(["--projects", args.projects] if args.projects else [])], check=True,
                       stdout=subprocess.DEVNULL)
        problems = []
        for problem in ProblemLoader().under([out]):
            if problem.known_failure:  # not in the workload: its reference cannot pass here
                shutil.rmtree(problem.manifest.parent)
            else:
                problems.append(problem)
        samples = workload(problems, args.mutants, args.duplicates)
        replay.write_text("".join(json.dumps({"problem": pid, "completions": texts}) + "\n"
                                  for pid, texts in samples.items()))
        count = sum(map(len, samples.values()))
        print(f"workload: {len(problems)} problems, {count} samples")
        session(out, replay, args.workers, Path(scratch, "setup.json"), "--repoexec-n=1")  # builds environments
        if args.decoy_cost:
            decoy_cost(out, replay, args.workers, args.reports or Path(scratch))
            return

        reports, times, memory, cpu = {}, {}, {}, {}
        fast = ("--repoexec-fail-fast",) if args.fail_fast else ()
        if args.reports:
            args.reports.mkdir(parents=True, exist_ok=True)
        runs = {name: options for name, options in EXECUTORS.items() if name in chosen}
        for name, options in runs.items():
            peak = memory[name] = MemoryPeak()
            peak.start()
            path = (args.reports or Path(scratch)) / f"{name}.json"
            before = CPU.used()
            times[name] = session(out, replay, args.workers, path, "--repoexec-fresh", *options, *fast)
            cpu[name] = CPU.used() - before if before is not None else None
            peak.running = False
            reports[name] = json.loads(path.read_text())
        before = CPU.used()
        # the warm run's own options: the judge's mode is part of a stored verdict's key, and under another mode
        # every sample would be evaluated again
        rerun = session(out, replay, args.workers, Path(scratch, "rerun.json"), *EXECUTORS["warm"], *fast)
        rerun_cpu = CPU.used() - before if before is not None else None
        stored = json.loads(Path(scratch, "rerun.json").read_text())["store"]
        quiet = session(out, replay, args.workers, Path(scratch, "quiet.json"), *EXECUTORS["warm"], "--tb=no", *fast)
        floor = {tb: plain_pytest(Path(scratch), reports["warm"], args.workers, tb) for tb in ("short", "no")}

        for name in runs:
            done = len(reports[name]["samples"])
            print(f"{name}: {done} samples in {times[name]:.1f} s = {done / times[name]:.2f} samples/s "
                  f"(pass@1 {reports[name]['metrics'].get('pass@1')}); peak memory of the warm processes "
                  f"(PSS, all workers) {memory[name].peak / (1 << 30):.2f} GiB")
        for slower in runs:
            if slower != "warm":
                print(f"warm / {slower}: {times[slower] / times['warm']:.2f}x")
        if cpu["warm"] is not None:  # what other load on the machine does not skew
            print("CPU seconds of each run, all its processes: " + ", ".join(
                f"{name} {cpu[name]:.1f} s ({cpu[name] / len(reports[name]['samples']) * 1000:.0f} ms a sample)"
                for name in runs))
            for slower in runs:
                if slower != "warm":
                    print(f"CPU: {slower} / warm: {cpu[slower] / cpu['warm']:.2f}x")
        else:
            print("CPU seconds: not measured (no cgroup v1 cpuacct hierarchy of ours to write)")
        for name in runs:
            if name == "warm":
                continue
            before, after = verdicts(reports[name]), verdicts(reports["warm"])
            differ = sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))
            print(f"verdicts that differ between {name} and warm: {len(differ)}")
            for key in differ:
                print(f"  {key[0]} sample {key[1]}: {name} {before.get(key)}, warm {after.get(key)}")
        print(f"rerun from the store: {rerun:.1f} s"
              + (f" ({rerun_cpu:.1f} s of CPU)" if rerun_cpu is not None else "") + f", {quiet:.1f} s with --tb=no (without pytest's section for each "
              f"failed sample) ({stored}); pytest's own time for as many plain tests, as many failing: "
              f"{floor['short']:.1f} s, {floor['no']:.1f} s with --tb=no: {rerun / floor['short']:.2f}x and "
              f"{quiet / floor['no']:.2f}x")
        for name in runs:
            shares = ", ".join(f"{phase} {share:.0%}" for phase, share in phase_shares(reports[name]).items())
            print(f"{name} phases: {shares}")
            print(f"{name} process trees' CPU: {tree_cpu(reports[name])}")
        slowest = sorted(reports["warm"]["samples"], key=lambda sample: -sample["duration"])
        print("slowest warm samples: " + ", ".join(
            f"{s['problem']}[{s['sample']}] {s['duration']:.1f} s {s['error_type'] or 'passed'}" for s in slowest[:8]))
        targets = [("warm / process", "process", 4.0, ">="),
                   ("warm / warm-without-zygotes", "warm-without-zygotes", 2.0, ">="),
                   ("the judge (warm) / today's warm executor (warm-in-process)", "warm-in-process", 1.0, ">=")]
        figures = [(what, times[slower] / times["warm"], limit, sign)
                   for what, slower, limit, sign in targets if slower in runs]
        figures += [("warm's collection share", phase_shares(reports["warm"]).get("collection", 0.0), 0.2, "<="),
                    ("the rerun from the store (s, issue 42)", rerun, 5.0, "<="),
                    ("warm's peak memory (GiB)", memory["warm"].peak / (1 << 30), 4.0, "<")]
        judged = reports["warm"].get("judge") or {}
        print(f"judge: {judged.get('apart')} samples apart, {judged.get('in_process')} in-process "
              f"({len(judged.get('problems_in_process') or {})} problems)")
        print("targets (issues 27, 33 and 42): " + "; ".join(
            f"{what} {value:.2f} ({sign} {limit}: {'met' if COMPARE[sign](value, limit) else 'NOT met'})"
            for what, value, limit, sign in figures))
        by_error: collections.Counter[str] = collections.Counter()
        for sample in reports["warm"]["samples"]:
            by_error[sample["error_type"] or "passed"] += sample["duration"]
        counted = collections.Counter(sample["error_type"] or "passed" for sample in reports["warm"]["samples"])
        print("warm time by verdict (all, and a sample's mean): " + ", ".join(
            f"{kind} {seconds:.0f} s, {seconds / counted[kind]:.2f} s" for kind, seconds in by_error.most_common()))
        if args.skip_resume:
            return
        # distinct modules: the samples less those that copied another's module
        resume(out, replay, args.workers, count, reports["warm"], count - stored["copies"])


if __name__ == "__main__":
    try:
        main()
    finally:
        CPU.close()
