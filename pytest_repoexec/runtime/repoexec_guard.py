"""What the inner plugin does against the candidate it runs beside: limits set before any candidate code runs,
the engine's kinds for what a limit does to a test, and the checks against known ways of gaming a grader.

A candidate runs in the same interpreter as pytest and this plugin, so none of this can stop code that sets
out to defeat this very module (it can read and patch anything in the process): it turns the known tricks
into failures. What truly bounds a sample is outside the process: the sandbox, the rlimits (which it cannot
raise: the hard limits are set too, and the sandbox drops every capability), and the engine's checks of the
stream (a token, the order of records, the exit status).
"""

import builtins
import errno
import os
import resource
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


class Integrity:
    """What pytest and this plugin rely on, as it stood before the candidate was imported; ``broken()`` says
    what has changed since. A candidate that patches the runner, the reports, a hook's plugins or a builtin
    to make tests pass leaves a trace here."""

    def __init__(self, pluginmanager, own, environment):
        self.pluginmanager = pluginmanager
        self.environment = {name: os.environ.get(name) for name in environment}
        self.plugins = {id(plugin) for plugin in pluginmanager.get_plugins()}
        self.watched = {}
        import _pytest.python
        import _pytest.reports
        import _pytest.runner

        for owner in (_pytest.runner, _pytest.runner.CallInfo, _pytest.reports.BaseReport, _pytest.reports.TestReport,
                      _pytest.python, _pytest.python.Function, *own):
            for name, value in list(vars(owner).items()):
                if callable(value) or isinstance(value, (property, classmethod, staticmethod)):
                    self.watched[(owner, name)] = value
        self.builtins = dict(vars(builtins))

    def broken(self):
        """What was patched, in a few words, or None."""
        for name, value in self.environment.items():
            if os.environ.get(name) != value:
                return f"the environment variable {name} was changed"
        for (owner, name), value in self.watched.items():
            if vars(owner).get(name) is not value:
                return f"{getattr(owner, '__name__', owner)}.{name} was replaced"
        for name, value in self.builtins.items():
            if getattr(builtins, name, None) is not value and not name.startswith("_"):
                return f"the builtin {name} was replaced"
        added = [plugin for plugin in self.pluginmanager.get_plugins() if id(plugin) not in self.plugins]
        if added:
            return f"a plugin was registered during the run: {self.pluginmanager.get_name(added[0])}"
        return None


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
