"""How a sample's processes are bounded on this host: the strongest mechanism it offers, in this order.

1. ``pids cgroup v1``: a cgroup of the v1 pids hierarchy per sample (root only).
2. ``pids cgroup v2``: a cgroup per sample in a v2 subtree this user may write and that has the pids controller
   (root: its own cgroup, laid out by ``lay_out_v2``; another user: a subtree delegated to it,
   such as systemd's ``user@UID.service``).
3. ``RLIMIT_NPROC in the sample's user namespace``: since Linux 5.14 the kernel counts a user's processes per
   user namespace, so RLIMIT_NPROC set inside the sample's own namespace counts the sample's processes only,
   not the user's hundreds of others. bubblewrap makes that namespace; without the sandbox ``unshare --user``
   does. Where the engine is root, only in the sandbox, whose launcher makes that namespace as ``nobody``
   (unconfined, the sample would keep root's capabilities, and the kernel holds root to no RLIMIT_NPROC).
4. none: RLIMIT_NPROC outside a namespace of its own counts every process of the user, so an honest sample
   would fail as a fork flood; the run stops before its first sample unless it accepts no process limit.

Each mechanism is *tried* before it is taken (``probe``), once per session before the first sample and by
``repoexec setup``: as many samples at once as the run has workers each get the mechanism's bound (a cgroup made,
a process moved in, ``pids.max`` set; or RLIMIT_NPROC set in a user namespace of its own, made as the sample's
is), and a fork past it must be refused. One whose probe fails is passed over, and why is kept (``passed_over``):
the next holds, or the run stops before its first sample naming each failure and the ways out.

On cgroup v2 as root, the kernel allows no processes in a cgroup whose children have controllers ("no internal
processes"): the samples' cgroups go beside a leaf, ``repoexec-engine``, into which the processes of the engine's
own cgroup are moved, and ``+pids`` goes into that cgroup's ``cgroup.subtree_control`` (``lay_out_v2``).

Each run's cgroups are named ``repoexec-PID-N``: those of an engine that is gone are removed by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import itertools
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ACCEPT_ENV = "REPOEXEC_NO_PROCESS_LIMIT"  # =1: run without a process limit where the host offers none
# =cgroup: each sample's launcher enters a file the kernel refuses (pids.current) instead of its cgroup's
# cgroup.procs, and =namespace: the sample's own user namespace is asked with a flag unshare refuses: a real
# set-up failure, for the tests of what the engine does with one (the probe is not affected)
INJECT_ENV = "REPOEXEC_INJECT_SETUP_FAILURE"
ENGINE_LEAF = "repoexec-engine"  # cgroup v2: where the processes of the engine's own cgroup go (lay_out_v2)
PROBE_LIMIT = 4  # the probe's bound: a fork past it must be refused
SETUP_FAILED = 97  # the launcher's exit status when it could not enter the sample's bound


class ProcessLimitUnavailable(Exception):
    """No mechanism on this host bounds a sample's processes, and the run did not accept that."""


class ProcessLimitFallback(UserWarning):
    """A stronger mechanism's probe failed here, and a weaker one bounds the samples' processes: said, never
    silent."""


class SampleSetupError(Exception):
    """A sample's bound (its cgroup, its user namespace), sandbox or limits could not be set up: the host's or
    the engine's failure, never the candidate's, whose code did not run. Retried once, then reported as not run."""

    def describe(self) -> str:
        return (f"{ENGINE_ERROR}: this host could not set up the sample (run twice; the host's failure, not the "
                f"candidate's: not run, left out of the metrics): {self}")


ENGINE_ERROR = "EngineError"  # how a sample that was not run for its host's failure is reported


def _forks(limit: int, own_rlimit: bool) -> list[str]:
    """A process that forks past ``limit`` (setting RLIMIT_NPROC itself with ``own_rlimit``): exit 0 when a fork
    was refused before it had ``limit`` processes, else a line that says what happened."""
    source = (
        "import os, resource, sys, time\n"
        f"limit = {limit}\n"
        + ("resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))\n" if own_rlimit else "")
        + "children = []\n"
        "try:\n"
        "    for _ in range(limit + 4):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        children.append(pid)\n"
        "    print(f'{len(children) + 1} processes and no fork refused'); code = 3\n"
        "except BlockingIOError:\n"
        "    code = 0 if len(children) < limit else 4\n"
        "    if code: print(f'a fork refused only at {len(children) + 1} processes, past the limit of {limit}')\n"
        "finally:\n"
        "    for pid in children:\n"
        "        os.kill(pid, 9)\n"
        "        os.waitpid(pid, 0)\n"
        "sys.exit(code)\n"
    )
    # an interpreter every user may run (the sample's user cannot reach one under root's home), else this one
    world = next((path for path in ("/usr/bin/python3", "/usr/local/bin/python3")
                  if os.access(path, os.X_OK) and os.stat(path).st_mode & 0o001), sys.executable)
    return [world, "-I", "-S", "-c", source]


