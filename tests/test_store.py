"""The result store: each distinct candidate module evaluated once, a rerun read back, a killed run resumed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import write_replay
from mini_project import SCALED_REFERENCE

SWAP_OK = "def swap(pair):\n    return (pair[1], pair[0])\n"
WRONG = "def scaled(value):\n    return value * SCALE\n"
NO_REFERENCE_RUN = ("--repoexec-timeout-factor=0",)  # no reference run for relative timeouts: only the samples' entries


@pytest.fixture
def cache(tmp_path):
    """A cache of the test's own: the store starts empty."""
    return tmp_path / "cache"


def remove_packs(cache):
    """A rerun reads a problem's pack first: what a test does to the entries and aliases is read only without."""
    for pack in (cache / "results" / "packs").glob("*/*.json"):
        pack.unlink()


def run(pytester, mini, cache, replay, *args):
    report = pytester.path / "report.json"
    report.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(str(mini), f"--repoexec-model=replay:{replay}", f"--repoexec-cache={cache}",
                                           f"--repoexec-report={report}", "-p", "no:cacheprovider", *NO_REFERENCE_RUN,
                                           *args)
    return result, json.loads(report.read_text())


def test_identical_modules_are_evaluated_once_and_a_rerun_reads_every_verdict_back(pytester, mini, cache):
    replay = write_replay(pytester.path / "dup.jsonl", {
        "mini/scaled": [SCALED_REFERENCE, SCALED_REFERENCE, WRONG, WRONG, SCALED_REFERENCE],
        "mini/swap": [SWAP_OK],
    })
    first_result, first = run(pytester, mini, cache, replay)
    first_result.assert_outcomes(passed=4, failed=2)
    scaled = [s for s in first["samples"] if s["problem"] == "mini/scaled"]
    assert [s["copied_from"] for s in scaled] == [None, 0, None, 2, 0]
    assert [s["store"] for s in scaled] == ["evaluated", "read", "evaluated", "read", "read"]
    assert first["store"] == {"read": 3, "copies": 3, "evaluated": 3, "replaced": 0}
    first_result.stdout.fnmatch_lines(["*result store: 3 samples read back (3 of them the same module as another "
                                       "sample), 3 evaluated*"])

    again_result, again = run(pytester, mini, cache, replay)
    assert again["metrics"] == first["metrics"]
    assert again["store"]["evaluated"] == 0 and again["store"]["read"] == 6
    assert [(s["passed"], s["error_type"], s["tests_passed"]) for s in again["samples"]] == [
        (s["passed"], s["error_type"], s["tests_passed"]) for s in first["samples"]]

    _, fresh = run(pytester, mini, cache, replay, "--repoexec-fresh")  # earlier runs' verdicts are not read
    assert fresh["store"] == {"read": 3, "copies": 3, "evaluated": 3, "replaced": 0}
    assert fresh["metrics"] == first["metrics"]


def test_a_rerun_finds_verdicts_by_the_completion_and_by_the_module(pytester, mini, cache):
    """Aliases (completion -> entry) spare a rerun putting candidates together; without them, or with an alias
    whose entry is gone, the module's own key still decides (each time with the packs gone, which would answer
    first: ``test_a_rerun_reads_a_pack_a_problem...``)."""
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [SCALED_REFERENCE, WRONG], "mini/swap": [SWAP_OK]})
    _, first = run(pytester, mini, cache, replay)
    aliases = cache / "results" / "aliases"
    assert len(list(aliases.glob("*/*.json"))) == 3
    for alias in aliases.glob("*/*.json"):
        alias.unlink()
    remove_packs(cache)
    _, by_module = run(pytester, mini, cache, replay)
    assert by_module["store"] == {"read": 3, "copies": 0, "evaluated": 0, "replaced": 0}
    assert len(list(aliases.glob("*/*.json"))) == 3  # written again on the way
    for entry in (cache / "results").glob("*/*.json"):
        if entry.parent.parent.name != "aliases":
            entry.unlink()
    remove_packs(cache)
    _, gone = run(pytester, mini, cache, replay)
    assert gone["store"]["evaluated"] == 3 and gone["metrics"] == first["metrics"]



