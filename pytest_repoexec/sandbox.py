"""The sandbox a sample runs in: bubblewrap with a root that is not the host's.

The root is a tmpfs of bounded size, the sample's one writable place (with a small ``/dev/shm``): its
``/tmp``, its ``HOME`` (``/root``, as in RepoExec's container, whose root was writable too: some tests write
at ``/`` or where they run) and its project tree (the folders on the way to the focal module, links into the
cached source for the rest, the candidate's module and the tests copied in). Bound into it, read-only: the
system's ``/usr`` (and the ``/bin``, ``/lib`` links into it), the Python installation the virtualenv was made
from, the virtualenv, the engine's runtime, the cached source, the problem's expected outputs, and a copy of a
few files of ``/etc`` (names, time zone, certificates, MIME types). It gets its own PID namespace
(``kill(getppid())``, ``killpg(0)`` and fork floods reach only the sample; whatever it leaves running dies with
it), its own network namespace with a loopback of its own unless the problem declares ``network = true``, no
capabilities, a new session (no terminal to write to), and it dies with the engine.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from .runtime.repoexec_protocol import ErrorType, error_type_of

INSTALL_HINT = (
    "install bubblewrap: `apt-get install bubblewrap` on Debian or Ubuntu (`repoexec setup` does it), "
    "`dnf install bubblewrap` on Fedora; or run candidates unconfined with --repoexec-sandbox=none"
)
CONTAINER_HINT = (
    "start the container with `--security-opt seccomp=unconfined` (Docker; Podman: the same, or "
    "`--security-opt seccomp=unconfined --security-opt label=disable`), or with `--privileged`; or run candidates "
    "unconfined, knowingly, with --repoexec-sandbox=none (the container is then their only boundary)"
)
HOME = "/root"  # as in the original harness's container
SAMPLE = "/sample"  # where a project's tree is, inside the sandbox, when its manifest names no place
EXPECTED = "/repoexec/expected"  # where the problem's expected outputs appear inside the sandbox
SCRATCH = (("/tmp", 0o1777), (HOME, 0o700))  # empty folders of the sample's root, and their modes
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "hosts", "nsswitch.conf", "host.conf", "passwd", "group", "localtime", "timezone", "mime.types", "protocols",
    "services", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
    "ca-certificates.conf", "pki", "gai.conf", "resolv.conf",  # resolv.conf: only problems with the network use it
)


class SandboxUnavailable(Exception):
    """bubblewrap, or the user namespaces it needs, is missing: no sample may run until it is there."""


@dataclass(frozen=True)
class Tree:
    """A sample's project tree, relative to where it is shown: real folders, symlinks into the cached source
    (absolute), and the files written in (the candidate's module, the tests)."""

    folders: tuple[Path, ...]
    links: tuple[tuple[Path, Path], ...]
    files: tuple[tuple[Path, bytes], ...]

    def materialise(self, root: Path) -> None:
        """Make the tree on the host (without a sandbox), in place of what a run before left there."""
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for folder in self.folders:
            (root / folder).mkdir()
        for path, target in self.links:
            (root / path).symlink_to(target, target_is_directory=target.is_dir())
        for path, content in self.files:
            (root / path).write_bytes(content)


@dataclass(frozen=True)
class DataFolder:
    """A read-only folder made inside the sandbox from the files given (relative path, content): the problem's
    expected outputs. Made the same way whichever host folder the files came from, so that nothing a sample
    can see (its mounts, their sources and sizes) tells the real expected values from a decoy's."""

    at: Path
    files: tuple[tuple[Path, bytes], ...]

    @classmethod
    def read(cls, at: Path, folder: Path | None) -> DataFolder:
        files = sorted(path for path in folder.rglob("*") if path.is_file()) if folder and folder.is_dir() else []
        return cls(at, tuple((path.relative_to(folder), path.read_bytes()) for path in files))

    def folders(self) -> list[Path]:
        """The subfolders the files need, parents first."""
        return sorted({parent for path, _ in self.files for parent in path.parents if parent != Path()},
                      key=lambda folder: len(folder.parts))

    def write(self, where: Path) -> None:
        """The files under ``where`` on the host, in place of what was there."""
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True)
        for folder in self.folders():
            (where / folder).mkdir()
        for path, content in self.files:
            (where / path).write_bytes(content)


DATA_TMPFS = 1 << 30  # the expected-output folder's size limit, where a tmpfs holds it (the warm executor's)