def _probe_all(one, workers: int) -> str | None:
    """``one()`` ``workers`` times at once: the first failure it names, or None where every one held."""
    with ThreadPoolExecutor(max(1, workers)) as pool:
        failures = [failure for failure in pool.map(lambda _: one(), range(max(1, workers))) if failure]
    return failures[0] if failures else None


def _outcome(result: subprocess.CompletedProcess, what: str) -> str | None:
    if result.returncode == 0:
        return None
    said = (result.stdout + result.stderr).strip().splitlines()
    return f"{what}: {said[-1] if said else f'exit status {result.returncode}'}"


class ProcessCgroup:
    """Makes a pids cgroup for each sample, as a direct child of ``root`` (a v1 or a v2 hierarchy)."""

    def __init__(self, root: Path, version: int) -> None:
        self.root, self.version = root, version
        self._count = itertools.count()

    @property
    def mechanism(self) -> str:
        return f"pids cgroup v{self.version} ({self.root})"

    @staticmethod
    def find(accept_none: bool | None = None, sandboxed: bool = True) -> ProcessCgroup | OwnNamespace | None:
        """The strongest mechanism here whose probe holds (see the module's docstring); None where none holds and
        the run accepts that (``accept_none``, by default the environment's ``REPOEXEC_NO_PROCESS_LIMIT=1``);
        else ProcessLimitUnavailable, naming what is missing and each probe that failed."""
        choice = choose(run_workers(), sandboxed)
        if isinstance(choice.mechanism, ProcessCgroup):
            choice.mechanism.remove_stale()  # each run's, though the probe ran once in this process
        if choice.mechanism is not None:
            if choice.passed_over:
                warnings.warn(ProcessLimitFallback(f"processes: {choice.describe()}"), stacklevel=2)
            return choice.mechanism
        if accept_none is None:
            accept_none = os.environ.get(ACCEPT_ENV) == "1"
        if accept_none:
            return None
        raise ProcessLimitUnavailable(f"{missing_limit(choice)}; or accept running without one with {ACCEPT_ENV}=1")

    @contextlib.contextmanager
    def sample(self, limit: int, inject: bool = True) -> Iterator[SampleCgroup]:
        """A fresh cgroup of at most ``limit`` processes, removed when the sample is over (SampleSetupError where
        the host refuses it)."""
        folder = self.root / f"repoexec-{os.getpid()}-{next(self._count)}"
        try:
            folder.mkdir()
        except OSError as exc:
            raise SampleSetupError(f"the sample's cgroup {folder} could not be made: {exc}") from None
        try:
            try:
                (folder / "pids.max").write_text(f"{limit}\n")
            except OSError as exc:
                raise SampleSetupError(f"{folder / 'pids.max'}: the sample's process limit could not be set: "
                                       f"{exc}") from None
            yield SampleCgroup(folder, inject and os.environ.get(INJECT_ENV) == "cgroup")
        finally:
            _remove(folder)

    def probe(self, workers: int = 1) -> str | None:
        """Whether the mechanism holds here: None, or what failed (see the module's docstring)."""
        def one() -> str | None:
            try:
                with self.sample(PROBE_LIMIT, inject=False) as cgroup:
                    result = subprocess.run(cgroup.entering(_forks(PROBE_LIMIT, False)), capture_output=True,
                                            text=True, timeout=60)
                    failure = _outcome(result, f"a process in {cgroup.folder}")
                    if failure is None and cgroup.refusals() < 1:
                        failure = f"{cgroup.folder / 'pids.events'} counted no refused fork"
                    return failure
            except (SampleSetupError, OSError, subprocess.TimeoutExpired) as exc:
                return str(exc)
        return _probe_all(one, workers)

    def remove_stale(self) -> None:
        """The cgroups of engines that are gone (killed before they could remove them)."""
        for stale in self.root.glob("repoexec-*-*"):
            if not Path("/proc", stale.name.split("-")[1]).exists():
                _remove(stale, attempts=1)


