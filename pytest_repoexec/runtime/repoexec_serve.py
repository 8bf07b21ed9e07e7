"""The candidate's process of a split sample: it imports the focal module with the candidate in place and
answers the judge's calls. Nothing of the tests is here (no test file, no expected values, no verdict
channel): only the arguments of each call, by value.

Runs as ``python -m repoexec_serve`` (or forked from a warm process) under the project's interpreter, with the
standard library only. Everything it sends is read by the judge's ``repoexec_wire.JudgeUnpickler``; so this
file is a courtesy to honest code (values by pickle, the rest as handles), not a defence.
"""

import argparse
import builtins
import codecs
import collections
import copy
import functools
import importlib
import inspect
import io
import itertools
import marshal
import os
import pickle
import signal
import socket
import stat
import sys
import time
import traceback
import types
import weakref

from repoexec_futures import awaiting, is_deferred, own_loop, pending
from repoexec_guard import apply_limits, deny_system_calls, limit_kind
import repoexec_mirror
from repoexec_mirror import apply_graph, changed_nodes, fingerprint, is_node, moved, node_marks, paths
from repoexec_wire import (FUNCTION_TYPES, VALUE_TYPES, WIRE_CALLS, _named, _named_singleton, _reached,
                           bindable, by_code, cell_filled, converted, defines, dumps, identities, is_sentinel,
                           is_value_type, library_module, module_of_project, module_singleton, receive, send, sentinels,
                           singleton, shaped_function, snapshot, socket_from, ssl_socket, weak_reference)

try:  # signal.signal without its enums (both ways, twice a call: a tenth of a call's cost)
    from _signal import signal as _set_handler
except ImportError:  # not CPython
    _set_handler = signal.signal

# seconds past the test's limit before a call is interrupted here: the judge's timeout comes first (its clock started
# before the call was sent); the next test's call then waits for this one's end, within that test's own limit
_GRACE = 0.05
_RUNTIME = os.path.dirname(os.path.abspath(__file__)) + os.sep  # this runtime's files, left out of a told traceback
_TOLD_MOST = 1 << 20  # characters of what a call wrote to each stream that reach the judge (a test's capture)
_AHEAD_SECONDS = 0.002  # an iterated handle's items made ahead while they come this fast (``Server._take``)
_AHEAD_AFTER = 8  # ... once this many of its items were asked for in a row, nothing else asked between


class _CallTimeout(BaseException):
    """The call ran past its limit."""


class Lent:
    """An object of the judge's (a test's argument that cannot be pickled: a file, a lock, a queue, an object of a
    class defined in a test): each use is a call back to the judge, which allows calls, iteration, ``with``,
    ``await``, ``len``, items and the object's non-dunder attributes, read and set (to data)."""

    def __init__(self, server, hid):
        object.__setattr__(self, "_server", server)
        object.__setattr__(self, "_hid", hid)

    def __setattr__(self, name, value):
        try:
            self._ask("setattr", name, value)
        except LookupError:  # what the judge does not take (a dunder, a method's name) stays on this proxy
            object.__setattr__(self, name, value)

    def _ask(self, op, *args, **kwargs):
        return self._server.callback(self._hid, op, args, kwargs)

    def __call__(self, *args, **kwargs):
        return self._ask("call", *args, **kwargs)

    def __iter__(self):
        return self._ask("iter")

    def __next__(self):
        return self._ask("next")

    def __len__(self):
        return self._ask("len")

    def __bool__(self):
        return self._ask("bool")

    def __getitem__(self, key):
        return self._ask("getitem", key)

    def __contains__(self, key):
        return self._ask("contains", key)

    def __enter__(self):
        return self._ask("enter")

    def __exit__(self, kind, value, traceback):
        return self._ask("exit", kind is not None)

    def __await__(self):
        """The judge's awaitable (a coroutine of a test's, an ``AsyncMock``'s call) runs on the judge's loop
        while this process waits for its outcome: a coroutine of ours awaiting it blocks our loop meanwhile."""
        return self._ask("await")
        yield  # a generator, as __await__ must return: it never yields

    def __getattr__(self, name):
        if name.startswith("__") and name not in ("__name__", "__qualname__"):
            raise AttributeError(name)
        return self._ask("getattr", name)

    @property
    def __doc__(self):
        return self._ask("getattr", "__doc__")

    @property
    def __module__(self):  # noqa: A003 (the judge's object's: a class made in a test names its module)
        return self._ask("getattr", "__module__")

    def __repr__(self):
        return f"<the judge's object {self._hid}>"


_SCALARS = frozenset({bool, int, float, complex, str, bytes, type(None)})
_PLAIN = _SCALARS | {tuple, list, dict, set, frozenset}
_SHOWN = (bool, int, float, complex, str, bytes, type(None))  # defaults the judge's stub shows (and passes on) as they are


def lent_function(server, hid, described):
    """A function of the shape of the test's function lent to the candidate (its names, doc, parameters' names
    and kinds: ``__code__.co_argcount``, ``inspect.signature`` work on it) that calls the judge's."""
    made = shaped_function(described["parameters"], lambda args, kwargs: server.callback(hid, "call", args, kwargs))
    for key in ("__name__", "__qualname__", "__module__", "__doc__"):
        if isinstance(described.get(key), str):
            setattr(made, key, described[key])
    if described.get("shown"):  # it takes (*args, **kwargs) and shows these parameters, as the judge's does
        made.__signature__ = inspect.signature(shaped_function(described["shown"], None))
    return made


class _Told(io.TextIOWrapper):
    """``sys.stdout`` or ``sys.stderr`` while a call runs, as pytest's ``capsys`` makes it beside the test: what the
    candidate's code writes reaches the judge before the call's answer (``Server._tell``), where the test's
    capture reads it. Its descriptor is the stream's own, as a program asking for one finds (httpie's)."""

    def __init__(self, stream):
        super().__init__(io.BytesIO(), encoding="UTF-8", newline="", write_through=True)
        self._stream = stream

    def fileno(self):
        return self._stream.fileno()

    def taken(self):
        if not self.buffer.tell():
            return ""
        written = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        return written.decode("utf-8", "replace")