@dataclass(frozen=True)
class View:
    """What one sample sees: its project tree (at ``tree_at``, and as links at ``aliases``), read-only binds
    (host path, path inside), where it starts, how much it may write, whether it has the network. ``masks``
    are files inside the binds shown with other content: the focal module's original in the cached source (the
    reference, which the tree's links lead to) and its bytecode. ``data`` is the expected-output folder.
    ``staging`` is a host folder of the sample's own where bubblewrap finds the files it shows (the tree's, the
    masks, the data), to bind them: given their content, it would hold them in the memory of the sandbox's
    PID 1, which the sample can read through /proc/1/mem."""

    tree: Tree
    tree_at: Path
    binds: tuple[tuple[Path, Path], ...]
    workdir: Path
    tmpfs_bytes: int
    aliases: tuple[Path, ...] = ()
    network: bool = False
    masks: tuple[tuple[Path, bytes], ...] = ()
    data: DataFolder | None = None
    staging: Path | None = None
    tree_mtime: int | None = None  # the modification time of the tree's files (None: when they are written)


SAMPLE_USER = 65534  # nobody: the host user a sample runs as where the engine is root (never root itself)
# where the engine is root, what bubblewrap leaves the sample's first process, the launcher (see repoexec_userns)
_LAUNCHER_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN", "CAP_SYS_ADMIN")


def sample_user() -> int | None:
    """The host user a sample runs as when it is not the engine's: where the engine is root."""
    return SAMPLE_USER if os.geteuid() == 0 else None


@functools.cache
def _launcher() -> str:
    """The launcher's source, given to ``python -c``: no file of the engine need be inside the view."""
    return (Path(__file__).with_name("runtime") / "repoexec_userns.py").read_text(encoding="utf-8")


class Bubblewrap:
    """Every sample runs as root (uid and gid 0, named root, owning ``HOME``) of a user namespace of its own,
    as RepoExec's tests ran as root in a container, and that root is never the host's. Where the engine is an
    ordinary user, bubblewrap's user namespace maps the engine's user to 0. Where it is root, that namespace's
    root would be the host's, so bubblewrap makes none: it builds the sandbox as root, and the sample's first
    process, a launcher run by the sample's own interpreter (``argv[0]``), makes the namespace, mapped to
    ``SAMPLE_USER``, before anything of the sample runs. Either way the sample has no capabilities and no way
    to regain any (no_new_privs); its writable places are open to it."""

    def __init__(self, executable: str) -> None:
        self.executable = executable

    def wrap(self, view: View, argv: list[str], capabilities: bool = False) -> tuple[list[str], tuple[int, ...]]:
        """The command that runs ``argv`` inside the view, and the descriptors it must be given (none). With
        ``capabilities``, it keeps them (inside its own user namespace where the engine is not root): the warm
        process needs them to build each sample's namespaces, and makes each sample's user namespace itself; no
        sample keeps them. Where the engine is root, ``argv`` (without ``capabilities``) starts with a Python
        interpreter inside the view."""
        user = sample_user()
        if user is None:
            namespaces = ["--unshare-all", "--uid", "0", "--gid", "0"]
            capability = ["--cap-add" if capabilities else "--cap-drop", "ALL"]
        else:
            namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
                          *([] if view.network else ["--unshare-net"])]
            capability = ["--cap-add", "ALL"] if capabilities else [
                "--cap-drop", "ALL", *(arg for name in _LAUNCHER_CAPABILITIES for arg in ("--cap-add", name))]
            if not capabilities:
                if not Path(argv[0]).name.startswith("python"):
                    raise ValueError(f"where the engine is root, a sample's command starts with a Python interpreter "
                                     f"(its user namespace's launcher), not {argv[0]}")
                argv = [argv[0], "-I", "-S", "-c", _launcher(), str(user), HOME, *argv]
        args = [self.executable, *namespaces, *(["--share-net"] if view.network and user is None else []),
                "--die-with-parent", "--new-session", *capability,
                "--perms", "0777", "--size", str(view.tmpfs_bytes), "--tmpfs", "/",  # the sample's writable place
                "--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--size", str(min(view.tmpfs_bytes, 64 << 20)), "--tmpfs", "/dev/shm",
                *(arg for folder, mode in SCRATCH for arg in ("--perms", f"{mode:04o}", "--dir", folder))]
        inside = [Path(seen) for _, seen in view.binds] + ([view.data.at] if view.data else []) + list(view.aliases)
        made = {Path("/"), *(Path(folder) for folder, _ in SCRATCH)}
        for folder in sorted({parent for path in inside for parent in path.parents} - made,
                             key=lambda folder: len(folder.parts)):  # the way to a bind or a link, open to the sample's user
            args += ["--perms", "0755", "--dir", str(folder)]
        for path, target in system_entries():
            args += ["--symlink", target, path] if target else ["--ro-bind", path, path]
        args += ["--ro-bind", str(_etc()), "/etc"]
        for host, inside in view.binds:
            args += ["--ro-bind", str(host), str(inside)]
        staged = _Staging(view.staging)
        for path, content in view.masks:
            args += ["--ro-bind", staged.file(content), str(path)]
        if view.data is not None:
            args += ["--ro-bind", staged.data(view.data), str(view.data.at)]
        at = view.tree_at  # the project tree, where the tests run (some write there)
        for folder in (Path(), *view.tree.folders):
            args += ["--perms", "0777", "--dir", str(at / folder)]
        for path, target in view.tree.links:
            args += ["--symlink", str(target), str(at / path)]
        for path, content in view.tree.files:  # read-only: the tests and the module stay as they were given
            args += ["--ro-bind", staged.file(content, view.tree_mtime), str(at / path)]
        for alias in view.aliases:
            args += ["--symlink", str(at), str(alias)]
        args += ["--remount-ro", "/dev", "--chdir", str(view.workdir), "--", *argv]
        return args, ()


