"""The judge's end of a split sample: in the process that runs pytest and the tests, the focal module's target
is a stub (made by ``function`` or ``method``) that sends each call to the candidate's process and rebuilds
what comes back, as ``repoexec_wire`` allows; a class under test is a remote class (``klass``), whose instances
live in the candidate's process and are used from here through their numbers. No code of the candidate's ever
runs here.

Only the inner plugin opens the channel (``open_channel``), before the tests' module is imported.
"""

import abc
import builtins
import codecs
import collections
import functools
import dis
import inspect
import marshal
import os
import pickle
import select
import socket
import sys
import threading
import time
import types
import typing

import repoexec_futures
from repoexec_mirror import apply_graph, fingerprint, follow, is_node, moved, paths
from repoexec_wire import (DESCRIPTORS_MOST, FUNCTION_TYPES, HANDLE_MARK, WireError, _behaviour, _handle, _named,
                           _of_tests, apply_state, converted, dumps, identities, is_sentinel, loads_checked,
                           module_of_project, module_singleton, receive, resolve_global, send, shaped_function,
                           shaped_maker, singleton, socket_from, trusted_module)

DESCRIBE_WAIT = 10.0  # seconds the candidate's process has to describe its target, its module's import included
FOLDERS_MOST = 4096  # folders a sample's candidate may have the judge make (``Channel._folders``)
STUCK_GRACE = 2.0  # seconds the candidate's process has to answer an abandoned call before it counts as stuck
_SCALARS = (bool, int, float, complex, str, bytes, type(None))
# what the judge never sends by reference nor lends: no constant of the focal module (a string, bytes, a tuple or
# frozenset can be), no function, module or future; a list's, dict's or set's items are asked of one by one
_NEVER_REFERRED = frozenset({bool, int, float, complex, type(None), list, dict, set})
_CONSTANT_KINDS = frozenset({str, bytes, tuple, frozenset})  # a value, unless it is one of the module's constants
_OWN_VARIABLES = ("REPOEXEC", "PYTEST", "PYTHON")  # the runtime's, pytest's and the interpreter's: never sent
_CURRENT_TEST = os.environ.encodekey("PYTEST_CURRENT_TEST") if hasattr(os.environ, "encodekey") else None
_CHANNEL = None


class CandidateError(Exception):
    """The candidate raised what cannot cross to the judge (an exception class it made), or its answer could not."""


class CandidateGone(Exception):
    """The candidate's process ended: the sample cannot go on."""

    repoexec_error_type = "EarlyExit"


class CandidateStuck(Exception):
    """The candidate's process did not come back from a call that timed out."""

    repoexec_error_type = "Timeout"


class CandidateTimeout(Exception):
    """A call ran past the test's time limit, by the judge's own clock."""

    repoexec_error_type = "Timeout"


def open_channel(fd, project_roots, on_stop):
    global _CHANNEL
    try:
        _watch_patches()
    except Exception:  # a pytest or mock of another shape: patches stay the judge's own, as before
        pass
    _CHANNEL = Channel(fd, project_roots, on_stop)
    while _UNDESCRIBED:  # stubs made before the channel was (the focal module imported early): kept, told
        stub, target = _UNDESCRIBED.pop()
        if target[0] == "class":
            _class_described(stub)
            continue
        stub._described_late = True
        _described(stub, target)


_UNDESCRIBED = []
_PATCHED = {}  # (id(target), name) -> (target, name, what it held before): what the tests patched on a module or class
_ABSENT = object()  # no such attribute before the patch


def _watch_patches():
    """Note each module's or class's attribute a test patches (``unittest.mock.patch``, pytest-mock's ``mocker``,
    pytest's ``monkeypatch.setattr``): each call then tells the candidate's process to patch its own the same way
    (``Channel._patches``), so the code under test there calls the test's mock, lent, as it would beside the test
    (litestar's ``mocker.patch("...UploadFile.close")`` counts the closes ``FormMultiDict.close`` makes)."""
    import unittest.mock  # preloaded by a warm process: nothing to pay a sample
    from _pytest import monkeypatch

    if getattr(unittest.mock._patch, "_repoexec_watched", False):
        return
    notset = getattr(monkeypatch, "notset", None) or getattr(sys.modules.get("_pytest.compat"), "NOTSET", None)
    enter, setattr_ = unittest.mock._patch.__enter__, monkeypatch.MonkeyPatch.setattr

    def entering(self):
        target = self.getter()
        before = _raw(target, self.attribute)
        made = enter(self)
        _noted(target, self.attribute, before)
        return made

    def setting(self, *args, **kwargs):
        before = len(self._setattr)
        made = setattr_(self, *args, **kwargs)
        for target, name, held in self._setattr[before:]:  # what it held: a class's raw, as pytest keeps it
            _noted(target, name, _ABSENT if notset is not None and held is notset else held)
        return made

    unittest.mock._patch.__enter__, monkeypatch.MonkeyPatch.setattr = entering, setting
    unittest.mock._patch._repoexec_watched = True


def _raw(target, name):
    """What a module or class holds under ``name`` itself (a class's method as its function, not bound)."""
    return vars(target).get(name, _ABSENT) if isinstance(target, (type, types.ModuleType)) else _ABSENT


def _noted(target, name, before):
    if isinstance(target, (type, types.ModuleType)) and isinstance(name, str):
        _PATCHED.setdefault((id(target), name), (target, name, before))


def function(module, name, dispatch=False):
    """The stub of a module-level function ``name``; ``dispatch``: of a ``functools.singledispatch`` one, whose
    ``register`` (the module's own overloads, below it) leaves each overload as it is: the candidate's process
    dispatches, to the overloads registered there."""
    stub = _stub(("function", module, name))
    stub.__name__ = stub.__qualname__ = name
    stub.__module__ = module
    stub = _described(stub, ("function", module, name))
    if dispatch:
        stub.register = _registered
    return stub


def _registered(kind, overload=None):
    """``register(cls, func)``, ``@register(cls)`` and ``@register`` (by annotation): the overload itself."""
    if overload is not None:
        return overload
    return kind if callable(kind) and not isinstance(kind, type) else lambda overload: overload


def method(module, qualname, kind):
    """The stub of a method: ``kind`` is how the reference is bound (instance, static, class, property)."""
    stub = _stub(("method", module, qualname, kind))
    stub.__name__, stub.__qualname__, stub.__module__ = qualname.rpartition(".")[2], qualname, module
    stub = _described(stub, ("method", module, qualname, kind))
    return {"static": staticmethod, "class": classmethod, "property": property}.get(kind, lambda stub: stub)(stub)


def klass(module, name, specials=(), bases=(), fields=None, coroutines=()):
    """The remote class that stands for the class under test: calling it makes an instance in the candidate's
    process (``RemoteInstance``), and its methods, attributes and special methods are that instance's, asked
    there. Its methods' names come from the candidate's description of its class (``_class_described``); the
    special methods it forwards are only those of the reference: ``specials``, those its own body defines, and
    those of its ``bases`` (the judge's own classes, as the reference names them). ``fields``: a dataclass
    reference's (name, whether ``__init__`` takes it), for ``dataclasses``' functions. ``coroutines``: the
    reference's methods that are coroutine functions (their stubs are marked so)."""
    inherited = {}
    for base in bases:
        for owner in reversed(getattr(base, "__mro__", (base,))[:-1]):
            inherited.update(vars(owner))
    own = set(specials)
    forwarded = {key for key in {*own, *inherited} if key in _FORWARDED | _COMPARED}
    if "__hash__" in own or "__eq__" not in own and inherited.get("__hash__", True) is not None:
        hashing = "__hash__" in forwarded
    else:  # __eq__ without __hash__, here or in a base: unhashable, as Python makes the reference
        forwarded.discard("__hash__")
        hashing = None
    cls = RemoteClass(name, (RemoteInstance,), {"__module__": module, "__qualname__": name, "__slots__": (),
                                                "_repoexec_target": (module, name),
                                                "_repoexec_coroutines": frozenset(coroutines),
                                                "_repoexec_generic": any(map(_typing_generic, bases))})
    for special in forwarded:
        type.__setattr__(cls, special, _forwarding(special))
    if hashing is None:
        type.__setattr__(cls, "__hash__", None)
    if fields is not None:
        _as_dataclass(cls, name, fields, bases)
    for base in bases:  # an abstract base (``Mapping[str, Any]``) counts it as its own, as it counts the reference
        base = getattr(base, "__origin__", base)
        if isinstance(base, abc.ABCMeta):
            base.register(cls)
    _CLASSES[(module, name)] = cls
    if _CHANNEL is None:
        _UNDESCRIBED.append((cls, ("class", module, name)))
    else:
        _class_described(cls)
    return cls


_CLASSES = {}  # (module, qualname) -> the remote class made for it