class Server:
    def __init__(self, sock, module, project_roots, classes=()):
        self.sock, self.module, self.project_roots = sock, module, project_roots
        self.classes = classes  # the classes under test: their instances stay here, the judge holds numbers
        self.handles = {}  # hid -> an object of ours the judge holds a handle to (kept alive until it lets go)
        self.hids = itertools.count(1)  # a hid is never given twice: one the judge let go of may still be on its way
        self.handle_ids = {}  # id -> hid of those objects
        self.instance_ids = {}  # id -> hid of the instances of a class under test the judge holds
        self.lent, self.lent_ids = {}, {}  # hid -> the judge's object lent to us (a Lent, a lent function), id -> hid
        self.callbacks = 0
        self.arguments = {}  # id -> index of the current call's arguments (identity kept across)
        self.by_value = set()  # ids of the arguments whose new state is being sent
        self.in_reference = 0
        self.objects = {}  # id -> (number, object): the objects answered by value, kept alive, numbered for the judge
        self.received = {}  # id -> (call, key, object): the judge's arguments (``identities``), for answers to name
        self.mirrors = {}  # (call, key) -> [an argument kept here (one answered, or one a class under test kept),
        # its ``fingerprint`` as the judge last agreed on it (False until then, None once it is ours alone), its
        # nodes' ``paths`` then]
        self.awaits = {}  # id -> (awaitable, call, {index: (argument, its state)}): what awaiting it may change
        self.modules = set(sys.modules)  # the modules imported so far: the judge is told of those a call adds
        self.sentinels = sentinels(module)  # id -> name of the focal module's marker objects: sent by their names
        self.pending = {}  # hid -> what an iterated handle raised while its items were made ahead, raised next
        self.streak = (None, 0)  # (hid, requests in a row for its items, nothing else asked between)
        self.told = (_Told(sys.stdout), _Told(sys.stderr))  # the streams while a call runs
        self.by_code = {}  # id -> a nested function of the project's sent by where its code stands (``_coded``)
        self.partials = None  # ids of the partials of a project's function sent by value (``_send``)
        self.descriptors = []  # what came with the message being read: the judge's sockets' descriptors
        self.lent_sockets = {}  # descriptor -> hid of the judge's socket it came as (``_over_lent_socket``)
        self.shapes = {}  # (code, names, parameters) -> the number of a function handle's shape (``_shape``)
        self.crossing = set()  # classes whose objects the judge rebuilds, as ``_crosses`` found them
        self.kept = 0  # the arguments kept alike because an instance under test kept them (``_KEPT_MOST``)
        self.unchanged = {}  # id -> (call, index, path, node): while an answer is written, the nodes of its call's
        # arguments that the call left as they were (``_changes``), each the judge's own
        self.nodes = {}  # id -> (key, path, node): while an answer is written, the nodes of the mirrors the call
        # left as the judge last agreed on them, which it names (its own) rather than sends

    # --- reading the judge ---

    def _receive(self):
        """The next message's bytes (None at the end), the descriptors that came with it in ``descriptors``."""
        self._close_descriptors()
        return receive(self.sock, self.descriptors)

    def _load(self, data):
        unpickler = pickle.Unpickler(_bytes_io(data))
        unpickler.persistent_load = self._persistent_load
        try:
            return unpickler.load()
        finally:
            self._close_descriptors()

    def _close_descriptors(self):
        """Those the message did not use (one for a socket this process already has)."""
        for fd in self.descriptors:
            if fd >= 0:
                os.close(fd)
        self.descriptors = []

    def _persistent_load(self, pid):
        if pid[0] == "handle":
            return self.handles[pid[1]]
        if pid[0] == "mirror":  # an object the judge sent before, kept alike with ours: ours, never a second copy
            return self.mirrors[(pid[1], pid[2])][0]
        if pid[0] == "judge":
            if pid[1] not in self.lent:
                described = pid[2] if len(pid) > 2 else None
                made = lent_function(self, pid[1], described) if described else Lent(self, pid[1])
                self.lent[pid[1]] = made
                self.lent_ids[id(made)] = pid[1]
            return self.lent[pid[1]]
        if pid[0] == "socket":  # a test's socket, as a duplicate of its descriptor
            if pid[1] not in self.lent:
                made = socket.socket(fileno=self.descriptors[pid[2]])
                self.descriptors[pid[2]] = -1
                self.lent_sockets[made.fileno()] = pid[1]
                self.lent[pid[1]] = made
                self.lent_ids[id(made)] = pid[1]
            return self.lent[pid[1]]
        if pid[0] == "judge code":  # a test's function of builtins alone (``repoexec_judge._pure``): made here
            if pid[1] not in self.lent:
                made = types.FunctionType(marshal.loads(pid[2]), {"__builtins__": builtins}, pid[3])
                self.lent[pid[1]] = made
                self.lent_ids[id(made)] = pid[1]
            return self.lent[pid[1]]
        if pid[0] == "judge future":  # a test's pending future: one of ours, set by awaiting the judge's
            if pid[1] not in self.lent:
                _loop()
                made = awaiting(Lent(self, pid[1]), lazily=True)
                self.lent[pid[1]] = made
                self.lent_ids[id(made)] = pid[1]
            return self.lent[pid[1]]
        if pid[0] == "module":
            return importlib.import_module(pid[1])
        if pid[0] == "constant":  # its module's own object of that name where it still equals the judge's
            _, module, name, value = pid
            found = getattr(sys.modules.get(module), name, None)
            return found if type(found) is type(value) and (found == value or is_sentinel(found)) else value
        if pid[0] == "singleton":  # a library's object its module holds under that name: this process's own
            found = singleton(pid[1], pid[2])
            if found is not None:
                return found
        if pid[0] == "new module":
            return types.ModuleType(pid[1])
        raise pickle.UnpicklingError(f"unknown reference {pid!r}")

    # --- writing to the judge ---

    def _persistent_id(self, obj):
        if id(obj) in self.lent_ids:  # the judge's own object, never sent by value (it has no state here)
            return ("judge", self.lent_ids[id(obj)])
        if id(obj) in self.by_value:  # an argument's new state: sent whole, once
            self.by_value.discard(id(obj))
            return None
        if self.in_reference:  # the parts of the reference just given, pickled next (``_reference``)
            self.in_reference -= 1
            return None
        index = self.arguments.get(id(obj)) if type(obj) not in (int, bool) else None
        if index is not None:  # an argument returned, immutable ones too: `returned is argument` holds
            return self._reference("arg", index)
        named = self.unchanged.get(id(obj))
        if named is not None and named[3] is obj:  # a node of an argument the call left as it was
            return self._reference("argnode", *named[:3])
        named = self.nodes.get(id(obj))
        if named is not None and named[2] is obj:  # a node of a graph kept alike that the call left as it was
            key, path, _ = named
            return self._reference("node", *key, path)
        received = self.received.get(id(obj))
        if received is not None and received[2] is obj:  # an earlier call's argument: the judge's own object
            self.mirrors.setdefault(received[:2], [obj, False, {}])  # kept here: the copies are kept alike from now on
            return self._reference("sent", received[0], received[1])
        if obj is sys.path:  # by name: the judge's own (``load_object("sys.path") is sys.path``)
            return ("std", "path")
        cls = type(obj)
        if cls in _PLAIN:  # the common case first: a value
            return None
        marker = self.sentinels.get(id(obj))
        if marker is not None and getattr(self.module, marker, None) is obj:  # the judge's own of that name, by
            # the module of its class where that holds it too (litestar's ``Empty``, which the judge's copy of the
            # focal module may not hold)
            home = sys.modules.get(getattr(cls, "__module__", None))
            named = home.__name__ if getattr(home, marker, None) is obj and module_of_project(
                home.__name__, self.project_roots) else self.module.__name__
            return ("sentinel", named, marker)
        if self.classes and isinstance(obj, self.classes) and not isinstance(obj, type):
            hid = self.instance_ids.get(id(obj))
            if hid is None:
                hid = self.instance_ids[id(obj)] = next(self.hids)
                self.handles[hid] = obj
            return ("instance", hid, cls.__module__, cls.__qualname__)
        if isinstance(obj, types.ModuleType):  # by name: the judge has its own (a library's, the project's)
            return ("module" if sys.modules.get(obj.__name__) is obj else "new module", str(obj.__name__))
        if getattr(obj, "__module__", None) in ("repoexec_wire", "repoexec_futures") \
                and (obj.__module__, getattr(obj, "__name__", None)) in WIRE_CALLS:
            return None  # what rebuilds a value on the judge's side, named as it is
        if obj is sys.stdout or obj is sys.stderr or obj is sys.stdin:
            return ("std", ("stdin", "stdout", "stderr")[(sys.stdin, sys.stdout, sys.stderr).index(obj)])
        if obj is self.told[0] or obj is self.told[1]:  # a stream taken while a call ran (a logging handler's)
            return ("std", "stdout" if obj is self.told[0] else "stderr")
        if not isinstance(obj, FUNCTION_TYPES) and _named_singleton(obj) is not None or cls.__module__ == "typing":
            return None  # typing.Union by its name, typing.Optional[int] as typing's subscription
        if _bound_to_value(obj) if isinstance(obj, types.MethodType) else converted(obj, True) is not NotImplemented:
            return None  # a lock, a method of a value, a dict's view: as the wire sends them
        if isinstance(obj, functools.partial) and (isinstance(obj.func, type) and obj.func in VALUE_TYPES or (
                _bound_to_value(obj.func) and not isinstance(getattr(obj.func, "__self__", None), type))):
            return None  # a partial of a value's method (a parser's getint) or of a value type: a value; one of a
            # function stays here, a handle (the judge runs no function on arguments the candidate bound)
        if isinstance(obj, functools.partial) and self._project_function(obj.func):
            if self.partials is _FIRST:  # where it stands decides: the message is walked, then sent again
                raise _HoldersNeeded
            if self.partials is not None and id(obj) in self.partials:
                return None  # inside an object of its function's package: the judge's own function, bound to data
        if isinstance(obj, type) or is_value_type(cls) or module_of_project(cls.__module__, self.project_roots) \
                and not isinstance(obj, FUNCTION_TYPES):
            return None
        if type(obj) is types.FunctionType and self._coded(obj):
            return None  # the judge makes it of its own copy of the code (``_reduce``)
        if self._over_lent_socket(obj) is not None:
            return None  # the judge wraps its own socket (``_reduce``)
        named = module_singleton(obj)
        if named is not None:  # by its module's name of it: the judge's own (astroid's Uninferable)
            return ("singleton", *named)
        if cls is weakref.ref and self._judge_holds(obj()):
            return None  # a weak reference to the judge's own object there (``_reduce``); else a handle
        # the protocols are the class's, as Python reads them: never asked of an instance's __getattr__ (the
        # project's code: astroid's Const raises a KeyError there)
        if isinstance(obj, FUNCTION_TYPES) or callable(obj) or defines(cls, "__next__") or defines(cls, "__enter__") \
                or inspect.isawaitable(obj) or defines(cls, "__iter__") and not hasattr(obj, "__reduce_ex__"):
            hid = self.handle_ids.get(id(obj))
            if hid is None:  # one number an object: an iterator and what iter() gives of it share their items ahead
                hid = self.handle_ids[id(obj)] = next(self.hids)
                self.handles[hid] = obj
            if pending(obj):  # the judge makes a future of its own that awaits it
                return ("future", hid)
            named = _global_name(obj)
            shape = self._shape(obj) if named is None and cls is types.FunctionType else None
            return ("handle", hid, cls.__qualname__, named, *((shape,) if shape else ()))
        return None

    def _reference(self, *parts):
        """A reference to the judge's own object, made of new tuples: pickle then passes each of its parts through
        ``_persistent_id``, which lets exactly that many by (a tuple pickled before in the message, a path's
        step shared with another path, would be written from the memo without its parts, and the count would
        let the message's next objects by unchecked)."""
        reference = _fresh(parts)
        self.in_reference = _parts(reference)
        return reference

    def _shape(self, function):
        """What the judge makes a function handle of (``repoexec_judge.Channel._shaped``): its names, doc,
        parameters and local names, and what it wraps, so that ``type(f)``, ``f.__code__.co_varnames`` and
        ``f.__name__`` read as the candidate's function's (tornado's ``add_accept_handler`` answers a function its
        tests compare by type). A shape crosses whole once a sample, then as its number (scrapy's memoize tests
        answer ten thousand functions of one shape): (the shape or its number[, what it wraps]). None for a
        generator's or coroutine's function, and for one with attributes of its own, which the judge's handle
        reads here as they change (a cache, a counter)."""
        if function.__code__.co_flags & _GENERATING or not vars(function).keys() <= _WRAPPED:
            return None
        parameters = _code_parameters(function)
        named = (function.__name__, function.__qualname__,
                 function.__module__ if isinstance(function.__module__, str) else None,
                 function.__doc__ if isinstance(function.__doc__, str) else None)
        wrapped = (vars(function)["__wrapped__"],) if "__wrapped__" in vars(function) else ()
        key = (function.__code__, named, parameters)
        try:
            number = self.shapes.get(key)
        except TypeError:  # a shown default that does not hash
            return None
        if number is not None:
            return (number, *wrapped)
        number = self.shapes[key] = len(self.shapes) + 1
        taken = {name for name, *_ in parameters}
        return ({"number": number, "parameters": list(parameters), "__name__": named[0], "__qualname__": named[1],
                 "__module__": named[2], "__doc__": named[3],
                 "local": [name for name in function.__code__.co_varnames if name not in taken]}, *wrapped)

    def _reduce(self, obj):
        if id(obj) in self.by_code:
            return by_code(obj)
        if type(obj) is weakref.ref:  # to an object the judge holds (``_judge_holds``)
            return weak_reference, (obj(),)
        hid = self._over_lent_socket(obj)
        if hid is not None:
            return ssl_socket, (obj.context, self.lent[hid], obj.server_side, obj.server_hostname,
                                obj.do_handshake_on_connect, obj.suppress_ragged_eofs)
        return NotImplemented

    def _judge_holds(self, obj):
        """Whether an object crosses as one the judge holds: an argument of this call or of an earlier one, an
        object the judge lent, an instance of the class under test, a marker; or None, the referent of a dead weak
        reference. A weak reference to it is one there too; a weak reference to what only this process holds
        stays a handle, alive as long as its referent is here."""
        received = self.received.get(id(obj))
        return obj is None or id(obj) in self.arguments or received is not None and received[2] is obj \
            or id(obj) in self.lent_ids or id(obj) in self.sentinels or module_singleton(obj) is not None \
            or bool(self.classes) and isinstance(obj, self.classes) and not isinstance(obj, type)

    def _over_lent_socket(self, obj):
        """The judge's number for the socket an SSL socket of ours was made over, where that socket is one the
        judge lent (its descriptor, which wrapping took over) and no handshake began: the judge wraps its own."""
        ssl = sys.modules.get("ssl")
        if ssl is None or type(obj) is not ssl.SSLSocket or obj._sslobj is not None:
            return None
        hid = self.lent_sockets.get(obj.fileno())
        return hid if hid is not None and self.lent[hid].fileno() < 0 else None

    def _coded(self, function, seen=None):
        """Whether a function crosses by where its code stands (``repoexec_wire.by_code``) rather than as a
        handle: made in a function of a project's module or a library's, not the focal module's (whose code
        here is the candidate's), with no name the judge could find it by, and holding nothing that would stay
        here (a function of the candidate's, a generator): the judge refuses a handle inside what it rebuilds."""
        code = function.__code__
        module = sys.modules.get(function.__globals__.get("__name__"))
        if "<locals>" not in getattr(code, "co_qualname", function.__qualname__) or module is None \
                or module is self.module or vars(module) is not function.__globals__ \
                or os.path.realpath(getattr(module, "__file__", None) or "/") != os.path.realpath(code.co_filename) \
                or _global_name(function) is not None \
                or not (module_of_project(module.__name__, self.project_roots) or library_module(module.__name__)):
            return False
        seen = set() if seen is None else seen
        seen.add(id(function))
        if not _holds_data(function, seen, self):
            return False
        self.by_code[id(function)] = function
        return True

    def _tell(self):
        """What the running call wrote so far, sent before the message that follows it (an answer, a callback),
        so that the judge's capture has it in the order it was written."""
        out, err = (stream.taken() for stream in self.told)
        if out or err:
            send(self.sock, dumps(("output", out[:_TOLD_MOST], err[:_TOLD_MOST])))

    def _send(self, message):
        self._tell()
        sent_whole = set(self.by_value)
        try:
            self.in_reference, self.partials = 0, _FIRST
            try:
                payload = dumps(message, self._persistent_id, as_values=True, reduce=self._reduce)
            except _HoldersNeeded:  # a partial of a project's function: by value only inside its package's object
                self.in_reference, self.by_value = 0, sent_whole
                self.partials = _partials_inside_their_package(message, self._project_function)
                payload = dumps(message, self._persistent_id, as_values=True, reduce=self._reduce)
        except Exception as exc:
            text = f"the candidate's answer cannot cross to the judge: {type(exc).__name__}: {exc}"
            payload = dumps(("raise", message[1], None, (None, text, "")))
        finally:
            self.partials = None
        send(self.sock, payload)

    def _project_function(self, function):
        """A function of a project's module, which the judge finds by its name (its own copy of it)."""
        return type(function) is types.FunctionType and _global_name(function) is not None \
            and module_of_project(function.__module__, self.project_roots)

    def _left(self):
        """What the call left in this process that the judge mirrors: modules imported and codecs registered, by
        name; folders made, by path."""
        self._imported()
        self._registered()
        self._folders()

    def _imported(self):
        """Tell the judge the names of the modules a call imported (``google.auth.credentials``, loaded on first
        use): it imports those it trusts too, so a test reading ``google.auth.credentials`` finds it as it would
        in-process. Names only: what the judge imports is its own copy, as a pickle naming a class makes it."""
        if len(sys.modules) == len(self.modules):
            return
        names = [name for name in sys.modules if name not in self.modules]
        self.modules = set(sys.modules)
        if names:
            send(self.sock, dumps(("imported", names)))

    def _registered(self):
        """Tell the judge, by name, the codec search functions a call registered (flutils' ``register_codecs``):
        it registers its own of those names, so that a test decoding with the codec finds it, as in one process."""
        named = [found for found in map(_global_name, _CODECS_REGISTERED) if found]
        _CODECS_REGISTERED.clear()
        if named:
            send(self.sock, dumps(("codecs", named)))

    def _folders(self):
        """Tell the judge the folders a call made (flutils' ``directory_present``) that are still folders, each with
        its mode: the judge makes empty ones of its own where it may (``Channel._folders``), as a test would find
        them beside the call. Folders only: a file's content never crosses this way."""
        if not _FOLDERS_MADE:
            return
        made = []
        for path in dict.fromkeys(_FOLDERS_MADE):
            try:
                found = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISDIR(found.st_mode):
                made.append((path, stat.S_IMODE(found.st_mode)))
        _FOLDERS_MADE.clear()
        if made:
            send(self.sock, dumps(("folders", made)))

    # --- serving ---

    def serve(self):
        while True:
            data = self._receive()
            if data is None:
                return
            try:
                message = self._load(data)
            except Exception as exc:  # a value of the judge's this process cannot rebuild: that call fails alone
                send(self.sock, dumps(("unreadable", f"{type(exc).__name__}: {exc}"[:500])))
                continue
            if message[0] == "call":
                self._call(*message[1:])
            elif message[0] == "describe":
                self._describe(*message[1:])

    def _describe(self, number, target):
        """The target's doc and signature, as the judge shows them on its stub (``f.__doc__``, ``inspect.signature``):
        parameters' names and kinds, and their defaults where those are values; a class's doc and members."""
        if target[0] == "class":
            try:
                self._send(("return", number, None, _class_members(self._class(target))))
            except BaseException:
                self._send(("return", number, None, (None, (), None)))
            return
        try:
            function = self._function(target)
            try:
                parameters = _parameters(function)
            except (TypeError, ValueError):
                parameters = None
            doc = function.__doc__ if isinstance(function.__doc__, str) else None
            annotations = {str(name): note for name, note in getattr(function, "__annotations__", {}).items()}
            notes = {name: note if isinstance(note, str) else inspect.formatannotation(note)
                     for name, note in annotations.items()}
            hints = {}  # the hints themselves, each read apart by the judge: where it refuses one, it keeps its text
            for name, note in annotations.items():
                try:
                    hints[name] = dumps(note, self._persistent_id, as_values=True, reduce=self._reduce)
                except Exception:
                    pass
            code = getattr(function, "__code__", None)
            names = {name for name, *_ in parameters or ()}
            local = [name for name in code.co_varnames if name not in names] if isinstance(code, types.CodeType) else []
            self._send(("return", number, None, (doc, parameters, notes, local, hints)))
        except BaseException:
            self._send(("return", number, None, (None, None, None, [])))

    def _class(self, target):
        found = self.module if target[1] == self.module.__name__ else importlib.import_module(target[1])
        for part in target[2].split("."):
            found = getattr(found, part)
        return found

    def _function(self, target):
        if target[0] == "function":
            return getattr(self.module, target[2])
        owner = self.module
        for part in target[2].rpartition(".")[0].split("."):
            owner = getattr(owner, part)
        found = vars(owner)[target[2].rpartition(".")[2]]
        found = found.fget if isinstance(found, property) else found
        return found.__func__ if isinstance(found, (staticmethod, classmethod)) else found

    def callback(self, hid, op, args, kwargs):
        self.callbacks += 1
        number = -self.callbacks
        self._tell()
        send(self.sock, dumps(("callback", number, hid, op, args, kwargs), self._persistent_id, as_values=True,
                              reduce=self._reduce))
        while True:
            data = self._receive()
            if data is None:
                os._exit(0)  # the judge is gone
            message = self._load(data)
            if message[0] == "call":  # the judge calls back in turn
                self._call(*message[1:])
            elif message[1] == number:
                if message[0] == "raise":
                    raise message[2]
                return message[3]

    def _call(self, number, target, args, kwargs, limit=0.0, context=None, released=()):
        for hid in released:
            self._let_go(hid)
        applied = False
        for key, state in _apply_context(context).items():  # the judge's objects as a test changed them there
            mirror = self.mirrors.get(key)
            if mirror is not None and type(state) is tuple and len(state) == 2:
                apply_graph(mirror[0], *state)
                applied = True
        for mirror in self.mirrors.values() if applied else ():  # one graph may hold another's nodes: all agree
            if mirror[1]:
                mirror[2] = paths(mirror[0])
                mirror[1] = fingerprint(mirror[2])
        taken = target[1] if target[0] == "handle" and target[2] in ("next", "take") else None
        self.streak = (taken, self.streak[1] + 1 if taken is not None and taken == self.streak[0] else 1)
        arguments = [*args, *kwargs.values()]
        self.received.update((id(value), (number, key, value)) for key, value in identities(arguments))
        mutable = [index for index, value in enumerate(arguments) if _watchable(value)]
        watched = {index: paths(arguments[index]) for index in mutable} if self.classes else {}  # before the
        # states: reading an object's attributes may make its __dict__ (a BytesIO's), which pickle then writes
        before = {index: _watched(arguments[index], bool(self.classes)) for index in mutable}
        references = {index: sys.getrefcount(arguments[index]) for index in watched}  # one more after: kept
        saved = self.arguments
        self.arguments = {}
        try:
            value = self._run(target, args, kwargs, limit)
        except _CallTimeout:
            self._left()
            self._send(("raise", number, None, ("Timeout", "the call ran past its limit", "")))
            return
        except BaseException as exc:
            self._left()
            kind, told = limit_kind(exc), _told(exc)  # before _crossing drops it
            self._send(("raise", number, _crossing(exc), (kind.value if kind else None, f"{type(exc).__name__}: {exc}",
                                                         told, _described(exc))))
            return
        finally:
            self.arguments = saved
        rose = {index for index in watched if sys.getrefcount(arguments[index]) > references[index]}  # before
        # anything here holds the arguments (``unchanged``)
        changed, unchanged = {}, {}
        for index, watching in before.items():
            _changes(changed, unchanged, number, index, *watching)
        sent = set()  # the nodes of the graphs whose states go: sent by value
        for index, nodes in watched.items() if not inspect.isawaitable(value) else ():  # what an instance under
            # test keeps: the copies are kept alike (a coroutine holds its arguments until it is awaited: what it
            # does to them is told then, as any call's)
            key = (number, (index,))
            if index in rose and value is not arguments[index] \
                    and key not in self.mirrors and id(arguments[index]) in nodes and self._crosses(nodes) \
                    and all(mirror[0] is not arguments[index] for mirror in self.mirrors.values()) \
                    and self.kept < _KEPT_MOST:
                self.kept += 1
                self.mirrors[key] = [arguments[index], False, {}]
                changed.pop(index, None)
                changed.pop(("delta", number, index), None)
                changed[("sent", *key)] = arguments[index]
                now = paths(arguments[index])
                changed[("moved", *key)] = moved(now, nodes)
                sent.update(now)
        if target[0] == "handle" and target[2] == "await":  # the state its coroutine gave the call's arguments
            made = self.awaits.pop(id(self.handles.get(target[1])), None)
            if made is not None and made[0] is self.handles.get(target[1]):
                _, call, kept = made
                for index, watching in kept.items():
                    _changes(changed, unchanged, call, index, *watching, key=("argument", call, index))
        elif before and inspect.isawaitable(value):  # its body runs when the judge awaits it
            self.awaits[id(value)] = (value, number, {index: _watched(arguments[index], bool(self.classes))
                                                      for index in before})
        self.arguments = {id(value): index for index, value in enumerate(arguments)}
        received = self.received.get(id(value))
        if id(value) in self.sentinels:
            pass  # a marker of the focal module's: the judge's own of that name, as it is
        elif received is not None and received[2] is value and id(value) not in self.arguments:
            if _mutable(value):  # its state now, then the judge's own object, kept alike from now on
                changed[("sent", received[0], received[1])] = value
                self.mirrors.setdefault(received[:2], [value, False, {}])
        elif id(value) not in self.arguments and _kept(value):  # the same object answered again is the same there
            number_of = self.objects.setdefault(id(value), (len(self.objects) + 1, value))[0]
            changed[("obj", number_of)] = value
        for key, mirror in self.mirrors.items():  # what the call changed of the judge's objects kept here
            nodes = paths(mirror[0]) if mirror[1] else None
            now = fingerprint(nodes) if nodes is not None else None
            if now is not None and now != mirror[1]:
                if not self._crosses(nodes):  # it came to hold what the judge does not rebuild: ours alone now
                    mirror[1] = None
                    continue
                changed[("sent", *key)] = mirror[0]
                changed[("moved", *key)] = moved(nodes, mirror[2])
                mirror[1], mirror[2] = now, nodes
                sent.update(nodes)
        self.by_value = {id(value) for value in changed.values()} | {
            id(node) for key, value in changed.items() if type(key) is tuple and key[0] == "delta" for node in value[1]}
        self.unchanged = unchanged
        self.nodes = {ident: (key, path, node) for key, mirror in self.mirrors.items() if mirror[1]
                      for ident, (path, node) in mirror[2].items() if ident not in sent}
        self._left()
        try:  # the new states first: the answer, if it is one of them, is then the argument itself
            self._send(("return", number, changed, value))
        finally:
            self.arguments, self.by_value, self.nodes, self.unchanged = saved, set(), {}, {}
        for mirror in self.mirrors.values():
            if mirror[1] is False:  # named by this answer: its state as the judge takes it
                mirror[2] = paths(mirror[0])
                mirror[1] = fingerprint(mirror[2])

    def _crosses(self, nodes):
        """Whether every node of a graph (``paths``) is of a class the judge rebuilds: a container, or a class of
        the project's or a library's that is not denied. Only such a graph is kept alike; another stays this
        process's own copy."""
        for _, node in nodes.values():
            cls = type(node)
            if cls not in _CONTAINERS and cls not in self.crossing:
                if not (module_of_project(cls.__module__, self.project_roots) or library_module(cls.__module__)):
                    return False
                self.crossing.add(cls)
        return True

    def _let_go(self, hid):
        """The judge holds no handle to this object any more: it is ours to drop, as the test dropped it."""
        obj = self.handles.pop(hid, None)
        if obj is None:
            return
        if self.handle_ids.get(id(obj)) == hid:
            del self.handle_ids[id(obj)]
        self.pending.pop(hid, None)
        self.awaits.pop(id(obj), None)

    def _run(self, target, args, kwargs, limit):
        previous = _set_handler(signal.SIGALRM, _alarm) if limit else None
        if limit:
            signal.setitimer(signal.ITIMER_REAL, limit + _GRACE)
        streams = sys.stdout, sys.stderr  # the told ones already, in a call the judge made while one ran
        sys.stdout, sys.stderr = self.told
        try:
            return self._dispatch(target, args, kwargs)
        finally:
            if limit:
                signal.setitimer(signal.ITIMER_REAL, 0)
                _set_handler(signal.SIGALRM, previous)
            if sys.stdout is self.told[0]:  # else the candidate's code set its own: it stays, as beside the test
                sys.stdout = streams[0]
            if sys.stderr is self.told[1]:
                sys.stderr = streams[1]

    def _dispatch(self, target, args, kwargs):
        kind = target[0]
        if kind == "function":
            return getattr(self.module, target[2])(*args, **kwargs)
        if kind == "method":
            _, _, qualname, binding = target
            owner_path, _, name = qualname.rpartition(".")
            if binding in ("instance", "class", "property") and args and isinstance(args[0], Lent):
                # the judge's own class or instance (a subclass a test made): the candidate's method, bound to it
                # here, for the judge's attribute would be the judge's stub again
                return self._function(target)(*args, **kwargs)
            if binding in ("instance", "class"):
                return getattr(args[0], name)(*args[1:], **kwargs)
            if binding == "property":
                return getattr(args[0], name)
            owner = self.module
            for part in owner_path.split("."):
                owner = getattr(owner, part)
            return getattr(owner, name)(*args, **kwargs)
        if kind == "handle":
            obj, op = self.handles[target[1]], target[2]
            if op in ("next", "take") and target[1] in self.pending:
                raise self.pending.pop(target[1])
            if op == "take":
                return self._take(target[1], obj, *args)
            return _HANDLE_OPS[op](obj, *args, **kwargs)
        if kind == "class":  # the class under test itself: made, read, set, its class and static methods called
            return _CLASS_OPS[target[3]](self._class(target), *args, **kwargs)
        raise LookupError(f"no target of kind {kind!r}")

    def _take(self, hid, obj, most):
        """An iterated handle's next items: the one asked for, then more while they come within
        ``_AHEAD_SECONDS`` (at most ``most``), so that a test's loop over a long iterator is not a round trip an
        item. What stops them (its end, an exception) is raised at the next request, where the item it stands for
        is asked for. None ahead before the test has asked for ``_AHEAD_AFTER`` items in a row with nothing else
        between (a test that reads the state an item changed, an instance's counter, asks between items), nor
        once the judge has lent this process an object: making an item could then call it before the test
        would have."""
        items = [next(obj)]
        if self.lent or type(most) is not int or self.streak[1] < _AHEAD_AFTER:
            return items
        began = time.perf_counter()
        while len(items) < most and time.perf_counter() - began < _AHEAD_SECONDS:
            try:
                items.append(next(obj))
            except BaseException as exc:  # its end, its error, or the call's limit: the next request's answer
                self.pending[hid] = exc
                break
        return items


