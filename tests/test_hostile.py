"""Hostile candidates (issue 11): every behaviour of ``hostile_candidates.CATALOGUE`` is contained.

One whole run judges all the behaviours at once, as samples of ``mini/scaled`` interleaved with copies of the
reference, with every limit set small so that it stays quick; it runs with the warm executor (the default)
without xdist and with ``-n 2``, and with the process executor with ``-n 2``. For each behaviour its sample fails with its error type, while every reference copy and ``mini/swap``
pass and the run finishes with every sample in its report. After the run nothing outside the samples' tmpfs
has changed: no file named by the run's marker in the real home folder, the host's ``/tmp`` and ``/dev/shm``,
the run's folder or the cache; the cached source and the problem folder hash as before; the listener on
127.0.0.1 was never reached; no process named by the marker is left. A loop that ignores the per-test
alarm runs in a small run of its own, whose CPU limit is above its sample timeout: only the wall clock stops it.

The runs go through a subprocess (``run_repoexec(..., subprocess=True)``): a candidate that got out and killed
its parent would take this test's process with it otherwise.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import pwd
import re
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest

from conftest import write_replay
from hostile_candidates import CATALOGUE, MAIN, WALL_CLOCK, Hostile
from mini_project import SCALED_REFERENCE

SWAP_OK = "def swap(pair):\n    return (pair[1], pair[0])\n"
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)  # pytester sets HOME to a folder of its own
SECRET = 424242  # another problem's expected value, which no candidate may read

# Small limits, so that the run stays quick. A hang holds one test for the per-test timeout (2 s; a busy loop
# spends that much CPU), under the CPU limit (5 s), which stops the CPU burner long before the sample timeout.
# The test process starts at about 40 MB of address space; a memory limit of 256M leaves the reference plenty
# and keeps the growing list's work (every page touched up to the limit) short on a loaded machine.
MAIN_LIMITS = (
    "--repoexec-timeout=2",
    "--repoexec-sample-timeout=20",
    "--repoexec-memory=256M",
    "--repoexec-cpu=5",
    "--repoexec-tmpfs=16M",
    "--repoexec-file-size=4M",
    "--repoexec-output=1M",
    "--repoexec-processes=32",
    "--repoexec-open-files=128",
)
# A CPU limit above the sample timeout: only the wall clock can stop a loop that ignores the per-test alarm.
WALL_CLOCK_LIMITS = ("--repoexec-timeout=1", "--repoexec-sample-timeout=4", "--repoexec-cpu=60")
REFERENCE_EVERY = 10  # a copy of the reference after every this many hostile samples (and first and last)
LEFTOVER_GRACE = 5.0  # seconds a killed sandbox's processes get to be reaped


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture
def marker() -> Iterable[str]:
    """A token unique to this test, in every file and process name the candidates try to create; whatever
    got out under it is removed (files) or killed (processes, by pid) after the test."""
    token = "rx" + uuid.uuid4().hex[:13]  # 15 characters: a process's whole comm
    yield token
    for pid, _ in leftovers(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for folder in (REAL_HOME, Path("/tmp"), Path("/dev/shm")):
        for path in marked_files(folder, token, recursive=False):
            path.unlink(missing_ok=True)


class Listener:
    """A TCP listener on the host's 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.1)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.closed = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        self.closed = True
        self.thread.join(timeout=2)
        self.server.close()


@pytest.fixture
def listener() -> Iterable[Listener]:
    server = Listener()
    yield server
    server.close()


# ------------------------------------------------------------------------------------------------ helpers


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links as their targets), by relative path: what must not change."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_file():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def cached_sources(cache: Path) -> dict[str, str]:
    """The mini project's cached source trees, file by file."""
    return {f"{tree.name}/{name}": value
            for tree in sorted((cache / "sources").glob("mini-*")) for name, value in digest(tree).items()}