def _typing_generic(base):
    """Whether a base as the reference names it (``Generic[T]``, a generic class of the project's) is typing's
    Generic: then ``Cls[X]`` is typing's alias, which pytest names by its position, not as a class."""
    origin = getattr(base, "__origin__", base)
    return origin is typing.Generic or isinstance(origin, type) and issubclass(origin, typing.Generic)


def _as_dataclass(cls, name, fields, bases):
    """The remote class's dataclass fields, its dataclass bases' first: what ``dataclasses.fields``, ``asdict``
    and ``replace`` read (each field's value is then read from the candidate's instance)."""
    import dataclasses

    shadow = dataclasses.make_dataclass(name, [(field, "typing.Any", dataclasses.field(init=init))
                                               for field, init in fields], eq=False)
    merged = {}
    for base in reversed([klass for base in bases for klass in getattr(base, "__mro__", ())]):
        merged.update(getattr(base, "__dataclass_fields__", None) if "__dataclass_fields__" in vars(base) else {})
    merged.update(shadow.__dataclass_fields__)
    type.__setattr__(cls, "__dataclass_fields__", merged)
    type.__setattr__(cls, "__dataclass_params__", shadow.__dataclass_params__)


def _stub(target):
    """``(*args, **kwargs)`` sent on to the candidate's process: a shaped function, so that told the candidate's
    parameters late (its module imported before the channel opened) it takes their shape in place."""
    def forward(args, kwargs):
        __tracebackhide__ = True  # as the channel's frames below
        return _channel().call(target, args, kwargs)

    stub = shaped_function([("args", int(inspect.Parameter.VAR_POSITIONAL), False),
                            ("kwargs", int(inspect.Parameter.VAR_KEYWORD), False)], forward)
    stub._forward = forward
    return stub


def _shown_signature(parameters):
    """The signature of the candidate's parameters as its process told them: a default shown only where it is a
    plain scalar (``...`` where it is not)."""
    return inspect.Signature([inspect.Parameter(
        name, inspect._ParameterKind(kind), default=(default[0] if type(default[0]) in _SCALARS else ...)
        if default else inspect.Parameter.empty) for name, kind, *default in parameters])


def _shaped_parameters(signature):
    """``shaped_function``'s parameters for a signature; a default that is not shown (``...``) is not passed on."""
    return [(p.name, int(p.kind), p.default is not p.empty,
             *([p.default] if p.default is not p.empty and p.default is not ... else []))
            for p in signature.parameters.values()]


@functools.lru_cache(maxsize=256)
def _handle_shape(key):
    """(signature, maker) of a function handle's shape (``_function_handle``): many handles share one (scrapy's
    tests make ten thousand memoized functions), checked and compiled once."""
    parameters, local = key
    signature = _shown_signature(parameters)
    return signature, shaped_maker(_shaped_parameters(signature), list(local))


def _function_handle(handle, shape, wrapped=()):
    """A plain function of the judge's own standing for a function of the candidate's process: of that function's
    names, doc, signature and local names (``repoexec_serve.Server._shape``), its body a call of the handle. So
    ``type(f) is FunctionType`` and ``f.__code__.co_varnames`` read as beside the candidate (tornado's
    ``add_accept_handler``); no code of the candidate's runs here, and what a call answers is data again. Where the
    shape is not one Python makes a function of, the handle itself."""
    try:
        local = shape.get("local")
        key = (tuple(map(tuple, shape["parameters"])), tuple(local) if isinstance(local, list) else ())
        try:
            signature, maker = _handle_shape(key)
        except TypeError:  # a default that is not hashed: made for this one alone
            signature, maker = _handle_shape.__wrapped__(key)
        made = maker(lambda args, kwargs: handle(*args, **kwargs))
    except (TypeError, ValueError, SyntaxError, KeyError, AttributeError):
        return handle
    for name in ("__name__", "__qualname__", "__module__"):
        if isinstance(shape.get(name), str):
            setattr(made, name, shape[name])
    made.__doc__ = shape["__doc__"] if isinstance(shape.get("__doc__"), str) else None
    if wrapped:  # inspect.signature shows what it wraps, as beside the candidate
        made.__wrapped__ = wrapped[0]
    else:
        made.__signature__ = signature
    setattr(made, HANDLE_MARK, handle)
    return made


def _described(stub, target):
    """The stub with the candidate's doc, signature, annotations and local names (tests read ``f.__doc__``,
    ``f.__code__.co_argcount``, ``co_varnames``), where its process tells them in ``DESCRIBE_WAIT`` seconds; the
    values come through the judge's unpickler like any answer. Told at once, the stub is made again with the candidate's parameters
    (``shaped_function``: from their names; a default the candidate's process did not show as a number, a string
    or None is not passed on); told later (the module imported before the channel opened), it keeps its own."""
    if _CHANNEL is None:
        _UNDESCRIBED.append((stub, target))
        return stub
    if _CHANNEL.broken:
        return stub
    doc, parameters, notes, *local = _CHANNEL.describe(target) or (None, None, None)
    hints = _CHANNEL.hints(local[1]) if len(local) > 1 else {}
    try:
        signature = _shown_signature(parameters)
        shaped = shaped_function(_shaped_parameters(signature), stub._forward,
                                 local[0] if local and isinstance(local[0], list) else ())
    except (TypeError, ValueError, SyntaxError):
        stub.__doc__ = doc if isinstance(doc, str) else None
        return stub
    if getattr(stub, "_described_late", False):  # the tests hold this stub: it takes the shape in place
        stub.__code__, stub.__defaults__, stub.__kwdefaults__ = shaped.__code__, shaped.__defaults__, \
            shaped.__kwdefaults__
        stub.__closure__[0].cell_contents = shaped.__closure__[0].cell_contents
        shaped = stub
    for key in ("__name__", "__qualname__", "__module__"):
        setattr(shaped, key, getattr(stub, key))
    shaped.__doc__ = doc if isinstance(doc, str) else None
    shaped.__signature__ = signature
    shaped.__annotations__ = {name: hints.get(name, note) for name, note in (notes or {}).items()
                              if isinstance(name, str) and isinstance(note, str)}
    return shaped


def _channel():
    global CALLED_BEFORE_CHANNEL
    if _CHANNEL is None:
        CALLED_BEFORE_CHANNEL = True  # a judges' zygote that collected so cannot serve: see repoexec_warm
        raise CandidateGone("no candidate's process to call (the judge runs without one)")
    return _CHANNEL


CALLED_BEFORE_CHANNEL = False  # the target was called before the channel opened (the focal module's import)


_AHEAD_MOST = 4096  # items of an iterated handle asked for at once: the candidate's process sends fewer if slow


class Handle:
    """An object that stays in the candidate's process (a function, a generator, an iterator, a coroutine it
    returned): it is called, iterated, entered, awaited and named there, and what it answers is data again (once
    iterated, its items in batches made ahead there: ``repoexec_serve.Server._take``). Nothing about a value is
    asked of it (no comparison, hash, truth, length, item or containment: Python's own for any object), and the
    judge's code never holds one (``repoexec_wire`` lets it cross only as an answer or in a plain container)."""

    __slots__ = ("_channel", "_hid", "_type")
    lent = True  # never given a state by an answer (repoexec_wire's BUILD)

    def __init__(self, channel, hid, type_name):
        self._channel, self._hid, self._type = channel, hid, type_name
        channel.held[hid] = channel.held.get(hid, 0) + 1
        channel.released.discard(hid)

    def __del__(self):
        self._channel.drop(self._hid)

    def _ask(self, op, *args, **kwargs):
        return self._channel.call(("handle", self._hid, op), args, kwargs)

    def __call__(self, *args, **kwargs):
        return self._ask("call", *args, **kwargs)

    def __iter__(self):
        found = self._ask("iter")
        if type(found) is Handle:  # iterated (a loop, list()): its items come in batches, shared by its handles
            found._channel.ahead.setdefault(found._hid, collections.deque())
        return found

    def __next__(self):
        ahead = self._channel.ahead.get(self._hid)
        if ahead is None:
            return self._ask("next")
        if not ahead:
            items = self._ask("take", _AHEAD_MOST)
            if type(items) is not list or not items:
                raise WireError("an iterator's items must come as a list of at least one")
            ahead.extend(items)
        return ahead.popleft()

    def send(self, value):
        return self._ask("send", value)

    def close(self):
        self._channel.ahead.pop(self._hid, None)  # a closed generator's items made ahead are never taken
        return self._ask("close")

    def __enter__(self):
        return self._ask("enter")

    def __exit__(self, kind, value, traceback):
        return self._ask("exit", kind is not None)

    def __await__(self):
        """A coroutine (or other awaitable) of the candidate's, run to its end in its own process's event loop:
        what it returns is data again. Where it awaits one of the judge's (a test's coroutine, an ``AsyncMock``'s
        call), that one runs here, on the judge's own loop, while the candidate's process waits (``awaited``)."""
        return (yield from self._channel.awaited(("handle", self._hid, "await")))

    def __contains__(self, key):
        # by iteration, compared here: the candidate's own __contains__ would answer yes to the expected value
        return any(item is key or item == key for item in self)

    def __getattr__(self, name):
        if name.startswith("__") and name not in ("__name__", "__qualname__", "__wrapped__", "__code__",
                                                  "__defaults__", "__kwdefaults__") \
                and not self._channel.marks_of_project(name):
            raise AttributeError(name)
        return self._ask("getattr", name)  # the candidate's own object's: a function's code crosses as a summary

    @property
    def __doc__(self):  # the candidate's object's own (a function's docstring), as a value
        doc = self._ask("getattr", "__doc__")
        return doc if isinstance(doc, str) else None

    def __repr__(self):
        return f"<{self._type} in the candidate's process>"