_CONTAINERS = frozenset({list, dict, set, bytearray, collections.deque})
# Both sides look at every object kept alike at every call: the first this many arguments that instances under test
# keep are kept alike, so that a test making a thousand instances (litestar's multipart form of 1,000 files) does not
# make a million comparisons; the later ones stay as they were sent, as before.
_KEPT_MOST = 64


def _class_members(cls):
    """(doc, members, None): each member the class or a base (not ``object``) defines, by the first definition
    met, as (name, kind); kind is method, static, class or property (any other descriptor). Special methods are
    not listed (the judge forwards the reference's), nor data (the judge asks for it when it is read)."""
    members, seen = [], set()
    for klass in cls.__mro__[:-1]:
        for name, value in vars(klass).items():
            if name in seen or name.startswith("__"):
                continue
            seen.add(name)
            if isinstance(value, staticmethod):
                members.append((name, "static"))
            elif isinstance(value, classmethod):
                members.append((name, "class"))
            elif isinstance(value, types.FunctionType):
                members.append((name, "method"))
            elif hasattr(type(value), "__get__") and not isinstance(value, type):
                members.append((name, "property"))
    return (cls.__doc__ if isinstance(cls.__doc__, str) else None, members, None)


def _kept(value):
    """An answer with an identity of its own, sent by value: a project's or a library's object (a cache's
    ``Locale``), or a tuple an object holds (``copied.parts is original.parts``); not another value type, a
    class, a module, a function or what becomes a handle."""
    cls = type(value)
    return cls is tuple and len(value) > 0 or defines(cls, "__dict__") and not isinstance(value, (
        type, types.ModuleType, BaseException, *FUNCTION_TYPES, *_UNDER_TEST)) \
        and not is_value_type(cls) and not callable(value) and not defines(cls, "__next__") \
        and not defines(cls, "__enter__")