def marked_files(folder: Path, token: str, recursive: bool = True) -> list[Path]:
    if not folder.is_dir():
        return []
    try:
        paths = folder.rglob(f"*{token}*") if recursive else folder.glob(f"*{token}*")
        return sorted(paths)
    except OSError:
        return []


def leftovers(token: str) -> list[tuple[int, str]]:
    """(pid, what it runs) of every live process whose command line or name holds the token."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            comm = (entry / "comm").read_text().strip()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if state != "Z" and (token in cmdline or token in comm):
            found.append((int(entry.name), f"{comm}: {cmdline[:160]}"))
    return found


def leftovers_after_grace(token: str) -> list[tuple[int, str]]:
    deadline = time.monotonic() + LEFTOVER_GRACE
    while True:
        found = leftovers(token)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def write_secret(mini: Path) -> Path:
    """Another problem's expected output (mini/swap's), which no sample of mini/scaled may read."""
    secret = mini / "swap" / "expected" / "secret.pkl"
    secret.parent.mkdir(exist_ok=True)
    secret.write_bytes(pickle.dumps(SECRET))
    return secret


def candidate_context(token: str, mini: Path, cache: Path, runfolder: Path, secret: Path | None = None,
                      port: int = 0) -> dict[str, str]:
    """What the catalogue's templates are filled with: each value a Python literal."""
    values = {"marker": token, "home": str(REAL_HOME), "cache": str(cache), "problem": str(mini / "scaled"),
              "secret": str(secret or mini / "swap" / "expected" / "secret.pkl"), "runfolder": str(runfolder)}
    return {name: repr(value) for name, value in values.items()} | {"port": str(port)}


def hostile_replay(path: Path, behaviours: list[Hostile], context: dict[str, str]) -> tuple[Path, list[str | None]]:
    """The replay file, and what each sample of mini/scaled is: a behaviour's name, or None for a reference."""
    layout: list[str | None] = [None]
    for index, hostile in enumerate(behaviours):
        layout.append(hostile.name)
        if (index + 1) % REFERENCE_EVERY == 0:
            layout.append(None)
    if layout[-1] is not None:
        layout.append(None)
    by_name = {hostile.name: hostile for hostile in behaviours}
    completions = [SCALED_REFERENCE if name is None else by_name[name].completion(context) for name in layout]
    return write_replay(path, {"mini/scaled": completions, "mini/swap": [SWAP_OK]}), layout


def warm_cache(run_repoexec, mini: Path) -> None:
    """Build the mini project's cached source and virtualenv before the hostile run, with no hostile option,
    so that the run's timeouts never include a build and the cache has a state to compare with."""
    result, report = run_repoexec(str(mini / "swap"))
    assert result.ret == 0 and report is not None, "the reference run that builds the cache failed:\n" + \
        "\n".join(result.outlines[-30:])


def summary_start(lines: list[str]) -> str | None:
    """The first line of the repoexec summary: its separator line and the line under it, which is where a run
    says what its candidates ran in."""
    start = next((index for index, line in enumerate(lines) if re.match(r"^=+ repoexec\b", line)), None)
    return None if start is None else "\n".join(lines[start:start + 2])


UNCONFINED = re.compile(r"\bsandbox\b\W*\bnone\b")