class _Staging:
    """Files written into a view's staging folder, for bubblewrap to bind."""

    def __init__(self, folder: Path | None) -> None:
        self.folder, self.count = folder, 0

    def _next(self) -> Path:
        if self.folder is None:
            raise ValueError("a view that shows files needs a staging folder")
        self.count += 1
        return self.folder / f"staged-{self.count}"

    def file(self, content: bytes, mtime: int | None = None) -> str:
        path = self._next()
        path.write_bytes(content)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        return str(path)

    def data(self, data: DataFolder) -> str:
        path = self._next()
        data.write(path)
        return str(path)


class Unconfined:
    """``--repoexec-sandbox=none``: the candidate runs as the user, on the host; the run says so."""

    def wrap(self, view: View, argv: list[str]) -> tuple[list[str], tuple[int, ...]]:
        view.tree.materialise(view.tree_at)
        if view.data is not None:
            view.data.write(view.data.at)
        return argv, ()


Sandbox = Bubblewrap | Unconfined


def system_entries() -> list[tuple[str, str | None]]:
    """The host's system folders as a sandbox shows them: (path, None) bound read-only, (path, target) a link."""
    return [(path, os.readlink(path) if os.path.islink(path) else None) for path in _SYSTEM
            if os.path.islink(path) or os.path.isdir(path)]


@functools.cache
def _etc() -> Path:
    """The few files of the host's /etc that a sample may read, copied once per process into one folder: one
    mount instead of one a file (each costs a sample time), and nothing else of /etc (shadow files) in sight.
    What this user may not read (``/etc/ssl/private`` when it is not root) is left out: the sample may not either."""
    folder = Path(tempfile.mkdtemp(prefix="repoexec-etc-"))
    folder.chmod(0o755)  # shown as /etc to the sample user where the engine is root
    atexit.register(shutil.rmtree, folder, True)
    for name in _ETC:
        source = Path("/etc", name)
        if not _readable(source):
            continue
        if source.is_symlink() or source.is_file():
            shutil.copy2(source, folder / name, follow_symlinks=False)
        elif source.is_dir():
            shutil.copytree(source, folder / name, symlinks=True,
                            ignore=lambda at, names: [n for n in names if not _readable(Path(at, n))])
    _sample_entries(folder)
    return folder


def _sample_entries(etc: Path) -> None:
    """The sample's user, root of its own user namespace, first in the sample's passwd and group files, with
    ``HOME`` as its home: RepoExec's tests ran as root in a container, and some compare the user's name, ids or
    home with it (getpass.getuser(), pwd, grp, ``~``)."""
    shell = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"  # root's, as Debian's passwd has it
    for file, entry in (("passwd", f"root:x:0:0:root:{HOME}:{shell}\n"), ("group", "root:x:0:\n")):
        path = etc / file
        kept = path.read_text().splitlines(keepends=True) if path.is_file() and not path.is_symlink() else []
        path.unlink(missing_ok=True)
        path.write_text(entry + "".join(line for line in kept if line.split(":")[2:3] != ["0"]))


def _readable(path: Path) -> bool:
    """A link (copied as it is), a file the sample's user may read, or a folder it may list and enter: this
    user's, or anyone's where the engine is root (its samples run as the sample user)."""
    if path.is_symlink():
        return True
    if sample_user() is not None:
        wanted = stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0)
        try:
            return path.stat().st_mode & wanted == wanted
        except OSError:
            return False
    return os.access(path, os.R_OK | os.X_OK if path.is_dir() else os.R_OK)


def make_sandbox(kind: str) -> Sandbox:
    """The sandbox the run asked for, checked to work here before any sample runs."""
    if kind == "none":
        return Unconfined()
    problem = probe()
    if problem:
        raise SandboxUnavailable(problem)
    return Bubblewrap(shutil.which("bwrap") or "bwrap")