def _apply_context(context):
    """The judge's environment variables as the test changed them, its working directory where it moved, what
    the tests patched on modules and classes (``_patch``), and its clock where a test moved it (``_travel``);
    what it returns, the states of the judge's objects kept here that a test changed (``Server.mirrors``), is the
    server's to apply."""
    changes, cwd, patches, clock, mirrors = context if isinstance(context, tuple) and len(context) == 5 else (
        {}, None, (), False, {})
    if clock is not False:
        _travel(clock)
    for patch in patches or ():
        try:
            _patch(*patch)
        except Exception:  # what cannot be set here (a C type's attribute): our own stays
            pass
    for name, value in (changes or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if cwd:
        try:
            os.chdir(cwd)
        except OSError:  # a folder of the judge's that the candidate's sandbox does not show
            pass
    return mirrors if isinstance(mirrors, dict) else {}


def _travel(clock):
    """Our clock at the judge's travelled one, (nanoseconds, whether it ticks) as its time-machine has it, or the
    real clock again (None): time-machine's own travel, so that every clock function it patches agrees."""
    global _TRAVELLING
    if _TRAVELLING is not None:
        _TRAVELLING.stop()
        _TRAVELLING = None
    if not (isinstance(clock, tuple) and len(clock) == 2 and type(clock[0]) is int):
        return
    import time_machine  # the judge's test used it: the project's environment has it

    _TRAVELLING = time_machine.travel(clock[0] / 1e9, tick=bool(clock[1]))
    coordinates = _TRAVELLING.start()
    if hasattr(coordinates, "_destination_timestamp_ns"):  # exact: the float above may be a microsecond off
        coordinates._destination_timestamp_ns = clock[0]


_TRAVELLING = None  # the time_machine.travel this process runs, where the judge's test travelled
_PATCHED = {}  # (id(target), name) -> (target, name, what it held before the judge's first patch of it)
_ABSENT = object()


def _patch(where, name, put_back, value):
    """Patch our own module or class as a test patched the judge's (``repoexec_judge.Channel._patches``), or put
    back what it held before. ``value`` is the test's (a mock, lent: its calls go back to the judge)."""
    target = _patch_target(where)
    if target is None or not isinstance(name, str):
        return
    key = (id(target), name)
    if put_back:
        saved = _PATCHED.pop(key, None)
        if saved is not None and saved[2] is _ABSENT:
            delattr(target, name)
        elif saved is not None:
            setattr(target, name, saved[2])
        return
    _PATCHED.setdefault(key, (target, name, vars(target).get(name, _ABSENT)))
    setattr(target, name, value)


def _patch_target(where):
    """Our module (by name) or class (by module and qualified name) the judge's patch was on, or None."""
    try:
        found = importlib.import_module(where[1])
        if where[0] == "class":
            for part in where[2].split("."):
                found = getattr(found, part)
            return found if isinstance(found, type) else None
        return found if where[0] == "module" else None
    except Exception:  # not here (a module only the judge imported): nothing to patch
        return None


def _bound_to_value(method):
    """A method the judge binds again to what crossed by value (a parser's ``getint``), under its own name: of a
    class, a value or a kept library object (``repoexec_wire.bindable``); any other stays here, a handle."""
    owner = getattr(method, "__self__", None)
    if isinstance(owner, type):  # a class method of a class pickle names
        return _named(owner) and getattr(owner, method.__name__, None) == method
    return not isinstance(owner, types.ModuleType) and _named(type(owner)) and bindable(owner) \
        and (is_deferred(owner) or not callable(owner) and not hasattr(owner, "__next__")) \
        and getattr(owner, method.__name__, None) == method  # a Deferred's __next__ is its own, not an iterator's


class _HoldersNeeded(Exception):
    """A message holds a partial of a project's function: where each stands is found before it is sent."""


_FIRST = object()  # ``Server.partials`` while a message is first pickled: a partial of a project's function stops it


def _partials_inside_their_package(message, project_function):
    """The ids of the partials of a project's function that stand inside an object of that function's own package
    (xarray's lazy array holding its decoder, bound to data): the judge takes those by value (its own function),
    and would refuse any other as a handle inside an object; one that is the answer itself or in a container stays
    here, a handle, as before."""
    found = set()
    for item, inside, holder in _reached(message, set()):
        if type(item) is functools.partial and inside == 2 and project_function(item.func) \
                and item.func.__module__.partition(".")[0] == type(holder).__module__.partition(".")[0]:
            found.add(id(item))
    return found


_WALKED_MOST = 20_000  # places a nested function's closure is walked to (``_holds_data``): past that, a handle


def _holds_data(function, seen, server):
    """Whether what a nested function holds (its cells, defaults, attributes) reaches only what crosses as data or
    by name, or other such functions: no function that would stay here as a handle, no generator or iterator.
    ``seen``: the nested functions already asked about (one may hold another, or itself)."""
    held = ([cell.cell_contents for cell in function.__closure__ or () if cell_filled(cell)],
            function.__defaults__, function.__kwdefaults__, vars(function))
    for walked, (item, *_) in enumerate(_reached(held, set())):
        if walked > _WALKED_MOST:
            return False
        if isinstance(item, types.FunctionType):
            if id(item) not in seen and _global_name(item) is None and not server._coded(item, seen):
                return False
        elif isinstance(item, types.MethodType) and not _bound_to_value(item) \
                or isinstance(item, FUNCTION_TYPES) and not isinstance(item, types.MethodType) \
                and _global_name(item) is None or defines(type(item), "__next__") or inspect.isawaitable(item):
            return False
    return True


def _parameters(function):
    """Each parameter's name and kind, and its default where that is a scalar (what the judge's stub shows)."""
    return [(p.name, int(p.kind)) if p.default is p.empty else (
        p.name, int(p.kind), p.default if isinstance(p.default, _SHOWN) else ...)
        for p in inspect.signature(function).parameters.values()]


_GENERATING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
_WRAPPED = frozenset({"__wrapped__"})  # what functools.wraps adds to a function's attributes


def _code_parameters(function):
    """A plain function's own parameters (not what it wraps) as ``_parameters`` tells them, read from its code
    and defaults, as ``inspect.signature`` reads them, at a tenth of its cost."""
    code, defaults, keyword = function.__code__, function.__defaults__ or (), function.__kwdefaults__ or {}
    names, positional, keyword_only = code.co_varnames, code.co_argcount, code.co_kwonlyargcount
    shown = lambda value: value if isinstance(value, _SHOWN) else ...  # noqa: E731
    first_default = positional - len(defaults)
    parameters = [(names[index], 0 if index < code.co_posonlyargcount else 1,
                   *((shown(defaults[index - first_default]),) if index >= first_default else ()))
                  for index in range(positional)]
    rest = positional + keyword_only
    if code.co_flags & inspect.CO_VARARGS:
        parameters.append((names[rest], 2))
        rest += 1
    parameters += [(name, 3, *((shown(keyword[name]),) if name in keyword else ()))
                   for name in names[positional:positional + keyword_only]]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        parameters.append((names[rest], 4))
    return tuple(parameters)


def _global_name(obj):
    """(module, qualname) of a module-level function that its module holds under that name, else None: the judge
    may then use its own (a library's function stays what it is: ``import_object("os.path.join") is join``)."""
    try:  # an instance's __getattr__ (the project's code) may raise anything for these
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        owner = getattr(obj, "__objclass__", None)
    except Exception:
        return None
    if module is None and isinstance(owner, type) and owner.__module__ == "builtins":  # object.__init__
        return ("builtins", qualname) if getattr(owner, obj.__name__, None) is obj else None
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module, qualname) if found is obj else None