def judge(result: pytest.RunResult, report: dict | None, layout: list[str | None],
          behaviours: list[Hostile]) -> list[str]:
    """What is wrong with a run's verdicts: each line one problem, ready to read in a failure."""
    output = "\n".join(result.outlines[-40:] + result.errlines[-20:])
    if report is None:
        return [f"the run wrote no report (exit status {result.ret}); its output ends:\n{output}"]
    problems = []
    if result.ret != pytest.ExitCode.TESTS_FAILED:
        problems.append(f"the run ended with exit status {result.ret}, not 1 (some samples failed); its output "
                        f"ends:\n{output}")
    samples = {(sample["problem"], sample["sample"]): sample for sample in report["samples"]}
    wanted = {("mini/scaled", index) for index in range(len(layout))} | {("mini/swap", 0)}
    if set(samples) != wanted:
        problems.append(f"the report lists samples {sorted(samples)}, not {sorted(wanted)}")
    if report.get("not_run"):
        problems.append(f"samples that could not run: {report['not_run']}")
    by_name = {hostile.name: hostile for hostile in behaviours}
    for index, name in enumerate(layout):
        sample = samples.get(("mini/scaled", index))
        if sample is None:
            continue
        if name is None:
            if not sample["passed"]:
                problems.append(f"reference copy mini/scaled[{index}] failed ({sample['error_type']}): "
                                f"{_log(sample)}")
            continue
        hostile = by_name[name]
        # judged apart, what would be Tampered beside the tests has nothing to tamper with: it simply fails
        caught = sample.get("judge") == "apart" and "Tampered" in hostile.expected
        if sample["passed"] or (sample["error_type"] not in hostile.expected and not caught):
            got = "PASSED" if sample["passed"] else sample["error_type"]
            problems.append(f"{hostile.group}: {name} (mini/scaled[{index}]) got {got}, expected "
                            f"{' or '.join(hostile.expected)} ({sample['tests_passed']}/{sample['tests_total']} "
                            f"tests passed, {sample['duration']:.1f} s): {_log(sample)}")
    swap = samples.get(("mini/swap", 0))
    if swap is not None and not swap["passed"]:
        problems.append(f"mini/swap[0] (a right answer) failed ({swap['error_type']}): {_log(swap)}")
    return problems


def _log(sample: dict) -> str:
    log = " ".join((sample.get("error_log") or "").split())
    return log[:300] + (" ..." if len(log) > 300 else "")


def escapes(token: str, mini: Path, cache: Path, runfolder: Path, problem_before: dict[str, str],
            sources_before: dict[str, str], listener: Listener | None) -> list[str]:
    """What got out of the samples: files, changed trees, connections, processes."""
    problems = []
    places = [(REAL_HOME, False), (Path("/tmp"), False), (Path("/dev/shm"), False), (runfolder, True),
              (cache, False), *((tree, True) for tree in sorted((cache / "sources").glob("mini-*"))),
              *((tree, True) for tree in sorted((cache / "venvs").glob("mini-*")))]
    for folder, recursive in places:
        for path in marked_files(folder, token, recursive):
            problems.append(f"a candidate created {path} on the host")
    if cached_sources(cache) != sources_before:
        changed = sorted(set(cached_sources(cache).items()) ^ set(sources_before.items()))
        problems.append(f"the cached source changed: {changed[:6]}")
    if digest(mini) != problem_before:
        changed = sorted(set(digest(mini).items()) ^ set(problem_before.items()))
        problems.append(f"the problem folder changed: {changed[:6]}")
    if listener is not None and listener.connections:
        problems.append(f"the listener on the host's 127.0.0.1 accepted {listener.connections} connections")
    for pid, what in leftovers_after_grace(token):
        problems.append(f"process {pid} outlived the run: {what}")
    return problems


# ------------------------------------------------------------------------------------------------ the runs


def test_the_catalogue_covers_every_group_of_the_issue():
    groups = {hostile.group for hostile in CATALOGUE}
    assert groups == {"early exits and fake outcomes", "hangs", "resource bombs", "escapes", "grader games"}
    assert len(CATALOGUE) >= 32
    assert all(hostile.expected and hostile.run in (MAIN, WALL_CLOCK) for hostile in CATALOGUE)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("workers", "executor"), [(0, "warm"), (2, "warm"), (2, "process")],
                         ids=["serial-warm", "xdist-warm", "xdist-process"])
