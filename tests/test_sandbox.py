"""The sandbox as a user meets it: no silent run without it, the network only for problems that declare it,
limits in manifests and options checked, and a limit too low for the reference named by the gate."""

from __future__ import annotations

import os
import shutil
import socket
import threading

import pytest

from conftest import write_replay
from mini_project import SCALED_REFERENCE

SWAP_OK = "def swap(pair):\n    return (pair[1], pair[0])\n"


def test_without_bubblewrap_nothing_runs_and_the_error_says_how_to_install_it(pytester, mini, repoexec_cache,
                                                                              monkeypatch):
    bare = pytester.path / "bin"  # a PATH with python and no bwrap
    bare.mkdir()
    (bare / "python").symlink_to(shutil.which("python"))
    monkeypatch.setenv("PATH", str(bare))
    result = pytester.runpytest_subprocess(str(mini), f"--repoexec-cache={repoexec_cache}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--repoexec-sandbox=bwrap: bubblewrap (bwrap) is not installed*apt-get install "
                                 "bubblewrap*--repoexec-sandbox=none*"])
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_an_unconfined_run_says_so_first(mini, run_repoexec):
    result, report = run_repoexec(str(mini), "--repoexec-sandbox=none")
    result.assert_outcomes(passed=2)
    assert list(report)[0] == "sandbox" and report["sandbox"]["kind"] == "none"
    summary = result.stdout.lines[[i for i, line in enumerate(result.stdout.lines) if "repoexec: reference" in line][0] + 1]
    assert summary.startswith("sandbox: none")