def _alarm(signum, frame):
    raise _CallTimeout()


def _exit_op(obj, failed):
    return obj.__exit__(*((Exception, Exception(), None) if failed else (None, None, None)))


_HANDLE_OPS = {
    "call": lambda obj, *args, **kwargs: obj(*args, **kwargs),
    "getattr": getattr, "iter": iter, "next": next, "send": lambda obj, value: obj.send(value),
    "close": lambda obj: obj.close(), "enter": lambda obj: obj.__enter__(), "exit": _exit_op,
    # an instance of the class under test
    "method": lambda obj, name, *args, **kwargs: getattr(obj, name)(*args, **kwargs),
    "setattr": setattr, "delattr": delattr,
    "special": lambda obj, name, *args: getattr(type(obj), name)(obj, *args),
    "copy": lambda obj, deep: (copy.deepcopy if deep else copy.copy)(obj),
    "await": lambda obj: _awaited(obj),
}


@functools.lru_cache(maxsize=None)
def _concrete(cls):
    """The class to make an instance of for a test's subclass of the class under test: the class itself, or, where
    it is abstract (litestar's ``Header``), a subclass of it with nothing abstract left, for the test's subclass
    defines what is (in the judge) and this process has no class but the one under test."""
    if not getattr(cls, "__abstractmethods__", None):
        return cls
    made = type(cls)(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
    made.__abstractmethods__ = frozenset()  # set once made: ABCMeta counts them as it makes the class
    return made


_CLASS_OPS = {
    "new": lambda cls, *args, **kwargs: cls(*args, **kwargs), "getattr": getattr, "setattr": setattr,
    "method": lambda cls, name, *args, **kwargs: getattr(cls, name)(*args, **kwargs),
    "derived": lambda cls, *args, **kwargs: _concrete(cls)(*args, **kwargs),
}

_UNDER_TEST = ()  # the classes under test (main sets them): their instances are never sent by value


def _awaited(awaitable):
    """What a coroutine of ours (or a future of our loop) comes to, run to its end in this process's own event
    loop (one for the process, as an application's would be)."""
    return (own_loop(awaitable) or _loop()).run_until_complete(awaitable)  # a future: on the loop it was made on


def _loop():
    """This process's event loop, made and set as the current one on first use."""
    import asyncio

    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
        asyncio.set_event_loop(_LOOP)
    return _LOOP


_LOOP = None


def _fresh(value):
    return tuple(_fresh(item) for item in value) if type(value) is tuple else value


def _parts(reference):
    return sum(1 + (_parts(item) if type(item) is tuple else 0) for item in reference)


def _watched(argument, walked):
    """An argument before what may change it: itself, its graph (``paths``) with what each node holds
    (``node_marks``) for an object (or any argument of a class problem, whose instances may keep it), and its
    state as pickle writes it (a test's list is compared so alone: cheaper, and told whole)."""
    graph = paths(argument, True) if walked or not isinstance(argument, (list, dict, set, bytearray)) else None
    # the graph before the state: reading an object's attributes may make its __dict__ (a BytesIO's)
    return argument, graph, snapshot(argument), node_marks(graph) if graph else None


def _changes(changed, unchanged, call, index, argument, graph, state, marks, key=None):
    """What a call did to one of its arguments, if anything. A walked one: the nodes it changed (``changed_nodes``),
    each by its path then, sent by value; the nodes it left as they were cross as references to the judge's own
    (``unchanged``: a request's connection holds the test's whole app, and the call wrote to one store in it, so
    only that store's dict crosses). Another, or one whose change no node shows (what a C object holds): its new
    state, whole."""
    if marks is not None:
        now = paths(argument, True)
        dirty = changed_nodes(now, graph, marks)
        if dirty:
            changed[("delta", call, index)] = ([path for path, _ in dirty], [node for _, node in dirty])
            left = {id(node) for _, node in dirty}
            unchanged.update((ident, (call, index, path, node)) for ident, (path, node) in graph.items()
                             if ident not in left and ident in now and now[ident][1] is node)
            return
    if state is not None and state != snapshot(argument):
        changed[index if key is None else key] = argument


def _watchable(value):
    """Whether what a call does to an argument may need telling: a container, or an object with attributes or slots
    (``is_node``: not a class, a function, one of ours or an instance under test) of a class not the builtins'."""
    return isinstance(value, (list, dict, set, bytearray)) or is_node(value, True) and type(value).__module__ != "builtins"


def _mutable(value):
    return isinstance(value, (list, dict, set, bytearray)) or defines(type(value), "__dict__") and not isinstance(
        value, (type, Lent, *FUNCTION_TYPES, *_UNDER_TEST)) and type(value).__module__ != "builtins"


_CHAINED = ("\nThe above exception was the direct cause of the following exception:\n\n",
            "\nDuring handling of the above exception, another exception occurred:\n\n")


def _told(exc, depth=0):
    """The exception as Python prints it, for people (the judge never parses it), less the carets under each line
    that Python 3.11 finds by parsing every frame's line again: they were most of what a raised call cost."""
    cause, chained = (exc.__cause__, _CHAINED[0]) if exc.__cause__ is not None else (
        (None if exc.__suppress_context__ else exc.__context__), _CHAINED[1])
    told = _told(cause, depth + 1) + chained if cause is not None and depth < 8 else ""
    frames, tb = [], exc.__traceback__
    while tb is not None:  # less this process's own frames (serving the call): the candidate's code is what raised
        if not tb.tb_frame.f_code.co_filename.startswith(_RUNTIME):
            frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_code.co_name, None))
        tb = tb.tb_next
    stack = "".join(traceback.StackSummary.from_list(frames).format())  # repeated frames folded, lines looked up
    return told + ("Traceback (most recent call last):\n" + stack if frames else "") \
        + "".join(traceback.format_exception_only(type(exc), exc))