# Special methods the remote class forwards where the reference class defines them (the tests were written to
# use them): what they answer is data (or another of its instances), which the test then judges here. A special
# method the reference lacks is never asked, so a candidate's own __eq__ decides nothing the reference's identity
# would have.
_FORWARDED = frozenset({
    "__len__", "__iter__", "__next__", "__reversed__", "__contains__", "__getitem__", "__setitem__", "__delitem__",
    "__call__", "__enter__", "__exit__", "__aenter__", "__aexit__", "__aiter__", "__anext__", "__bool__", "__int__",
    "__float__", "__index__", "__complex__",
    "__format__", "__hash__", "__neg__", "__pos__", "__abs__", "__invert__", "__round__",
    "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__", "__matmul__",
    "__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__divmod__",
    "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__", "__rand__",
    "__ror__", "__rxor__", "__iadd__", "__isub__", "__imul__", "__iand__", "__ior__",
})
_COMPARED = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
_ASKED = frozenset({"__dict__", "__doc__", "__name__", "__qualname__", "__wrapped__", "__slots__", "__annotations__",
                    "__fields__", "__dataclass_fields__"})  # dunders an instance's attribute may be asked for


class RemoteClass(type):
    """The type of a remote class: what is not found on it (a class attribute, a nested class) is asked of the
    candidate's class. ``lent`` (a handle's mark, which ``repoexec_wire`` reads from the type) is this type's own,
    so that an instance's own attribute of that name is still the candidate's."""

    lent = property(lambda cls: True)
    held = property(lambda cls: True)  # its instances may stand inside the judge's objects (``repoexec_wire``)

    def __getattr__(cls, name):
        if name.startswith(("__", "_repoexec")):
            raise AttributeError(name)
        return _channel().call(("class", *cls._repoexec_target, "getattr"), (name,), {})

    def __setattr__(cls, name, value):
        # a class the judge's code derives from it keeps its own; a method or property the judge made for it is
        # replaced here (a test's patch of it, which the candidate's process is told as the project's patches are)
        if name.startswith(("__", "_repoexec")) or "_repoexec_target" not in vars(cls) or name in vars(cls):
            return super().__setattr__(name, value)
        _channel().call(("class", *cls._repoexec_target, "setattr"), (name, value), {})

    def __call__(cls, *args, **kwargs):
        """The instance, made in the candidate's process, which ran its ``__init__`` there. A class a test
        derives runs its own ``__init__`` here too (that process made it as the class under test); the project's
        classes never run theirs twice (a dataclass's would set its fields again)."""
        made = cls.__new__(cls, *args, **kwargs)
        if _made_as_base(cls) and "_repoexec_target" not in vars(cls) and isinstance(made, cls):
            cls.__init__(made, *args, **kwargs)
        return made


