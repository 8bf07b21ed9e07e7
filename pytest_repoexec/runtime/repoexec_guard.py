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
import functools
import resource
import sys
import traceback

from repoexec_protocol import ErrorType

_RLIMITS = {"as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
            "cpu": resource.RLIMIT_CPU, "nofile": resource.RLIMIT_NOFILE}
_ERRNO_KINDS = {errno.ENOSPC: ErrorType.DISK_LIMIT, errno.EDQUOT: ErrorType.DISK_LIMIT,
                errno.EMFILE: ErrorType.OPEN_FILES_LIMIT, errno.ENFILE: ErrorType.OPEN_FILES_LIMIT,
                errno.EFBIG: ErrorType.FILE_SIZE_LIMIT}
_SPAWNS = ("fork", "spawn", "Popen", "system", "Process", "start", "exec")


def apply_limits(spec):
    """Set ``as=N,nproc=N,...`` as soft and hard limits of this process and all it starts."""
    for part in filter(None, spec.split(",")):
        name, _, value = part.partition("=")
        limit = int(value)
        if name == "nproc":  # what the process already runs (pytest's threads) does not count against the sample
            limit = max(limit, 1)
        resource.setrlimit(_RLIMITS[name], (limit, limit))


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

    def __init__(self, pluginmanager, own):
        self.pluginmanager = pluginmanager
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


def guard_entry_point(entry):
    """Wrap the entry point (``module:qualname``) wherever it is bound, so that a value of a class the candidate
    made, with an ``__eq__`` of its own (an object equal to anything), fails the test that received it.
    Returns a function that says whether such a value was returned, or None when the entry point is not there."""
    module_name, _, qualname = entry.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        return None
    owner, name = module, qualname
    for part in qualname.split(".")[:-1]:
        owner = getattr(owner, part, None)
        name = qualname.rpartition(".")[2]
        if owner is None:
            return None
    raw = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name, None)
    function = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not callable(function):
        return None
    seen = []

    @functools.wraps(function)
    def guarded(*args, **kwargs):
        value = function(*args, **kwargs)
        made = _made_by_candidate(type(value), module)
        if made:
            seen.append(made)
            raise AssertionError(f"{qualname} returned a {made}: an object whose __eq__ the candidate wrote")
        return value

    wrapped = type(raw)(guarded) if raw is not function else guarded
    if isinstance(owner, type):
        setattr(owner, name, wrapped)
    else:
        for loaded in list(sys.modules.values()):  # the test module's star import holds it too
            namespace = getattr(loaded, "__dict__", None)
            if isinstance(namespace, dict):
                for key, value in list(namespace.items()):
                    if value is function:
                        namespace[key] = guarded
    return lambda: seen[0] if seen else None


def _made_by_candidate(cls, module):
    """A class of the focal module that the module does not define by its name (made inside the function, or by
    ``type()``), which defines its own ``__eq__``: a description of it, or None."""
    for klass in getattr(cls, "__mro__", ()):
        if klass.__module__ == module.__name__ and "__eq__" in vars(klass):
            found = module
            for part in klass.__qualname__.split("."):
                found = getattr(found, part, None)
            if found is not klass:
                return f"class {klass.__qualname__} made by the candidate"
    return None