@dataclass(frozen=True)
class SampleCgroup:
    folder: Path
    injected: bool = False  # INJECT_ENV=cgroup: enter a file the kernel refuses

    def entering(self, argv: list[str], nonce: str = "") -> list[str]:
        """``argv`` made to enter the cgroup before it starts (a shell that moves itself, then execs: no child
        is born outside it). Where it cannot, it says so with ``nonce`` (``setup_failure`` reads it: the
        candidate's code, which never saw it, cannot say it) and exits."""
        procs = self.folder / ("pids.current" if self.injected else "cgroup.procs")
        return ["/bin/sh", "-c", f'echo $$ 2>/dev/null > "$0" || {{ echo "{nonce}: the sample\'s process could not '
                f'enter its cgroup: $0 refused it" >&2; exit {SETUP_FAILED}; }}; exec "$@"', str(procs), *argv]

    def allow(self, count: int) -> None:
        (self.folder / "pids.max").write_text(f"{count}\n")

    def current(self) -> int:
        return int((self.folder / "pids.current").read_text())

    def refusals(self) -> int:
        """How many forks the limit has refused so far."""
        for line in (self.folder / "pids.events").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "max":
                return int(value)
        return 0


class OwnNamespace:
    """RLIMIT_NPROC (set by the inner plugin) in a user namespace of the sample's own, where it counts the
    sample's processes only. bubblewrap's sandbox is one (where the engine is root, the launcher makes it, as the
    sample's user: see runtime/repoexec_userns.py); an unconfined sample gets one from ``unshare``."""

    mechanism = "RLIMIT_NPROC in the sample's own user namespace"

    def __init__(self, sandboxed: bool = True) -> None:
        self.sandboxed = sandboxed

    @contextlib.contextmanager
    def sample(self, limit: int) -> Iterator[OwnNamespace]:
        yield self

    def entering(self, argv: list[str], nonce: str = "") -> list[str]:
        if Path(argv[0]).name == "bwrap":
            return argv
        flags = ["--user", "--map-current-user", *(["--no-such-flag"] if os.environ.get(INJECT_ENV) == "namespace"
                                                   else [])]
        return ["/bin/sh", "-c", f'unshare {" ".join(flags)} -- true 2>/dev/null || {{ echo "{nonce}: the sample\'s '
                f'own user namespace could not be made (unshare {" ".join(flags)})" >&2; exit {SETUP_FAILED}; }}; '
                f'exec unshare {" ".join(flags)} -- "$@"', "sh", *argv]

    def allow(self, count: int) -> None:
        """The limit is the inner plugin's RLIMIT_NPROC, set in the sample."""

    def current(self) -> int:
        return 0

    def refusals(self) -> int:
        return 0  # a refused fork fails in the sample, which reports it (ProcessLimit)

    def probe(self, workers: int = 1) -> str | None:
        """Whether RLIMIT_NPROC set in a namespace made as the sample's is counts that namespace's processes."""
        if os.geteuid() == 0 and not self.sandboxed:
            return ("RLIMIT_NPROC does not hold root, and without the sandbox a sample's user namespace (unshare) "
                    "keeps root's capabilities")
        forks = _forks(PROBE_LIMIT, True)
        if os.geteuid() == 0:  # the sample's launcher, as the sandbox runs it: the sample user's own namespace
            from .sandbox import SAMPLE_USER, _launcher

            def one() -> str | None:
                home = Path(tempfile.mkdtemp(prefix="repoexec-probe-"))
                try:
                    result = subprocess.run([sys.executable, "-I", "-S", "-c", _launcher(), str(SAMPLE_USER),
                                             str(home), *forks], capture_output=True, text=True, timeout=60)
                    return _outcome(result, f"RLIMIT_NPROC in a user namespace of host user {SAMPLE_USER}")
                except (OSError, subprocess.TimeoutExpired) as exc:
                    return str(exc)
                finally:
                    shutil.rmtree(home, ignore_errors=True)
        else:
            def one() -> str | None:
                try:
                    result = subprocess.run(["unshare", "--user", "--map-current-user", "--", *forks],
                                            capture_output=True, text=True, timeout=60)
                    return _outcome(result, "RLIMIT_NPROC in a user namespace of this user's (unshare)")
                except (OSError, subprocess.TimeoutExpired) as exc:
                    return str(exc)
        return _probe_all(one, workers)


def setup_failure(nonce: str, output: str) -> str | None:
    """What a sample's launcher said it could not set up (``entering``'s message with the sample's ``nonce``)."""
    for line in output.splitlines():
        if nonce and line.startswith(f"{nonce}: "):
            return line[len(nonce) + 2:]
    return None


def new_nonce() -> str:
    return f"repoexec-setup-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Choice:
    """The mechanism the probes chose (None: none held), and each stronger one passed over, with why."""

    mechanism: ProcessCgroup | OwnNamespace | None
    passed_over: tuple[str, ...] = ()

    def describe(self) -> str:
        chosen = self.mechanism.mechanism if self.mechanism else "none"
        if not self.passed_over:
            return chosen
        return f"{chosen} (tried first, and failed: {'; '.join(self.passed_over)})"