class RemoteInstance:
    """An instance of the class under test, which lives in the candidate's process: each attribute read or set,
    method called and special method used is a call there; the same instance there is the same object here."""

    __slots__ = ("_repoexec_hid", "__weakref__")
    _repoexec_target = None  # (module, qualname) of the class under test, on its remote class
    _repoexec_generic = False  # whether the reference derives from typing's Generic (``klass``)

    def __new__(cls, *args, **kwargs):
        # a class the project derives from it is made as the candidate's process has it (the project's same class
        # over the candidate's); one a test derives is made as the class under test, which is all that process has
        target = cls._repoexec_target if _made_as_base(cls) else (cls.__module__, cls.__qualname__)
        derived = _made_as_base(cls) and "_repoexec_target" not in vars(cls)  # a test's subclass
        return _channel().make(cls, ("class", *target, "derived" if derived else "new"), args, kwargs)

    def __class_getitem__(cls, item):  # a generic class under test, subscripted (MultiDict[str]) as the reference
        if cls._repoexec_generic:  # the reference derives from typing's Generic: its alias is typing's, no class
            return typing._GenericAlias(cls, item if isinstance(item, tuple) else (item,))
        return types.GenericAlias(cls, item)

    def __init__(self, *args, **kwargs):
        pass  # made in the candidate's process by __new__

    def _repoexec_ask(self, op, *args, **kwargs):
        return _channel().call(("handle", object.__getattribute__(self, "_repoexec_hid"), op), args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__") and name not in _ASKED or name.startswith("_repoexec"):
            raise AttributeError(name)
        return self._repoexec_ask("getattr", name)

    def __setattr__(self, name, value):
        if name == "__orig_class__":  # typing's alias marks what it made; the instance is the candidate's process's
            raise AttributeError(name)  # to keep as it keeps it, and typing takes this as a class with slots
        self._repoexec_ask("setattr", name, value)

    def __delattr__(self, name):
        self._repoexec_ask("delattr", name)

    def __repr__(self):
        try:
            return self._repoexec_ask("special", "__repr__")
        except Exception:
            return f"<{type(self).__qualname__} in the candidate's process>"

    def __str__(self):
        return self._repoexec_ask("special", "__str__")

    def __copy__(self):
        return self._repoexec_ask("copy", False)

    def __deepcopy__(self, memo):
        return self._repoexec_ask("copy", True)

    def __reduce_ex__(self, protocol):
        raise TypeError(f"an instance of {type(self).__qualname__} lives in the candidate's process: it is not "
                        "pickled in the judge's")


def _made_as_base(cls):
    """The remote class itself, or a class a test derives from it (its module or a function holds it)."""
    return "_repoexec_target" in vars(cls) or _of_tests(cls.__module__) or "<" in cls.__qualname__


def _forwarding(name):
    def special(self, *args):
        return self._repoexec_ask("special", name, *args)

    def exiting(self, kind, value, traceback):  # the traceback holds the judge's frames: it stays here
        return self._repoexec_ask("special", name, kind, value, None)

    made = exiting if name in ("__exit__", "__aexit__") else special
    made.__name__ = name
    return made


def _calling(name):
    def method(self, *args, **kwargs):
        return self._repoexec_ask("method", name, *args, **kwargs)
    method.__name__ = name
    return method


def _mark_coroutine(function):
    """``function`` (which answers the candidate's coroutine) seen as a coroutine function by
    ``inspect.iscoroutinefunction`` (3.12) and ``asyncio.iscoroutinefunction``, which ``mock`` asks."""
    import asyncio.coroutines

    if hasattr(inspect, "markcoroutinefunction"):
        inspect.markcoroutinefunction(function)
    function._is_coroutine = getattr(asyncio.coroutines, "_is_coroutine", None)


def _class_calling(target, name):
    def method(*args, **kwargs):
        return _channel().call((*target, "method"), (name, *args), kwargs)
    method.__name__ = name
    return method


def _property(name):
    return property(lambda self: self._repoexec_ask("getattr", name),
                    lambda self, value: self._repoexec_ask("setattr", name, value),
                    lambda self: self._repoexec_ask("delattr", name))


def _class_described(cls):
    """The remote class given the candidate's class's members: its methods, class and static methods and
    properties by name (special methods are the reference's: ``klass``). Class attributes that are data are asked
    for when read (``RemoteClass.__getattr__``). Nothing the candidate sent is run: each member is the judge's
    own code."""
    module, qualname = cls._repoexec_target
    described = _CHANNEL.describe(("class", module, qualname)) if not _CHANNEL.broken else None
    doc, members = described[:2] if isinstance(described, tuple) and len(described) == 3 else (None, ())
    type.__setattr__(cls, "__doc__", doc if isinstance(doc, str) else None)
    for member in members if isinstance(members, (list, tuple)) else ():
        if not (isinstance(member, tuple) and len(member) == 2 and all(isinstance(part, str) for part in member)):
            continue
        name, kind = member
        if name.startswith(("__", "_repoexec")) or name in vars(cls):  # special methods are the reference's
            continue
        if kind == "method":
            made = _calling(name)
            if name in cls._repoexec_coroutines:
                _mark_coroutine(made)
        elif kind in ("static", "class"):
            made = staticmethod(_class_calling(("class", module, qualname), name))
        elif kind == "property":
            made = _property(name)
        else:
            continue
        type.__setattr__(cls, name, made)


class _Dropped:
    """The arguments of a call whose answer is read only to be dropped (a timeout abandoned it): an answer that
    gives one back (``nap(1.6)`` returns its argument) reads as None there, and is then dropped."""

    def __len__(self):
        return sys.maxsize

    def __getitem__(self, index):
        return None


_DROPPED = _Dropped()


class Channel:
    """The judge's connection to the candidate's process: calls out, answers (and callbacks) in."""

    def __init__(self, fd, project_roots, on_stop):
        self.sock = socket_from(fd)
        self.project_roots = project_roots
        self.on_stop = on_stop  # told why the session must stop (the candidate's process is gone or stuck)
        self.ids = 0  # the number of the last call sent: the calls so far (a judge's test timer counts them)
        self.lent, self.lent_ids = {}, {}  # the judge's objects the candidate may call back: hid -> object
        self.codecs = []  # the project's codec search functions registered here for the candidate's process
        self.objects = {}  # the candidate's objects answered by value, by the number its process gave them
        self.instances = {}  # hid -> the RemoteInstance that stands for the candidate's instance of that number
        self.making = None  # the remote class (or the judge's subclass of it) an instance is being made of
        self.reading = False  # an answer is being read: no call goes out meanwhile
        self.sent = {}  # (call, key) -> an argument the judge sent (``identities``): itself where an answer holds it
        self.made = {}  # call -> its arguments, where it answered a handle (a coroutine awaited later changes them)
        self.abandoned = None  # a call whose answer a timeout left behind
        self.constants = {}  # id -> (module, name, value): the target module's own constants, sent by their names
        self.constants_of = {}  # the same, by module: as each module held them at its first call
        self.package = ""  # the top-level package of the module called last (its marks: ``marks_of_project``)
        self.in_reference = 0
        self.broken = None  # why no more calls can be made
        self.limit = 0.0  # the running test's time limit: the candidate's process interrupts a call past it
        self.environ, self.cwd, self.raw = {}, None, None
        self.ahead = {}  # hid -> the items of an iterated handle made ahead, not yet taken (``Handle.__next__``)
        self.held = {}  # hid -> how many Handles stand for that object of the candidate's process
        self.released = set()  # hids no Handle stands for any more: the next call tells that process to let go
        self.folders = 0  # folders made here for the candidate's process (``_folders``)
        self.descriptors = []  # the sockets' descriptors the message being made lends (``_persistent_id``)
        self.shapes = {}  # number -> a function handle's shape, as the candidate's process told it (``_shaped``)
        self.patches = {}  # (id(target), name) -> what the candidate's process was last told it holds (``_patches``)
        self.clock = None  # the travelled clock the candidate's process was last told (``_clock``): None, the real one
        self.mirrored = {}  # (call, key) -> its ``fingerprint`` as both processes last agreed on it (``_mirrors``):
        # False until taken after the answer that named it
        self.nodes = {}  # (call, key) -> its nodes' ``paths`` then
        self.mirror_ids = {}  # id -> (call, key) of each of them, while a message is written
        self.by_value_ids = set()  # those whose states the message carries (``_mirrors``): by value there
        # one call out at a time: a test's threads (dask's scheduler calling a remote index) take turns, where
        # they would interleave their messages; one thread's calls nest (a callback's calls, made while it waits)
        self.turn = threading.RLock()
        self._context()  # the environment as both processes start with it: only later changes cross

    def call(self, target, args, kwargs):
        # hidden from pytest's tracebacks, with ``_wait`` and ``_next``: a failure is told at the test's line and
        # where the candidate raised, without the channel's frames (nor their source read and parsed at each)
        __tracebackhide__ = True
        with self.turn:
            number, arguments, started = self._start(target, args, kwargs)
            try:
                value = self._wait(number, arguments)
            except CandidateError:
                self._timed(started)
                raise
            if type(value) is Handle and arguments:  # a coroutine, say: awaiting it may change them
                self.made[number] = arguments
            return value

    def awaited(self, target):
        """A generator (what ``Handle.__await__`` returns): the call, and each of the judge's awaitables that the
        candidate's coroutine awaits meanwhile, run on the judge's loop (it yields what they yield), its outcome
        sent back. While one runs, the call is not abandoned: a call the judge makes meanwhile is served in the
        candidate's process, which waits for the outcome."""
        number, arguments, started = self._start(target, (), {})
        try:
            while True:
                done, value = self._next(number, arguments, awaits=True)
                if done:
                    return value
                if value is None:
                    continue
                reply_to, awaitable = value
                self.abandoned = None
                try:
                    outcome = yield from _judge_awaits(awaitable)
                except Exception as exc:
                    payload = self._answer(reply_to, exc=exc)
                except BaseException:  # cancelled here: the candidate's coroutine is told, the call abandoned
                    self.abandoned = number
                    self._send(self._answer(reply_to, exc=RuntimeError("the judge's awaitable was cancelled")))
                    raise
                else:
                    payload = self._answer(reply_to, outcome)
                self.abandoned = number
                self._send(payload)
        except CandidateError:
            self._timed(started)
            raise

    def drop(self, hid):
        """A Handle is gone (``Handle.__del__``, which may run anywhere: nothing is sent from here). Where it was
        the last for its object, the candidate's process lets go of that object at the next call, as the object
        would have gone beside the test that dropped it: a socket closed, a generator finished."""
        left = self.held.get(hid, 0) - 1
        if left > 0:
            self.held[hid] = left
            return
        self.held.pop(hid, None)
        self.ahead.pop(hid, None)
        self.released.add(hid)

    def marks_of_project(self, name):
        """A dunder named for the project's own package (tornado's ``__tornado_coroutine__`` on the functions its
        decorator makes): a mark the project's code reads, which no protocol of Python's or of a library's is."""
        return bool(self.package) and name.startswith(f"__{self.package}_") and name.endswith("__")

    def _start(self, target, args, kwargs):
        """Send the call: (its number, its arguments, when it was sent)."""
        if self.broken:
            raise CandidateGone(self.broken)
        if self.reading:  # a name looked up on a remote class while an answer is read: the answer is refused
            raise WireError("an answer that names what only the candidate's process can look up")
        if self.abandoned is not None:
            self._drain()
        if isinstance(target[1], str):
            self.package = target[1].partition(".")[0]
        self.ids += 1
        number = self.ids
        arguments = [*args, *kwargs.values()]
        self.sent.update(((number, key), value) for key, value in identities(arguments))
        module = target[1] if isinstance(target[1], str) else None
        if module not in self.constants_of:
            self.constants_of[module] = _constants(module)
        self.constants = self.constants_of[module]
        released = tuple(self.released)
        try:
            payload = self._dumps(("call", number, target, tuple(args), dict(kwargs), self.limit,
                                   (*self._context(), self._patches(), self._clock(), self._mirrors()),
                                   released))
        except (pickle.PicklingError, TypeError, AttributeError, RuntimeError) as exc:
            raise CandidateError(f"the test's arguments cannot be sent to the candidate's process: {exc}") from None
        self.released.difference_update(released)
        self._send(payload)
        self.abandoned = number  # until its answer is read
        return number, arguments, time.monotonic()

    def _timed(self, started):
        if self.limit and time.monotonic() - started >= self.limit:  # the judge's clock, not the answer's word
            raise CandidateTimeout(f"the call ran past the test's limit of {self.limit:g} s") from None

    def make(self, cls, target, args, kwargs):
        """A new instance of the class under test, made in the candidate's process, as an instance of ``cls`` here
        (the remote class, or a class the judge's code derived from it)."""
        self.making = cls
        try:
            made = self.call(target, args, kwargs)
        finally:
            self.making = None
        if not isinstance(made, cls):
            raise CandidateError(f"{cls.__qualname__}() made no instance of its class in the candidate's process")
        return made

    def _context(self):
        """What the test changed of the judge's environment since the last call (``monkeypatch.setenv``, a
        variable removed: None), and its working directory where that changed: the candidate's process applies
        them before the call. The runtime's and pytest's own variables stay the judge's."""
        raw = getattr(os.environ, "_data", None)  # the bytes os.environ keeps: compared in C, decoded on change
        if raw is not None:  # less the one variable pytest changes at every phase of every test, never sent
            raw = dict(raw)
            raw.pop(_CURRENT_TEST, None)
        changes = {}
        if raw is None or raw != self.raw:
            self.raw = raw
            environ = {name: value for name, value in os.environ.items() if not name.startswith(_OWN_VARIABLES)}
            changes = {name: value for name, value in environ.items() if self.environ.get(name) != value}
            changes.update({name: None for name in self.environ if name not in environ})
            self.environ = environ
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = None
        moved, self.cwd = (cwd if cwd != self.cwd else None), cwd
        return changes, moved

    def _clock(self):
        """The time a test set with time-machine (``travel``, litestar's ``frozen_datetime``), where it changed since
        the last call: (now in nanoseconds, whether it ticks), or None where the test's travel ended; False where it
        did not change (a frozen clock is told once, a ticking one at each call). The candidate's process travels
        to it, so that its ``datetime.now()`` is the judge's, as it was beside the test."""
        machine = sys.modules.get("time_machine")  # its travels: traveller_stack from 3.0, coordinates_stack before
        stack = getattr(machine, "traveller_stack", None) or getattr(machine, "coordinates_stack", None)
        clock = (stack[-1].time_ns(), bool(getattr(stack[-1], "_tick", True))) if stack else None
        if clock == self.clock:
            return False
        self.clock = clock
        return clock

    def _patches(self):
        """The tests' patches on modules and classes (``_watch_patches``) that changed since the last call: (where,
        name, put back, what it holds now). The candidate's process sets its own module's or class's attribute to
        what the test set (a mock is lent: its calls come back here, where the test counts them), and puts its own
        back where the test's patch ended."""
        changed = []
        for key, (target, name, before) in list(_PATCHED.items()):
            now = _raw(target, name)
            if self.patches.get(key, before) is now:
                continue
            self.patches[key] = now
            where = _where(target, self.project_roots)
            if where is not None:
                changed.append((where, name, now is before, None if now is before or now is _ABSENT else now))
        return changed

    def describe(self, target):
        """The target's (doc, parameters), or None where the candidate's process does not answer in time (its
        import still running): the answer is then read and dropped before the next call's."""
        if self.abandoned is not None:
            return None
        self.ids += 1
        number = self.ids
        self._send(dumps(("describe", number, target)))
        self.abandoned = number
        if not select.select([self.sock], [], [], DESCRIBE_WAIT)[0]:
            return None
        try:
            value = self._wait(number, [])
        except (CandidateGone, CandidateStuck):
            raise
        except Exception:
            return None
        return value if isinstance(value, tuple) and len(value) in (3, 4, 5) else None

    def hints(self, told):
        """The target's annotations (``f.__annotations__["x"] == Optional[int]``), each read as an answer is,
        apart from the rest of its description: a hint the judge refuses leaves its text in its place, the doc and
        signature as they are. A hint that would be a handle (a function made there) is left as text too."""
        hints = {}
        for name, data in told.items() if type(told) is dict else ():
            if not isinstance(name, str) or not isinstance(data, bytes):
                continue
            self.reading = True
            try:
                hint = loads_checked(data, self.project_roots, functools.partial(self._persistent_load, []))
            except Exception:
                continue
            finally:
                self.reading = False
            if not _handle(hint):
                hints[name] = hint
        return hints

    def _send(self, payload):
        descriptors, self.descriptors = self.descriptors, []
        try:
            send(self.sock, payload, descriptors)
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
            self._next(None, _DROPPED)

    def _wait(self, number, arguments):
        __tracebackhide__ = True
        while True:
            done, value = self._next(number, arguments)
            if done:
                return value

    def _next(self, number, arguments, awaits=False):
        """Read one message: (True, value) for the answer to call ``number``; (False, None) for anything else
        (a callback, answered here; an abandoned call's answer, dropped). ``awaits``: a callback that awaits a
        lent object is not answered here but given back, (False, (its number, the object)), to be awaited on the
        judge's loop."""
        __tracebackhide__ = True
        try:
            data = receive(self.sock)
        except (OSError, WireError) as exc:
            self._stop(f"the candidate's process broke the channel: {exc}")
        if data is None:
            self._stop("the candidate's process ended")
        self.reading = True
        try:
            message = loads_checked(data, self.project_roots, functools.partial(self._persistent_load, arguments))
        except WireError:
            if number is not None:  # the refused answer was the call's: the candidate's process waits for the next
                self.abandoned = None
            raise
        finally:
            self.reading = False
        if not isinstance(message, tuple) or not message or not isinstance(message[0], str):
            raise WireError("a message that is not the judge's protocol")
        kind = message[0]
        if kind == "unreadable":  # the call last sent: its arguments could not be rebuilt there
            self.abandoned = None
            raise WireError(f"the candidate's process could not rebuild the call's arguments: {str(message[1:])[:500]}")
        if kind == "callback":
            if awaits and len(message) == 6 and message[3] == "await" and message[2] in self.lent:
                return False, (message[1], self.lent[message[2]])
            self._callback(*message[1:])
            return False, None
        if kind == "output" and len(message) == 3:  # what the call wrote: the test's capture has it, as beside it
            for stream, text in zip((sys.stdout, sys.stderr), message[1:]):
                if isinstance(text, str) and text:
                    try:
                        stream.write(text)
                    except (OSError, ValueError):
                        pass
            return False, None
        if kind == "imported":  # what the call imported there, by name: the judge's own copy of those it trusts
            for name in message[1] if len(message) == 2 and isinstance(message[1], list) else ():
                if isinstance(name, str) and name not in sys.modules:
                    try:
                        trusted_module(name, self.project_roots)
                    except Exception:
                        pass
            return False, None
        if kind == "codecs":  # search functions the call registered there: the judge's own project's, by name
            for named in message[1] if len(message) == 2 and isinstance(message[1], list) else ():
                found = resolve_global(*named, self.project_roots) if isinstance(named, tuple) and len(named) == 2 \
                    and all(isinstance(part, str) for part in named) else None
                if type(found) is types.FunctionType and module_of_project(named[0], self.project_roots) \
                        and not hasattr(found, "_forward") and found not in self.codecs:  # never a stub
                    codecs.register(found)
                    self.codecs.append(found)
            return False, None
        if kind == "folders" and len(message) == 2 and isinstance(message[1], list):
            self._folders(message[1])
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
        applied = False
        moves = {index[1:]: state for index, state in (extra or {}).items()
                 if isinstance(index, tuple) and len(index) == 3 and index[0] == "moved"}
        for index, state in (extra or {}).items():
            if isinstance(index, tuple) and len(index) == 3 and index[0] == "sent" and index[1] == number \
                    and type(index[2]) is tuple and len(index[2]) == 1 and type(index[2][0]) is int \
                    and 0 <= index[2][0] < len(arguments):  # an argument of this call the candidate's instance kept
                self.sent.setdefault(index[1:], arguments[index[2][0]])
            if type(index) is int and 0 <= index < len(arguments):
                _apply(arguments[index], state)
            elif isinstance(index, tuple) and len(index) == 3 and index[0] == "argument" and index[1] in self.made \
                    and type(index[2]) is int and 0 <= index[2] < len(self.made[index[1]]):
                _apply(self.made[index[1]][index[2]], state)
            elif isinstance(index, tuple) and len(index) == 3 and index[0] == "delta" and type(index[1]) is int \
                    and type(index[2]) is int:
                made = arguments if index[1] == number else self.made.get(index[1], ())
                if 0 <= index[2] < len(made):
                    value = _filled(made[index[2]], state, value)
            elif isinstance(index, tuple) and len(index) == 3 and index[0] == "sent" and index[1:] in self.sent:
                mirrored = self.sent[index[1:]]
                if is_node(mirrored):  # node by node: what the test holds inside it stays what it holds
                    value = apply_graph(mirrored, state, moves.get(index[1:])).get(id(value), value)
                else:
                    _apply(mirrored, state)
                    value = mirrored if value is state else value
                self.mirrored[index[1:]], applied = False, True  # its state, as agreed now, is taken below
            elif isinstance(index, tuple) and len(index) == 2 and index[0] == "obj" and isinstance(index[1], int):
                known = self.objects.setdefault(index[1], state)  # first seen: this one; later: its new state
                if known is not state:
                    _apply(known, state)
                    value = known if value is state else value
        for key, agreed in self.mirrored.items():
            if agreed is False or applied:  # one graph may hold another's nodes: all agree as they are now
                self.nodes[key] = paths(self.sent[key])
                self.mirrored[key] = fingerprint(self.nodes[key])
        return True, value

    def _mirrors(self):
        """The judge's objects the candidate's process keeps a copy of, which a test changed since the two last
        agreed on them (``backend.config.max_age = 1`` on the config a backend was made with): their states, by the
        keys of the call that sent them, applied to those copies before the call. Which ones it keeps, its
        answers told: each such object it answered came back as the judge's own (``_persistent_load``)."""
        changed = {}
        for key, agreed in self.mirrored.items():
            nodes = paths(self.sent[key]) if agreed is not False else None
            now = fingerprint(nodes) if nodes is not None else None
            if now is not None and now != agreed:
                changed[key] = (self.sent[key], moved(nodes, self.nodes.get(key, {})))
                self.mirrored[key], self.nodes[key] = now, nodes
        self.by_value_ids = {id(state) for state, _ in changed.values()}  # their states: by value
        return changed

    def _folders(self, made):
        """Make here the empty folders a call made there (path, mode), where a test finds what a call made
        (both processes' roots are writable, as RepoExec's container's was): never a folder the import system could
        find as a package (a name under a folder of the import path: an empty folder is a namespace package) nor
        one of the kernel's, never more than ``FOLDERS_MOST``. A folder or file already here is left as it is.
        Nothing of a file crosses: an empty folder carries no data a test could read as the judge's."""
        imported = [os.path.realpath(entry or ".") for entry in sys.path if isinstance(entry, str)]
        for item in made:
            if self.folders >= FOLDERS_MOST:
                return
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                    and type(item[1]) is int and os.path.isabs(item[0]) and len(item[0]) < 4096
                    and "\0" not in item[0]) or os.path.lexists(item[0]):
                continue
            path = os.path.realpath(item[0])
            if any(_within(path, folder) for folder in ("/proc", "/sys", "/dev")) \
                    or any(_importable(path, entry) for entry in imported):
                continue
            self.folders += 1
            try:
                os.makedirs(path)
                os.chmod(path, item[1] & 0o1777)
            except OSError:  # a read-only place, a file in the way: as if not made
                pass

    def _callback(self, number, hid, op, args, kwargs):
        """Run a lent object's use for the candidate's process, which waits for it: its call is not abandoned
        meanwhile, so a call the callback makes (a test's lambda calling the target again) is served there."""
        target = self.lent.get(hid)
        waiting, self.abandoned = self.abandoned, None
        try:
            if target is None:
                raise LookupError(f"no object {hid} was lent to the candidate")
            payload = self._answer(number, _use(target, op, args, kwargs))
        except Exception as exc:
            payload = self._answer(number, exc=exc)
        finally:
            if self.abandoned is None:  # else a call made meanwhile timed out: its answer comes first
                self.abandoned = waiting
        self._send(payload)

    def _answer(self, number, value=None, exc=None):
        """The judge's answer to a callback: its value (lending what does not pickle), or the exception raised."""
        if exc is None:
            try:
                return self._dumps(("return", number, None, value))
            except Exception as failed:
                exc = failed
        try:
            return dumps(("raise", number, exc, None), self._persistent_id)
        except Exception:
            return dumps(("raise", number, RuntimeError(f"{type(exc).__name__}: {exc}"), None))

    def _dumps(self, message):
        """The message as a pickle: what pickles by value so, the test's functions lent; where that fails (an open
        file, a lock, a queue, a socket, an object of a class defined in a test), once more with every object
        that does not pickle lent too."""
        self.mirror_ids = {id(self.sent[key]): key for key in self.mirrored}
        try:
            self.in_reference, self.descriptors = 0, []
            return dumps(message, self._persistent_id)
        except (pickle.PicklingError, TypeError, AttributeError, RuntimeError):
            self.in_reference, self.descriptors = 0, []
            return dumps(message, functools.partial(self._persistent_id, lending=True))
        finally:
            self.mirror_ids, self.by_value_ids = {}, set()

    def _persistent_id(self, obj, lending=False):
        if self.in_reference:  # the parts of the ("constant", ...) or ("mirror", ...) just given, pickled next
            self.in_reference -= 1
            return None
        key = self.mirror_ids.get(id(obj)) if self.mirror_ids else None
        if key is not None and id(obj) not in self.by_value_ids:  # sent before, kept alike there: that copy,
            self.in_reference = 3 + len(key[1])  # never a second one (a handler's ``State(app.state._state)``)
            return ("mirror", key[0], tuple(list(key[1])))
        if type(obj) in _NEVER_REFERRED:  # most of a message: a number, a builtin container (the pickler asks of
            return None  # every object, and the checks below cost a third of a call)
        if type(obj) is Handle:
            return ("handle", obj._hid)
        if type(obj) is types.FunctionType and type(obj.__dict__.get(HANDLE_MARK)) is Handle:
            return ("handle", obj.__dict__[HANDLE_MARK]._hid)
        if isinstance(obj, RemoteInstance):
            return ("handle", object.__getattribute__(obj, "_repoexec_hid"))
        if id(obj) in self.constants:
            self.in_reference = 4
            return ("constant", *self.constants[id(obj)][:2], obj)
        if type(obj) in _CONSTANT_KINDS:  # not one of the module's: a value
            return None
        if isinstance(obj, (types.CodeType, types.FrameType, types.TracebackType)):
            raise pickle.PicklingError(f"a {type(obj).__name__} of the judge's may not be sent")
        if isinstance(obj, types.ModuleType):
            if sys.modules.get(obj.__name__) is not obj:  # one a test made: its name only, nothing it holds
                return ("new module", str(obj.__name__))
            if _of_tests(obj.__name__) or obj.__name__ == "__main__":
                raise pickle.PicklingError(f"the tests' module {obj.__name__} may not be sent")
            return ("module", obj.__name__)  # the candidate's process imports its own
        if isinstance(obj, FUNCTION_TYPES) and not _by_reference(obj):
            if _pure(obj):  # a test's key function: called where the candidate calls it, with no round trip
                self.in_reference = 4
                return ("judge code", self._lend(obj, None)[1], _sent_code(obj.__code__), obj.__name__)
            return self._lend(obj, _described_function(obj))
        if _of_tests((obj if isinstance(obj, type) else type(obj)).__module__) \
                and not isinstance(obj, BaseException) and _unpicklable(obj):
            # a class of the tests', or its instance: never sent by value, for the judge takes none back (the
            # candidate's process may not even import it); a namedtuple made there still crosses as what it shows
            return self._lend(obj, None)
        named = module_singleton(obj)
        if named is not None:  # a library's (astroid's Uninferable): the candidate's process uses its own
            return ("singleton", *named)
        if repoexec_futures.pending(obj):  # a future there, settled by awaiting this one here
            return ("judge future", self._lend(obj, None)[1])
        if type(obj) is socket.socket and obj.fileno() >= 0 and len(self.descriptors) < DESCRIPTORS_MOST:
            # a test's socket: its descriptor, duplicated into that process by the kernel (tornado's
            # add_accept_handler registers it with its own event loop); one object there for each here
            self.descriptors.append(obj.fileno())
            return ("socket", self._lend(obj, None)[1], len(self.descriptors) - 1)
        if lending and _unpicklable(obj):
            return self._lend(obj, None)
        return None

    def _lend(self, obj, described):
        hid = self.lent_ids.get(id(obj))
        if hid is None:
            hid = self.lent_ids[id(obj)] = len(self.lent) + 1
            self.lent[hid] = obj
        return ("judge", hid, described)

    def _persistent_load(self, arguments, pid):
        if not isinstance(pid, tuple) or not pid:
            raise WireError("a reference that is not the judge's")
        if pid[0] == "arg" and len(pid) == 2 and isinstance(pid[1], int) and 0 <= pid[1] < len(arguments):
            return arguments[pid[1]]
        if pid[0] == "argnode" and len(pid) == 4 and type(pid[1]) is int and type(pid[2]) is int \
                and type(pid[3]) is tuple:
            made = self.made.get(pid[1], arguments)
            found = follow(made[pid[2]], pid[3]) if 0 <= pid[2] < len(made) else None
            if is_node(found, True):  # a node of an argument that the call left as it was: the judge's own
                return found
        if pid[0] == "node" and len(pid) == 4 and pid[1:3] in self.sent and type(pid[3]) is tuple:
            found = follow(self.sent[pid[1:3]], pid[3])
            if is_node(found):  # a node of an object kept alike there, which the call left as it was: the judge's own
                return found
        if pid[0] == "sent" and len(pid) == 3 and pid[1:] in self.sent:
            self.mirrored.setdefault(pid[1:], False)  # kept there: the two copies are kept alike from now on
            return self.sent[pid[1:]]  # the judge's own object, which a call gave the candidate
        if pid[0] == "judge" and len(pid) == 2 and pid[1] in self.lent:
            return self.lent[pid[1]]
        if pid[0] == "handle" and len(pid) in (4, 5) and isinstance(pid[1], int) and isinstance(pid[2], str):
            named = pid[3] if isinstance(pid[3], tuple) and len(pid[3]) == 2 else (None, None)
            own = resolve_global(*named, self.project_roots)  # a library's or the project's function: the judge's
            if own is not None:
                return own
            handle = Handle(self, pid[1], pid[2][:200])
            return self._shaped(handle, pid[4]) if len(pid) == 5 else handle
        if pid[0] == "sentinel" and len(pid) == 3 and all(isinstance(part, str) for part in pid[1:]) \
                and module_of_project(pid[1], self.project_roots):
            found = getattr(sys.modules.get(pid[1]), pid[2], None)
            if is_sentinel(found):
                return found  # the judge's own marker of that name, as the project's module made it
        if pid[0] == "singleton" and len(pid) == 3:
            found = singleton(pid[1], pid[2])
            if found is not None:
                return found  # the judge's own object of that name, as its library's module made it
        if pid[0] == "future" and len(pid) == 2 and isinstance(pid[1], int):
            return repoexec_futures.awaiting(Handle(self, pid[1], "Future"))
        if pid[0] == "instance" and len(pid) == 4 and isinstance(pid[1], int):
            return self._instance(pid[1], pid[2:])
        if pid[0] == "std" and pid[1] in ("stdin", "stdout", "stderr", "path"):
            return getattr(sys, pid[1])  # the judge's own stream (or import path) where the candidate's was
        if pid[0] == "new module" and len(pid) == 2 and isinstance(pid[1], str):
            return types.ModuleType(pid[1][:200])  # one the candidate made: an empty one of its name
        if pid[0] == "module" and len(pid) == 2:
            module = trusted_module(pid[1], self.project_roots, modules_only=True)
            if module is not None:
                return module
        raise WireError(f"a reference the judge did not make: {pid!r}"[:300])


    def _shaped(self, handle, told):
        """The judge's function for a function handle (``_function_handle``), of the shape its process told:
        whole the first time (with the number it is told by later), then by its number."""
        shape = told[0] if type(told) is tuple and 1 <= len(told) <= 2 else None
        if type(shape) is dict and type(shape.get("number")) is int:
            self.shapes[shape["number"]] = shape
        elif type(shape) is int:
            shape = self.shapes.get(shape)
        if type(shape) is not dict:
            return handle
        return _function_handle(handle, shape, told[1:])

    def _instance(self, hid, named):
        """The RemoteInstance for the candidate's instance ``hid`` of the class under test (or of a subclass the
        project derives from it, where the judge has that class too): the same one each time it comes back."""
        known = self.instances.get(hid)
        if known is not None:
            return known
        cls = self.making
        if cls is None:
            found = resolve_global(*named, self.project_roots) if all(isinstance(part, str) for part in named) else None
            cls = found if isinstance(found, RemoteClass) else next(iter(_CLASSES.values()), None)
        if cls is None:
            raise WireError("an instance of a class under test where the judge has none")
        made = object.__new__(cls)
        object.__setattr__(made, "_repoexec_hid", hid)
        self.instances[hid] = made
        return made