def test_hostile_candidates_are_contained(mini, run_repoexec, pytester, repoexec_cache, marker, listener, workers,
                                          executor):
    secret = write_secret(mini)
    warm_cache(run_repoexec, mini)
    problem_before, sources_before = digest(mini), cached_sources(repoexec_cache)
    assert sources_before, "the cache has no source of the mini project to watch"
    behaviours = [hostile for hostile in CATALOGUE if hostile.run == MAIN]
    context = candidate_context(marker, mini, repoexec_cache, pytester.path, secret, listener.port)
    replay, layout = hostile_replay(pytester.path / "hostile.jsonl", behaviours, context)

    xdist = ["-n", str(workers)] if workers else []
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", *MAIN_LIMITS, *xdist,
                                  f"--repoexec-executor={executor}", subprocess=True)

    problems = judge(result, report, layout, behaviours)
    if report is not None:
        if (report.get("sandbox") or {}).get("kind") in (None, "none"):
            problems.append(f"the report says the sandbox was {report.get('sandbox')!r}, not bubblewrap")
        if report.get("executor") != executor or "WarmStartWarning" in result.stdout.str():
            problems.append(f"the samples did not all run with the {executor} executor")
        start = summary_start(result.outlines)
        if start is None or UNCONFINED.search(start):
            problems.append(f"the repoexec summary is missing or says the run was unconfined: {start!r}")
        references = layout.count(None)
        outcomes = result.parseoutcomes()
        if (outcomes.get("passed", 0), outcomes.get("failed", 0)) != (references + 1, len(behaviours)):
            problems.append(f"pytest's outcomes {outcomes}: expected {references + 1} passed (the reference "
                            f"copies and mini/swap) and {len(behaviours)} failed")
    problems += escapes(marker, mini, repoexec_cache, pytester.path, problem_before, sources_before, listener)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


@pytest.mark.timeout(120)
def test_a_loop_that_ignores_the_alarm_is_stopped_by_the_sample_timeout(mini, run_repoexec, pytester,
                                                                        repoexec_cache, marker):
    warm_cache(run_repoexec, mini)
    problem_before, sources_before = digest(mini), cached_sources(repoexec_cache)
    behaviours = [hostile for hostile in CATALOGUE if hostile.run == WALL_CLOCK]
    context = candidate_context(marker, mini, repoexec_cache, pytester.path)
    replay, layout = hostile_replay(pytester.path / "hostile.jsonl", behaviours, context)

    started = time.monotonic()
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", *WALL_CLOCK_LIMITS,
                                  subprocess=True)
    elapsed = time.monotonic() - started

    problems = judge(result, report, layout, behaviours)
    if report is not None:
        stopped = [s for s in report["samples"] if s["problem"] == "mini/scaled" and layout[s["sample"]] is not None]
        problems += [f"{layout[s['sample']]} ran {s['duration']:.1f} s: the sample timeout is 4 s"
                     for s in stopped if s["duration"] > 4 + 10]
    problems += escapes(marker, mini, repoexec_cache, pytester.path, problem_before, sources_before, None)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
    assert elapsed < 60, f"the run took {elapsed:.0f} s: the sample timeout (4 s) did not stop the loop"


def test_an_unconfined_run_says_so_first(mini, run_repoexec):
    result, report = run_repoexec(str(mini / "swap"), "--repoexec-sandbox=none")
    result.assert_outcomes(passed=1)
    start = summary_start(result.outlines)
    assert start is not None and UNCONFINED.search(start), \
        f"the repoexec summary does not say first that the sandbox is none: {start!r}"
    assert report["sandbox"]["kind"] == "none"
    assert report["samples"][0]["passed"] is True


def test_a_memory_limit_below_what_the_reference_needs_fails_it_with_memory_limit(mini, run_repoexec):
    result, report = run_repoexec(str(mini / "scaled"), "--repoexec-memory=1M")
    result.assert_outcomes(failed=1)
    assert [(s["problem"], s["passed"], s["error_type"]) for s in report["samples"]] == [
        ("mini/scaled", False, "MemoryLimit")
    ]
