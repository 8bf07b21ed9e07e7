"""The warm process: one per (engine worker, project environment), started inside the sandbox, that imports
pytest, the inner plugin and the project's third-party modules once and forks a fresh test process for each
sample.

It never runs candidate code, nor the project's own modules: those are imported afresh by each test process,
so nothing of the reference reaches a candidate's run. Nor does it read a sample's request (its module, tests
and expected values): the init it forks does, so that no sample's data is in the memory later samples are
forked from. Each sample gets, as with a fresh bubblewrap:

    warm process --fork, into new mount, PID, IPC, UTS and network namespaces--> init (A): PID 1 of the
                 sample; reads its request, builds its root (a bounded tmpfs with the read-only binds and the
                 project tree), pivots into it, reaps
                 --fork--> the test process (B): a new session, uid 0 of a user namespace (its own where the
                           engine is root: repoexec_userns), no capabilities, ``pytest.console_main()`` with
                           the sample's arguments

The init dies with its parent (``PR_SET_PDEATHSIG``), and every process of a PID namespace dies with its init,
so killing the init ends the whole sample.

A problem's samples may instead fork from a zygote of that problem, which the warm process forks once: it builds
the problem's root (the sample's, less the sample's files: its module, its tests, its expected values), pivots
into it, and imports the project's modules that the candidate cannot change (those that do not import the focal
module), at the paths a sample sees them. The focal module itself is refused there, so nothing of the
reference is imported; a module that asks for it is left to the samples. Its samples are run as above, with
their roots built inside the zygote's, so that each sample still gets a root, a /tmp and a HOME of its own.

The test process writes the same records through the same inner plugin as a fresh ``python -m pytest``; the engine reads them and judges alike.

Talks to the engine over one Unix socket: length-prefixed JSON messages, a sample's pipes and the descriptor
of its request passed along (SCM_RIGHTS). Runs under the project's interpreter: standard library and pytest only.
"""

import array
import base64
import contextlib
import ctypes
import gc
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback

if __package__:  # the engine imports this module for its messages and paths, as part of its own package
    from .repoexec_userns import become_namespace_root, check, drop_capabilities, serve_maps
else:
    from repoexec_userns import become_namespace_root, check, drop_capabilities, serve_maps

_LIBC = ctypes.CDLL(None, use_errno=True)
_NEWNS, _NEWPID, _NEWIPC, _NEWUTS, _NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x04000000, 0x40000000
_RDONLY, _NOSUID, _NODEV, _NOEXEC, _REMOUNT, _BIND, _REC, _PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
_DETACH = 2
_PDEATHSIG, _SET_DUMPABLE = 1, 4
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, 155)
_STATVFS_FLAGS = ((os.ST_RDONLY, _RDONLY), (os.ST_NOSUID, _NOSUID), (os.ST_NODEV, _NODEV), (os.ST_NOEXEC, _NOEXEC))
NEW_ROOT = "/repoexec/root"  # an empty folder of the warm process's sandbox where each sample's root is built
_STAGING = "/repoexec/staging"  # where the files shown over a sample's binds are made, outside its root
RESULTS_FD, TOKEN_FD, JUDGE_FD = 3, 4, 5  # where the test process finds its pipes (a judge: its channel)
_HEADER = struct.Struct(">I")
_MAX_FDS = 8


# --- messages --------------------------------------------------------------------------------------------

def send(sock, message, fds=()):
    data = json.dumps(message).encode("utf-8")
    header = _HEADER.pack(len(data))
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([header], ancillary)
    sock.sendall(data)


def receive(sock):
    """(message, fds), or (None, []) at the end of the stream."""
    header, ancillary, _, _ = sock.recvmsg(_HEADER.size, socket.CMSG_SPACE(_MAX_FDS * 4))
    fds = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(array.array("i", data[: len(data) - len(data) % 4]))
    if not header:
        return None, fds
    while len(header) < _HEADER.size:
        more = sock.recv(_HEADER.size - len(header))
        if not more:
            return None, fds
        header += more
    size, = _HEADER.unpack(header)
    body = bytearray()
    while len(body) < size:
        more = sock.recv(min(size - len(body), 1 << 20))
        if not more:
            return None, fds
        body += more
    return json.loads(body.decode("utf-8")), fds