def _within(path, folder):
    """Whether ``path`` is ``folder`` or lies under it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _importable(path, entry):
    """Whether a folder at ``path`` could be imported from the import path's ``entry``: it is the entry, or the
    first part of it under the entry is a name (``pkg`` of ``entry/pkg/sub``)."""
    return _within(path, entry) and (path == entry or path[len(entry.rstrip(os.sep)) + 1:].split(os.sep)[0]
                                     .isidentifier())


def _where(target, roots):
    """A patched module or class as the candidate's process finds its own, by name: the project's, and the
    standard library's clock (``_TOLD_LIBRARY``); never the tests', the runtime's or another library's: pytest
    itself patches twisted's ``Failure.__init__`` around every test, and that patch is the runner's, not the
    tests')."""
    if isinstance(target, types.ModuleType):
        name = target.__name__
        return ("module", name) if isinstance(name, str) and sys.modules.get(name) is target \
            and not _of_tests(name) and (module_of_project(name, roots) or name in _TOLD_LIBRARY) else None
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname or _of_tests(module) \
            or not module_of_project(module, roots):
        return None
    return ("class", module, qualname)


# Library modules whose patches are told all the same: a test stops the clock with ``mock.patch("time.time")``
# (litestar's expired sessions), and the candidate's code reads ``time.time()`` in its own process.
_TOLD_LIBRARY = frozenset({"time"})