def test_an_alias_keeps_the_completions_shapes_for_the_rerun(pytester, mini, cache):
    """A verdict found through its alias comes with the completion's shapes from the alias (no candidate put
    together); an alias of an older layout, without them, still leads to the verdict and the same shapes."""
    fenced = f"```python\n{SCALED_REFERENCE}```\n"
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [fenced, WRONG], "mini/swap": [SWAP_OK]})
    _, first = run(pytester, mini, cache, replay)
    shapes = {(s["problem"], s["sample"]): s["shapes"] for s in first["samples"]}
    assert "fenced" in shapes[("mini/scaled", 0)], shapes
    aliases = sorted((cache / "results" / "aliases").glob("*/*.json"))
    held = [json.loads(alias.read_text()) for alias in aliases]
    assert sorted(map(tuple, (entry["shapes"] for entry in held))) == sorted(map(tuple, shapes.values()))
    _, again = run(pytester, mini, cache, replay)
    assert again["store"]["read"] == 3
    assert {(s["problem"], s["sample"]): s["shapes"] for s in again["samples"]} == shapes
    for alias, entry in zip(aliases, held):
        alias.write_text(json.dumps({"key": entry["key"]}))
    remove_packs(cache)
    _, older = run(pytester, mini, cache, replay)
    assert older["store"]["read"] == 3
    assert {(s["problem"], s["sample"]): s["shapes"] for s in older["samples"]} == shapes


def verdict_lines(result) -> list[tuple[bool, str]]:
    """(from a worker, the line) of each sample's -v line: xdist's begin with the worker's name."""
    return [(line.startswith("[gw"), line) for line in result.stdout.lines
            if "problem.toml::" in line and re.search(r" (PASSED|FAILED)( |$)", line)]


def test_under_xdist_a_rerun_is_read_on_the_controller(pytester, mini, cache):
    """Every verdict in the store (the references' for the time limits too): the controller reads and reports
    them itself and its workers collect nothing; one sample to run, and the workers get them all again."""
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [SCALED_REFERENCE, WRONG], "mini/swap": [SWAP_OK]})
    options = ("-n", "2", "-v", "--repoexec-timeout-factor=10")
    first_result, first = run(pytester, mini, cache, replay, *options)
    seen = verdict_lines(first_result)
    assert len(seen) == 3 and all(worker for worker, _ in seen), seen  # run by the workers
    again_result, again = run(pytester, mini, cache, replay, *options)
    again_result.assert_outcomes(passed=2, failed=1)
    seen = verdict_lines(again_result)
    assert len(seen) == 3 and not any(worker for worker, _ in seen), seen  # none of them from a worker
    assert again["store"] == {"read": 3, "copies": 0, "evaluated": 0, "replaced": 0}
    assert again["metrics"] == first["metrics"]
    assert [(s["passed"], s["error_type"], s["tests_passed"], s["shapes"]) for s in again["samples"]] == [
        (s["passed"], s["error_type"], s["tests_passed"], s["shapes"]) for s in first["samples"]]
    again_result.stdout.fnmatch_lines(["*1 failed, 2 passed*"])
    stopped_result, _ = run(pytester, mini, cache, replay, *options, "-x")  # stops as pytest's own loop does
    stopped_result.assert_outcomes(passed=1, failed=1)
    stopped_result.stdout.fnmatch_lines(["*stopping after 1 failures*"])

    more = write_replay(pytester.path / "more.jsonl", {"mini/scaled": [SCALED_REFERENCE, WRONG],
                                                        "mini/swap": [SWAP_OK, "def swap(pair):\n    return pair\n"]})
    mixed_result, mixed = run(pytester, mini, cache, more, *options)
    mixed_result.assert_outcomes(passed=2, failed=2)
    seen = verdict_lines(mixed_result)
    assert len(seen) == 4 and all(worker for worker, _ in seen), seen
    assert mixed["store"] == {"read": 3, "copies": 0, "evaluated": 1, "replaced": 0}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_rerun_reads_a_pack_a_problem_and_a_pack_that_does_not_read_is_made_again(pytester, mini, cache, workers):
    """The run that evaluated packs each problem's verdicts (the reference's too) into one file; a rerun, with
    xdist or without, reads them from there alone (aliases and entries gone). A pack cut off is passed over for
    the files and written again; under --repoexec-fresh an earlier run's pack answers nothing; another set of
    completions has its own."""
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [SCALED_REFERENCE, WRONG], "mini/swap": [SWAP_OK]})
    options = ("-n", workers, "--repoexec-timeout-factor=10")
    _, first = run(pytester, mini, cache, replay, *options)
    results = cache / "results"
    packs = sorted((results / "packs").glob("*/*.json"))
    assert len(packs) == 2  # one a problem
    held = {name for pack in packs for name in json.loads(pack.read_text())["aliases"]}
    assert len(held) == 4  # three samples, two references (one the same completion as a sample)
    written = {pack: pack.read_bytes() for pack in packs}
    packs[0].write_bytes(written[packs[0]][:40])
    _, again = run(pytester, mini, cache, replay, *options)
    assert again["store"] == {"read": 3, "copies": 0, "evaluated": 0, "replaced": 0}
    assert {pack: pack.read_bytes() for pack in packs} == written  # made again from the files
    for folder in ("aliases", *(f.name for f in results.iterdir() if len(f.name) == 2)):
        for path in (results / folder).rglob("*.json"):
            path.unlink()
    _, packed = run(pytester, mini, cache, replay, *options)
    assert packed["store"] == {"read": 3, "copies": 0, "evaluated": 0, "replaced": 0}
    assert [(s["passed"], s["error_type"], s["tests_passed"], s["shapes"]) for s in packed["samples"]] == [
        (s["passed"], s["error_type"], s["tests_passed"], s["shapes"]) for s in first["samples"]]
    _, fresh = run(pytester, mini, cache, replay, *options, "--repoexec-fresh")
    assert fresh["store"]["evaluated"] == 3
    other = write_replay(pytester.path / "o.jsonl", {"mini/scaled": [WRONG, SCALED_REFERENCE], "mini/swap": [SWAP_OK]})
    _, swapped = run(pytester, mini, cache, other, *options)
    assert swapped["store"]["evaluated"] == 0 and len(list((results / "packs").glob("*/*.json"))) == 3