@pytest.fixture
def listener():
    """A TCP listener on the host's loopback, counting the connections it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    accepted = []

    def serve() -> None:
        while not stopped.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    stopped = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stopped.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("network", [False, True])
def test_the_network_is_the_samples_own_unless_the_problem_declares_it(mini, run_repoexec, pytester, listener,
                                                                       network):
    port, accepted = listener
    if network:
        manifest = mini / "scaled" / "problem.toml"
        manifest.write_text("network = true\n" + manifest.read_text())
    connects = (
        "def scaled(value):\n    import socket\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
        "    return clamp(value * SCALE, 0, 100)\n"
    )
    replay = write_replay(pytester.path / "net.jsonl", {"mini/scaled": [connects], "mini/swap": [SWAP_OK]})
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}")
    scaled = next(s for s in report["samples"] if s["problem"] == "mini/scaled")
    if network:
        # one connection a test (judged apart: no second run against a decoy)
        assert scaled["passed"] and scaled["judge"] == "apart" and len(accepted) == 4
    else:
        assert scaled["error_type"] == "ConnectionRefusedError" and accepted == []


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ('network = "yes"', "network", "expected bool"),
        ("[limits]\nmemory = true", "limits.memory", "expected int"),
        ('[limits]\nmemory = "lots"', "limits.memory", "expected a size such as 512M"),
        ("[limits]\nprocesses = 0", "limits.processes", "must be at least 1"),
        ("[limits]\nthreads = 4", "limits.threads", "unknown field"),
    ],
)
def test_a_bad_network_or_limit_in_a_manifest_is_a_collection_error_naming_it(mini, run_repoexec, line, field,
                                                                                message):
    manifest = mini / "swap" / "problem.toml"
    text = manifest.read_text()
    manifest.write_text(text + "\n" + line + "\n" if line.startswith("[") else line + "\n" + text)
    result, _ = run_repoexec(str(mini / "swap"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{manifest}: {field}: {message}*"])


@pytest.mark.parametrize("option", ["--repoexec-memory=lots", "--repoexec-processes=many", "--repoexec-output=0"])
def test_a_bad_limit_option_is_a_usage_error(pytester, mini, option):
    result = pytester.runpytest_subprocess(str(mini), option, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert option in result.stderr.str()


def test_a_limit_below_what_the_reference_needs_fails_it_and_the_gate_names_the_option(mini, run_repoexec):
    result, report = run_repoexec(str(mini / "scaled"), "--repoexec-memory=20M")
    assert [s["error_type"] for s in report["samples"]] == ["MemoryLimit"]
    gate, gate_report = run_repoexec(str(mini / "scaled"), "--repoexec-validate", "--repoexec-memory=20M",
                                     "--repoexec-mutants=0")
    (reasons,) = [problem["reasons"] for problem in gate_report["problems"]]
    assert any("the reference fails: MemoryLimit" in reason and "--repoexec-memory" in reason for reason in reasons)


CPU_IN_EVERY_TEST = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import time
    started = time.process_time()
    while time.process_time() - started < 0.8:  # CPU time, whatever the load: each test ends well in its limit
        pass
    return clamp(value * SCALE, 0, 100)
'''


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_the_cpu_limit_stops_a_sample_whose_tests_each_end_in_time(mini, run_repoexec, pytester, executor):
    replay = write_replay(pytester.path / "cpu.jsonl", {"mini/scaled": [CPU_IN_EVERY_TEST]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-cpu=2",
                                  "--repoexec-timeout=30", "--repoexec-timeout-factor=0",  # 30 s a test, under load too
                                  f"--repoexec-executor={executor}", "--repoexec-fresh")
    assert [s["error_type"] for s in report["samples"]] == ["CPULimit"], result.stdout.str()[-2000:]


def test_a_problem_may_raise_its_own_limit(mini, run_repoexec):
    manifest = mini / "scaled" / "problem.toml"
    manifest.write_text(manifest.read_text() + '\n[limits]\nmemory = "4G"\n')
    result, report = run_repoexec(str(mini / "scaled"), "--repoexec-memory=20M")
    assert [s["passed"] for s in report["samples"]] == [True]


def test_what_a_sample_writes_in_its_home_and_tmp_stays_there(mini, run_repoexec, pytester):
    writes = (
        "def scaled(value):\n    import os, pathlib\n"
        "    pathlib.Path(os.path.expanduser('~'), 'repoexec-home-note').write_text('x')\n"
        "    pathlib.Path('/tmp/repoexec-tmp-note').write_text('x')\n"
        "    assert os.environ['HOME'] == '/root' and open('/proc/self/uid_map').read().split()[1] != '0'\n"
        "    return clamp(value * SCALE, 0, 100)\n"
    )
    replay = write_replay(pytester.path / "writes.jsonl", {"mini/scaled": [writes], "mini/swap": [SWAP_OK]})
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}")
    result.assert_outcomes(passed=2)  # writing in its own tmpfs is allowed, and seen by its later tests
    assert not os.path.exists("/tmp/repoexec-tmp-note")
    assert not os.path.exists(os.path.expanduser("~/repoexec-home-note"))


@pytest.mark.parametrize("executor", ["process", "warm"])
def test_a_project_seen_at_two_places_runs_with_both_executors(mini, run_repoexec, executor):
    # RepoExec's layout: the tree at /package, and the path its tests were written at (/input/test-apps/NAME) a
    # link to it, whose folders the sample's user (nobody, where the engine is root) must be able to cross
    manifest = mini / "project.toml"
    manifest.write_text('mount = "/input/test-apps/mini"\nworkdir = "/package"\n' + manifest.read_text())
    # the project's modules imported from where the tests are named, as a fresh pytest imports them (scrapy's
    # get_pythonpath looks for its name in that path), whether a zygote imported them or the sample
    where = SCALED_REFERENCE.replace("    return", "    import sys\n    if not sys.modules['mini.util'].__file__"
                                     ".startswith('/input/test-apps/mini/'):\n        return -1\n    return")
    replay = write_replay(mini.parent / "where.jsonl", {"mini/scaled": [where], "mini/swap": [SWAP_OK]})
    result, report = run_repoexec(str(mini), f"--repoexec-executor={executor}", "--repoexec-fresh",
                                  f"--repoexec-model=replay:{replay}")
    assert report is not None and [s["passed"] for s in report["samples"]] == [True, True], result.stdout.str()[-3000:]


def test_a_source_file_only_its_owner_may_read_is_read_by_the_samples(mini, run_repoexec):
    # sdists may ship such files (scrapy's, flutils'); where the engine is root, samples run as another user
    (mini / "repo" / "mini" / "util.py").chmod(0o600)
    (mini / "repo" / "mini").chmod(0o700)
    result, report = run_repoexec(str(mini), "--repoexec-fresh")
    assert report is not None and [s["passed"] for s in report["samples"]] == [True, True], result.stdout.str()[-3000:]