# --- system calls ----------------------------------------------------------------------------------------

def _mount(source, target, fstype, flags, data=None):
    check(_LIBC.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), f"mount {target}")


def _bind_read_only(source, target):
    """A read-only bind, keeping the flags a mount from a more privileged namespace has locked."""
    _mount(source, target, None, _BIND | _REC)
    kept = sum(flag for st_flag, flag in _STATVFS_FLAGS if os.statvfs(target).f_flag & st_flag)
    _mount(None, target, None, _BIND | _REMOUNT | _RDONLY | kept)


def _bind_data(content, target):
    """``content`` shown read-only at ``target`` (an existing file), as bubblewrap's --ro-bind-data does: from a
    file of a staging tmpfs that is not in the sample's root (it goes with the old root at the pivot)."""
    staged = os.path.join(_STAGING, str(len(os.listdir(_STAGING))))
    with open(staged, "wb") as handle:
        handle.write(content)
    _mount(staged, target, None, _BIND)
    _mount(None, target, None, _BIND | _REMOUNT | _RDONLY | _NOSUID | _NODEV)


def _prctl(option, value):
    check(_LIBC.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def _die_with_parent(parent):
    _prctl(_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)


def namespaces(request):
    """The namespaces a sample's init is made in (clone's flags), from what the engine asked; none without a
    sandbox. The engine sends them beside the request, which the process that forks the init never reads."""
    if not request["confined"]:
        return 0
    return _NEWNS | _NEWPID | _NEWIPC | _NEWUTS | (0 if request["view"]["network"] else _NEWNET)


def _fork_into(flags):
    """``os.fork()``, the child made in new namespaces (clone's flags; none: a plain fork) and PID 1 of its PID
    namespace: one fork where ``unshare`` would need two (a new PID namespace is its caller's children's). This
    process's children are put in a new PID namespace for the fork and in its own again after; the child makes
    its other namespaces itself. (A raw clone would skip glibc's fork handlers: OpenBLAS's, which stops its
    threads before a fork, left a child waiting for threads it does not have.)"""
    if not flags:
        return os.fork()
    own, pid = os.open("/proc/self/ns/pid", os.O_RDONLY), -1
    try:
        check(_LIBC.unshare(_NEWPID), "unshare")
        pid = os.fork()
    finally:
        if pid != 0:  # this process, whose later children are in its own PID namespace again
            check(_LIBC.setns(own, _NEWPID), "setns")
            os.close(own)
    if pid == 0:
        os.close(own)
        check(_LIBC.unshare(flags & ~_NEWPID), "unshare")
    return pid


def _loopback_up():
    import fcntl

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(probe, 0x8913, request))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(probe, 0x8914, struct.pack("16sh", b"lo", flags | 0x1 | 0x40))  # SIOCSIFFLAGS: UP, RUNNING


def _exit_status(status):
    """A child's wait status as a shell (and bubblewrap) passes it on: its code, or 128 + the signal."""
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


# --- one sample ------------------------------------------------------------------------------------------