def _constants(module):
    """The focal module's constants (strings, bytes, tuples) and marker objects (``is_sentinel``) by identity: an
    argument that is one of them is sent by its name, and the candidate's process passes its own module's
    (``config_file is USER_CONFIG_PATH``, tornado's ``moment``), which is the one its import made. Taken at the
    module's first call, each value held, so that no id here can stand for another object later."""
    owner = sys.modules.get(module) if isinstance(module, str) else None
    return {id(value): (module, name, value) for name, value in vars(owner).items()
            if (type(value) in (str, bytes, tuple, frozenset) or is_sentinel(value)) and not name.startswith("__")} \
        if owner else {}


def _by_reference(obj):
    """A builtin function (``len``, ``str.lower``) or a module-level function of a module that is not the tests'
    (``functools.wraps``, the project's own) is sent by its name: the candidate's process has it too."""
    if isinstance(obj, types.BuiltinFunctionType) and isinstance(getattr(obj, "__self__", None),
                                                                  (types.ModuleType, type(None))) \
            or type(obj).__name__ in ("method_descriptor", "wrapper_descriptor"):
        return True
    if isinstance(obj, types.BuiltinMethodType) and isinstance(obj.__self__, (type, str, bytes, int, float, tuple)) \
            and not _of_tests(getattr(obj.__self__, "__module__", "") or ""):
        return True  # chain.from_iterable, "-".join: pickle names them (getattr of their owner)
    if isinstance(obj, types.BuiltinMethodType) and type(obj.__self__) in (dict, list, set, frozenset) \
            and obj.__name__ in _READING:
        return True  # d.keys: a copy of the container reads as it does (seen.append stays lent: it changes it)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "<")
    if not isinstance(obj, types.FunctionType) or not isinstance(module, str) or "<" in qualname \
            or _of_tests(module) or module == "__main__":
        return False
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found is obj