@functools.cache
def probe() -> str | None:
    """Why bubblewrap cannot make a sandbox on this machine, and what to do about it; None when it can (asked
    once per process). Only a missing bubblewrap gets the hint to install it."""
    executable = shutil.which("bwrap")
    if executable is None:
        return f"bubblewrap (bwrap) is not installed; {INSTALL_HINT}"
    view, argv = trivial_sample()
    try:
        done = subprocess.run(Bubblewrap(executable).wrap(view, argv)[0], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap at {executable} could not start: {exc}"
    if done.returncode == 0:
        return None
    error = done.stderr.decode("utf-8", "replace").strip() or f"exit status {done.returncode}"
    if not user_namespaces_refused(error):
        return f"bubblewrap at {executable} failed: {error}"
    if in_container():
        return (f"bubblewrap cannot create its namespaces in this container ({error}): its seccomp profile or "
                f"its runtime refuses user namespaces; {CONTAINER_HINT}")
    return (f"bubblewrap cannot create its namespaces here ({error}): user namespaces are disabled "
            "(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces above 0, or "
            "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04 and later); or run candidates "
            "unconfined, knowingly, with --repoexec-sandbox=none")


def trivial_sample() -> tuple[View, list[str]]:
    """The smallest sample: the engine's own Python doing nothing, in an empty view (where the engine is root, a
    sample's first process is a Python interpreter, the launcher of its user namespace)."""
    home = Path(sys.base_prefix).resolve()
    system = [Path(path) for path, _ in system_entries()]
    binds = () if any(home == folder or folder in home.parents for folder in system) else ((home, home),)
    view = View(Tree((), (), ()), Path("/sample"), binds=binds, workdir=Path("/"), tmpfs_bytes=1 << 20)
    return view, [os.path.realpath(getattr(sys, "_base_executable", sys.executable)), "-c", "pass"]


def user_namespaces_refused(error: str) -> bool:
    """Whether bubblewrap's error is the kernel (or a seccomp profile) refusing it namespaces."""
    return any(sign in error for sign in ("Operation not permitted", "No space left on device",
                                          "Permission denied", "Creating new namespace failed",
                                          "No permissions to create new namespace"))


def in_container() -> bool:
    """Whether this process runs in a Docker or Podman container (or another that says so)."""
    return (os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
            or bool(os.environ.get("container")))


def python_home(python: Path) -> Path:
    """The installation a virtualenv's interpreter comes from (what the sandbox must show for it to start)."""
    config = python.parent.parent / "pyvenv.cfg"
    for line in config.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).resolve().parent
    return Path(os.path.realpath(python)).parent.parent


@dataclass(frozen=True)
class Limits:
    """What one sample may use. The process limits are set inside the test process before any candidate code
    runs (soft and hard, so it cannot raise them); the engine enforces the output limit and the wall clock."""

    memory: int = 4 << 30  # bytes of address space of each process
    processes: int = 64  # processes and threads of the sample
    file_size: int = 256 << 20  # bytes of the largest file it may write
    tmpfs: int = 256 << 20  # bytes it may write: its root, /tmp, HOME and project tree together
    cpu: int = 600  # seconds of CPU time of each process
    open_files: int = 256
    output: int = 8 << 20  # bytes of stdout and stderr, after which the sample is stopped

    def overridden(self, own: dict[str, int]) -> Limits:
        """These limits, with a problem's own in place of the run's."""
        return replace(self, **own) if own else self

    def rlimits(self) -> str:
        """The process limits as the inner plugin's ``--repoexec-limits`` takes them."""
        return (f"as={self.memory},nproc={self.processes},fsize={self.file_size},cpu={self.cpu},"
                f"nofile={self.open_files}")


LIMIT_FIELDS = {"memory": "size", "processes": "count", "file_size": "size", "tmpfs": "size", "cpu": "seconds",
                "open_files": "count", "output": "size"}  # a problem's [limits] keys, as Limits names them


def limit_option(error_type: ErrorType | str | None) -> str | None:
    """The option (and manifest field) to raise when a sample failed at a limit, named for people."""
    if error_type == ErrorType.TIMEOUT:
        return "--repoexec-timeout or timeout in problem.toml"
    name = _LIMIT_OF_ERROR.get(error_type_of(str(error_type)))
    return f"--repoexec-{name.replace('_', '-')} or limits.{name} in problem.toml" if name else None


_LIMIT_OF_ERROR = {ErrorType.MEMORY_LIMIT: "memory", ErrorType.PROCESS_LIMIT: "processes",
                   ErrorType.OUTPUT_LIMIT: "output", ErrorType.CPU_LIMIT: "cpu", ErrorType.FILE_SIZE_LIMIT: "file_size",
                   ErrorType.DISK_LIMIT: "tmpfs", ErrorType.OPEN_FILES_LIMIT: "open_files"}


def parse_size(text: str) -> int:
    """Bytes from ``512M``, ``4G``, ``100K`` or a plain number; ValueError otherwise."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "")
    value = float(number) * units[unit]
    if value < 1:
        raise ValueError(f"{text!r} is not a positive size")
    return int(value)
