"""The sandbox and its process limit as this host and user give them (CI runs this file as root and as a user
who owns more than 100 other processes): honest samples keep their subprocesses and threads, fork floods are
stopped, and a process limit never counts processes the sample did not start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_replay
from pytest_repoexec import cgroups
from pytest_repoexec.sandbox import _etc

SWAP_OK = "def swap(pair):\n    return (pair[1], pair[0])\n"
HONEST = """\
def scaled(value):
    import subprocess, threading
    for _ in range(5):
        subprocess.run(["true"], check=True)
    threads = [threading.Thread(target=lambda: None) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return clamp(value * SCALE, 0, 100)
"""
FLOOD = """\
def scaled(value):
    import os, time
    children = []
    try:
        for _ in range(200):
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
    finally:
        for pid in children:
            os.kill(pid, 9)
    return clamp(value * SCALE, 0, 100)
"""


@pytest.fixture
def crowd():
    """More than 100 sleeping processes of this user, as on a desktop or a shared machine."""
    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(120)]
    yield
    for sleeper in sleepers:
        sleeper.kill()
        sleeper.wait()


def test_the_etc_copy_holds_what_the_sample_may_read():
    """This user's files, or anyone's where the engine is root: its samples run as nobody."""
    private = Path("/etc/ssl/private")
    copied = _etc() / "ssl" / "private"
    readable = os.access(private, os.R_OK | os.X_OK) if os.geteuid() else private.stat().st_mode & 0o005 == 0o005
    assert copied.exists() == (private.is_dir() and readable)
    assert (_etc() / "passwd").is_file()


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_an_honest_sample_keeps_its_subprocesses_and_a_flood_is_stopped_among_many_processes(
        mini, run_repoexec, pytester, crowd, executor, sandbox):
    replay = write_replay(pytester.path / "hosts.jsonl", {"mini/scaled": [HONEST, FLOOD], "mini/swap": [SWAP_OK]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-n=2",
                                  f"--repoexec-executor={executor}", f"--repoexec-sandbox={sandbox}",
                                  "--repoexec-fresh")
    outcomes = {s["sample"]: (s["passed"], s["error_type"]) for s in report["samples"]}
    assert outcomes == {0: (True, None), 1: (False, "ProcessLimit")}, result.stdout.str()[-2000:]


def test_the_process_limit_is_the_strongest_mechanism_here_and_never_the_users_count():
    mechanism = cgroups.ProcessCgroup.find()
    assert mechanism is not None  # every host CI runs on gives one
    if os.geteuid() == 0:  # the kernel holds root to no RLIMIT_NPROC: only a cgroup bounds it
        assert isinstance(mechanism, cgroups.ProcessCgroup)
    else:
        assert isinstance(mechanism, (cgroups.ProcessCgroup, cgroups.OwnNamespace))


def test_a_cgroup_left_by_a_killed_run_is_removed_by_the_next():
    mechanism = cgroups.ProcessCgroup.find()
    if not isinstance(mechanism, cgroups.ProcessCgroup):
        pytest.skip(f"platform: no pids cgroup for this user here ({mechanism.mechanism})")
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = mechanism.root / f"repoexec-{dead.pid}-0"
    stale.mkdir()
    cgroups.ProcessCgroup.find()
    assert not stale.exists()


def test_unconfined_rlimit_nproc_counts_only_the_samples_processes(crowd):
    if os.geteuid() == 0:
        pytest.skip("platform: the kernel holds root to no RLIMIT_NPROC")
    script = ("import resource, subprocess\nresource.setrlimit(resource.RLIMIT_NPROC, (20, 20))\n"
              "[subprocess.run(['true'], check=True) for _ in range(5)]\n"
              "try:\n    [subprocess.Popen(['sleep', '5']) for _ in range(40)]\nexcept OSError:\n    print('held')\n")
    done = subprocess.run(cgroups.OwnNamespace().entering(["python3", "-c", script]), capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "held"), done.stderr


def test_setup_names_the_user_the_cgroups_and_each_limits_mechanism():
    done = subprocess.run(["repoexec", "setup"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith(f"repoexec setup: user ") and f"(uid {os.geteuid()}" in line for line in lines)
    assert any("cgroups: " + cgroups.cgroup_version() in line for line in lines)
    assert any(line.startswith(f"repoexec setup: processes: {cgroups.ProcessCgroup.find().mechanism} (tried with ")
               for line in lines)


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="platform: the container profile is written for x86_64")
def test_in_a_container_that_refuses_namespaces_the_run_stops_naming_the_container_and_the_ways_out(
        mini, pytester, repoexec_cache):
    profile = Path(__file__).with_name("container_profile.py")
    done = subprocess.run(
        [sys.executable, str(profile), sys.executable, "-m", "pytest", str(mini), f"--repoexec-cache={repoexec_cache}",
         "-p", "no:cacheprovider"],
        capture_output=True, text=True, cwd=pytester.path, env={**os.environ, "container": "docker"}, timeout=300)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    assert "--repoexec-sandbox=bwrap: bubblewrap cannot create its namespaces in this container" in done.stderr
    assert "--security-opt seccomp=unconfined" in done.stderr and "--repoexec-sandbox=none" in done.stderr
    assert "passed" not in done.stdout


ROOT_NAMED = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import getpass, grp, os, pwd
    from pathlib import Path
    me = pwd.getpwuid(os.getuid())
    home = Path.home()
    os.chmod(home, 0o755)  # flutils' directory_present changes the mode of ~
    (home / "made").mkdir(exist_ok=True)
    os.chown(home / "made", 0, 0)
    inside, outside, count = Path("/proc/self/uid_map").read_text().split()
    seen = (os.getuid(), os.getgid(), getpass.getuser(), me.pw_name, home.owner(), home.group(),
            grp.getgrgid(0).gr_name, me.pw_dir == os.path.expanduser("~") == "/root", (inside, count), int(outside))
    wanted = (0, 0, "root", "root", "root", "root", "root", True, ("0", "1"), HOST)
    return clamp(value * SCALE, 0, 100) if seen == wanted else -1
'''


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_sample_is_root_of_its_own_user_namespace_never_the_hosts(mini, run_repoexec, pytester, executor):
    # RepoExec's tests ran as root in a container (luigi's tmppath, flutils' get_os_user, get_os_group and
    # directory_present need it): a sample is uid and gid 0, named root, owning its home, and that 0 is an
    # unprivileged host user (nobody where the engine is root, the engine's user otherwise)
    host = 65534 if os.geteuid() == 0 else os.geteuid()
    candidate = ROOT_NAMED.replace("HOST", str(host))
    replay = write_replay(pytester.path / "named.jsonl", {"mini/scaled": [candidate]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                  f"--repoexec-executor={executor}")
    assert report is not None, result.stdout.str()[-3000:]
    assert [s["passed"] for s in report["samples"]] == [True], result.stdout.str()[-3000:]


WRONG = "def scaled(value):\n    return value\n"


def test_the_mechanism_taken_is_one_whose_probe_saw_a_fork_past_its_limit_refused():
    choice = cgroups.choose(cgroups.run_workers())
    assert choice.mechanism is not None and choice.mechanism is cgroups.ProcessCgroup.find()  # probed once
    assert choice.mechanism.probe(2) is None  # two samples at once, each refused a fork past its bound
    assert choice.describe().startswith(choice.mechanism.mechanism)
    if os.geteuid() == 0:  # and the sample's own user namespace holds where the engine is root, as the launcher makes it
        assert cgroups.OwnNamespace(sandboxed=True).probe(2) is None
        assert "does not hold root" in cgroups.OwnNamespace(sandboxed=False).probe(1)


def test_a_folder_that_is_no_cgroup_fails_the_probe_and_the_next_mechanism_is_taken_and_named(tmp_path):
    # the probe's logic on a bound that does not hold: a plain folder takes the cgroup's files as files (the
    # process is "moved in", pids.max "set"), and nothing refuses a fork
    fake = cgroups.ProcessCgroup(tmp_path, 2)
    failure = fake.probe(2)
    assert failure is not None and str(tmp_path) in failure and "no fork refused" in failure
    choice = cgroups.first_holding([fake, cgroups.OwnNamespace(sandboxed=True)], 2)
    assert isinstance(choice.mechanism, cgroups.OwnNamespace)
    assert len(choice.passed_over) == 1 and choice.passed_over[0].startswith(f"pids cgroup v2 ({tmp_path}): a process in ")
    assert choice.passed_over[0].endswith("9 processes and no fork refused")
    assert choice.describe().startswith("RLIMIT_NPROC in the sample's own user namespace (tried first, and failed: "
                                        f"pids cgroup v2 ({tmp_path})")
    none = cgroups.first_holding([fake], 1)
    assert none.mechanism is None
    said = cgroups.missing_limit(none)
    assert str(tmp_path) in said and "no fork refused" in said and "Delegate=yes" in said


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_sample_whose_bound_cannot_be_set_up_is_not_run_and_the_run_says_the_host_is_at_fault(
        mini, run_repoexec, pytester, monkeypatch, executor):
    # a real set-up failure: each sample's launcher is made to enter what the kernel refuses (its cgroup's
    # pids.current for cgroup.procs, or a flag unshare rejects for its user namespace); the probe is not affected
    mechanism = cgroups.ProcessCgroup.find(sandboxed=False)
    monkeypatch.setenv(cgroups.INJECT_ENV, "cgroup" if isinstance(mechanism, cgroups.ProcessCgroup) else "namespace")
    replay = write_replay(pytester.path / "host.jsonl", {"mini/scaled": [HONEST, WRONG]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-n=2",
                                  f"--repoexec-executor={executor}", "--repoexec-sandbox=none", "--repoexec-fresh",
                                  subprocess=True)
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, output[-3000:]
    assert report is not None and report["samples"] == [], output[-3000:]  # no verdict, not even the wrong one's
    assert report["engine_errors"] == 2 and len(report["not_run"]) == 2
    assert all(entry["reason"].startswith("EngineError: this host could not set up the sample (run twice")
               for entry in report["not_run"]), report["not_run"]
    assert "EarlyExit" not in output
    assert "EngineError: 2 samples were not run: this host could not set up their sandbox, cgroup or limits" in output
    monkeypatch.delenv(cgroups.INJECT_ENV)  # the same run on a host that sets them up: verdicts again, exit 1
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-n=2",
                                  f"--repoexec-executor={executor}", "--repoexec-sandbox=none", "--repoexec-fresh",
                                  subprocess=True)
    assert result.ret == pytest.ExitCode.TESTS_FAILED and report["engine_errors"] == 0
    assert [(s["sample"], s["passed"]) for s in report["samples"]] == [(0, True), (1, False)]