def test_saved_completions_check_the_sandbox_only_where_a_sample_will_run(pytester, mini, cache, monkeypatch):
    """A rerun of saved completions whose every verdict is stored runs nothing, so it needs no sandbox: with
    bubblewrap out of sight it still reports them; a run with one sample to evaluate stops before its workers
    start, naming the option."""
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [SCALED_REFERENCE, WRONG], "mini/swap": [SWAP_OK]})
    first_result, first = run(pytester, mini, cache, replay, "-n", "2")
    first_result.assert_outcomes(passed=2, failed=1)
    monkeypatch.setenv("PATH", str(pytester.path / "no-tools"))  # shutil.which("bwrap") finds nothing
    again_result, again = run(pytester, mini, cache, replay, "-n", "2", "--repoexec-sandbox=bwrap")
    again_result.assert_outcomes(passed=2, failed=1)
    assert again["store"]["read"] == 3 and again["metrics"] == first["metrics"]
    more = write_replay(pytester.path / "more.jsonl", {"mini/scaled": [SCALED_REFERENCE, WRONG],
                                                        "mini/swap": ["def swap(pair):\n    return pair\n"]})
    report = pytester.path / "report.json"
    report.unlink()
    refused = pytester.runpytest_subprocess(str(mini), f"--repoexec-model=replay:{more}", f"--repoexec-cache={cache}",
                                            f"--repoexec-report={report}", "-p", "no:cacheprovider", "-n", "2",
                                            "--repoexec-sandbox=bwrap", *NO_REFERENCE_RUN)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*--repoexec-sandbox=bwrap: bubblewrap (bwrap) is not installed*"])


def test_a_known_failure_read_on_the_controller_is_reported_as_its_worker_reported_it(pytester, mini, cache):
    manifest = mini / "swap" / "problem.toml"
    manifest.write_text(manifest.read_text().replace("number = 2\n", 'number = 2\nknown_failure = "needs /package"\n'))
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [WRONG],
                                                      "mini/swap": [SWAP_OK, "def swap(pair):\n    return pair\n"]})
    first_result, first = run(pytester, mini, cache, replay, "-n", "2", "-rxX")
    first_result.assert_outcomes(failed=1, xfailed=1, xpassed=1)
    again_result, again = run(pytester, mini, cache, replay, "-n", "2", "-rxX")
    again_result.assert_outcomes(failed=1, xfailed=1, xpassed=1)
    assert again["store"]["read"] == 3 and again["metrics"] == first["metrics"]
    assert [line for line in again_result.stdout.lines if line.startswith(("XFAIL", "XPASS"))] == [
        line for line in first_result.stdout.lines if line.startswith(("XFAIL", "XPASS"))]

def test_relative_timeouts_cost_one_reference_run_a_problem(pytester, mini, cache):
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [WRONG, WRONG.replace("SCALE", "SCALE + 1")],
                                                            "mini/swap": [SWAP_OK]})
    _, first = run(pytester, mini, cache, replay, "--repoexec-timeout-factor=10")
    assert first["store"]["evaluated"] == 3
    assert len(list((cache / "results").glob("*/*.json"))) == 3 + 2  # and each problem's reference, once
    _, again = run(pytester, mini, cache, replay, "--repoexec-timeout-factor=10")
    assert again["store"] == {"read": 3, "copies": 0, "evaluated": 0, "replaced": 0}


