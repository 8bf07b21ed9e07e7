"""What the inner plugin does against the candidate it runs beside: limits set before any candidate code runs,
the engine's kinds for what a limit does to a test, and the checks against known ways of gaming a grader.

A candidate runs in the same interpreter as pytest and this plugin. Two things here cannot be undone by the
code they watch, once set before it runs: the rlimits (hard limits too, and the sandbox drops every capability)
and the seccomp filter (no keyrings, no ptrace or reading another process's memory). The audit hook (PEP 578:
it cannot be removed) refuses to the candidate's own code what only an oracle or a guard-breaker needs. The
rest (``Integrity``, ``watch_classes``) only turns known tricks into failures: code that sets out to defeat this
module can. What judges a pass whatever the trick is outside the process: the engine's decoy check.
"""

import builtins
import ctypes
import errno
import operator
import os
import resource
import struct
import sys
import sysconfig
import traceback

from repoexec_protocol import ErrorType

_RLIMITS = {"as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
            "cpu": resource.RLIMIT_CPU, "nofile": resource.RLIMIT_NOFILE}
_ERRNO_KINDS = {errno.ENOSPC: ErrorType.DISK_LIMIT, errno.EDQUOT: ErrorType.DISK_LIMIT,
                errno.EMFILE: ErrorType.OPEN_FILES_LIMIT, errno.ENFILE: ErrorType.OPEN_FILES_LIMIT,
                errno.EFBIG: ErrorType.FILE_SIZE_LIMIT}
_SPAWNS = ("fork", "spawn", "Popen", "system", "Process", "start", "exec")


HEADROOM = 32 << 20  # address space the test process needs beyond what it holds when the limits are set


def apply_limits(spec):
    """Set ``as=N,nproc=N,...`` as soft and hard limits of this process and all it starts. Returns why the
    memory limit leaves the process no room to go on (it may then die anywhere, even inside pytest), or None."""
    cramped = None
    for part in filter(None, spec.split(",")):
        name, _, value = part.partition("=")
        limit = int(value)
        # CPU time: SIGXCPU at the soft limit (the sample says CPULimit), SIGKILL a second later if it is ignored
        if name == "as" and _address_space() + HEADROOM > limit:
            cramped = (f"the memory limit ({limit >> 20} MiB) is below what the test process needs: it holds "
                       f"{_address_space() >> 20} MiB before any test runs")
        resource.setrlimit(_RLIMITS[name], (limit, limit + 1 if name == "cpu" else limit))
    return cramped


def _address_space():
    """This process's address space in bytes (VmSize), or 0 where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) << 10
    except OSError:
        pass
    return 0


def limit_kind(exc):
    """The engine's kind for an exception that a limit raised, or None."""
    if isinstance(exc, MemoryError):
        return ErrorType.MEMORY_LIMIT
    if isinstance(exc, OSError) and exc.errno in _ERRNO_KINDS:
        return _ERRNO_KINDS[exc.errno]
    if isinstance(exc, OSError) and exc.errno == errno.EAGAIN:
        frames = traceback.extract_tb(exc.__traceback__)
        if frames and any(word in (frames[-1].line or "") for word in _SPAWNS):
            return ErrorType.PROCESS_LIMIT  # fork or spawn refused: the process limit
    return None


_all, _map, _is, _vars = all, map, operator.is_, vars  # as they were before the candidate was imported


class Integrity:
    """What pytest and this plugin rely on, as it stood before the candidate was imported; ``broken()`` says
    what has changed since. A candidate that patches the runner, the reports, a hook's plugins or a builtin
    to make tests pass leaves a trace here."""

    def __init__(self, pluginmanager, own, environment):
        self.pluginmanager = pluginmanager
        self.environment = {name: os.environ.get(name) for name in environment}
        self.plugins = {id(plugin) for plugin in pluginmanager.get_plugins()}
        import _pytest.python
        import _pytest.reports
        import _pytest.runner

        # (namespace, names, values): checked once a test, by identity, in C (a Python loop over some
        # hundred names cost a tenth of a millisecond a test)
        self.watched = []
        for owner in (_pytest.runner, _pytest.runner.CallInfo, _pytest.reports.BaseReport, _pytest.reports.TestReport,
                      _pytest.python, _pytest.python.Function, *own):
            kept = {name: value for name, value in list(vars(owner).items())
                    if callable(value) or isinstance(value, (property, classmethod, staticmethod))}
            self.watched.append((owner, tuple(kept), tuple(kept.values())))
        kept = {name: value for name, value in vars(builtins).items() if not name.startswith("_")}
        self.watched.append((builtins, tuple(kept), tuple(kept.values())))

    def broken(self):
        """What was patched, in a few words, or None."""
        for name, value in self.environment.items():
            if os.environ.get(name) != value:
                return f"the environment variable {name} was changed"
        for owner, names, values in self.watched:
            space = _vars(owner)
            if not _all(_map(_is, _map(space.get, names), values)):
                name = next(name for name, value in zip(names, values) if space.get(name) is not value)
                if owner is builtins:
                    return f"the builtin {name} was replaced"
                return f"{getattr(owner, '__name__', owner)}.{name} was replaced"
        plugins = self.pluginmanager.get_plugins()
        if self.plugins.issuperset(_map(id, plugins)):
            return None
        added = next(plugin for plugin in plugins if id(plugin) not in self.plugins)
        return f"a plugin was registered during the run: {self.pluginmanager.get_name(added)}"