_READING = frozenset({"keys", "values", "items", "get", "copy", "count", "index", "__getitem__", "__contains__",
                      "__len__", "__iter__"})  # a container's methods that change nothing


# What a test's function may use to be sent by its code: builtins that compute from their arguments alone.
_PURE_BUILTINS = frozenset({
    "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex", "dict", "divmod", "enumerate",
    "filter", "float", "format", "frozenset", "getattr", "hasattr", "hex", "int", "isinstance", "issubclass", "iter",
    "len", "list", "map", "max", "min", "next", "oct", "ord", "pow", "range", "repr", "reversed", "round", "set",
    "slice", "sorted", "str", "sum", "tuple", "type", "zip", *(name for name, value in vars(builtins).items()
                                                                if isinstance(value, type) and issubclass(value, BaseException))})
_PURE_CONSTANTS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))
_NOT_PURE = frozenset({"IMPORT_NAME", "IMPORT_FROM", "IMPORT_STAR", "LOAD_BUILD_CLASS", "STORE_GLOBAL", "DELETE_GLOBAL",
                       "LOAD_NAME", "STORE_NAME", "DELETE_NAME", "LOAD_CLASSDEREF"})


def _pure(function):
    """A test's function that computes from its arguments alone (``key=lambda x: x % 3``): no closure, defaults,
    attributes or globals, builtins of ``_PURE_BUILTINS`` only, constants that are scalars. It is sent as its code
    and made again in the candidate's process, where a call costs no round trip (``unique(range(1000000),
    key=...)``); its code shows the candidate nothing that calling it there would not, and what it returns
    decides nothing: the candidate's code uses it as it would use the judge's."""
    if type(function) is not types.FunctionType or function.__closure__ or function.__defaults__ \
            or function.__kwdefaults__ or function.__dict__:
        return False
    builtins_read = _code_read(function.__code__)[1]
    return builtins_read is not None and not any(name in function.__globals__ for name in builtins_read)


_CODES_KEPT = 4096
_CODES_READ = {}  # id(code) -> [code, what _walk_builtins found, its marshalled placeless form or None]


def _code_read(code):
    """The test's code object's entry, made once: a lambda a test makes in a loop is the same code each time
    (pyMonet's ``memoize(lambda x: x ** 2, eq)`` 10,000 times), and its walk cost a tenth of a round trip. The
    code is kept, so that its id names no other code later."""
    found = _CODES_READ.get(id(code))
    if found is None:
        if len(_CODES_READ) >= _CODES_KEPT:  # codes a test compiles in a loop: kept no longer than this
            _CODES_READ.clear()
        found = _CODES_READ[id(code)] = [code, _walk_builtins(code), None]
    return found


def _walk_builtins(code):
    """The global names the code (nested code too) loads, where each is one of ``_PURE_BUILTINS``, its constants
    are scalars, and it imports, stores and looks up nothing else; None otherwise. Whether a function's globals
    shadow one of those names is the function's own to check (``_pure``)."""
    names, codes = set(), [code]
    while codes:
        code = codes.pop()
        for constant in code.co_consts:
            if type(constant) is types.CodeType:
                codes.append(constant)
            elif type(constant) is tuple:
                if not all(type(item) in _PURE_CONSTANTS for item in constant):
                    return None
            elif type(constant) not in _PURE_CONSTANTS:
                return None
        for instruction in dis.get_instructions(code):
            if instruction.opname in _NOT_PURE or instruction.opname == "LOAD_GLOBAL" and (
                    instruction.argval not in _PURE_BUILTINS):
                return None
            if instruction.opname == "LOAD_GLOBAL":
                names.add(instruction.argval)
    return frozenset(names)


def _sent_code(code):
    """A pure function's code as it crosses (``_placeless``, marshalled), made once a code object."""
    entry = _code_read(code)
    if entry[2] is None:
        entry[2] = marshal.dumps(_placeless(code))
    return entry[2]