def _crossing(exc):
    """A builtin exception of scalar arguments as data (its class's name and arguments: what its pickle holds, read
    by the judge's C unpickler); else the exception itself where it pickles (its type is then the judge's to accept
    or refuse); else None."""
    if _pytest_outcome(exc):  # rebuilt by the judge from its description, with the judge's own pytest
        return None
    if type(exc).__module__ == "builtins":
        try:
            cls, args, state = (*exc.__reduce_ex__(4), None)[:3]
        except Exception:
            cls = args = state = None
        if cls is type(exc) and type(args) is tuple and not state and all(type(arg) in _SCALARS for arg in args):
            return ("builtin exception", cls.__name__, args)
    try:
        pickle.dumps(exc, protocol=4)
    except Exception:
        return None
    exc.__traceback__ = None
    exc.__context__ = exc.__cause__ = None
    return exc


def _pytest_outcome(exc):
    outcomes = sys.modules.get("_pytest.outcomes")
    return outcomes is not None and isinstance(exc, (outcomes.OutcomeException, outcomes.Exit))


def _described(exc):
    """What the judge rebuilds an exception from where the exception itself cannot cross: its type's name and the
    builtin exception it derives from (a candidate's own ``class Invalid(ValueError)``), or pytest's outcome
    (``pytest.skip`` and the like, whose classes pickle cannot name), with its message and status."""
    if _pytest_outcome(exc):
        return ("pytest", type(exc).__name__, str(exc.msg or ""), getattr(exc, "returncode", None))
    bases = [cls.__name__ for cls in type(exc).__mro__ if cls.__module__ == "builtins"]
    return ("class", type(exc).__name__[:100], bases)