def _build_root(request):
    """The sample's root under NEW_ROOT, as bubblewrap builds it for a fresh process, then pivot into it (a
    zygote's root holds the places where its samples' roots are built in turn)."""
    view = request["view"]
    _mount(None, "/", None, _REC | _PRIVATE)
    os.makedirs(_STAGING, exist_ok=True)
    _mount("tmpfs", _STAGING, "tmpfs", _NOSUID | _NODEV, "mode=0700")
    _mount("tmpfs", NEW_ROOT, "tmpfs", _NOSUID | _NODEV, f"size={view['tmpfs']},mode=0777")  # the sample's

    def inside(path):
        return NEW_ROOT + path

    for path, target in view["system"]:
        if target is None:
            os.makedirs(inside(path), exist_ok=True)
            _bind_read_only(path, inside(path))
        else:
            os.symlink(target, inside(path))
    for host, seen in view["binds"]:
        if os.path.isdir(host):
            os.makedirs(inside(seen), exist_ok=True)
        else:
            os.makedirs(os.path.dirname(inside(seen)), exist_ok=True)
            open(inside(seen), "w").close()
        _bind_read_only(host, inside(seen))
    for path, content in view["masks"]:  # files of the binds shown with the sample's own content
        _bind_data(base64.b64decode(content), inside(path))
    data = view["data"]
    if data is not None:  # the expected outputs: a read-only tmpfs made of the files given
        os.makedirs(inside(data["at"]), exist_ok=True)
        _mount("tmpfs", inside(data["at"]), "tmpfs", _NOSUID | _NODEV, f"size={data['size']},mode=0755")
        for path, content in data["files"]:
            target = os.path.join(inside(data["at"]), path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(base64.b64decode(content))
        _mount(None, inside(data["at"]), None, _REMOUNT | _RDONLY | _NOSUID | _NODEV)
    for folder, mode in view["scratch"]:  # /tmp, open to all, and HOME, the sample user's
        os.makedirs(inside(folder), exist_ok=True)
        os.chmod(inside(folder), mode)
    os.makedirs(inside("/proc"), exist_ok=True)
    if request.get("zygote"):  # still in the warm process's PID namespace: its /proc, the one a user namespace
        _mount("/proc", inside("/proc"), None, _BIND | _REC)  # lets the zygote's samples mount theirs over
    else:
        _mount("proc", inside("/proc"), "proc", _NOSUID | _NODEV | _NOEXEC)
    os.makedirs(inside("/dev"), exist_ok=True)
    _mount("/dev", inside("/dev"), None, _BIND | _REC)
    _mount("tmpfs", inside("/dev/shm"), "tmpfs", _NOSUID | _NODEV, f"size={min(view['tmpfs'], 64 << 20)},mode=1777")
    kept = sum(flag for st_flag, flag in _STATVFS_FLAGS if os.statvfs(inside("/dev")).f_flag & st_flag)
    _mount(None, inside("/dev"), None, _BIND | _REMOUNT | _RDONLY | kept)
    for folder in view["folders"]:  # the project tree's, where tests may write
        os.makedirs(inside(folder), exist_ok=True)
        os.chmod(inside(folder), 0o777)
    for path, target in view["links"]:
        os.symlink(target, inside(path))
    for path, content in view["files"]:  # read-only, as the engine gave them
        with open(inside(path), "wb") as handle:
            handle.write(base64.b64decode(content))
        if view.get("mtime") is not None:  # the time a pyc of the tests' module names
            os.utime(inside(path), (view["mtime"], view["mtime"]))
        _mount(inside(path), inside(path), None, _BIND)
        _mount(None, inside(path), None, _BIND | _REMOUNT | _RDONLY | _NOSUID | _NODEV)
    for alias, target in view["aliases"]:
        os.makedirs(os.path.dirname(inside(alias)), exist_ok=True)
        os.symlink(target, inside(alias))
    if request.get("zygote"):
        for folder in (NEW_ROOT, _STAGING):
            os.makedirs(inside(folder), exist_ok=True)
    os.chdir(NEW_ROOT)
    check(_LIBC.syscall(_SYS_PIVOT_ROOT, b".", b"."), "pivot_root")  # the old root stacked under the new
    check(_LIBC.umount2(b".", _DETACH), "umount the old root")
    os.chdir("/")


def _read_all(fd):
    """Everything until the end of the descriptor, which is then closed."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _in_child(work):
    """What ``work()`` returns (JSON), run in a child: what it imports or changes stays out of this process. None
    where the child ended without an answer."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        try:
            os.write(write, json.dumps(work()).encode("utf-8"))
        finally:
            os._exit(0)
    os.close(write)
    answer = _read_all(read)
    os.waitpid(child, 0)
    return json.loads(answer) if answer else None


def _init(fds, alive):
    """A: PID 1 of the sample (confined), whose end ends every process in the namespace. It reads the sample's
    request (the process it was forked from never does: nothing of one sample, its tests, expected values or
    module, is in the memory that later samples are forked from). Once the test process is started it holds
    nothing the sample may reach: no descriptor of the warm process (its log), and it is not dumpable, so that
    its memory (a copy of the warm process's) cannot be read through /proc/1."""
    _prctl(_PDEATHSIG, signal.SIGKILL)
    if select.select([alive], [], [], 0)[0]:  # closed: its parent died before the line above
        os._exit(1)
    os.close(alive)
    os.setpgid(0, 0)  # the group its parent kills (its parent sets it too, whichever comes first)
    *fds, payload = fds
    request = json.loads(_read_all(payload).decode("utf-8"))
    if request["confined"]:
        _build_root(request)
        if not request["view"]["network"]:
            _loopback_up()
    mapper = None
    if request["confined"] and request["user"] is not None:  # the test process's user namespace, mapped here
        (asked, ask), (answer, answered) = os.pipe(), os.pipe()
        mapper = (ask, answer)
    test = os.fork()
    if test == 0:
        if mapper:
            os.close(asked)
            os.close(answered)
        _test_process(request, fds, mapper)
        return True
    if mapper:
        for fd in mapper:
            os.close(fd)
        serve_maps(test, request["user"][0], asked, answered)  # before this process drops its capabilities
    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.closerange(3, 1 << 16)
    if request["confined"]:
        _prctl(_SET_DUMPABLE, 0)
        drop_capabilities()
    while True:  # orphans are reparented here: reap them until the test process ends
        pid, status = os.wait()
        if pid == test:
            os._exit(_exit_status(status))


_PROGRAM = ["pytest"]  # what the test process runs: pytest, or a split sample's candidate process


def _test_process(request, fds, mapper=None):
    """C: made ready to run the sample's pytest as ``python -m pytest ARGS`` would in a fresh process (``main``
    runs it, at the top level, so that the interpreter ends as a fresh one would); or, forked from a judge's
    zygote, ready to run the tests of the session collected there (``_collect``)."""
    output, results, token, *channel = fds  # channel: a judge's socket to its candidate's process
    if _REFUSED in sys.meta_path:  # forked from a zygote: the sample's own module is there to import
        sys.meta_path.remove(_REFUSED)
    if request["confined"]:  # without a sandbox it stays in the init's process group, which is killed whole
        os.setsid()
        if request["user"] is not None:  # the host user that is root of the sample's own user namespace, and HOME
            become_namespace_root(*request["user"], mapper)
        drop_capabilities()
    if _COLLECTED:  # the descriptors of the session collected in the zygote stay as they are
        _output_where_the_zygotes_went(output)
        _COLLECTED["sample"] = (results, token, *channel, None)[:3]
        _COLLECTED["limits"] = next((json.loads(argument.partition("=")[2]) for argument in request["arguments"]
                                     if argument.startswith("--repoexec-test-timeouts=")), {})
    else:
        null = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((null, 0), (output, 1), (output, 2), (results, RESULTS_FD), (token, TOKEN_FD),
                           *((fd, JUDGE_FD) for fd in channel)):
            os.dup2(fd, target)
        os.closerange((JUDGE_FD if channel else TOKEN_FD) + 1, 1 << 16)
    os.chdir(request["workdir"])
    os.environ.clear()
    os.environ.update(request["environment"], PWD=request["workdir"])  # PWD: as bubblewrap's --chdir sets it
    time.tzset()
    import tempfile

    tempfile.tempdir = None
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:  # as a fresh import seeds it (the random module reseeds itself after fork)
        numpy_random.seed()
    gc.enable()
    if _COLLECTED:
        return
    _path_of_python_m(request)
    import pytest

    _PROGRAM[0] = request.get("program", "pytest")
    sys.argv[:] = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py"), *request["arguments"],
                   f"--repoexec-results-fd={RESULTS_FD}", f"--repoexec-token-fd={TOKEN_FD}",
                   *([f"--repoexec-judge-fd={JUDGE_FD}"] if channel else [])]