def candidates(sandboxed: bool = True) -> tuple[list[ProcessCgroup | OwnNamespace], list[str]]:
    """The mechanisms this host and user may offer, strongest first, and why others are not among them."""
    found: list[ProcessCgroup | OwnNamespace] = []
    missing: list[str] = []
    root = os.geteuid() == 0
    if root and (v1 := _v1_root()) is not None:
        found.append(ProcessCgroup(v1, 1))
    if root and found:  # pids on v1: never on v2 too, whose layout would move processes for nothing
        v2 = None
    elif root:
        try:
            v2 = lay_out_v2()
        except OSError as exc:
            v2 = None
            missing.append(f"pids cgroup v2: {exc}")
    else:
        v2 = _v2_subtree()
    if v2 is not None:
        found.append(ProcessCgroup(v2, 2))
    if (not root or sandboxed) and user_namespaces():
        found.append(OwnNamespace(sandboxed))
    return found, missing


def choose(workers: int = 1, sandboxed: bool = True) -> Choice:
    """The first mechanism of the module's list whose probe holds, with ``workers`` samples at once (stale
    cgroups removed first); remembered for the process: once per session."""
    return _choose(max(1, workers), bool(sandboxed))


@functools.lru_cache(maxsize=None)
def _choose(workers: int, sandboxed: bool) -> Choice:
    found, passed_over = candidates(sandboxed)
    return first_holding(found, workers, passed_over)


def first_holding(found: list[ProcessCgroup | OwnNamespace], workers: int, passed_over: list[str] | None = None
                  ) -> Choice:
    """The first of ``found`` whose probe holds, and why each before it was passed over."""
    passed_over = list(passed_over or [])
    for mechanism in found:
        if isinstance(mechanism, ProcessCgroup):
            mechanism.remove_stale()
        failure = mechanism.probe(workers)
        if failure is None:
            return Choice(mechanism, tuple(passed_over))
        passed_over.append(f"{mechanism.mechanism}: {failure}")
    return Choice(None, tuple(passed_over))


def run_workers() -> int:
    """How many samples this run has at once: its xdist workers (1 without)."""
    with contextlib.suppress(ValueError):
        return max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    return 1


def find_mechanism(sandboxed: bool = True, workers: int | None = None) -> ProcessCgroup | OwnNamespace | None:
    """The first mechanism of the module's list that this host and user offer and whose probe holds."""
    return choose(run_workers() if workers is None else workers, sandboxed).mechanism


def missing_limit(choice: Choice | None = None) -> str:
    """Why no mechanism bounds processes here (each probe that failed), and the ways to get one."""
    tried = f" (tried: {'; '.join(choice.passed_over)})" if choice and choice.passed_over else ""
    if os.geteuid() == 0:
        return (f"no process limit holds here{tried}: this user is root (whom RLIMIT_NPROC does not hold outside "
                "the sandbox's user namespace) and may make no working pids cgroup (v1: /sys/fs/cgroup/pids; v2: "
                "a writable subtree with the pids controller); run under systemd with "
                "`systemd-run --scope -p Delegate=yes pytest ...`; in a container, give it a writable cgroup "
                "(Docker: --cgroupns=private with a writable /sys/fs/cgroup, or --privileged); keep the sandbox "
                "(--repoexec-sandbox=bwrap: its user namespace bounds RLIMIT_NPROC), or run as another user")
    return (f"no process limit holds here{tried}: this user has no delegated cgroup v2 subtree with the pids "
            "controller (systemd: run inside `systemd-run --user --scope -p Delegate=yes`), and the kernel gives it "
            "no user namespace, where RLIMIT_NPROC would count the sample's processes only (outside one it counts "
            "every process of the user)")


def cgroup_version() -> str:
    """``v1``, ``v2`` (unified), ``hybrid`` (v1 controllers beside a v2 mount) or ``none``, for people."""
    types = {fstype for _, fstype, _ in _mounts()}
    return {frozenset({"cgroup"}): "v1", frozenset({"cgroup2"}): "v2",
            frozenset({"cgroup", "cgroup2"}): "hybrid"}.get(frozenset(types & {"cgroup", "cgroup2"}), "none")


def v2_controllers() -> list[str]:
    """The controllers the v2 hierarchy offers at this process's cgroup (empty without one)."""
    folder = _own_v2_folder()
    with contextlib.suppress(OSError):
        return (folder / "cgroup.controllers").read_text().split() if folder else []
    return []


