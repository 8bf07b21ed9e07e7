"""How a sample's processes are bounded on this host: the strongest mechanism it offers, in this order.

1. ``pids cgroup v1``: a cgroup of the v1 pids hierarchy per sample (root only).
2. ``pids cgroup v2``: a cgroup per sample in a v2 subtree this user may write and that has the pids controller
   (root: the nearest ancestor of its own cgroup that can hold one; another user: a subtree delegated to it,
   such as systemd's ``user@UID.service``).
3. ``RLIMIT_NPROC in the sample's user namespace``: since Linux 5.14 the kernel counts a user's processes per
   user namespace, so RLIMIT_NPROC set inside the sample's own namespace counts the sample's processes only,
   not the user's hundreds of others. bubblewrap makes that namespace; without the sandbox ``unshare --user``
   does. Never for root, whom the kernel holds to no RLIMIT_NPROC.
4. none: RLIMIT_NPROC outside a namespace of its own counts every process of the user, so an honest sample
   would fail as a fork flood; the run stops before its first sample unless it accepts no process limit.

Each run's cgroups are named ``repoexec-PID-N``: those of an engine that is gone are removed by the next one.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ACCEPT_ENV = "REPOEXEC_NO_PROCESS_LIMIT"  # =1: run without a process limit where the host offers none


class ProcessLimitUnavailable(Exception):
    """No mechanism on this host bounds a sample's processes, and the run did not accept that."""


class ProcessCgroup:
    """Makes a pids cgroup for each sample, as a direct child of ``root`` (a v1 or a v2 hierarchy)."""

    def __init__(self, root: Path, version: int) -> None:
        self.root, self.version = root, version
        self._count = itertools.count()

    @property
    def mechanism(self) -> str:
        return f"pids cgroup v{self.version} ({self.root})"

    @staticmethod
    def find(accept_none: bool | None = None) -> ProcessCgroup | OwnNamespace | None:
        """The strongest mechanism here (see the module's docstring); None where none holds and the run accepts
        that (``accept_none``, by default the environment's ``REPOEXEC_NO_PROCESS_LIMIT=1``); else
        ProcessLimitUnavailable, naming what is missing."""
        found = find_mechanism()
        if found is not None:
            return found
        if accept_none is None:
            accept_none = os.environ.get(ACCEPT_ENV) == "1"
        if accept_none:
            return None
        raise ProcessLimitUnavailable(f"{missing_limit()}; or accept running without one with {ACCEPT_ENV}=1")

    @contextlib.contextmanager
    def sample(self, limit: int) -> Iterator[SampleCgroup]:
        """A fresh cgroup of at most ``limit`` processes, removed when the sample is over."""
        folder = self.root / f"repoexec-{os.getpid()}-{next(self._count)}"
        folder.mkdir()
        try:
            (folder / "pids.max").write_text(f"{limit}\n")
            yield SampleCgroup(folder)
        finally:
            _remove(folder)

    def remove_stale(self) -> None:
        """The cgroups of engines that are gone (killed before they could remove them)."""
        for stale in self.root.glob("repoexec-*-*"):
            if not Path("/proc", stale.name.split("-")[1]).exists():
                _remove(stale, attempts=1)


@dataclass(frozen=True)
class SampleCgroup:
    folder: Path

    def entering(self, argv: list[str]) -> list[str]:
        """``argv`` made to enter the cgroup before it starts (a shell that moves itself, then execs: no child
        is born outside it)."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.folder / "cgroup.procs"), *argv]

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
    sample's processes only. bubblewrap's sandbox is one; an unconfined sample gets one from ``unshare``."""

    mechanism = "RLIMIT_NPROC in the sample's own user namespace"

    @contextlib.contextmanager
    def sample(self, limit: int) -> Iterator[OwnNamespace]:
        yield self

    def entering(self, argv: list[str]) -> list[str]:
        if Path(argv[0]).name == "bwrap":
            return argv
        return ["unshare", "--user", "--map-current-user", "--", *argv]

    def allow(self, count: int) -> None:
        """The limit is the inner plugin's RLIMIT_NPROC, set in the sample."""

    def current(self) -> int:
        return 0

    def refusals(self) -> int:
        return 0  # a refused fork fails in the sample, which reports it (ProcessLimit)


def find_mechanism() -> ProcessCgroup | OwnNamespace | None:
    """The first mechanism of the module's list that this host and user offer (stale cgroups removed)."""
    if os.geteuid() == 0 and (v1 := _v1_root()) is not None:
        found: ProcessCgroup | OwnNamespace | None = ProcessCgroup(v1, 1)
    elif (v2 := _v2_subtree()) is not None:
        found = ProcessCgroup(v2, 2)
    elif os.geteuid() != 0 and user_namespaces():
        return OwnNamespace()
    else:
        return None
    found.remove_stale()
    return found


def missing_limit() -> str:
    """Why no mechanism bounds processes here, and the ways to get one."""
    if os.geteuid() == 0:
        return ("no process limit holds here: this user is root (whom RLIMIT_NPROC does not hold) and may make no "
                "pids cgroup (v1: /sys/fs/cgroup/pids; v2: a writable subtree with the pids controller); in a "
                "container, give it a writable cgroup (Docker: --cgroupns=private with a writable /sys/fs/cgroup, "
                "or --privileged), or run as another user")
    return ("no process limit holds here: this user has no delegated cgroup v2 subtree with the pids controller "
            "(systemd: run inside `systemd-run --user --scope -p Delegate=yes`), and the kernel gives it no user "
            "namespace, where RLIMIT_NPROC would count the sample's processes only (outside one it counts "
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