def _path_of_python_m(request):
    """sys.path as a fresh ``python -m`` sets it: the working directory first, then PYTHONPATH's folders."""
    extra = [folder for folder in request["environment"].get("PYTHONPATH", "").split(os.pathsep) if folder]
    sys.path[:] = [request["workdir"], *extra, *sys.path[1:]]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()


# --- a judge's zygote: its session collected once ---------------------------------------------------------

_COLLECTED = {}  # in a judge's zygote: the placeholder its output goes to, and the sample's descriptors


def _collect(request, control):
    """A judge's zygote: the tests' session configured and collected once, then a sample forked for each run of
    them. The judge holds no code of the candidate's (its focal module has a stub in the candidate's place), so
    what it collected is the same for every sample. Returns the exit status in a sample's test process; the
    zygote itself ends in ``_ForkAfterCollection`` when the engine closes its socket."""
    import pytest

    placeholder = os.memfd_create("repoexec-output")  # stands where a sample's output goes, until there is one
    for target in (1, 2):
        os.dup2(placeholder, target)
    _COLLECTED["placeholder"] = os.fstat(placeholder)[:2]
    _path_of_python_m(request)
    pytest.hookimpl(tryfirst=True)(_ForkAfterCollection.pytest_runtestloop)  # before the session's own loops
    fork = _ForkAfterCollection(control)
    try:
        status = pytest.main([*request["arguments"], "--repoexec-attach"], plugins=[fork])
    except BaseException as exc:
        status = f"{type(exc).__name__}: {exc}"
    if not _COLLECTED.get("sample"):  # pytest stopped before the tests: no sample can run from here
        send(control, {"error": f"the judge's session ended before its tests ({status}){_tail(placeholder)}"})
        os._exit(1)
    return status


