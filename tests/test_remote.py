"""xdist across hosts (issue 25): a worker reached over ssh, as a second user who is not root, on loopback.

sshd runs on a free port of 127.0.0.1 with a throwaway host key and configuration in a temp folder; the remote
user has its own virtualenv (the system Python, this checkout installed), its own copy of the shipped problems
and its own cache. The controller's --repoexec-cache is one the remote user may not write to: were it imposed on
the remote worker, every sample would fail. Runs as root (it makes the user); CI does.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from conftest import PLATFORM, REPO, SHIPPED, write_replay
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem

USER = "repoexec-remote"
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")  # under -n, each worker has its own copy and sshd
SSHD = Path("/usr/sbin/sshd")
SELECTION = "slugify or money_add"
VERDICT = ("problem", "project", "sample", "passed", "tests_passed", "tests_total", "error_type", "dir", "empty",
           "failed_test", "known_failure")
REFERENCES = {p.id: p.reference for p in (load_problem(m) for m in find_manifests([SHIPPED]))
              if p.name in ("slugify", "money_add")}


def _as_user(command: str) -> None:
    subprocess.run(["su", "-", USER, "-c", f"set -e; {command}"], check=True, capture_output=True, timeout=600)


def _remote_user() -> Path:
    """The second user (key login only: no password, not locked), with a key pair for root's login, and its
    virtualenv with this checkout installed (the dependencies once for a pyproject.toml, the engine again when its
    code changed): once for all xdist workers of the session, under a lock. The system Python: root's own
    interpreter lies under /root, which other users may not enter."""
    with FileLock("/tmp/repoexec-test-remote-user.lock"):
        if subprocess.run(["id", USER], capture_output=True).returncode != 0:
            subprocess.run(["useradd", "-m", "-s", "/bin/sh", USER], check=True)
        subprocess.run(["usermod", "-p", "*", USER], check=True)
        home = Path(pwd.getpwnam(USER).pw_dir)
        ssh, key = home / ".ssh", home / ".ssh" / "controller_key"  # root's, mode 600: the user cannot read it
        ssh.mkdir(mode=0o700, exist_ok=True)
        if not key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        (ssh / "authorized_keys").write_text(key.with_suffix(".pub").read_text())
        subprocess.run(["chown", f"{USER}:", str(ssh), str(ssh / "authorized_keys")], check=True)
        (ssh / "authorized_keys").chmod(0o600)
        python = shutil.which("python3", path="/usr/bin:/usr/local/bin")
        if python is None:
            pytest.skip(f"{PLATFORM}no Python outside /root for the second user")
        engine = home / "engine"
        shutil.rmtree(engine, ignore_errors=True)
        for name in ("pytest_repoexec", "generators"):
            shutil.copytree(REPO / name, engine / name, ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(REPO / name, engine / name)
        subprocess.run(["chown", "-R", f"{USER}:", str(engine)], check=True)
        deps = hashlib.sha256((REPO / "pyproject.toml").read_bytes() + python.encode()).hexdigest()
        code = hashlib.sha256(b"".join(path.read_bytes() for path in sorted(engine.rglob("*.py")))).hexdigest()
        marker = home / "venv" / "repoexec-installed"
        if not marker.exists() or marker.read_text().split()[0] != deps:
            _as_user(f"rm -rf ~/venv; {python} -m venv ~/venv; ~/venv/bin/pip install -q ~/engine")
        elif marker.read_text().split()[1] != code:
            _as_user("~/venv/bin/pip install -q --no-deps --force-reinstall ~/engine")
        marker.write_text(f"{deps} {code}")
    work = home / f"work-{WORKER}"  # this process's copy of the problems, as the gateway's folder
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(SHIPPED, work / "problems", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chown", "-R", f"{USER}:", str(work)], check=True)
    return home


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path | str]]:
    """sshd on loopback for the second user, and the gateway's spec that reaches it (key login)."""
    if not SSHD.exists():
        pytest.skip(f"{PLATFORM}no sshd (openssh-server: `repoexec setup --tests` installs it)")
    if os.geteuid() != 0:
        pytest.skip(f"{PLATFORM}making a second user needs root")
    home = _remote_user()
    folder = tmp_path_factory.mktemp("sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / "host_key")], check=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\nPidFile {folder / 'sshd.pid'}\n"
        f"AuthorizedKeysFile .ssh/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        f"UsePAM no\nAllowUsers {USER}\n")
    (folder / "ssh_config").write_text(
        f"Host 127.0.0.1\n  Port {port}\n  IdentityFile {home / '.ssh/controller_key'}\n  IdentitiesOnly yes\n"
        "  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking no\n  BatchMode yes\n  LogLevel ERROR\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    sshd = subprocess.Popen([str(SSHD), "-D", "-f", str(folder / "sshd_config"), "-E", str(folder / "sshd.log")])
    try:
        for _ in range(100):
            reached = subprocess.run(["ssh", "-F", str(folder / "ssh_config"), f"{USER}@127.0.0.1", "true"],
                                     capture_output=True, timeout=30).returncode == 0
            if reached or sshd.poll() is not None:
                break
            time.sleep(0.1)
        assert reached, (folder / "sshd.log").read_text()
        yield {"home": home, "spec": f"ssh={USER}@127.0.0.1//ssh_config={folder / 'ssh_config'}"
                                     f"//python={home / 'venv/bin/python'}//chdir=work-{WORKER}"}
    finally:
        sshd.terminate()
        sshd.wait(timeout=30)


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The controller's folder: its copy of the problems (run from here without a path), a replay in which one
    of each problem's two samples fails, and a cache under root's temp folder, which the second user cannot
    enter."""
    folder = tmp_path_factory.mktemp("controller")
    shutil.copytree(SHIPPED, folder / "problems", ignore=shutil.ignore_patterns("__pycache__"))
    write_replay(folder / "replay.jsonl", {pid: [reference, pass_body(reference)]
                                           for pid, reference in REFERENCES.items()})
    return folder


def _run(folder: Path, cache: Path, name: str, *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = folder / f"{name}.json"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "-k", SELECTION, f"--repoexec-model=replay:{folder / 'replay.jsonl'}",
                           f"--repoexec-cache={cache}", f"--repoexec-report={report}", *options],
                          cwd=folder, capture_output=True, text=True, timeout=600)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads(report.read_text())


def _verdicts(report: dict) -> list[tuple]:
    return sorted(tuple(sample[key] for key in VERDICT) for sample in report["samples"])


def test_a_remote_host_scores_as_a_local_run_with_its_own_cache(host, controller, repoexec_cache):
    remote_cache = Path(host["home"], f"cache-of-this-host-{WORKER}")
    shutil.rmtree(remote_cache, ignore_errors=True)
    local_done, local = _run(controller, repoexec_cache, "local")
    done, remote = _run(controller, repoexec_cache, "remote", "-d", "--tx",
                        f"{host['spec']}//env:REPOEXEC_CACHE={remote_cache}")
    assert local["sandbox"]["kind"] == remote["sandbox"]["kind"] == "bwrap"
    assert remote["metrics"] == local["metrics"] and remote["projects"] == local["projects"]
    assert _verdicts(remote) == _verdicts(local) and len(local["samples"]) == 4
    assert sum(s["passed"] for s in local["samples"]) == 2 and not remote["not_run"]
    assert done.returncode == local_done.returncode == 1  # the failing samples' verdicts, nothing else
    assert any(remote_cache.glob("venvs/textkit-*")) and any(remote_cache.glob("venvs/ledger-*"))
    announced = f"repoexec gw0 on {USER}@127.0.0.1: building the environments of 2 projects (ledger, textkit)"
    assert announced in done.stderr + done.stdout and "environments ready in" in done.stderr + done.stdout


def test_a_remote_copy_that_differs_is_refused_naming_the_host_and_the_problem(host, controller, repoexec_cache):
    tests = Path(host["home"], f"work-{WORKER}/problems/textkit/slugify/test_slugify.py")
    text = tests.read_text()
    assert '"top-10-tips"' in text
    tests.write_text(text.replace('"top-10-tips"', '"top-11-tips"'))  # one test literal of the remote's copy
    try:
        done, report = _run(controller, repoexec_cache, "refused", "-d", "--tx", host["spec"])
    finally:
        tests.write_text(text)
    refusal = (f"{USER}@127.0.0.1 refuses textkit/slugify: its files differ from the controller's: "
               "test_slugify.py (changed)")
    assert done.returncode == 1
    assert [entry["item"].split("::")[1] for entry in report["not_run"]] == ["slugify[0]", "slugify[1]"]
    assert all(refusal in entry["reason"] for entry in report["not_run"])
    assert f"host {USER}@127.0.0.1 (gw0): 2 samples could not run" in done.stdout
    assert {s["problem"] for s in report["samples"]} == {"ledger/money_add"}  # the other problem ran


def test_a_host_whose_sandbox_cannot_start_is_an_error_of_that_host(host, controller, repoexec_cache):
    done, report = _run(controller, repoexec_cache, "nosandbox", "-d", "--tx", f"{host['spec']}//env:PATH=/nowhere")
    assert done.returncode == 1 and not report["samples"] and len(report["not_run"]) == 4
    reason = f"{USER}@127.0.0.1 cannot run samples: --repoexec-sandbox=bwrap: bubblewrap (bwrap) is not installed"
    assert all(reason in entry["reason"] for entry in report["not_run"])
    assert f"host {USER}@127.0.0.1 (gw0): 4 samples could not run" in done.stdout


def test_a_path_xdist_cannot_hand_to_another_host_is_a_usage_error(host, controller, repoexec_cache):
    done = subprocess.run([sys.executable, "-m", "pytest", "problems", "-p", "no:cacheprovider", "-d", "--tx",
                           host["spec"]], cwd=controller, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"problems: xdist cannot name this path to {USER}@127.0.0.1" in done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr
