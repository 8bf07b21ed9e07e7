"""The judge's end of a split sample: in the process that runs pytest and the tests, the focal module's target
is a stub (made by ``function`` or ``method``) that sends each call to the candidate's process and rebuilds
what comes back, as ``repoexec_wire`` allows. No code of the candidate's ever runs here.

Only the inner plugin opens the channel (``open_channel``), before the tests' module is imported.
"""

import builtins
import functools
import pickle
import select
import types

from repoexec_wire import FUNCTION_TYPES, WireError, dumps, loads_checked, receive, send, socket_from

STUCK_GRACE = 2.0  # seconds the candidate's process has to answer an abandoned call before it counts as stuck
_CHANNEL = None


class CandidateError(Exception):
    """The candidate raised what cannot cross to the judge (an exception class it made), or its answer could not."""


class CandidateGone(Exception):
    """The candidate's process ended: the sample cannot go on."""

    repoexec_error_type = "EarlyExit"


class CandidateStuck(Exception):
    """The candidate's process did not come back from a call that timed out."""

    repoexec_error_type = "Timeout"


def open_channel(fd, project_roots, on_stop):
    global _CHANNEL
    _CHANNEL = Channel(fd, project_roots, on_stop)


def function(module, name):
    """The stub of a module-level function ``name``."""
    def stub(*args, **kwargs):
        return _channel().call(("function", module, name), args, kwargs)

    stub.__name__ = stub.__qualname__ = name
    stub.__module__ = module
    return stub


def method(module, qualname, kind):
    """The stub of a method: ``kind`` is how the reference is bound (instance, static, class, property)."""
    def stub(*args, **kwargs):
        return _channel().call(("method", module, qualname, kind), args, kwargs)

    stub.__name__, stub.__qualname__, stub.__module__ = qualname.rpartition(".")[2], qualname, module
    return {"static": staticmethod, "class": classmethod, "property": property}.get(kind, lambda stub: stub)(stub)


def _channel():
    if _CHANNEL is None:
        raise CandidateGone("no candidate's process to call (the judge runs without one)")
    return _CHANNEL


class Handle:
    """An object that stays in the candidate's process (a function, a generator, an iterator it returned):
    each use is a call there."""

    __slots__ = ("_channel", "_hid", "_type")
    lent = True  # never given a state by an answer (repoexec_wire's BUILD)

    def __init__(self, channel, hid, type_name):
        self._channel, self._hid, self._type = channel, hid, type_name

    def _ask(self, op, *args, **kwargs):
        return self._channel.call(("handle", self._hid, op), args, kwargs)

    def __call__(self, *args, **kwargs):
        return self._ask("call", *args, **kwargs)

    def __iter__(self):
        return self._ask("iter")

    def __next__(self):
        return self._ask("next")

    def send(self, value):
        return self._ask("send", value)

    def close(self):
        return self._ask("close")

    def __enter__(self):
        return self._ask("enter")

    def __exit__(self, kind, value, traceback):
        return self._ask("exit", kind is not None)

    def __len__(self):
        return self._ask("len")

    def __getitem__(self, key):
        return self._ask("getitem", key)

    def __contains__(self, key):
        return self._ask("contains", key)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name)

    def __repr__(self):
        return f"<{self._type} in the candidate's process>"