class _ForkAfterCollection:
    """The judge's zygote stops at the start of the test loop and forks each sample from there."""

    def __init__(self, control):
        self.control = control

    def pytest_runtestloop(self, session):
        if threading.active_count() > 1:
            raise RuntimeError("collecting the tests started a thread")  # a fork keeps only the thread that forks
        if getattr(sys.modules.get("repoexec_judge"), "CALLED_BEFORE_CHANNEL", False):
            # the project's code calls the target while it is imported: only a sample, whose channel is open
            # before its tests are collected, can collect them
            raise RuntimeError("collecting the tests called the candidate, which a zygote does not have")
        import repoexec_inner

        repoexec_inner.read_for_failures(session.items)
        sys.stdout.flush()
        sys.stderr.flush()
        gc.collect()
        gc.freeze()
        send(self.control, {"ready": [], "collected": len(session.items)})
        if not _serve(self.control):
            os._exit(0)
        # the sample's: its pipes, limits and channel, before any test runs
        repoexec_inner.attach(session.config, *_COLLECTED["sample"])
        repoexec_inner.limit_tests(session.items, _COLLECTED["limits"])  # its tests' own (the engine's ``_zygote``)


def _output_where_the_zygotes_went(output):
    """In a sample forked from a judge's zygote: its output where the zygote's placeholder was, on every
    descriptor (pytest's capture kept copies of stdout and stderr, faulthandler one of stderr)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd != output and os.fstat(fd)[:2] == _COLLECTED["placeholder"]:
                os.dup2(output, fd)
        except OSError:
            pass  # the listing's own descriptor, gone
    os.close(output)


def _tail(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    told = os.read(fd, 1 << 16).decode("utf-8", "replace").strip()[-_TAIL:]
    return f": {told}" if told else ""


_TAIL = 2000


# --- a problem's zygote ----------------------------------------------------------------------------------

class _Refusal:
    """A meta path finder that refuses the focal module and its submodules, counting each time it is asked."""

    def __init__(self, name):
        self.name = name
        self.asked = 0

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name or fullname.startswith(self.name + "."):
            self.asked += 1
            raise ImportError(f"{fullname} is the focal module: a zygote does not import it", name=fullname)
        return None


_REFUSED = _Refusal("")  # replaced in a zygote; its samples take it out of sys.meta_path


def _importable_prefix(names):
    """The longest prefix of ``names`` whose imports succeed without asking for the focal module, found in
    children (an import that fails, or that asked for the focal module and got over the refusal, leaves state
    that a sample's fresh import would not have): each round drops the first name that did not import."""
    names = list(names)

    def first_failing():
        for index, name in enumerate(names):
            asked = _REFUSED.asked
            try:
                importlib.import_module(name)
            except BaseException:
                return index
            if _REFUSED.asked != asked:
                return index
        return len(names)

    for _ in range(8):
        failed = _in_child(first_failing) or 0
        if failed == len(names):
            return names
        names = names[:failed] + names[failed + 1:]
    return names[:failed]


class _Emptied:
    """A meta path finder and loader that answers the focal module with an empty module (in a trial child only)."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname == self.name else None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        pass


def _patterns_compiled(names, focal):
    """The regular expressions that importing ``names`` compiles, as data: [kind, pattern, flags], found in a
    child where the focal module is an empty module, so that modules a zygote leaves to its samples (their
    package imports the focal module) run their top level as far as they can. None of the reference's own
    patterns is among them. A pattern whose compile warns or prints (``re.DEBUG``) is left out: a sample's own
    compile must still do that."""
    import re
    import warnings

    def imported():
        found = []
        compiled = re._compile

        def recorded(pattern, flags):
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                made = compiled(pattern, flags)
            if isinstance(pattern, (str, bytes)) and not warned and not int(flags) & re.DEBUG:
                found.append(["str", pattern, int(flags)] if isinstance(pattern, str)
                             else ["bytes", base64.b64encode(pattern).decode("ascii"), int(flags)])
            return made

        re._compile = recorded
        sys.meta_path[sys.meta_path.index(_REFUSED)] = _Emptied(focal)
        for name in names:
            try:
                importlib.import_module(name)
            except BaseException:
                pass
        return found

    return _in_child(imported) or []


def _compile(patterns):
    """Each pattern compiled as the samples' imports will compile it: ``re``'s cache then hands them the same
    kind of object a compile would make, for a fraction of the time (python-string-utils' ``_regex``: 8 ms of
    every candidate's process). The cache is ``re``'s own, bounded as always."""
    import re

    for kind, pattern, flags in patterns:
        try:
            re.compile(pattern if kind == "str" else base64.b64decode(pattern), flags)
        except Exception:  # the sample's own import meets the same error
            pass


def _zygote(fds, parent):
    """A problem's zygote (see the module's docstring); returns True in a sample's test process, as ``_serve``
    does, and ends when the engine closes its socket."""
    global _REFUSED
    _die_with_parent(parent)
    own, payload = fds
    request = json.loads(_read_all(payload).decode("utf-8"))
    control = socket.socket(fileno=own)
    try:
        check(_LIBC.unshare(_NEWNS), "unshare")
        _build_root(request)
        os.chdir(request["workdir"])
        os.environ.clear()
        os.environ.update(request["environment"], PWD=request["workdir"])
        time.tzset()
        if request.get("collect"):
            return _end(_collect(request, control))
        kept = list(sys.path)
        sys.path[:] = [*request["path"], *sys.path[1:]]  # as pytest will have it when the tests import
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        _REFUSED = _Refusal(request["focal"])
        sys.meta_path.insert(0, _REFUSED)
        names = _importable_prefix(request["imports"])
        for name in names:
            importlib.import_module(name)
        if _REFUSED.asked:
            raise RuntimeError("an import asked for the focal module where a trial's did not")
        if names != request["imports"]:  # the modules left to the samples: their patterns compiled here
            _compile(_patterns_compiled(request["imports"], request["focal"]))
        if threading.active_count() > 1:  # a fork keeps only the thread that forks: samples would lack it
            raise RuntimeError("an import started a thread")
        sys.path[:] = kept  # a sample's test process sets it as a fresh process has it
    except BaseException as exc:
        send(control, {"error": f"{type(exc).__name__}: {exc}"})
        os._exit(1)
    gc.collect()
    gc.freeze()
    send(control, {"ready": names})
    if _serve(control):
        return True
    os._exit(0)


# --- the warm process ------------------------------------------------------------------------------------

def _preload(config):
    """pytest and the plugins the test process names with ``-p`` (they have no assertions for pytest to
    rewrite), the candidate's process's server, then the third-party and standard modules that a focal module
    and its tests import, found by importing those in a child (the project's own modules stay out of this
    process)."""
    import unittest.mock  # noqa: F401  (a judge watches the tests' patches: repoexec_judge._watch_patches)

    import pytest  # noqa: F401
    import pytest_timeout  # noqa: F401
    import repoexec_inner  # noqa: F401
    import repoexec_serve  # noqa: F401  (a split sample's candidate's process runs it: once here, not in each)
    import _pytest.config
    import _pytest.main
    import _pytest.python

    _pytest.config.get_config()  # imports pytest's built-in plugins, as every session does

    def imported():
        os.chdir(config["source_root"])
        sys.path[:] = [config["import_root"], *sys.path[1:]]
        before = set(sys.modules)
        for name in config["modules"]:
            try:
                importlib.import_module(name)
            except BaseException:
                pass  # the test process says why, if it matters
        project = tuple(config["project_paths"])
        return [name for name, module in list(sys.modules.items())
                if name not in before and _importable(module) and not _origin(module).startswith(project)]

    names = _in_child(imported) or []
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except BaseException as exc:
            raise RuntimeError(f"importing {name} failed: {type(exc).__name__}: {exc}") from None
    return len(names)


def _origin(module):
    spec = getattr(module, "__spec__", None)
    return (spec.origin or "") if spec else ""


def _importable(module):
    """Whether importing the module by its name again finds what was imported: from a file, built in or frozen
    (not a module that a package made and put in sys.modules itself, nor a namespace package)."""
    origin = _origin(module)
    return origin in ("built-in", "frozen") or os.path.isfile(origin)


def _serve(control):
    """Run samples until the engine closes the socket. Returns True in a forked test process, ready to run its
    pytest; False in the warm process when it is done. A sample comes as its pipes and a descriptor of its
    request, which only the sample's init reads."""
    me = os.getpid()
    while True:
        message, fds = receive(control)
        if message is None:
            return False
        _reap()
        if message.get("op") == "kill":  # for a sample that ended before it came
            continue
        if message.get("op") == "zygote":  # its request comes as a descriptor that only the zygote reads
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            child = os.fork()
            if child == 0:
                control.close()
                theirs.close()
                try:
                    if _zygote((ours.detach(), *fds), me):
                        return True
                except BaseException:
                    traceback.print_exc()
                os._exit(126)
            ours.close()
            for fd in fds:
                os.close(fd)
            send(control, {"zygote": child}, (theirs.fileno(),))
            theirs.close()
            continue
        alive, keeping = os.pipe()  # held here until the sample is collected: the init sees it closed if not
        init = _fork_into(message.get("namespaces", 0))
        if init == 0:
            control.close()
            os.close(keeping)
            try:
                if _init(fds, alive):
                    return True  # in the test process
            except BaseException:
                traceback.print_exc()
            os._exit(126)
        with contextlib.suppress(OSError):  # it may have set its group already, or be gone
            os.setpgid(init, init)
        for fd in (alive, *fds):
            os.close(fd)
        ended = os.pidfd_open(init)
        while True:
            ready, _, _ = select.select([control, ended], [], [])
            if ended in ready:
                _, status, usage = os.wait4(init, 0)
                os.close(ended)
                os.close(keeping)
                # with the CPU of the sample's whole tree (what its init and the processes it waited for used):
                # the engine's figure of what a sample costs, where no process of the sample's can reach it
                send(control, {"exit": _exit_status(status), "cpu": [usage.ru_utime, usage.ru_stime]})
                break
            message, _ = receive(control)  # "kill", or the engine is gone
            try:
                os.killpg(init, signal.SIGKILL)  # the init's death ends the sample's PID namespace
            except ProcessLookupError:
                pass
            if message is None:
                return False


def _reap():
    """Collect the zygotes that have ended (a sample's init is waited for by name)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    control = socket.socket(fileno=int(sys.argv[1]))
    config, _ = receive(control)
    try:
        preloaded = _preload(config)
    except BaseException as exc:
        send(control, {"error": f"{type(exc).__name__}: {exc}" if not isinstance(exc, RuntimeError) else str(exc)})
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    gc.collect()
    gc.freeze()  # the imported modules' objects stay put: a fork shares their pages
    gc.disable()  # nothing is collected between forks: the warm process allocates almost nothing
    send(control, {"ready": preloaded})
    if not _serve(control):
        return 0
    import pytest

    if _PROGRAM[0] == "repoexec_serve":  # a split sample's candidate process: no pytest session
        import repoexec_serve

        _end(repoexec_serve.main(sys.argv[1:]))
    _end(pytest.console_main())


def _end(status):
    """A sample's test process ends as Python ends one: it waits for its threads, runs its exit functions,
    flushes its output; but the warm process's modules, which it would tear down one by one, are let go."""
    import atexit

    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status if isinstance(status, int) else 1)


if __name__ == "__main__":
    sys.exit(main())