def watch_classes(module_name):
    """Note every class that code of the focal module makes inside a function (a ``<locals>`` class) with an
    ``__eq__`` of its own, as an object equal to anything needs; legitimate functions rarely make one, and a
    value of such a class is how a candidate games ``assert result == expected``. The functions under test
    are left as they are (tests inspect their code, defaults and signature). Returns a function that says
    what was made, or None."""
    made = []
    build = builtins.__build_class__

    def build_class(*args, **kwargs):
        cls = build(*args, **kwargs)
        for klass in getattr(cls, "__mro__", ()):
            if (getattr(klass, "__module__", None) == module_name and "<locals>" in klass.__qualname__
                    and "__eq__" in vars(klass)):
                made.append(f"the candidate made class {klass.__qualname__} with an __eq__ of its own")
                break
        return cls

    builtins.__build_class__ = build_class
    return lambda: made[0] if made else None


# seccomp: the system calls a sample has no use for and a cheat or a channel would: the keyrings (a key added by
# one sample is found by the next where they share a user), ptrace and reading or writing another process's
# memory. x86_64 and aarch64 numbers; any other architecture's calls (the 32-bit ones on x86_64) are refused.
_DENIED = {0xC000003E: (101, 248, 249, 250, 310, 311), 0xC00000B7: (117, 217, 218, 219, 270, 271)}
_SECCOMP_ERRNO, _SECCOMP_ALLOW = 0x00050000 | errno.EPERM, 0x7FFF0000


def deny_system_calls():
    """Install the seccomp filter in this process and all it starts. It can never be removed. Returns why it
    could not be installed, or None."""
    arch = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}.get(os.uname().machine)
    if arch is None:
        return f"no seccomp filter for {os.uname().machine}"
    denied = _DENIED[arch]
    n = len(denied)
    refuse = 5 + n  # the index of the refusing return; a jump from instruction i of j lands at i + 1 + j
    program = [
        (0x20, 0, 0, 4),  # load the architecture
        (0x15, 0, refuse - 2, arch),  # another architecture's call: refuse
        (0x20, 0, 0, 0),  # load the call's number
        (0x35, refuse - 4, 0, 0x40000000),  # an x32 call: refuse
        *((0x15, refuse - (5 + index), 0, number) for index, number in enumerate(denied)),
        (0x06, 0, 0, _SECCOMP_ALLOW),
        (0x06, 0, 0, _SECCOMP_ERRNO),
    ]
    filters = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *line) for line in program))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
    if libc.prctl(22, 2, ctypes.byref(Program(len(program), ctypes.addressof(filters))), 0, 0) != 0:
        return f"prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER): {os.strerror(ctypes.get_errno())}"
    return None


# The audit hook. What only an oracle or a guard-breaker needs, refused where the candidate's code asks for it,
# itself or through the standard library (a thread, linecache, inspect): not where pytest or a plugin does while
# the candidate's frame is below (pytest-timeout dumps every thread's stack from a signal handler).
_REFUSED = {
    "sys._current_frames": "reading every thread's frames", "gc.get_objects": "listing the interpreter's objects",
    "gc.get_referrers": "finding the objects that refer to a value", "gc.get_referents": "walking the object graph",
    "sys.settrace": "installing a trace function", "sys.setprofile": "installing a profile function",
    "ctypes.addressof": "taking an object's address", "ctypes.string_at": "reading memory by address",
    "ctypes.wstring_at": "reading memory by address", "ctypes.cdata": "making a C value from memory",
    "ctypes.dlsym": "looking up a C symbol", "ctypes.call_function": "calling a C function",
    "sys._getframe": "reaching a caller's frame",
}
_FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
_STANDARD = tuple(sysconfig.get_paths()[name] + os.sep for name in ("stdlib", "platstdlib"))
# What the standard library does to report: logging finds its caller's frame, warnings (in C, through linecache)
# and traceback read source lines (the tests' too, when a warning or an exception came from there). Honest code
# calls them everywhere; what a candidate could learn through them, the decoy check catches.
_REPORTING = tuple(os.path.join(folder, name) for folder in _STANDARD
                   for name in ("logging" + os.sep, "warnings.py", "traceback.py", "linecache.py"))