def user_namespaces() -> bool:
    """Whether this user may make a user namespace in which RLIMIT_NPROC counts its own processes (Linux 5.14+)."""
    major, minor = (int(part) for part in platform.release().split(".")[:2])
    if (major, minor) < (5, 14) or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--user", "--map-current-user", "true"], capture_output=True).returncode == 0


def _mounts() -> list[tuple[Path, str, set[str]]]:
    """(mount point, file system type, super options) of each cgroup mount of this process."""
    mounts = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, rest = line.partition(" - ")
        fstype, _, options = rest.split(" ")[:3]
        if fstype in ("cgroup", "cgroup2"):
            mounts.append((Path(fields.split(" ")[4]), fstype, set(options.split(","))))
    return mounts


def _v1_root() -> Path | None:
    for point, fstype, options in _mounts():
        if fstype == "cgroup" and "pids" in options and os.access(point / "cgroup.procs", os.W_OK):
            return point
    return None


def _own_v2_folder() -> Path | None:
    """This process's cgroup in the v2 hierarchy, as a folder."""
    mount = next((point for point, fstype, _ in _mounts() if fstype == "cgroup2"), None)
    if mount is None:
        return None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return mount / line[3:].lstrip("/")
    return None


def _v2_subtree() -> Path | None:
    """The nearest folder at or above this process's v2 cgroup where it may make pids-limited cgroups and
    move processes into them (the common ancestor's ``cgroup.procs`` must be writable)."""
    folder = _own_v2_folder()
    mount = next((point for point, fstype, _ in _mounts() if fstype == "cgroup2"), None)
    while folder is not None and mount is not None and folder.is_relative_to(mount):
        if _holds_pids(folder):
            return folder
        folder = folder.parent if folder != mount else None
    return None


def lay_out_v2(controller: str = "pids") -> Path | None:
    """Root, cgroup v2: the cgroup beside whose leaf the samples' cgroups go (None where there is no v2 hierarchy
    with ``controller`` at this process's cgroup). The kernel refuses a controller in the subtree of a cgroup that
    holds processes (but the root's), and a process in a cgroup whose subtree has one: so the processes of this
    process's own cgroup move into a leaf, ``repoexec-engine``, and ``+controller`` goes into that cgroup's
    ``cgroup.subtree_control``. A cgroup laid out so by another engine (this one is in its leaf) is taken as it is.
    Under a lock on the cgroup's folder, for the xdist workers that lay it out at once. OSError names what the
    kernel refused."""
    own, mount = _own_v2_folder(), next((point for point, fstype, _ in _mounts() if fstype == "cgroup2"), None)
    if own is None or mount is None:
        return None
    parent = own.parent if own.name == ENGINE_LEAF else own
    try:
        if controller not in (parent / "cgroup.controllers").read_text().split():
            return None
    except OSError:
        return None
    handle = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        control = parent / "cgroup.subtree_control"
        if controller in control.read_text().split():
            return parent
        try:
            control.write_text(f"+{controller}\n")  # the hierarchy's root takes it with processes in it
            return parent
        except OSError:
            pass
        leaf = parent / ENGINE_LEAF
        leaf.mkdir(exist_ok=True)
        for _ in range(3):  # processes may fork while they are moved
            for pid in (parent / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):  # one that has ended, or a kernel thread
                    (leaf / "cgroup.procs").write_text(f"{pid}\n")
            try:
                control.write_text(f"+{controller}\n")
                return parent
            except OSError as exc:
                refused = exc
        left = (parent / "cgroup.procs").read_text().split()
        raise OSError(refused.errno, f"{control}: +{controller} refused ({refused.strerror}) with processes "
                                     f"{' '.join(left[:8]) or 'none'} left in {parent} after moving them to {leaf}")
    finally:
        os.close(handle)


def _holds_pids(folder: Path) -> bool:
    try:
        if "pids" not in (folder / "cgroup.controllers").read_text().split():
            return False
        if not all(os.access(folder / name, os.W_OK) for name in ("", "cgroup.procs", "cgroup.subtree_control")):
            return False
        if "pids" not in (folder / "cgroup.subtree_control").read_text().split():
            (folder / "cgroup.subtree_control").write_text("+pids\n")  # refused where processes live in it
        return True
    except OSError:
        return False


def _remove(folder: Path, attempts: int = 50) -> None:
    """Remove a sample's cgroup: its processes are killed already, the kernel may lag behind."""
    with contextlib.suppress(OSError):
        (folder / "cgroup.kill").write_text("1\n")  # v2 (Linux 5.14+): whatever is left
    for _ in range(attempts):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