class Channel:
    """The judge's connection to the candidate's process: calls out, answers (and callbacks) in."""

    def __init__(self, fd, project_roots, on_stop):
        self.sock = socket_from(fd)
        self.project_roots = project_roots
        self.on_stop = on_stop  # told why the session must stop (the candidate's process is gone or stuck)
        self.ids = 0
        self.lent, self.lent_ids = {}, {}  # the judge's objects the candidate may call back: hid -> object
        self.abandoned = None  # a call whose answer a timeout left behind
        self.broken = None  # why no more calls can be made
        self.limit = 0.0  # the running test's time limit: the candidate's process interrupts a call past it

    def call(self, target, args, kwargs):
        if self.broken:
            raise CandidateGone(self.broken)
        if self.abandoned is not None:
            self._drain()
        self.ids += 1
        number = self.ids
        arguments = [*args, *kwargs.values()]
        try:
            payload = dumps(("call", number, target, tuple(args), dict(kwargs), self.limit),
                            self._persistent_id)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise CandidateError(f"the test's arguments cannot be sent to the candidate's process: {exc}") from None
        self._send(payload)
        self.abandoned = number  # until its answer is read
        return self._wait(number, arguments)

    def _send(self, payload):
        try:
            send(self.sock, payload)
        except OSError as exc:
            self._stop(f"the candidate's process ended ({exc})")

    def _stop(self, why, kind=CandidateGone):
        self.broken = why
        self.on_stop(why)
        raise kind(why)

    def _drain(self):
        """The answer of a call that a timeout abandoned must come before the next call's: a process that does
        not give it in STUCK_GRACE seconds is stuck where its own alarm cannot reach (a loop in C code)."""
        while self.abandoned is not None:
            if not select.select([self.sock], [], [], STUCK_GRACE)[0]:
                self._stop(f"the candidate's process did not come back from a call that timed out in "
                           f"{STUCK_GRACE:.0f} s", CandidateStuck)
            self._next(None, ())

    def _wait(self, number, arguments):
        while True:
            done, value = self._next(number, arguments)
            if done:
                return value

    def _next(self, number, arguments):
        """Read one message: (True, value) for the answer to call ``number``; (False, None) for anything else
        (a callback, answered here; an abandoned call's answer, dropped)."""
        try:
            data = receive(self.sock)
        except (OSError, WireError) as exc:
            self._stop(f"the candidate's process broke the channel: {exc}")
        if data is None:
            self._stop("the candidate's process ended")
        message = loads_checked(data, self.project_roots, functools.partial(self._persistent_load, arguments))
        if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
            raise WireError("a message that is not the judge's protocol")
        kind = message[0]
        if kind == "callback":
            self._callback(*message[1:])
            return False, None
        if kind not in ("return", "raise") or len(message) != 4:
            raise WireError(f"a message of kind {kind!r}")
        _, answered, *rest = message
        extra, value = rest if kind == "return" else rest[::-1]
        if answered == self.abandoned:
            self.abandoned = None
        if answered != number:  # the answer to an abandoned call
            return False, None
        if kind == "raise":
            raise _exception(value, extra)
        for index, state in (extra or {}).items():
            if isinstance(index, int) and 0 <= index < len(arguments):
                _apply(arguments[index], state)
        return True, value

    def _callback(self, number, hid, op, args, kwargs):
        target = self.lent.get(hid)
        try:
            if target is None:
                raise LookupError(f"no object {hid} was lent to the candidate")
            value = _use(target, op, args, kwargs)
            reply = ("return", number, None, value)
            payload = dumps(reply, self._persistent_id)
        except Exception as exc:
            try:
                payload = dumps(("raise", number, exc, None), self._persistent_id)
            except Exception:
                payload = dumps(("raise", number, RuntimeError(f"{type(exc).__name__}: {exc}"), None))
        self._send(payload)

    def _persistent_id(self, obj):
        if type(obj) is Handle:
            return ("handle", obj._hid)
        if isinstance(obj, FUNCTION_TYPES) and not _by_reference(obj) or isinstance(obj, functools.partial):
            hid = self.lent_ids.get(id(obj))
            if hid is None:
                hid = self.lent_ids[id(obj)] = len(self.lent) + 1
                self.lent[hid] = obj
            return ("judge", hid)
        return None

    def _persistent_load(self, arguments, pid):
        if not isinstance(pid, tuple) or not pid:
            raise WireError("a reference that is not the judge's")
        if pid[0] == "arg" and len(pid) == 2 and isinstance(pid[1], int) and 0 <= pid[1] < len(arguments):
            return arguments[pid[1]]
        if pid[0] == "judge" and len(pid) == 2 and pid[1] in self.lent:
            return self.lent[pid[1]]
        if pid[0] == "handle" and len(pid) == 3 and isinstance(pid[1], int) and isinstance(pid[2], str):
            return Handle(self, pid[1], pid[2][:200])
        raise WireError(f"a reference the judge did not make: {pid!r}"[:300])


def _by_reference(obj):
    """A builtin function (``len``, ``str.lower``) is sent by its name: the candidate's process has it too."""
    return isinstance(obj, types.BuiltinFunctionType) and isinstance(getattr(obj, "__self__", None),
                                                                     (types.ModuleType, type(None))) \
        or type(obj).__name__ in ("method_descriptor", "wrapper_descriptor")


def _use(target, op, args, kwargs):
    if op == "call":
        return target(*args, **kwargs)
    if op == "next":
        return next(target)
    if op == "iter":
        return iter(target)
    raise LookupError(f"no operation {op!r} on a lent object")


def _exception(value, details):
    """The exception the candidate raised, as the judge raises it: its own type where that could cross; else
    rebuilt here from its description (``repoexec_serve._described``), with no code of the candidate's."""
    kind, text, remote, described = (tuple(details) + (None,) * 4)[:4] if isinstance(details, tuple) else (None,) * 4
    text = str(text or "")[:2000]
    if not isinstance(value, BaseException):
        value = _rebuilt(described, text)
    if isinstance(kind, str):
        value.repoexec_error_type = kind
    if isinstance(remote, str) and remote:
        value.repoexec_remote = remote[-4000:]  # the inner plugin shows it with the first failures
    return value


def _rebuilt(described, text):
    """pytest's own outcome, or an exception of the candidate's class name over the builtin exception it derives
    from (so ``pytest.raises(ValueError)`` holds for ``class Invalid(ValueError)``), or CandidateError."""
    if isinstance(described, tuple) and len(described) == 4 and described[0] == "pytest":
        from _pytest import outcomes

        _, name, message, status = described
        made = {"Skipped": outcomes.Skipped, "Failed": outcomes.Failed, "XFailed": outcomes.XFailed}.get(name)
        if made is not None:
            return made(str(message))
        if name == "Exit":
            return outcomes.Exit(str(message), status if isinstance(status, int) else None)
    if isinstance(described, tuple) and len(described) == 3 and described[0] == "class":
        _, name, bases = described
        base = next((builtin for builtin in (getattr(builtins, str(b), None) for b in bases or ())
                     if isinstance(builtin, type) and issubclass(builtin, BaseException)), None)
        if base is not None and str(name).isidentifier():
            made = type(str(name), (base,), {"__module__": "candidate", "__doc__": "a class of the candidate's"})
            return made(text)
    return CandidateError(text or "the candidate raised what cannot cross to the judge")


def _apply(target, state):
    """The state an argument has after the call, applied in place: the test holds the same object."""
    if type(target) is not type(state):
        return
    if isinstance(target, (list, bytearray)):
        target[:] = state
    elif isinstance(target, dict):
        target.clear()
        target.update(state)
    elif isinstance(target, set):
        target.clear()
        target.update(state)
    elif hasattr(target, "__dict__") or hasattr(type(target), "__slots__"):
        for name in [*getattr(type(target), "__slots__", ())]:
            if hasattr(state, name):
                object.__setattr__(target, name, getattr(state, name))
        if hasattr(target, "__dict__"):
            vars(target).clear()
            vars(target).update(vars(state))
    elif hasattr(target, "clear") and hasattr(target, "extend"):  # a deque
        target.clear()
        target.extend(state)