def _bytes_io(data):
    import io

    return io.BytesIO(data)


def _parser():
    parser = argparse.ArgumentParser(prog="repoexec_serve")
    parser.add_argument("--repoexec-results-fd", type=int, required=True)  # the channel to the judge
    parser.add_argument("--repoexec-token-fd", type=int)  # the sample's token pipe: not ours to read
    parser.add_argument("--repoexec-limits", default="")
    parser.add_argument("--repoexec-module", required=True)
    parser.add_argument("--repoexec-path", action="append", default=[])
    parser.add_argument("--repoexec-project-root", action="append", default=[])
    parser.add_argument("--repoexec-class", action="append", default=[])  # a class under test, by its name
    return parser


_PARSER = _parser()  # made once: a warm process imports this module before its samples are forked


def main(argv=None):
    options = _PARSER.parse_args(argv)
    if options.repoexec_token_fd is not None:
        os.close(options.repoexec_token_fd)
    sock = socket_from(options.repoexec_results_fd)
    cramped = apply_limits(options.repoexec_limits)
    if cramped:
        print(f"repoexec: {cramped}", file=sys.stderr)
    unfiltered = deny_system_calls()
    if unfiltered:
        print(f"repoexec: no seccomp filter: {unfiltered}", file=sys.stderr)
    sys.path[:0] = [path for path in options.repoexec_path if path not in sys.path]
    codecs.register = _recorded(codecs.register)
    os.mkdir = _recorded_mkdir(os.mkdir)
    try:
        module = importlib.import_module(options.repoexec_module)
    except BaseException as exc:  # every call answers with what the import raised
        module = _Broken(exc)
    _CODECS_REGISTERED.clear()  # the module's import registers the same in the judge's own import
    _FOLDERS_MADE.clear()  # ... and makes the same folders
    global _UNDER_TEST
    _UNDER_TEST = () if isinstance(module, _Broken) else tuple(
        found for found in (getattr(module, name, None) for name in options.repoexec_class) if isinstance(found, type))
    ours = [value for value in globals().values() if isinstance(value, type) and value.__module__ == __name__]
    repoexec_mirror.OPAQUE[:] = (*_UNDER_TEST, *ours)  # never walked: a Lent, whose server is ours
    Server(sock, module, options.repoexec_project_root, _UNDER_TEST).serve()
    return 0