def _placeless(code):
    """The code with no file or line of the tests' (nested code too): where a test stands is not the candidate's."""
    consts = tuple(_placeless(constant) if type(constant) is types.CodeType else constant for constant in code.co_consts)
    return code.replace(co_filename="<test>", co_firstlineno=1, co_consts=consts)


def _described_function(obj):
    """What the candidate's process is told of a test's function it is lent, to make a function of the same
    shape that calls back: its names, its doc, and its parameters' names and kinds, never their defaults (a
    default could be an expected value), its code, globals or closure."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parameters = [(p.name, int(p.kind), p.default is not p.empty) for p in signature.parameters.values()]
    names = {key: getattr(obj, key, None) for key in ("__name__", "__qualname__", "__module__", "__doc__")}
    described = {key: value for key, value in names.items() if isinstance(value, str)} | {"parameters": parameters}
    code = getattr(obj, "__code__", None)
    if type(obj) is types.FunctionType and not code.co_argcount and not code.co_kwonlyargcount \
            and code.co_flags & _PASSES_ON == _PASSES_ON:
        # it takes (*args, **kwargs) whatever signature it shows (an autospec'd mock, pytest-mock's spy): the
        # candidate's calls reach it as they were made, keywords as keywords, which a test reads in call_args
        taken = [(code.co_varnames[0], int(inspect.Parameter.VAR_POSITIONAL), False),
                 (code.co_varnames[1], int(inspect.Parameter.VAR_KEYWORD), False)]
        described |= {"parameters": taken, "shown": parameters} if parameters != taken else {}
    return described


_PASSES_ON = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _unpicklable(obj):
    """An object the candidate may only use through the judge: one pickle refuses, or of a class it cannot name
    (defined in a test); never a module, a class, a function's insides or a frame."""
    if isinstance(obj, type):  # a class made in a test (type("", (), {...})): lent, its attributes read
        return not _named(obj) or _of_tests(obj.__module__)
    if isinstance(obj, (types.ModuleType, types.CodeType, types.FrameType, types.TracebackType, *FUNCTION_TYPES)) \
            or type(obj) in (dict, list, tuple, set, frozenset, str, bytes, int, float, bool, type(None)) \
            or converted(obj) is not NotImplemented:  # a value the wire sends as what it shows
        return False
    try:
        reduced = obj.__reduce_ex__(4)
    except Exception:
        return True
    if isinstance(reduced, str):  # pickled by its name (a TypeVar): in a module the candidate's process has
        module = getattr(obj, "__module__", None) or ""
        return _of_tests(module) or getattr(sys.modules.get(module), reduced, None) is not obj
    return not _named(type(obj)) or _of_tests(type(obj).__module__)


_NAMES = ("__name__", "__qualname__", "__module__", "__doc__")  # the dunders a lent object shows: what it is called
# What the candidate may do with an object the judge lent it: use it, never look inside it.
_OPS = {
    "call": lambda target, *args, **kwargs: target(*args, **kwargs), "next": next, "iter": iter, "len": len,
    "bool": bool,
    "getitem": lambda target, key: target[key], "contains": lambda target, key: key in target,
    "enter": lambda target: target.__enter__(), "exit": lambda target, failed: target.__exit__(
        *((Exception, Exception(), None) if failed else (None, None, None))),
    "await": lambda target: _await_now(target),
}


_ITERATED = (types.GeneratorType, types.AsyncGeneratorType)  # lent: iterated, never looked into (gi_frame)


def _judge_awaits(awaitable):
    """A lent awaitable awaited from ``Channel.awaited``: on the judge's running loop."""
    return (yield from awaitable.__await__())


def _await_now(awaitable):
    """A lent awaitable the candidate awaits during a plain call (no loop of the judge's waits on the answer):
    run to its end on a loop of its own, in a thread of its own where this thread's loop is running."""
    import asyncio

    async def run():
        return await awaitable

    own = repoexec_futures.own_loop(awaitable)
    if own is not None:
        return own.run_until_complete(awaitable)  # a test's future, on the loop it was made on
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(run())
        finally:
            loop.close()
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def _use(target, op, args, kwargs):
    if op == "getattr" and len(args) == 1 and isinstance(args[0], str) and (not args[0].startswith("__") or
                                                                            args[0] in _NAMES) \
            and not isinstance(target, (*FUNCTION_TYPES, functools.partial, types.ModuleType)):
        return getattr(target, args[0])  # a lent object's own data and methods; a function shows none
    if op == "setattr" and len(args) == 2 and isinstance(args[0], str) and not args[0].startswith("__") \
            and not isinstance(target, (*FUNCTION_TYPES, functools.partial, types.ModuleType)) \
            and not _behaviour(target if isinstance(target, type) else type(target), args[0]) \
            and not _handle(args[1]):  # data on a test's object (litestar's update_instance(User(...))), or on a
        return setattr(target, args[0], args[1])  # class its module is still making (sanic's add_status_code)
    if op in _OPS and (op == "call" or not isinstance(target, FUNCTION_TYPES)
                       or op in ("iter", "next") and isinstance(target, _ITERATED)
                       or op == "await" and isinstance(target, types.CoroutineType)):
        return _OPS[op](target, *args, **kwargs)
    if op == "getattr":  # as Python says it (hasattr, getattr with a default work on the other side)
        raise AttributeError(f"the judge's lent object shows no attribute {str(args[0] if args else '')[:100]!r}")
    raise LookupError(f"no operation {op!r} on a lent object")


def _exception(value, details):
    """The exception the candidate raised, as the judge raises it: its own type where that could cross; else
    rebuilt here from its description (``repoexec_serve._described``), with no code of the candidate's. What
    the sample's error type will be is the rebuilt exception's type, which the judge chose: the first field of
    the description (the kind the candidate's process names) is not read."""
    _, text, remote, described = (tuple(details) + (None,) * 4)[:4] if isinstance(details, tuple) else (None,) * 4
    text = str(text or "")[:2000]
    if isinstance(value, tuple):
        value = _builtin_exception(value)
    if not isinstance(value, BaseException):
        value = _rebuilt(described, text)
    if isinstance(remote, str) and remote:
        value.repoexec_remote = remote[-4000:]  # the inner plugin shows it with the first failures
    return value


def _builtin_exception(data):
    """A builtin exception sent as data (``repoexec_serve._crossing``): the judge's own class of that name, called
    with the scalar arguments its pickle would hold; None where the data is not that."""
    if len(data) != 3 or data[0] != "builtin exception" or not isinstance(data[2], tuple) \
            or not all(type(arg) in _SCALARS for arg in data[2]):
        return None
    cls = getattr(builtins, str(data[1]), None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return None
    try:
        return cls(*data[2])
    except Exception:
        return None


def _rebuilt(described, text):
    """pytest's own outcome, or an exception of the candidate's class name over the builtin exception it derives
    from (so ``pytest.raises(ValueError)`` holds for ``class Invalid(ValueError)``), or CandidateError."""
    if isinstance(described, tuple) and len(described) == 4 and described[0] == "pytest":
        from _pytest import outcomes

        _, name, message, status = described
        made = {"Skipped": outcomes.Skipped, "Failed": outcomes.Failed, "XFailed": outcomes.XFailed}.get(name)
        if made is not None:
            return type(name, (made,), {"repoexec_candidates": True})(str(message))
        if name == "Exit":
            return outcomes.Exit(str(message), status if isinstance(status, int) else None)
    if isinstance(described, tuple) and len(described) == 3 and described[0] == "class":
        _, name, bases = described
        base = next((builtin for builtin in (getattr(builtins, str(b), None) for b in bases or ())
                     if isinstance(builtin, type) and issubclass(builtin, BaseException)), None)
        if base is not None:  # the builtin it derives from, by the judge's own class: its name is no label
            return base(text)
    return CandidateError(text or "the candidate raised what cannot cross to the judge")


def _filled(target, changed, value):
    """The nodes of an argument that a call changed (``repoexec_serve._changes``: their paths in the argument as the
    judge sent it, their new contents), each filled in place, so that what the test holds inside the argument sees
    the change; the rest of the argument came back as the judge's own. A path that finds no node of the same class
    here is passed over. Returns the answer, as the judge's own node where it is one of them."""
    paths_then, nodes = changed if type(changed) is tuple and len(changed) == 2 else ([], [])
    if type(paths_then) is not list or type(nodes) is not list:
        return value
    pairs = [(own, node) for path, node in zip(paths_then, nodes) if type(path) is tuple
             for own in (follow(target, path),) if own is not None and type(own) is type(node) and is_node(own, True)]
    mapped = apply_graph([own for own, _ in pairs], [node for _, node in pairs],
                         [((("i", place),), (("i", place),)) for place in range(len(pairs))], deep=True)
    return mapped.get(id(value), value)


def _apply(target, state):
    """The state an argument has after the call, applied in place: the test holds the same object."""
    if not isinstance(target, RemoteInstance):
        apply_state(target, state)