def test_a_fresh_run_times_each_reference_once_so_that_a_rerun_finds_every_verdict(pytester, mini, cache):
    """The reference is run for its tests' times and is also a sample: a fresh run judges that module once, so
    its samples' time limits (and keys) are the ones a rerun derives from the stored times."""
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [WRONG, SCALED_REFERENCE],
                                                            "mini/swap": [SWAP_OK]})
    run(pytester, mini, cache, replay, "--repoexec-timeout-factor=10")
    _, fresh = run(pytester, mini, cache, replay, "--repoexec-timeout-factor=10", "--repoexec-fresh")
    # sample 0 needs the reference's times (a run of the reference); sample 1, the reference, reads that run
    assert fresh["store"] == {"read": 1, "copies": 0, "evaluated": 2, "replaced": 0}
    _, again = run(pytester, mini, cache, replay, "--repoexec-timeout-factor=10")
    assert again["store"] == {"read": 3, "copies": 0, "evaluated": 0, "replaced": 0}


def test_an_option_that_changes_verdicts_is_part_of_the_key(pytester, mini, cache):
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [SCALED_REFERENCE], "mini/swap": [SWAP_OK]})
    run(pytester, mini, cache, replay)
    _, other = run(pytester, mini, cache, replay, "--repoexec-timeout=3")
    assert other["store"]["evaluated"] == 2


def test_an_unreadable_entry_is_evaluated_again(pytester, mini, cache):
    replay = write_replay(pytester.path / "r.jsonl", {"mini/scaled": [SCALED_REFERENCE], "mini/swap": [SWAP_OK]})
    _, first = run(pytester, mini, cache, replay)
    entries = sorted((cache / "results").glob("*/*.json"))
    assert len(entries) == 2
    entries[0].write_text(entries[0].read_text()[:25])  # cut off, as by a crash mid-write of an older engine
    entries[1].write_text(json.dumps({"layout": 0, "result": {}}))  # another layout
    remove_packs(cache)
    _, again = run(pytester, mini, cache, replay)
    assert again["store"] == {"read": 0, "copies": 0, "evaluated": 2, "replaced": 2}
    assert again["metrics"] == first["metrics"]


def test_a_run_killed_half_way_resumes_with_what_is_missing(pytester, mini, cache):
    slow = [f"def scaled(value):\n    import time\n    time.sleep(0.3)\n    return clamp(value * SCALE, 0, {100 + i})\n"
            for i in range(6)]  # six distinct modules, about 1.2 s each (four tests)
    replay = write_replay(pytester.path / "slow.jsonl", {"mini/scaled": slow, "mini/swap": [SWAP_OK]})
    command = [sys.executable, "-m", "pytest", str(mini), f"--repoexec-model=replay:{replay}",
               f"--repoexec-cache={cache}", "-p", "no:cacheprovider", "-q", *NO_REFERENCE_RUN]
    process = subprocess.Popen(command, cwd=pytester.path, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(list((cache / "results").glob("*/*.json"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done_before = len(list((cache / "results").glob("*/*.json")))
    assert 3 <= done_before < 7
    _, resumed = run(pytester, mini, cache, replay)
    assert resumed["store"]["read"] == done_before
    assert resumed["store"]["evaluated"] == 7 - done_before  # nothing evaluated twice
    _, uninterrupted = run(pytester, mini, cache.with_name("fresh-cache"), replay)
    assert resumed["metrics"] == uninterrupted["metrics"]
    assert [(s["passed"], s["error_type"], s["tests_passed"]) for s in resumed["samples"]] == [
        (s["passed"], s["error_type"], s["tests_passed"]) for s in uninterrupted["samples"]]


def test_a_problems_digest_is_read_again_where_any_of_its_files_was_written_again(mini, tmp_path, monkeypatch):
    """The digests kept beside the entries are the files' content's: an expected file written again with its
    size and modification time put back (``os.utime``) still gives the new content's digest."""
    from pytest_repoexec import store
    from pytest_repoexec.collection import ProblemLoader
    from pytest_repoexec.store import ProblemDigests, problem_digest

    problem = next(p for p in ProblemLoader().under([mini]) if p.id == "mini/scaled")
    expected = next(path for path in problem.expected.rglob("*") if path.is_file())
    digests = ProblemDigests(tmp_path / "problems")
    assert digests(problem) == problem_digest(problem)
    assert not list((tmp_path / "problems").glob("*/*.json"))  # files written just now: not kept (coarse clocks)
    monkeypatch.setattr(store, "_RACY_NS", 0)
    first = digests(problem)
    assert first == problem_digest(problem) and digests(problem) == first  # the second from what was kept
    assert len(list((tmp_path / "problems").glob("*/*.json"))) == 1

    before = expected.stat()
    content = expected.read_bytes()
    expected.write_bytes(bytes([content[0] ^ 1]) + content[1:])  # the same size
    os.utime(expected, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = digests(problem)
    assert changed != first and changed == problem_digest(problem)