class CandidateWatch:
    """The audit hook: the candidate's code (its module's file, and what it compiles) may not open the tests'
    files or the expected outputs, walk frames or objects, trace, or reach memory through ctypes. A refusal
    raises PermissionError where the candidate asked and is recorded: the sample is then Tampered."""

    def __init__(self, module_name, lines, protected):
        tail = module_name.replace(".", "/")
        self.suffixes = (f"/{tail}.py", f"/{tail}/__init__.py")
        self.lines = lines  # (first, last): the candidate's definition in its module; None: the whole module
        self.compiled = set()  # file names of code that the candidate compiled
        self.protected = tuple(os.path.realpath(path) for path in protected)
        self.findings = []
        self._real = {}  # code file name -> its real path
        self._busy = False

    def install(self):
        sys.addaudithook(self._hook)

    def finding(self):
        return self.findings[0] if self.findings else None

    def _candidate(self, code):
        name = code.co_filename
        if name in self.compiled:
            return True
        return name.endswith(self.suffixes) and (self.lines is None or
                                                 self.lines[0] <= code.co_firstlineno <= self.lines[1])

    def _hook(self, event, args):
        if self._busy:
            return
        if event == "open":
            self._open(args[0])
        elif event == "compile":
            self._compile(args[1])
        elif event == "object.__getattr__":
            if args[1] in _FRAME_ATTRIBUTES:
                self._check(event, "reaching a frame through a traceback or a generator")
            elif args[1] == "__code__" and self._of_tests(args[0]):
                self._check(event, "reading a test's code (its constants hold the expected values)")
        elif event == "object.__setattr__":
            if args[1] == "__code__":
                self._check(event, "replacing a function's code")
        elif event in _REFUSED:
            if event == "sys._getframe" and args[0] is not None and self._candidate(args[0].f_code):
                return  # its own frame
            self._check(event, _REFUSED[event])

    def _asked_by_candidate(self):
        """Whether the audited call came from the candidate's code, directly or through the standard library."""
        self._busy = True
        try:
            frame = sys._getframe(1)
        finally:
            self._busy = False
        while frame is not None and frame.f_code.co_filename == __file__:  # the hook's own frames
            frame = frame.f_back
        while frame is not None:  # from the frame that made the audited call
            if self._candidate(frame.f_code):
                return True
            name = frame.f_code.co_filename
            if not (name.startswith(_STANDARD) and "-packages" not in name) and not name.startswith("<frozen"):
                return False
            if name.startswith(_REPORTING):
                return False
            frame = frame.f_back
        return False

    def _check(self, event, what):
        if self._asked_by_candidate():
            self._refuse(f"{what} ({event})")

    def _of_tests(self, function):
        """Whether a function is one of the tests (a ``test*`` function of the tests' files), whose code (its
        constants hold the expected values) the hook keeps from the candidate. Other functions the tests define
        are the candidate's to inspect: a ``curry`` reads the ``__code__`` of the lambda it is given."""
        self._busy = True
        try:
            code = getattr(function, "__code__", None)
            name = getattr(code, "co_filename", None)
            if name is None or not code.co_name.startswith("test"):
                return False
            if name not in self._real:
                self._real[name] = os.path.realpath(name)
            return self._is_protected(self._real[name])
        finally:
            self._busy = False

    def _is_protected(self, real):
        return any(real == protected or real.startswith(protected + os.sep) for protected in self.protected)

    def _open(self, path):
        if not isinstance(path, (str, bytes)) or not self.protected:
            return
        path = os.fsdecode(path)
        self._busy = True
        try:
            real = os.path.realpath(path)
        finally:
            self._busy = False
        if self._is_protected(real):
            self._check("open", f"opening the tests' file {path}")

    def _compile(self, filename):
        if isinstance(filename, (str, bytes)) and self._asked_by_candidate():
            self.compiled.add(os.fsdecode(filename))

    def _refuse(self, what):
        finding = f"the candidate's code tried {what}, which the engine refuses"
        if finding not in self.findings:
            self.findings.append(finding)
        raise PermissionError(f"repoexec: {finding}")