_CODECS_REGISTERED = []  # the codec search functions registered since the judge was last told


def _recorded(register):
    """``codecs.register``, noting each search function for ``Server._registered``."""

    @functools.wraps(register)
    def registering(search_function):
        register(search_function)
        _CODECS_REGISTERED.append(search_function)

    return registering


_FOLDERS_MADE = []  # the absolute path of each folder a call asked to make, since the judge was last told


def _recorded_mkdir(mkdir):
    """``os.mkdir`` (which ``os.makedirs`` and ``Path.mkdir`` call), noting where each folder was asked for, for
    ``Server._folders``; whether it was made is looked at once the call is over. (An audit hook would hear it too,
    but would run Python code at every ``id()`` of the process: twice the cost of iterating a long generator.)"""

    @functools.wraps(mkdir)
    def making(path, mode=0o777, *, dir_fd=None):
        try:
            named = os.fsdecode(path)
            if dir_fd is not None and not os.path.isabs(named):
                named = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), named)
            _FOLDERS_MADE.append(os.path.abspath(named))
        except Exception:  # what mkdir itself refuses, it says below
            pass
        return mkdir(path, mode, dir_fd=dir_fd)

    return making


class _Broken:
    """The focal module, where importing it failed: every call raises what the import raised."""

    def __init__(self, exc):
        self.exc = exc

    def __getattr__(self, name):
        raise self.exc


if __name__ == "__main__":
    sys.exit(main())
