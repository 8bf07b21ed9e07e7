"""What crosses between the judge (pytest, the tests, their expected values) and the candidate's process, and
how the judge checks it.

Both ends run under the project's interpreter with the standard library only. Messages are pickles framed by
their length on a Unix socket. The judge trusts nothing the candidate's process sends: it reads it with
``JudgeUnpickler``, the pure-Python unpickler with three doors narrowed:

- ``find_class`` names only builtins and standard value types (``VALUE_TYPES``), the builtin exceptions,
  classes defined in the project's own modules (rebuilt with the project's class, so their ``__eq__`` is the
  project's code), and classes of the standard library and the project's installed dependencies
  (``library_module``) but those of ``DENIED`` modules (mocks, matchers, pytest, code runners). A class the
  candidate made, ``mock.ANY``, a proxy: refused, naming the type. A library object whose ``__eq__`` says it
  equals an object it cannot know (``_PROBE``), or whose state holds a handle to the candidate's process (its
  ``__eq__`` could ask the candidate), is refused too.
- REDUCE (a call with arguments) calls only value types, ``VALUE_CALLS`` (this module's own rebuilders of
  values pickle refuses: ``converted``), exceptions, enums, structseqs, typing's subscription, classes whose
  construction runs C code only, and a library's own rebuilders of its values named one by one (``REBUILDERS``,
  ``CONSTRUCTED``: pandas' indexes and frames); any other class is rebuilt without its ``__init__`` (``__new__`` and its state,
  as pickle's own protocol 2 does), so no project or library code runs on the candidate's arguments in the judge
  but ``__setstate__``.
- persistent ids are only the judge's own markers: an argument of the call (identity kept), a handle to an
  object that stays in the candidate's process (or, where it is a library's or the project's function by name,
  the judge's own), an object of the judge's that was lent to the candidate, a module or standard stream by name.

What the judge sends is its own (the tests' arguments): the candidate's process reads it with pickle as it is.
"""

import array
import builtins
import collections
import copyreg
import datetime
import decimal
import enum
import fractions
import functools
import gc
import io
import keyword
import operator
import os
import pathlib
import pickle
import socket
import struct
import sys
import types
import uuid
import weakref

import repoexec_futures

FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType,
                  types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, types.LambdaType)
MESSAGE_LIMIT = 256 << 20  # no honest answer is this big; a bigger one is refused, not read
_LENGTH = struct.Struct(">Q")

# Classes whose instances are values: what they hold is all they are, and their __eq__ is the standard library's.
VALUE_TYPES = frozenset({
    bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset, type(None), slice, range,
    type(Ellipsis), type(NotImplemented),
    collections.OrderedDict, collections.defaultdict, collections.deque, collections.Counter,
    datetime.date, datetime.time, datetime.datetime, datetime.timedelta, datetime.timezone,
    decimal.Decimal, fractions.Fraction, uuid.UUID, uuid.SafeUUID,
    pathlib.PurePath, pathlib.PurePosixPath, pathlib.PureWindowsPath, pathlib.Path, pathlib.PosixPath,
})
EXCEPTIONS = frozenset(value for value in vars(builtins).values()
                       if isinstance(value, type) and issubclass(value, BaseException))
# Functions that pickle itself names to rebuild a standard value (a compiled pattern).
VALUE_CALLS = {("re", "_compile"), ("repoexec_wire", "dict_view"), ("repoexec_wire", "memory"),
               ("repoexec_wire", "named_tuple"), ("repoexec_wire", "new_lock"), ("repoexec_wire", "new_condition"), ("repoexec_wire", "bound_method"),
               ("repoexec_wire", "builtin_type"), ("repoexec_wire", "type_variable"), ("repoexec_wire", "code_summary"),
               ("repoexec_wire", "default_dict"), ("repoexec_wire", "mapping_proxy"), ("repoexec_wire", "marked"),
               ("repoexec_wire", "weak_reference"), ("repoexec_wire", "class_descriptor"),
               ("repoexec_wire", "ssl_context"), ("repoexec_wire", "ssl_socket"), ("repoexec_wire", "stood_for"), ("repoexec_wire", "named_logger"),
               ("repoexec_wire", "detached_stream"), ("repoexec_wire", "detached_opener"),
               ("repoexec_wire", "mocked"), ("repoexec_wire", "nested_function"), ("repoexec_wire", "new_cell"), ("repoexec_wire", "fill_cell"),
               ("repoexec_futures", "deferred"), ("repoexec_futures", "failure"), ("repoexec_futures", "future")}
WIRE_CALLS = frozenset((module, name) for module, name in VALUE_CALLS if module.startswith("repoexec_"))
# numpy's arrays and scalars, the one third-party value type RepoExec's expected outputs hold
NUMPY = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
         ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
         ("numpy._core.multiarray", "scalar")}
# Library functions the judge calls to rebuild that library's values from data, each where its first argument is a
# class of the library's kind (or, with no kind, on data alone): pandas' indexes pickle as ``_new_Index(cls, data)``,
# which builds one with pandas' own constructor (xarray's ``PandasMultiIndex`` holds one), its arrays and timestamps
# by pandas' own unpicklers (pvlib's times).
REBUILDERS = {
    ("pandas.core.indexes.base", "_new_Index"): ("pandas", "Index"),
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"): ("pandas", "DatetimeIndex"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"): ("pandas._libs.arrays", "NDArrayBacked"),
    ("pandas._libs.internals", "_unpickle_block"): None,
    ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"): None,
    ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"): None,
    ("pytz", "_UTC"): None, ("pytz", "_p"): None,  # a time zone by its name and offsets, from pytz's own table
    # cftime's dates (xarray's CFTimeIndex holds them): the class called with its fields, cftime's C constructor
    ("cftime._cftime", "_create_datetime"): ("cftime._cftime", "datetime"),
}
# Library classes whose pickle gives their constructor its data (pandas' block managers: their blocks and axes),
# made by the judge with that constructor, the library's own code on data
CONSTRUCTED = frozenset({("pandas.core.internals.managers", "BlockManager"),
                         ("pandas.core.internals.managers", "SingleBlockManager"),
                         ("pandas", "StringDtype"),  # pandas 3's strings
                         ("inspect", "Parameter"), ("inspect", "Signature")})  # checked by their constructors
# ... and kinds whose every class does so with scalars (pandas' date offsets: ``Hour(6)`` pickles as
# ``Hour, (6, False)``; made with ``__new__`` alone it was ``Hour(0)``), by their base class
CONSTRUCTED_KINDS = frozenset({("pandas._libs.tslibs.offsets", "BaseOffset")})
_NAMES = {(cls.__module__, cls.__qualname__): cls for cls in VALUE_TYPES | EXCEPTIONS}
_NAMES.update({("pathlib", "PosixPath"): pathlib.PosixPath, ("builtins", "NoneType"): type(None),
               ("builtins", "Ellipsis"): ..., ("builtins", "NotImplemented"): NotImplemented})


# Top-level packages none of whose classes, functions or modules cross to the judge: matchers and mocks (their
# objects equal anything), the test runner, and what runs code or reaches frames, memory or the interpreter.
DENIED = frozenset({
    "unittest", "mock", "pytest", "_pytest", "pluggy", "py", "xdist", "hamcrest", "dirty_equals", "testfixtures",
    "callee", "sure", "expects", "hypothesis", "pytest_mock", "requests_mock", "responses", "httpretty", "mockito",
    "flexmock", "asynctest", "doctest", "builtins", "pickle", "_pickle", "copyreg", "copy", "marshal", "shelve",
    "subprocess", "os", "posix", "sys", "code", "codeop", "pdb", "bdb", "ctypes", "_ctypes", "multiprocessing",
    "io", "_io", "mmap", "_posixsubprocess", "_signal", "_socket", "select", "resource", "fcntl", "pty", "tty",
    "importlib", "runpy", "inspect", "gc", "types", "operator", "functools", "threading", "_thread", "signal",
    "faulthandler", "tracemalloc", "traceback", "linecache", "webbrowser", "antigravity", "this", "__main__",
    "site", "sitecustomize", "usercustomize", "_testcapi", "_xxsubinterpreters", "atexit", "builtins",
})
# denied packages whose classes cross all the same, as references only (a hint names inspect.Signature)
REFERENCES_ONLY = frozenset({"inspect", "functools", "operator", "itertools", "types", "copy", "traceback"})
# classes of a denied module that are values all the same: structseqs (os.stat() and the like), and a signature's
# parts (what ``inspect.signature`` shows: made by their own constructors, which check them, from data)
ALLOWED_DENIED = {("functools", "partial"), ("inspect", "Parameter"), ("inspect", "Signature"),
                  ("inspect", "_ParameterKind"), ("os", "stat_result"), ("os", "statvfs_result"),
                  ("os", "terminal_size"), ("os", "times_result"), ("os", "uname_result"), ("types", "SimpleNamespace")}
# functions of a denied module that the judge takes by name all the same: they take no argument and change
# nothing, so a test that calls what the candidate named gets the judge's own reading (``sys.getrecursionlimit``)
DENIED_READERS = frozenset({("sys", "getrecursionlimit"), ("sys", "getdefaultencoding"),
                            ("sys", "getfilesystemencoding"), ("sys", "getswitchinterval")})


class WireError(Exception):
    """What came from the candidate's process is not something the judge accepts."""


def send(sock, payload, descriptors=()):
    """One message; ``descriptors``: file descriptors that travel with it (a test's socket lent to the candidate's
    process: ``repoexec_judge.Channel._persistent_id``)."""
    if descriptors:
        framed = _LENGTH.pack(len(payload)) + payload
        sent = socket.send_fds(sock, [framed], list(descriptors))
        if sent < len(framed):
            sock.sendall(framed[sent:])
    elif len(payload) < 1 << 16:  # one write: a small call's round trip is then two system calls
        sock.sendall(_LENGTH.pack(len(payload)) + payload)
    else:  # not copied to prefix it
        sock.sendall(_LENGTH.pack(len(payload)))
        sock.sendall(payload)


def receive(sock, descriptors=None):
    """The next message's bytes, or None at the end of the stream. ``descriptors``: a list the file descriptors
    that came with it are added to (the candidate's process's end only: the judge takes none, and the kernel
    closes those sent to an end that reads without asking for them)."""
    header = _exactly(sock, _LENGTH.size, descriptors)
    if header is None:
        return None
    (length,) = _LENGTH.unpack(header)
    if length > MESSAGE_LIMIT:
        raise WireError(f"a message of {length} bytes (more than {MESSAGE_LIMIT >> 20} MiB)")
    payload = _exactly(sock, length)
    if payload is None:
        raise WireError("the stream ended inside a message")
    return payload


DESCRIPTORS_MOST = 16  # descriptors one message may carry
_ANCILLARY = socket.CMSG_SPACE(DESCRIPTORS_MOST * array.array("i").itemsize)


def _exactly(sock, size, descriptors=None):
    chunks, left = [], size
    while left:
        if descriptors is None:
            chunk = sock.recv(min(left, 1 << 20))
        else:  # they come with the first bytes of the message they were sent with
            chunk, ancillary, _, _ = sock.recvmsg(min(left, 1 << 20), _ANCILLARY)
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    found = array.array("i")
                    found.frombytes(data[:len(data) - len(data) % found.itemsize])
                    descriptors.extend(found)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


IMMUTABLE = (bool, int, float, complex, str, bytes, tuple, frozenset, type(None))


_NO_IDENTITY = (*IMMUTABLE, list, dict, set, bytearray)  # a copy serves: a value, or a container of changed contents
_NO_IDENTITY_TYPES = frozenset(_NO_IDENTITY)


def identities(arguments):
    """(key, object) for each argument of a call whose identity a later answer may need back (``returned is
    adapter``), and for each such item of an argument that is a list, tuple or dict: the same keys on both sides
    of the channel, the judge's originals and the candidate's process's copies."""
    for index, value in enumerate(arguments):
        items = value if type(value) in (list, tuple) else value.values() if type(value) is dict else ()
        if not set(map(type, items)) <= _NO_IDENTITY_TYPES:  # in C first: a million strings 23 ms, not 170
            yield from (((index, place), item) for place, item in enumerate(items)
                        if not isinstance(item, _NO_IDENTITY))
        if not isinstance(value, _NO_IDENTITY):
            yield (index,), value


def apply_state(target, state):
    """``state`` (an object of the same type, as it crossed) applied in place to ``target``, which the other side
    holds: a container's items, an instance's attributes and slots."""
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


def snapshot(value):
    """An object's state as bytes, to tell whether a call (or a test) changed it; None where pickle cannot write
    it."""
    try:
        return pickle.dumps(value, protocol=4)
    except Exception:
        return None


def is_value_type(cls):
    return cls in VALUE_TYPES or cls in EXCEPTIONS


# Library classes whose named slots hold what the library derives from the others (functions it makes: pydantic's
# compiled validators, wrapped lambdas that no name finds): those slots cross as nothing, and the judge sets them as
# the class's ``__init__`` starts them (each slot's factory) and derives them again with the library's own method,
# on the data that crossed (fastapi's ``create_response_field``). A state that sets them is overruled.
DERIVED = {("pydantic.fields", "ModelField"): (
    {"validators": list, "pre_validators": type(None), "post_validators": type(None)}, "populate_validators")}


# Library modules whose objects cross whole, with the methods of their own that their state binds (a config parser's
# sections hold partials of their ``get`` and the parser's ``getint``): no other object's method is bound by the
# judge, so none runs on a state the candidate shaped when a test calls what it got.
KEPT_LIBRARY_MODULES = frozenset({"configparser"})


def bindable(owner):
    """Whether the judge binds a method to ``owner`` for the candidate: a class by its name (``Cls.create``), a
    value (``",".join``), or an object of a kept library module's class (a project's subclass of it too: luigi's
    config parser)."""
    return isinstance(owner, type) or is_value_type(type(owner)) or _kept(owner)


def _kept(owner):
    """An object of a kept library module's class, or of a subclass of one; or a Deferred the judge made of data
    (``repoexec_futures``), whose ``callback`` a project's object may hold (scrapy's request)."""
    return not isinstance(owner, type) \
        and (any(klass.__module__ in KEPT_LIBRARY_MODULES for klass in type(owner).__mro__)
             or repoexec_futures.is_deferred(owner))


class _NotPassed:
    """The default of a shaped function's parameter: the function it calls then uses its own."""

    def __repr__(self):
        return "NOT_PASSED"


NOT_PASSED = _NotPassed()


def shaped_function(parameters, back, local=()):
    """A function with these parameters ((name, kind, has a default[, the default]) each:
    ``__code__.co_argcount``, ``co_varnames``, ``inspect.signature`` show them) whose body calls
    ``back(args, kwargs)`` with what it was passed; a default not given is ``NOT_PASSED``, and an argument left at
    it is not passed on. ``local``: names its ``co_varnames`` shows after the parameters, as the function it
    stands for has them (never bound). Made from names alone, which ``inspect.Signature`` checks (identifiers, in
    an order Python allows), and the local names are kept where they are identifiers."""
    return shaped_maker(parameters, local)(back)


def shaped_maker(parameters, local=()):
    """What ``shaped_function`` makes a function with, for any ``back``: the names checked and the code compiled
    once, where many functions of one shape are made (a function handle an answer, ``repoexec_judge``)."""
    import inspect

    made = [inspect.Parameter(name, inspect._ParameterKind(kind), default=(value[0] if value else NOT_PASSED)
                              if default else inspect.Parameter.empty) for name, kind, default, *value in parameters]
    signature = inspect.Signature(made)
    defaults = {f"_d{index}": p.default for index, p in enumerate(made) if p.default is not p.empty}
    written = signature.replace(parameters=[p.replace(default=_Written(f"_d{index}")) if p.default is not p.empty
                                            else p for index, p in enumerate(made)])

    taken = {p.name for p in made} | set(defaults) | {"__repoexec_packed__"}
    names = tuple(name for name in local if isinstance(name, str) and name.isidentifier()
                  and not keyword.iskeyword(name) and name not in taken)
    shaper, given = _shaper(str(written), tuple(defaults), names), tuple(defaults.values())

    def make(back):
        def packed(values):
            __tracebackhide__ = True  # the crossing, not the test's: pytest tells a failure without it (``_shaper``)
            args, kwargs, gap = [], {}, False
            for parameter in made:
                value = values[parameter.name]
                if parameter.kind == parameter.VAR_POSITIONAL:
                    args.extend(() if gap else value)
                elif parameter.kind == parameter.VAR_KEYWORD:
                    kwargs.update(value)
                elif value is NOT_PASSED:
                    gap = True
                elif parameter.kind == parameter.KEYWORD_ONLY or gap and parameter.kind == parameter.POSITIONAL_OR_KEYWORD:
                    kwargs[parameter.name] = value
                else:
                    args.append(value)
            return back(tuple(args), kwargs)

        return shaper(packed, *given)

    return make


@functools.lru_cache(maxsize=512)
def _shaper(written, defaults, local=()):
    """What makes functions of one shape, compiled once (a test that lends a new lambda a call pays no compile)."""
    # the made functions' frames are hidden from pytest's tracebacks, as the crossing's are: a failure is told at
    # the test's line and, apart, where the candidate raised; pytest reads and parses no source for them
    space = {"__tracebackhide__": True}
    unbound = f"        if 0: {' = '.join(local)} = None\n" if local else ""  # in co_varnames, never set
    exec(f"def shaper(__repoexec_packed__, {', '.join(defaults)}):\n"  # noqa: S102 (names checked by Signature)
         f"    def shaped{written}:\n{unbound}        return __repoexec_packed__(locals())\n    return shaped\n", space)
    return space["shaper"]


class _Written:
    """A default as the made function's text names it (its value is in the function's namespace)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


def _library_roots():
    """The folders the standard library and the installed packages of this interpreter load from."""
    import site
    import sysconfig

    roots = {os.path.dirname(os.path.realpath(os.__file__))}
    roots.update(os.path.realpath(path) for path in (*site.getsitepackages(), sysconfig.get_paths()["purelib"],
                                                      sysconfig.get_paths()["platlib"]))
    return tuple(root.rstrip("/") + "/" for root in roots)


def denied(module):
    top = module.partition(".")[0]
    return top in DENIED or top.startswith(("repoexec", "pytest_", "_pytest")) or _of_tests(module)


def library_module(module, denied_too=False):
    """Whether a module of this name is the standard library's or an installed package's (a builtin module too),
    and not ``DENIED`` nor a test module. It is imported here if it was not: from those folders only."""
    import importlib.util
    import sys

    if not isinstance(module, str) or denied(module) and not denied_too or _of_tests(module):
        return False
    if module in sys.builtin_module_names:
        return True
    loaded = sys.modules.get(module)
    origin = getattr(loaded, "__file__", None) if loaded is not None else None
    if loaded is None:
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return False
        origin = spec.origin if spec is not None else None
    if not origin or loaded is None and not spec.has_location or not os.path.realpath(origin).startswith(_LIBRARY_ROOTS):
        return False
    if loaded is None:
        __import__(module)
    return True


def trusted_module(name, roots, modules_only=False):
    """The judge's own module of this name, where it is the project's or a library's (not the tests', not the
    runtime's; not ``DENIED`` unless ``modules_only``: a module object is only a namespace, compared by
    identity), imported here if it was not; else None."""
    import sys

    if not isinstance(name, str) or _of_tests(name) or name.startswith(("repoexec", "__main__")):
        return None
    if modules_only and name in sys.modules and (library_module(name, denied_too=True)
                                                 or module_of_project(name, roots)):
        return sys.modules[name]
    if not denied(name) and (module_of_project(name, roots) or _project_module(name, roots)
                             or library_module(name)):
        return sys.modules.get(name)
    return None


def resolve_global(module, qualname, roots):
    """The judge's own function or class ``module.qualname`` (a library's or the project's), or None: what the
    candidate's process names so is the judge's code, never the candidate's."""
    if module == "builtins" and isinstance(qualname, str) and qualname.count(".") == 1:
        owner, _, name = qualname.partition(".")  # a builtin type's slot (object.__init__): the judge's own
        found = getattr(getattr(builtins, owner, None), name, None)
        return found if isinstance(getattr(builtins, owner, None), type) and type(found).__name__ in (
            "wrapper_descriptor", "method_descriptor") else None
    if (module, qualname) in DENIED_READERS:
        return getattr(sys.modules[module], qualname)
    owner = trusted_module(module, roots)
    if owner is None or not isinstance(qualname, str) or "<" in qualname:
        return None
    found = owner
    for part in qualname.split("."):
        found = getattr(found, part, None)
    kinds = (type, types.FunctionType, types.BuiltinFunctionType)
    return found if isinstance(found, kinds) and getattr(found, "__module__", None) == module else None


def _project_module(module, roots):
    """A project module the judge has not imported yet: imported now, from the project's own files."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    origin = os.path.realpath(spec.origin) if spec and spec.origin and spec.has_location else ""
    if not origin or not any(origin.startswith(root.rstrip("/") + "/") for root in roots):
        return False
    __import__(module)
    return True


def module_of_project(name, roots):
    """Whether the imported module of this name was loaded from a file under one of the project's roots."""
    import sys

    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if not path:
        return False
    real = os.path.realpath(path)
    return any(real.startswith(root.rstrip("/") + "/") for root in roots)


def _referred(persistent, pid, known, chosen):
    """What a reference in an answer stands for (``persistent``: the judge's reading of it), noted for the checks
    that follow the reading (``_handles_only_in_containers``)."""
    found = persistent(pid)
    if isinstance(pid, tuple) and pid[:1] == ("handle",) and not _handle(found):
        chosen[id(found)] = found  # a function by its name: the judge's own, the candidate's choice
    elif not _handle(found):
        known.add(id(found))  # the judge's own (a test's argument): not looked into
    return found


class JudgeUnpickler(pickle._Unpickler):
    """Reads what the candidate's process sent. ``persistent`` resolves the judge's markers."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data, project_roots, persistent):
        super().__init__(io.BytesIO(data))
        self.project_roots = project_roots
        self.persistent = persistent
        self.library_classes, self.library_objects, self.references_only = set(), [], set()
        self.known = set()
        self.clean = {}  # id -> object: objects a check found free of handles (kept alive: ids stay theirs)
        self.chosen = {}  # id -> function: the functions the answer named, which cross only as data's peers
        self.futures = []  # what each Deferred the answer holds would call, with what, and holds (``repoexec_futures``)
        self.derived = []  # library objects whose derived slots the library's own method fills (``DERIVED``)
        self.nested, self.cells = [], {}  # functions made of the judge's own code (``nested_function``), their empty cells

    def persistent_load(self, pid):
        return _referred(self.persistent, pid, self.known, self.chosen)

    def _chose(self, function):
        self.chosen[id(function)] = function
        return function

    def find_class(self, module, name):
        if (module, name) in _NAMES:
            return _NAMES[(module, name)]
        if (module, name) in VALUE_CALLS or (module, name) in NUMPY:
            return super().find_class(module, name)
        if (module, name) == ("builtins", "object"):
            return object  # a bare object(): a sentinel, with no state or behaviour of its own
        if (module, name) in (("_operator", "getitem"), ("operator", "getitem"), ("builtins", "type")):
            # only for type hints and NoneType (load_reduce)
            return super().find_class(module, name)
        if _of_tests(module):
            raise WireError(f"{module}.{name} may not cross to the judge: a class of the tests' own (an always-equal "
                            "helper of theirs would pass anything)")
        if module_of_project(module, self.project_roots) or _project_module(module, self.project_roots):
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:
                return found
        elif (module, name) in ALLOWED_DENIED or library_module(module):
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:
                self.library_classes.add(found)
                return found
            if isinstance(found, (types.FunctionType, types.BuiltinFunctionType)) and found.__module__ == module:
                return self._chose(found)  # a library's function by its name (a file handler's io.open)
            if not isinstance(found, (types.ModuleType, *FUNCTION_TYPES)) and _named_singleton(found) == name \
                    and not _equals_anything(found):
                self.known.add(id(found))  # not looked into: what it holds is the library's, not the candidate's
                if callable(found) and not _typing(found):
                    return self._chose(found)  # a ufunc: the judge's own, a call the answer chose
                return found  # a library's named object (typing.Union): the judge's own
        elif module.partition(".")[0] in REFERENCES_ONLY and library_module(module, denied_too=True):
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:
                self.references_only.add(found)  # inspect.Signature, as a value names it; never made here
                return found
        raise WireError(f"{module}.{name} may not cross to the judge: only builtins, standard value types, the "
                        "project's own classes and library classes (not mocks, matchers or pytest's) do")

    def load_reduce(self):
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        self._may_make(func)
        if func is not repoexec_futures.deferred:
            _no_handle_in(args, self.known, self.clean, f"the arguments of {getattr(func, '__qualname__', type(func).__name__)}")
        if func is type and len(args) == 1 and any(args[0] is v for v in (None, ..., NotImplemented)):
            stack[-1] = type(args[0])  # how pickle names NoneType
            return
        if func is operator.getitem and len(args) == 2 and (_typing(args[0]) or _generic(args[0])):
            stack[-1] = args[0][args[1]]  # typing.Optional[int], list[str], Request[User]: a type hint made again
            return
        if func is nested_function:
            stack[-1] = self._chose(nested_function(*args, roots=self.project_roots))
            self.nested.append(stack[-1])  # what its closure comes to hold is checked with the whole answer
            return
        if func is new_cell or func is fill_cell:
            if func is fill_cell and (id(args[0]) not in self.cells or type(args[1]) is not tuple or len(args[1]) != 1):
                raise WireError("only a cell made for the answer may be filled, once")
            stack[-1] = func(*args)
            if func is fill_cell:
                self.cells.pop(id(args[0]))
            else:
                self.cells[id(stack[-1])] = stack[-1]
            return
        if func is repoexec_futures.deferred:
            self.futures.append(repoexec_futures.parts(args))  # checked with the whole answer, in ``load``
            stack[-1] = func(*args)
            self.known.add(id(stack[-1]))  # the judge's own, made here of checked parts: not looked into again
            return
        if isinstance(func, type) and issubclass(func, BaseException) and func not in EXCEPTIONS:
            # a project's exception: its arguments as it holds them, not as its __init__ takes them
            stack[-1] = func.__new__(func, *args)
            return
        if isinstance(func, type) and func in self.library_classes and _structseq(func):
            stack[-1] = func(*args)  # os.stat_result((...), {}): a C value type's own constructor
            return
        if isinstance(func, type) and _msgspec_struct(func):
            stack[-1] = func(*args)  # its C constructor sets the fields from the data; msgspec refuses __new__
            self._made(stack[-1])
            return
        base = _made_in_c(func) if isinstance(func, type) and args else None
        if base is not None:  # a C type's own constructor (multidict's): no Python code of anyone's runs
            made = func.__new__(func, *args)
            if base is not object:
                base.__init__(made, *args)
            stack[-1] = made
            self._made(made)
            return
        if isinstance(func, type) and func in self.library_classes and (
                (func.__module__, func.__qualname__) in CONSTRUCTED or _constructed_kind(func, args)):
            stack[-1] = func(*args)
            self._made(stack[-1])
            return
        if isinstance(func, type) and not _may_construct(func):
            # a project class: made as pickle's protocol 2 makes it, without running its __init__ on what came
            stack[-1] = func.__new__(func)
            self._made(stack[-1])
            return
        if not isinstance(func, type) and not any(func is _function(*name) for name in VALUE_CALLS | NUMPY) \
                and not _rebuilder(func, args):
            raise WireError(f"a call of a {type(func).__name__} may not be made by the judge: "
                            f"{getattr(func, '__qualname__', '?')!s:.80}")
        stack[-1] = func(*args)
        if func is repoexec_futures.future:
            self.known.add(id(stack[-1]))  # the judge's own, on its loop (which the walk must not look into)
        if func in (bound_method, class_descriptor) and callable(stack[-1]) \
                and not _kept(getattr(stack[-1], "__self__", None)):
            self._chose(stack[-1])  # a class's or a value's method (``Cls.create``, ``dict.__dict__["fromkeys"]``)
        self._made(stack[-1])

    def refuse_instantiation(self):
        raise WireError("protocol 0 and 1 instantiation (INST, OBJ) is not read by the judge")

    def load_build(self):
        """An instance's state is data, set as data: on an instance the answer made only (on a class it would be
        setattr on the project's class; on a library's named object or a test's argument, a change of the judge's
        own), holding no handle, and, where the class has no ``__setstate__`` of its own, naming neither a dunder
        (``__class__``) nor anything the class or its bases define as behaviour (a method, property or descriptor:
        an instance attribute of that name would stand in for it), and in the slot part only declared slots."""
        state, inst = self.stack[-1], self.stack[-2]
        if isinstance(inst, (type, types.ModuleType, *FUNCTION_TYPES)) or _handle(inst) or id(inst) in self.known:
            raise WireError(f"a state for {type(inst).__name__} {getattr(inst, '__name__', '')} may not be set")
        _no_handle_in(state, self.known, self.clean, f"the state of a {type(inst).__qualname__}")
        if getattr(type(inst), "__setstate__", None) is not None:  # on its class: an instance's __getattr__ is
            super().load_build()                                      # the project's code, on a state not yet set
            return
        _plain_state(type(inst), state)
        self.stack.pop()
        set_state(inst, state)
        if (type(inst).__module__, type(inst).__qualname__) in DERIVED and type(inst) in self.library_classes:
            self.derived.append(inst)  # derived once the whole answer is checked (``load``)

    def load_newobj(self):
        self._may_make(self.stack[-2])
        _no_handle_in(self.stack[-1], self.known, self.clean, f"the arguments of {getattr(self.stack[-2], '__qualname__', '?')}")
        cls, args = self.stack[-2:]
        if not args and _allocated_by_object(cls):  # its __new__, the project's, would want what its state holds
            self.stack[-2:] = [object.__new__(cls)]    # (litestar's ``URL(url)``): made as a class without one is
        else:
            super().load_newobj()
        self._made(self.stack[-1])

    def load_newobj_ex(self):
        self._may_make(self.stack[-3])
        _no_handle_in(self.stack[-2:], self.known, self.clean, f"the arguments of {getattr(self.stack[-3], '__qualname__', '?')}")
        super().load_newobj_ex()
        self._made(self.stack[-1])

    def _may_make(self, cls):
        if _handle_class(cls):  # a remote class's instance is made in the candidate's process, never by a pickle
            raise WireError(f"an instance of {getattr(cls, '__qualname__', '?')} may not be made by an answer")
        if cls in self.references_only:
            raise WireError(f"{cls.__module__}.{cls.__qualname__} may cross as a reference only, never be made")

    def _made(self, obj):
        if type(obj) in self.library_classes or type(obj) is functools.partial:
            self.library_objects.append(obj)

    def load(self):
        value = super().load()
        partials = {}  # id -> a partial of a project's function: where it stands is checked with the whole answer
        for obj in self.library_objects:  # its state (``__setstate__``) may have replaced what REDUCE made it of
            if type(obj) is functools.partial:
                if id(obj.func) in self.chosen and isinstance(obj.func, types.FunctionType) \
                        and module_of_project(obj.func.__module__, self.project_roots):
                    partials[id(obj)] = obj
                else:
                    _bound_partial(obj)
        _handles_only_in_containers(value, self.known, self.chosen, partials)  # what a list holding it came to hold
        for called, arguments, held in self.futures:
            _future_checked(called, arguments, held, self.known, self.chosen)
        for function in self.nested:
            _closure_checked(function, self.known, self.chosen)
        for obj in self.library_objects:  # with their state: an __eq__ that says yes to what it cannot know
            if _equals_anything(obj):
                raise WireError(f"a {type(obj).__module__}.{type(obj).__qualname__} that equals anything may not "
                                "cross to the judge")
        for obj in self.derived:
            slots, method = DERIVED[(type(obj).__module__, type(obj).__qualname__)]
            for name, start in slots.items():
                object.__setattr__(obj, name, start())
            getattr(type(obj), method)(obj)
        return value

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.INST[0]] = refuse_instantiation
    dispatch[pickle.OBJ[0]] = refuse_instantiation
    dispatch[pickle.BUILD[0]] = load_build


class _Probe:
    """An object of the judge's own that no library object can honestly be equal to."""

    __slots__ = ()


_PROBES = (_Probe(), "\x00repoexec: no value is this string", -7_349_218_564_091, (_Probe(),))


def _equals_anything(obj):
    """Whether a library object says it equals one of the judge's probes (an object of its own, an unlikely
    string, number or tuple): an honest value cannot."""
    for probe in _PROBES:
        try:
            said = type(obj).__eq__(obj, probe)
            if bool(obj == probe if said is NotImplemented else said):
                return True
        except Exception:
            continue
    return False


_PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)  # containers with no code of anyone's in their behaviour
_VALUE_CONTAINERS = (collections.defaultdict, collections.OrderedDict, collections.Counter, collections.deque)
_LEAVES = (type, types.ModuleType, types.CodeType, *FUNCTION_TYPES, types.BuiltinMethodType, types.MethodWrapperType)


def _constructed_kind(cls, args):
    """Whether ``cls`` is of a kind whose classes are made by their constructor from scalars (``CONSTRUCTED_KINDS``),
    and ``args`` are scalars."""
    return all(type(arg) in (bool, int, float, str, type(None)) for arg in args) and any(
        isinstance(base, type) and issubclass(cls, base) for base in (_function(*kind) for kind in CONSTRUCTED_KINDS))


def _rebuilder(func, args):
    """Whether ``func`` is a library's rebuilder (``REBUILDERS``) called on a class of that library's kind."""
    for (module, name), kind in REBUILDERS.items():
        if func is _function(module, name):
            base = _function(*kind) if kind else None
            return kind is None or isinstance(base, type) and len(args) > 0 and isinstance(args[0], type) \
                and issubclass(args[0], base)
    return False


HANDLE_MARK = "__repoexec_handle__"  # a judge's function that stands for one of the candidate's holds its handle so


def _handle(item):
    """An object that stands for one of the candidate's process: a handle, a remote instance, or the judge's
    function made in the shape of the candidate's (``repoexec_judge._function_handle``)."""
    return _handle_class(type(item)) or type(item) is types.FunctionType and HANDLE_MARK in item.__dict__


def _handle_kind(item):
    """What a handle stands for, to name it in a refusal: the type the candidate's object has there."""
    kind = getattr(item, "_type", None) if type(item).__name__ == "Handle" else None
    return f"handle to a {kind}" if isinstance(kind, str) else type(item).__name__


def _held(item):
    """An instance of the class under test (a remote class's): the project's objects on the judge's side may hold
    it, as the tests do (litestar's scope state keeps its ``Headers``); each use of it is a call to the
    candidate's process whose answer is data, and its special methods are those the reference defines."""
    return getattr(type(item), "held", False) is True


def _handle_class(cls):
    """A handle's class (``repoexec_judge.Handle``, a remote class): its objects stand for the candidate's."""
    return getattr(cls, "lent", False) is True


def defines(cls, name):
    """Whether a class or a base defines ``name``: read as Python's protocols read it, never through an instance's
    ``__getattr__`` (the project's code, which may raise anything: astroid's ``Const`` raises a ``KeyError``)."""
    return any(name in vars(klass) for klass in cls.__mro__)


def _reached(root, known, clean=None):
    """Each object reachable from ``root`` through what it holds (as the garbage collector sees it), with how deep
    in behaviour the way there went and the object that holds it there: (object, depth, holder). The depth is 0
    through plain containers alone (or none), 1 through the standard value containers too (a defaultdict, whose
    factory is called with no arguments; a deque), 2 through any other object, the nearest of which is the
    holder. Classes, modules and functions (the judge's own, by name) are not looked into, nor handles."""
    seen, left = set(), [(root, 0, None)]
    while left:
        item, inside, holder = left.pop()
        if (id(item), inside, id(holder)) in seen:
            continue
        seen.add((id(item), inside, id(holder)))
        yield item, inside, holder
        if _handle(item) or isinstance(item, _LEAVES) or id(item) in known or clean and id(item) in clean:
            continue
        kind = 0 if type(item) in _PLAIN_CONTAINERS else 1 if type(item) in _VALUE_CONTAINERS else 2
        nested, within = max(inside, kind), item if kind == 2 else holder
        left.extend((child, nested, within) for child in gc.get_referents(item))


def _bound_partial(made):
    """A ``partial`` of the candidate's binds a value type (``int``) or a method of a value or of a kept library
    object that crossed with it (a config parser's section's ``getint``: ``bindable``), never a function:
    ``partial(cProfile.run, "...")`` would be code of the candidate's that the judge runs when a test calls what
    it got."""
    if isinstance(made.func, type) and made.func in VALUE_TYPES:
        return  # partial(int, base=2): a value type's own C constructor
    owner = getattr(made.func, "__self__", None)
    if not isinstance(made.func, (types.MethodType, types.BuiltinMethodType)) or owner is None \
            or isinstance(owner, (type, types.ModuleType)) or not bindable(owner):
        raise WireError(f"a partial of {getattr(made.func, '__qualname__', type(made.func).__name__)} may not cross "
                        "to the judge: it binds only a value's method, a kept library object's or a value type")


def _no_handle_in(value, known, clean, where):
    """What a constructor or a state gets holds no handle to the candidate's process: the judge never lets code
    of its own (a project's ``__eq__``, a library's method, a ``partial``) call the candidate. An object found
    clean once is not looked into again (a chain of objects is walked once, not once per link), but for the
    containers pickle can still fill: the walk of the whole answer at the end sees what they come to hold."""
    reached = [item for item, *_ in _reached(value, known, clean)]
    for item in reached:
        if _handle(item) and not _held(item):
            raise WireError(f"{where} may not hold an object of the candidate's process (a "
                            f"{_handle_kind(item)}): only data crosses into an object")
    clean.update((id(item), item) for item in reached if type(item) not in _FILLED)


_FILLED = (list, dict, set, bytearray, collections.deque, collections.OrderedDict, collections.Counter,
           collections.defaultdict)  # what APPENDS and SETITEMS can still change after a check


def _handles_only_in_containers(value, known, chosen, partials=None):
    """A handle (a function, generator or iterator that stays in the candidate's process) or a function the
    answer named (``chosen``: a library's or the project's by its name, a method bound for it) stands in an answer
    only as itself or in lists, tuples, dicts and sets, where only a test calls it, with the test's arguments:
    never inside another object, whose own methods would call it on the data the candidate put beside it
    (``cProfile.run`` and a string of code), but an object of its own package's class (httplib2's ``Http`` holds
    ``httplib2.proxy_info_from_environment``: the package's own code calls the package's own function). In a
    standard value container it is data's peer too (a defaultdict's factory is called with no arguments). What
    the project's own ``__setstate__`` makes is its own. A ``partial`` of a project's function (``partials``) with
    data bound stands only inside an object of that function's own package (xarray's lazy arrays hold one of its
    decoder): there the package's code calls its own function on data; as the answer, or in a container, a test
    would call it with arguments the candidate chose."""
    partials = partials or {}
    for item, inside, holder in _reached(value, known):
        if inside and _handle(item) and not _held(item):
            raise WireError("an object of the candidate's process may cross only as the answer itself or in a "
                            "list, tuple, dict or set, never inside another object")
        if id(item) in partials and (inside != 2 or _package(item.func) != type(holder).__module__.partition(".")[0]):
            raise WireError(f"a partial of {item.func.__qualname__} may cross only inside an object of its "
                            "function's own package")
        if inside == 2 and id(holder) in partials and item is holder.func:
            continue  # the partial's own function: where the partial stands was checked
        if inside == 2 and id(item) in chosen and _package(item) != type(holder).__module__.partition(".")[0]:
            raise WireError(f"a {type(item).__name__} {getattr(item, '__qualname__', '')} may not cross inside "
                            "another object: only data does (a function crosses as the answer or in a list, "
                            "tuple, dict or set)")


def _future_checked(called, arguments, held, known, chosen):
    """A Deferred the judge made for the answer calls, when it fires, only what runs in the candidate's process (a
    handle), a function of the judge's own that was lent to the candidate, or twisted's pass-through: never a
    function the answer named. What it passes them is data alone; what it holds as its result stands as an answer
    does."""
    own = repoexec_futures.own_steps()
    for function in called:
        if not (_handle(function) or id(function) in known and id(function) not in chosen
                or any(function is step for step in own)):
            raise WireError(f"a Deferred may call only functions of the candidate's process or the judge's own, not "
                            f"{getattr(function, '__qualname__', type(function).__name__)}")
    for item, *_ in _reached(arguments, known):
        if _handle(item) or id(item) in chosen:
            raise WireError("a Deferred's callbacks may be given data only")
    _handles_only_in_containers(held, known, chosen)


def _closure_checked(function, known, chosen):
    """A function the judge made of its own code (``nested_function``) holds data alone, as an object's state
    does: no handle at any depth, and no function named by the answer but its own package's (what its code calls
    is its own package's code)."""
    package = _package(function)
    held = ([cell.cell_contents for cell in function.__closure__ or () if cell_filled(cell)], function.__defaults__,
            function.__kwdefaults__, vars(function))
    for item, *_ in _reached(held, known):
        if _handle(item) and not _held(item) or id(item) in chosen and item is not function \
                and _package(item) != package:
            raise WireError(f"{function.__module__}.{function.__qualname__} may hold data only, not "
                            f"{getattr(item, '__qualname__', type(item).__name__)}")


def cell_filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _package(function):
    """The top-level package of a function's module (a builtin's: ``builtins``)."""
    module = getattr(function, "__module__", None)
    return (module if isinstance(module, str) else type(function).__module__).partition(".")[0]


def _plain_state(cls, state):
    """A state pickle's default BUILD sets: a dict of attributes and a dict of slots, each name data only."""
    attributes, slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    for part, named in ((attributes, "attribute"), (slots, "slot")):
        if part is not None and not isinstance(part, dict):
            raise WireError(f"a {cls.__qualname__}'s state of {named}s must be a dict, not a {type(part).__name__}")
    declared = {name for klass in cls.__mro__ for name in _slots_of(klass)} - {"__dict__", "__weakref__"}
    for name in (attributes or {}):
        if not isinstance(name, str) or name.startswith("__") and name.endswith("__") or _behaviour(cls, name):
            raise WireError(f"a {cls.__qualname__}'s state may not set {str(name)[:100]!r}: it names the class's "
                            "own behaviour, not data")
    for name in (slots or {}):
        if name not in declared:
            raise WireError(f"a {cls.__qualname__}'s state may not set {str(name)[:100]!r}: not a slot it declares")


def set_state(obj, state):
    """pickle's default BUILD, with each slot set as data (``object.__setattr__``, as a frozen dataclass's own
    ``__setstate__`` does): pickle's ``setattr`` fails on a frozen class that declares its slots by hand."""
    attributes, slots = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    if attributes:
        vars(obj).update(attributes)
    for name, value in (slots or {}).items():
        object.__setattr__(obj, name, value)


def _guarded_slots(cls):
    """A class whose slots pickle's default BUILD cannot set: its own ``__setattr__`` (frozen) or ``__getattr__``
    (which BUILD's look for ``__setstate__`` on the instance runs on slots not yet set: litestar's
    ``ImmutableState`` recurses), slots, and no ``__setstate__`` of its own."""
    return (cls.__setattr__ is not object.__setattr__ or hasattr(cls, "__getattr__")) \
        and getattr(cls, "__setstate__", None) is None \
        and any("__slots__" in vars(klass) for klass in cls.__mro__[:-1])


def _slots_of(klass):
    slots = vars(klass).get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _behaviour(cls, name):
    """Whether the class or a base defines ``name`` as behaviour: a function, method, property or descriptor.
    A ``functools.cached_property`` is not: it keeps its value in the instance's own dict under its name, so
    that entry is the instance's data (astroid's ``Arguments.arguments``), read by the standard library's code."""
    for klass in cls.__mro__:
        if name in vars(klass):
            found = vars(klass)[name]
            return type(found) is not functools.cached_property and (callable(found) or hasattr(type(found), "__get__"))
    return False


def _typing(obj):
    """A type hint's origin: a form of typing's, a class of typing's, collections.abc's or the builtins'."""
    module = getattr(obj, "__module__", None) if isinstance(obj, type) else type(obj).__module__
    return module in ("typing", "typing_extensions", "collections.abc", "builtins") and not isinstance(obj, str)


def _generic(obj):
    """A class whose subscription is typing's own (a project's ``Generic`` class that does not make its own) or the
    judge's remote class's: a hint such as ``Request[User]`` is made again without the project's code."""
    import typing

    made = getattr(getattr(obj, "__class_getitem__", None), "__func__", None) if isinstance(obj, type) else None
    return made is not None and (made is vars(typing.Generic)["__class_getitem__"].__func__ or (
        getattr(made, "__module__", None), getattr(made, "__qualname__", None)) == (
        "repoexec_judge", "RemoteInstance.__class_getitem__"))


def _named_singleton(obj):
    """The name an object pickles by (``typing.Union`` reduces to "Union"), or None."""
    try:
        reduced = obj.__reduce_ex__(4)
    except Exception:
        return None
    return reduced if isinstance(reduced, str) else None


def _allocated_by_object(cls):
    """Whether a class's ``__new__`` is Python code (its own or a base's) over ``object``'s: an instance made for
    a state set next needs none of it."""
    if not isinstance(cls, type) or not isinstance(cls.__new__, types.FunctionType):
        return False
    allocator = next(klass for klass in cls.__mro__ if "__new__" in vars(klass)
                     and not isinstance(vars(klass)["__new__"], (staticmethod, types.FunctionType)))
    return allocator is object


def _made_in_c(cls):
    """The base whose C ``__init__`` makes a container class's instances (``object`` where its C ``__new__`` alone
    does), or None: multidict's ``CIMultiDict`` and its ``istr`` keys, or
    a subclass of it that adds methods and an ``__init__`` of its own (litestar's ``MultiDict``), whose pickle
    gives the items as the constructor's arguments. ``__new__`` alone would leave that base's memory unset (a
    crash, or an empty container); the base's own C ``__init__`` fills it from the data, and no Python code of
    anyone's runs (a subclass's ``__init__`` is skipped, as every project class's is). Containers only: a C
    constructor of anything else may do more than keep what it is given (``_io.FileIO`` opens a file)."""
    import collections.abc

    if not issubclass(cls, (collections.abc.Mapping, collections.abc.Sequence, collections.abc.Set)) \
            or type(cls).__call__ is not type.__call__ or isinstance(cls.__new__, types.FunctionType) \
            or isinstance(getattr(cls, "__setstate__", None), types.FunctionType):
        return None
    base = next(klass for klass in cls.__mro__ if "__init__" in vars(klass))
    while isinstance(vars(base)["__init__"], types.FunctionType):  # a Python __init__: the C one below it
        base = next(klass for klass in base.__mro__[1:] if "__init__" in vars(klass))
    if base is object and cls.__new__ is object.__new__:
        return None
    return base  # object: a C __new__ alone makes it (multidict's ``istr``, a str made in C)


def _msgspec_struct(cls):
    """A class of msgspec's ``Struct`` (litestar's ``StorageObject``) with no ``__post_init__``: it pickles as its
    fields' values in order, and its C constructor sets them and runs no Python code of anyone's."""
    struct = getattr(sys.modules.get("msgspec._core"), "Struct", None)
    return struct is not None and type(cls) is type(struct) and issubclass(cls, struct) \
        and not hasattr(cls, "__post_init__")


def _structseq(cls):
    return issubclass(cls, tuple) and hasattr(cls, "n_sequence_fields")


def is_sentinel(obj):
    """A module's marker object (``MISSING = object()``, tornado's ``moment``): compared by identity alone, so only
    that same object serves; it crosses by its name, and each side uses its own module's."""
    return _identity_only(obj) and not callable(obj)


def module_singleton(obj):
    """(module, name) under which a library's module holds this very object, an instance of a class of its own that
    compares by identity alone (astroid's ``Uninferable``, the one ``UninferableBase`` of ``astroid.util``,
    callable and answering every attribute with itself; ``dataclasses.MISSING``): it crosses by that name either
    way, and each side uses its own object of the name (``singleton``), so ``is`` holds as in one process; else
    None. A class's module is read once a process."""
    import sys

    if not _identity_only(obj):
        return None
    cls = type(obj)
    held = _SINGLETONS.get(cls)
    if held is None:
        module = sys.modules.get(cls.__module__) if isinstance(cls.__module__, str) else None
        held = _SINGLETONS[cls] = {id(value): (name, value) for name, value in vars(module).items()
                                   if type(value) is cls and not name.startswith("__")} \
            if isinstance(module, types.ModuleType) and library_module(module.__name__) else {}
    found = held.get(id(obj))
    return (cls.__module__, found[0]) if found is not None and found[1] is obj else None


_SINGLETONS = {}  # class -> {id: (name, object)} of the objects of it its library module holds (``module_singleton``)


def singleton(module, name):
    """The judge's own object that ``module_singleton`` named: held by a library's module under that name, of a
    class of that module's that compares by identity alone; else None."""
    import sys

    owner = sys.modules.get(module) if isinstance(module, str) and library_module(module) else None
    found = vars(owner).get(name) if isinstance(owner, types.ModuleType) and isinstance(name, str) else None
    return found if found is not None and type(found).__module__ == module and _identity_only(found) else None


def _identity_only(obj):
    """An instance that only itself equals: no comparison of its class's own, no value, class, module, function,
    handle or future (what crosses by a module's name of it: ``module_singleton``)."""
    cls = type(obj)
    return cls.__eq__ is object.__eq__ and cls.__ne__ is object.__ne__ and cls not in VALUE_TYPES \
        and not isinstance(obj, (type, types.ModuleType, *FUNCTION_TYPES)) and not _handle(obj) \
        and cls.__module__ not in repoexec_futures.MODULES


def sentinels(module):
    """id -> name of a module's marker objects (``is_sentinel``), held under a name of its own."""
    return {id(value): name for name, value in vars(module).items()
            if not name.startswith("__") and is_sentinel(value)} if isinstance(module, types.ModuleType) else {}


def _function(module, name):
    import sys

    owner = sys.modules.get(module)
    return getattr(owner, name, None) if owner is not None else None


_TEST_MODULES = set()  # the modules the judge's session collected tests from (``tests_collected``)


def tests_collected(names):
    """The judge's session collected its tests from these modules: whatever a project names its test files
    (pylint's ``unittest_*.py``), what they define is lent to the candidate's process, never named to it."""
    _TEST_MODULES.update(names)


def _of_tests(module):
    """A test module or conftest, by its name as pytest imports it: never a source of values to compare with."""
    return module in _TEST_MODULES or any(
        part.startswith("test_") or part.endswith("_test") or part in ("conftest", "tests", "test")
        for part in module.split("."))


_LIBRARY_ROOTS = _library_roots()


def _may_construct(cls):
    return is_value_type(cls) or issubclass(cls, enum.Enum) or "numpy" in cls.__module__ or cls is functools.partial


class _NotPlain(Exception):
    """A message that names a class or function, or refers to an object anywhere but as the answer itself: read by
    ``JudgeUnpickler``."""


class _Reference:
    """Where the plain reader met a reference: an object of no state and no behaviour, which no opcode can fill
    (BUILD, APPEND and SETITEM on it fail, and the message goes to ``JudgeUnpickler``)."""

    __slots__ = ()


class _PlainUnpickler(pickle.Unpickler):
    """pickle's C unpickler, for a message of builtin data alone (str, int, float, bytes, None, bool, list, tuple,
    dict, set, frozenset: what pickle writes with opcodes of their own) and at most one reference, left as a
    ``_Reference`` until the message is read. It names nothing, so no REDUCE, NEWOBJ, BUILD or INST can find
    anything to call or to set a state on, and none of ``JudgeUnpickler``'s checks has anything to look at: the
    same value, read in C."""

    def __init__(self, file):
        super().__init__(file)
        self.reference = None  # (the marker, its pid)

    def find_class(self, module, name):
        raise _NotPlain

    def persistent_load(self, pid):
        if self.reference is not None:
            raise _NotPlain
        self.reference = (_Reference(), pid)
        return self.reference[0]


def _plain(data):
    """The message read in C, and the pid of the reference that stands as its last item (a call's answer that is
    a handle: ``("return", number, changed, <handle>)``), or None where it holds none. ``_NotPlain`` (or pickle's
    own error) for any other message: a reference anywhere else (a memo can put one marker in two places) is
    ``JudgeUnpickler``'s to read, with every check of its own."""
    reader = _PlainUnpickler(io.BytesIO(data))
    message = reader.load()
    if reader.reference is None:
        return message, None
    marker, pid = reader.reference
    if type(message) is not tuple or not message or message[-1] is not marker \
            or any(item is marker for item, *_ in _reached(message[:-1], ())):
        raise _NotPlain
    return message, pid


def loads_checked(data, project_roots, persistent):
    """What the candidate's process sent, read as ``JudgeUnpickler`` reads it (builtin data alone, the most
    answers, and a bare handle, by pickle's C code)."""
    try:
        message, pid = _plain(data)
    except Exception:  # anything else, or not read at all: the checked reader decides, with its own errors
        message = pid = _NOT_READ
    try:
        if message is _NOT_READ:
            return JudgeUnpickler(data, project_roots, persistent).load()
        if pid is None:
            return message
        known, chosen = set(), {}
        message = (*message[:-1], _referred(persistent, pid, known, chosen))
        _handles_only_in_containers(message, known, chosen)
        return message
    except WireError:
        raise
    except RecursionError:
        raise WireError("a value nested too deep") from None
    except Exception as exc:
        raise WireError(f"an answer the judge cannot read: {type(exc).__name__}: {exc}") from None


_NOT_READ = object()


def dumps(value, persistent_id=None, as_values=False, reduce=None):
    """``reduce``: the sender's own reductions, asked first (the candidate's process sends a nested function of
    the project's by where its code stands: ``by_code``)."""
    buffer = io.BytesIO()
    pickler = _Pickler(buffer, protocol=4)
    pickler.as_values, pickler.reduce = as_values, reduce
    if persistent_id is not None:
        pickler.persistent_id = persistent_id
    pickler.dump(value)
    return buffer.getvalue()


class _Pickler(pickle.Pickler):
    """pickle's own, with the standard values pickle refuses sent as what they show: a dict's views (a dict of
    the same keys, values or items rebuilds them) and a memoryview (its bytes, format and shape)."""

    def reducer_override(self, obj):
        made = NotImplemented if self.reduce is None else self.reduce(obj)
        return converted(obj, self.as_values) if made is NotImplemented else made


_BOUND = (types.MethodType, types.BuiltinMethodType, types.MethodWrapperType)  # what has a __self__ of its own


def converted(obj, as_values=False):
    """How the wire sends a value pickle alone refuses or cannot name, or NotImplemented. ``as_values``: the
    candidate's process's answers, where what it made of the standard values crosses as their data (a subclass's
    value as the base's, a defaultdict's factory as a copy of what it makes)."""
    if isinstance(obj, enum.Enum):  # by its value, as Python 3.11.7 pickles every member; 3.11.2 names some
        return type(obj), (obj._value_,)  # through getattr (inspect's parameter kinds), which the judge refuses
    if as_values:
        described = _mock_described(obj)
        if described is not None:
            return mocked, described
        if type(obj) is collections.defaultdict and not _by_name(obj.default_factory):
            return default_dict, (obj.default_factory(), dict(obj))  # the factory's code stays where it is
        wrapped = _stands_for(obj)
        if wrapped is not None:
            return stood_for, (wrapped,)
        logging = sys.modules.get("logging")  # none to cross where the module was never imported
        if logging is not None and type(obj) in (logging.Logger, logging.RootLogger):
            return named_logger, (None if obj is logging.root else obj.name, obj.level, obj.propagate, obj.disabled,
                                  list(obj.handlers), list(obj.filters))
        if logging is not None and isinstance(obj, logging.FileHandler) and obj.stream is not None:
            return copyreg.__newobj__, (type(obj),), {**vars(obj), "stream": _DETACHED, "_builtin_open": _REOPENED}
    if as_values and type(obj) is types.CellType:  # a nested function's (``by_code``): filled once made, so a
        try:                                        # function its own cell holds (a recursive one) crosses too
            return new_cell, (), (obj.cell_contents,), None, None, fill_cell
        except ValueError:  # not assigned yet
            return new_cell, ()
    derived = DERIVED.get((type(obj).__module__, type(obj).__qualname__)) if as_values else None
    if derived is not None:  # pickle's own reduction (its slots), less what the judge derives
        made, arguments, (attributes, slots) = obj.__reduce_ex__(4)[:3]
        return made, arguments, (attributes, {name: value for name, value in slots.items() if name not in derived[0]})
    if type(obj).__module__ in repoexec_futures.MODULES:
        future = repoexec_futures.reduced(obj, as_values)
        if future is not None:
            return future
    if type(obj) is types.MappingProxyType:
        return mapping_proxy, (dict(obj),)  # a read-only view of a copy: what it shows is all it is
    proxy = _multidict_proxy(obj)
    if proxy is not None:
        return proxy
    kind = _VIEWS.get(type(obj))
    if kind is not None:
        return dict_view, (kind, list(obj))
    if type(obj) is memoryview:
        return memory, (obj.tobytes(), obj.format, obj.shape, obj.readonly)
    # a method's owner, read from the method: never through an instance's __getattr__, which is the project's
    # code (astroid's Const raises a KeyError there)
    owner = obj.__self__ if type(obj) in _BOUND else None
    if type(obj) is types.MethodType and not isinstance(owner, types.ModuleType) \
            and (not isinstance(owner, type) or _named(owner)) \
            or type(obj) in (types.BuiltinMethodType, types.MethodWrapperType) \
            and (is_value_type(type(owner)) and (owner is not None or type(obj) is types.MethodWrapperType)
                 or isinstance(owner, type) and _named(owner)):  # a Cython module's function: no __self__
        return bound_method, (owner, obj.__name__)  # parser.getint, (10).bit_length, int.mro, Cls.create
    if type(obj) is types.CodeType:  # a summary: names and counts, never the code or its constants
        return code_summary, ({name: getattr(obj, name) for name in _CODE_FIELDS},)
    if type(obj) in _DESCRIPTORS and (_named(obj.__objclass__) or obj.__objclass__ in _BUILTIN_TYPES.values()):
        return class_descriptor, (obj.__objclass__, obj.__name__)  # OSError.errno, the __doc__ of a builtin's type
    if type(obj).__module__ == "typing" and type(obj).__name__ == "TypeVar" and (
            not _named_by_reduce(obj) or _of_tests(obj.__module__) or obj.__module__ == "__main__"):
        return type_variable, (obj.__name__, obj.__constraints__, obj.__bound__, obj.__covariant__,
                               obj.__contravariant__)
    if isinstance(obj, type) and obj in _BUILTIN_TYPES.values() and not _named(obj):
        return builtin_type, (obj.__qualname__,)
    if type(obj) in _LOCKS:
        return new_lock, (_LOCKS[type(obj)],)
    ssl = sys.modules.get("ssl")  # none made where the module was never imported
    if ssl is not None and type(obj) is ssl.SSLContext:
        return ssl_context, (int(obj.protocol), {name: int(getattr(obj, name)) for name in _SSL_SETTINGS})
    if as_values and type(obj) is _CONDITION and type(getattr(obj, "_lock", None)) in _LOCKS:
        return new_condition, (obj._lock,)  # a queue's: its waiters are threads, which stay where they are
    fields = getattr(type(obj), "_fields", None)
    if isinstance(obj, tuple) and isinstance(fields, tuple) and not _named(type(obj)):
        return named_tuple, (type(obj).__name__, fields, tuple(obj))
    base = _value_base(type(obj)) if as_values or type(obj).__module__ == __name__ else None  # marked here: marked there
    if base is not None:
        marks = _marks(type(obj), base)
        if marks:
            made, arguments = _as_base(obj, base)
            return marked, (type(obj).__name__, marks, made(*arguments))
        return _as_base(obj, base)
    if not as_values and isinstance(obj, BaseException) and type(obj) not in EXCEPTIONS \
            and type(obj).__reduce__ is BaseException.__reduce__ and type(obj).__reduce_ex__ is object.__reduce_ex__:
        # the judge's exception: its arguments as it holds them, not as its __init__ takes them (a project's
        # CompilationError(filename=...) holds none), as the judge reads the candidate's
        return copyreg.__newobj__, (type(obj), *obj.args), obj.__dict__ or None
    if not as_values and not isinstance(obj, type) and _guarded_slots(type(obj)):
        reduced = obj.__reduce_ex__(4)  # the judge's object: its slots set as data in the candidate's process
        if isinstance(reduced, tuple) and reduced[0] is copyreg.__newobj__:
            return (*reduced, *(None,) * (5 - len(reduced)), set_state)[:6]
    return NotImplemented


def _multidict_proxy(obj):
    """multidict's read-only proxies refuse pickle: one crosses as its class made (in C) over a copy of what it
    shows, the same items in order (litestar's ``ImmutableMultiDict``)."""
    import sys

    found = sys.modules.get("multidict")
    for proxy, plain in ((getattr(found, "CIMultiDictProxy", None), getattr(found, "CIMultiDict", None)),
                         (getattr(found, "MultiDictProxy", None), getattr(found, "MultiDict", None))):
        if proxy is not None and isinstance(obj, proxy) and _named(type(obj)):
            return type(obj), (plain(obj.items()),)
    return None


def _named(cls):
    """Whether pickle can name this class: its module holds it under its qualified name."""
    import sys

    found = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


def _by_name(factory):
    """A defaultdict's factory that pickle sends by its name (``list``, a named class or function), or None."""
    if factory is None or isinstance(factory, _Default):
        return factory is None
    module, qualname = getattr(factory, "__module__", None), getattr(factory, "__qualname__", "<")
    return isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname and _named(factory)


class _Default:
    """The factory of a defaultdict whose own factory was code of the candidate's (a lambda): a copy of what that
    factory made once, in the candidate's process. The judge's copy of the dict then fills a missing key as the
    honest factory would (a fresh empty list, a nested defaultdict), and no code of the candidate's runs here."""

    __slots__ = ("sample",)

    def __init__(self, sample):
        self.sample = sample

    def __call__(self):
        import copy

        return copy.deepcopy(self.sample)

    def __repr__(self):
        return f"<a copy of {self.sample!r}>"


def mapping_proxy(items):
    return types.MappingProxyType(items)


def default_dict(sample, items):
    made = collections.defaultdict(_Default(sample))
    made.update(items)
    return made


def _value_base(cls):
    """The value type a class the candidate made derives from (``class Slug(str)`` in its function), or None:
    its instances cross as that type's values, its methods never."""
    if cls in VALUE_TYPES or cls in EXCEPTIONS or _named(cls):
        return None
    return next((base for base in cls.__mro__ if base in VALUE_TYPES and base is not object), None)


def _as_base(obj, base):
    """The value of ``obj`` as an instance of ``base`` exactly, read with the base's own methods."""
    if base in (str, int, float, bytes):
        return base, ({str: str.__str__, int: int.__index__, float: float.__float__, bytes: bytes.__bytes__}[base](obj),)
    if base is complex:
        return complex, (complex.real.__get__(obj), complex.imag.__get__(obj))
    if base in (tuple, list, set, frozenset, bytearray, collections.deque):
        return base, (list(base.__iter__(obj)),)
    if issubclass(base, dict):
        pairs = dict(dict.items(obj))
        if base is collections.defaultdict:
            return converted(collections.defaultdict(obj.default_factory, pairs), as_values=True)
        return base, (pairs,)
    reduced = base.__reduce__(obj)  # the standard values' own (date, Decimal, Fraction, UUID, a path): their data
    return (base, *reduced[1:]) if reduced[0] is type(obj) else reduced


_MARKABLE = (str, int, float, complex, bytes, bytearray, tuple, list, set, frozenset, dict)
_MARKS = (bool, int, float, str, type(None))


def _marks(cls, base):
    """The plain scalars that a class made at run time of a builtin value type holds under names of its own
    (flutes' ``no_map_instance``: a list whose class says ``"--no-map--": True``), as sorted pairs: marks the
    project's code reads with ``hasattr``. Never a dunder, a name the base has, or anything but a scalar."""
    if base not in _MARKABLE:
        return ()
    marks = {}
    for klass in reversed(cls.__mro__[:cls.__mro__.index(base)]):
        marks.update((name, value) for name, value in vars(klass).items() if _mark(base, name, value))
    return tuple(sorted(marks.items()))


def _mark(base, name, value):
    return type(name) is str and not (name.startswith("__") and name.endswith("__")) and not hasattr(base, name) \
        and type(value) in _MARKS


def marked(typename, marks, value):
    """A value of a class made at run time of a builtin value type, with the marks its class held, rebuilt as a
    class made here of that type with those marks: names and scalars cross, its behaviour is the base's."""
    base = type(value)
    if base not in _MARKABLE or type(typename) is not str or type(marks) is not tuple or not all(
            type(pair) is tuple and len(pair) == 2 and _mark(base, *pair) for pair in marks):
        raise WireError("marks of a value's class that are not names and scalars")
    return _marked_class(typename, base, marks)(value)


@functools.lru_cache(maxsize=256)
def _marked_class(typename, base, marks):
    # with a __dict__, as a class made by type() has: setattr on its values works as on the project's (flutes'
    # no_map_instance sets its mark so where it can, and a mutant returning None then fails as in-process)
    return type(typename, (base,), {**dict(marks), "__module__": __name__})


def builtin_type(name):
    """A type of the interpreter's that pickle cannot name (``type(iter(()))``), by its name."""
    return _BUILTIN_TYPES[name]


def _builtin_types():
    samples = [iter(()), iter([]), iter({}), iter(set()), iter(""), iter(b""), iter(bytearray()), iter(range(0)),
               reversed([]), reversed(range(0)), {}.keys(), {}.values(), {}.items(), iter({}.values()),
               iter({}.items()), (x for x in ()), memoryview(b""), type.__dict__, len, [].append, object.__init__,
               object.__str__, str.join, int.__add__, zip(), map(len, ()), filter(None, ()), enumerate(())]
    found = {type(sample).__qualname__: type(sample) for sample in samples}
    found.update({cls.__qualname__: cls for cls in vars(types).values()
                  if isinstance(cls, type) and cls.__module__ == "builtins"})  # function, code, frame, ...
    return found


_BUILTIN_TYPES = _builtin_types()


def named_logger(name, level, propagate, disabled, handlers, filters):
    """A logger the candidate's process answered: the judge's own of that name (``configure_logger() is
    getLogger("cookiecutter")``, as in one process), set as the answer's was. Only its settings are taken, each
    data or a handler or filter that crossed as any object does; what the judge's logging then does with them
    writes to the judge's own streams or to a detached one, and decides nothing. Its handlers are logging's own
    three, which write there or nowhere: the judge's logging (the project's code logs) never runs a handler that
    connects, mails, renames files or hands records to another object."""
    import logging

    if not (name is None or type(name) is str) or type(level) is not int or type(propagate) is not bool \
            or type(disabled) is not bool or type(handlers) is not list or type(filters) is not list \
            or not all(_inert_handler(handler) for handler in handlers) \
            or not all(isinstance(kept, logging.Filter) for kept in filters):
        raise WireError("a logger may cross only with a level, its switches, filters and handlers that are "
                        "logging's StreamHandler (to a standard stream), FileHandler or NullHandler")
    logger = logging.getLogger(name)
    logger.setLevel(level)
    logger.propagate, logger.disabled = propagate, disabled
    logger.handlers[:], logger.filters[:] = handlers, filters
    return logger


def _inert_handler(handler):
    """A handler of logging's own three that writes only to the judge's standard streams or a detached stream."""
    import logging

    if type(handler) is logging.NullHandler:
        return True
    stream = getattr(handler, "stream", None)
    return type(handler) in (logging.StreamHandler, logging.FileHandler) and (
        stream is sys.stdout or stream is sys.stderr or type(stream) is io.StringIO)


def detached_stream(*_, **__):
    """Where a file handler's open file was: an empty text stream of the judge's, so that its copy writes to no
    file (the judge opens none for a candidate) and a test may still log through it."""
    return io.StringIO()


def detached_opener():
    """What a file handler's copy opens its file with, once closed: an empty stream again, never a file."""
    return detached_stream


class _Marker:
    def __init__(self, made_by):
        self.made_by = made_by

    def __reduce__(self):
        return self.made_by, ()


_DETACHED, _REOPENED = _Marker(detached_stream), _Marker(detached_opener)


def new_lock(kind):
    """A lock where one was (a logging handler's): a new one, not held; what a lock holds is no value."""
    import threading

    return threading.RLock() if kind == "rlock" else threading.Lock()


def _stands_for(obj):
    """The value a transparent proxy stands for (wrapt's ``ObjectProxy``, which says its class is the wrapped
    object's): a value of a value type that it holds as ``__wrapped__``; else None."""
    try:
        shown = obj.__class__
        if shown is type(obj) or not is_value_type(shown):
            return None
        wrapped = obj.__wrapped__
    except Exception:
        return None
    return wrapped if type(wrapped) is shown else None


def stood_for(value):
    """What a transparent proxy of the candidate's stood for (``_stands_for``): that value, read as data."""
    return value


_SSL_SETTINGS = ("options", "verify_mode", "verify_flags", "minimum_version", "maximum_version", "check_hostname")


def ssl_context(protocol, settings):
    """An SSL context where one was (tornado's ``ssl_options_to_context``): a new one of the ssl module's, given
    the settings the other shows (its protocol, options, verification, versions). What was loaded into it
    (certificates, keys, CA files) stays behind: those live in OpenSSL's memory, not in what the context shows."""
    import ssl
    import warnings

    if type(protocol) is not int or type(settings) is not dict:
        raise WireError("an SSL context's protocol and settings must be numbers")
    with warnings.catch_warnings():  # a deprecated protocol warned where the context was made, not again here
        warnings.simplefilter("ignore", DeprecationWarning)
        made = ssl.SSLContext(protocol)
    made.check_hostname = False  # before verify_mode: a context that checks host names cannot verify nothing
    for name in _SSL_SETTINGS:
        value = settings.get(name)
        if type(value) is int and getattr(made, name) != value:
            try:
                setattr(made, name, bool(value) if name == "check_hostname" else value)
            except (ValueError, ssl.SSLError) as exc:
                raise WireError(f"an SSL context's {name} cannot be {value}: {exc}") from None
    return made


def ssl_socket(context, sock, server_side, server_hostname, do_handshake_on_connect, suppress_ragged_eofs):
    """An SSL socket the candidate's process made over a socket the test lent it, before any handshake (tornado's
    ``ssl_wrap_socket``): the judge wraps its own socket, as the call would have beside the test, with a context
    made of data (``ssl_context``) and the settings the other shows. Only an open socket of the judge's own that is
    connected to nothing: no byte goes anywhere."""
    import ssl

    if type(context) is not ssl.SSLContext or type(sock) is not socket.socket or sock.fileno() < 0 \
            or type(server_side) is not bool or not (server_hostname is None or type(server_hostname) is str) \
            or type(do_handshake_on_connect) is not bool or type(suppress_ragged_eofs) is not bool:
        raise WireError("an SSL socket crosses only as a context, a socket of the judge's and its settings")
    try:
        sock.getpeername()
    except OSError:
        return context.wrap_socket(sock, server_side=server_side, server_hostname=server_hostname,
                                   do_handshake_on_connect=do_handshake_on_connect,
                                   suppress_ragged_eofs=suppress_ragged_eofs)
    raise WireError("an SSL socket over a connected socket stays in the candidate's process")


_MOCK_KINDS = ("AsyncMock", "MagicMock", "NonCallableMagicMock", "Mock", "NonCallableMock")
_NOT_SET = ()  # a mock's return value left as it was made (``_mock_node``)


def _mock_kind(obj):
    """The name of ``unittest.mock``'s class a mock is of (each mock's class is a subclass made for it), or None."""
    found = sys.modules.get("unittest.mock")
    if found is None or not isinstance(obj, found.NonCallableMock):
        return None
    return next((base.__name__ for base in type(obj).__mro__
                 if base.__module__ == "unittest.mock" and base.__name__ in _MOCK_KINDS), None)


def _mock_described(obj):
    """How a mock the candidate's process answers crosses (scrapy's ``mock_google_cloud_storage`` answers three
    ``create_autospec`` mocks, each the return value of the other's method): ``mocked``'s arguments, its kind, spec
    and what was set on it as data; None for what is not a mock, or a mock set to do what data cannot say (a side
    effect, an object it wraps, a special method: ``__eq__`` told to say yes), which stays a handle."""
    kind = _mock_kind(obj)
    if kind is None:
        return None
    spec = obj._spec_class
    if spec is not None and (not isinstance(spec, type) or not _named(spec)):
        return None
    node = _mock_node(obj, set())
    if node is False:
        return None
    autospec = "_mock_check_sig" in vars(type(obj))  # create_autospec's, as its signature check marks it
    return kind, spec, autospec, bool(obj._spec_set), obj._mock_name if isinstance(obj._mock_name, str) else None, \
        node


def _mock_node(obj, seen):
    """What was set on a mock, as data: ("node", return value (``_NOT_SET`` or a 1-tuple), children by name (each a
    node, or a mock of its own that crosses as itself), attributes, calls); None where nothing was (what
    ``create_autospec`` or the class makes anyway); False where a side effect, a wrapped object or a special
    method was set, anywhere in it."""
    if id(obj) in seen or obj._mock_side_effect is not None or obj._mock_wraps is not None:
        return False
    seen.add(id(obj))
    children, attributes = {}, {}
    for name, child in obj._mock_children.items():
        if name.startswith("__"):
            return False
        if _mock_kind(child) is None:  # a spec's attribute not made yet, or one deleted
            continue
        if child._mock_new_parent is obj or child._mock_parent is obj:
            made = _mock_node(child, seen)
            if made is False:
                return False
            if made is not None:
                children[name] = made
        else:  # a mock made elsewhere and set here: itself, the same object wherever it stands
            children[name] = child
    for name, value in vars(obj).items():
        if name.startswith("__"):
            return False
        if not name.startswith(("_mock_", "_spec_")) and name != "method_calls" and name not in obj._mock_children:
            attributes[name] = value
    returned = obj._mock_return_value
    if _mock_kind(returned) is not None and (returned._mock_new_parent is obj or returned._mock_parent is obj):
        made = _mock_node(returned, seen)  # the one the mock made itself, changed or not
        if made is False:
            return False
        returned = _NOT_SET if made is None and _mock_kind(returned) in ("MagicMock", "Mock", "AsyncMock") \
            and returned._spec_class is None else (returned,)
    else:
        returned = _NOT_SET if returned is _mock_default() else (returned,)
    calls = [(tuple(made.args), dict(made.kwargs)) for made in obj._mock_call_args_list]
    if not (children or attributes or calls or returned):
        return None
    return "node", returned, children, attributes, calls


def _mock_default():
    return sys.modules["unittest.mock"].DEFAULT


def mocked(kind, spec, autospec, spec_set, name, node):
    """A mock the candidate's process answered: a new one of the judge's ``unittest.mock``, of that kind and spec
    (``create_autospec`` where it was made so), with the return values, attributes and children set on it as data
    and its calls made again (recorded as they were). No side effect, wrapped object or special method crosses:
    what the judge's mock does is ``unittest.mock``'s code on data, and it equals only itself."""
    from unittest import mock

    if kind not in _MOCK_KINDS or not (spec is None or isinstance(spec, type)) or type(autospec) is not bool \
            or type(spec_set) is not bool or not (name is None or type(name) is str):
        raise WireError("a mock crosses only as its kind, a class for its spec and data")
    if autospec and spec is not None:
        made = mock.create_autospec(spec, spec_set=spec_set, instance=kind.startswith("NonCallable"))
    elif spec is not None:
        made = getattr(mock, kind)(**{"spec_set" if spec_set else "spec": spec}, name=name)
    else:
        made = getattr(mock, kind)(name=name)
    if node is not None:
        _mock_applied(made, node)
    if _equals_anything(made):
        raise WireError("a mock that equals anything may not cross to the judge")
    return made


def _mock_applied(made, node):
    """Set on the judge's mock what a node says was set on the candidate's (``_mock_node``)."""
    from unittest import mock

    if not (type(node) is tuple and len(node) == 5 and node[0] == "node" and type(node[1]) is tuple
            and len(node[1]) < 2 and type(node[2]) is dict and type(node[3]) is dict and type(node[4]) is list):
        raise WireError("a mock's settings cross only as the judge's nodes")
    _, returned, children, attributes, calls = node
    for name, child in children.items():
        _mock_settable(name)
        if type(child) is tuple:
            _mock_applied(getattr(made, name), child)
        elif isinstance(child, mock.NonCallableMock):
            setattr(made, name, child)
        else:
            raise WireError(f"a mock's child {name} must be a mock")
    if returned:
        if type(returned[0]) is tuple and returned[0][:1] == ("node",):
            _mock_applied(made.return_value, returned[0])
        else:
            made.return_value = returned[0]
    for name, value in attributes.items():
        _mock_settable(name)
        setattr(made, name, value)
    for arguments in calls:
        if not (type(arguments) is tuple and len(arguments) == 2 and type(arguments[0]) is tuple
                and type(arguments[1]) is dict and all(type(key) is str for key in arguments[1])):
            raise WireError("a mock's calls cross as their arguments")
        try:
            made(*arguments[0], **arguments[1])
        except TypeError as exc:  # its spec's signature refuses it
            raise WireError(f"a mock's call its spec refuses: {exc}") from None


def _mock_settable(name):
    from unittest import mock

    if type(name) is not str or not name.isidentifier() or name.startswith(("__", "_mock_", "_spec_")) \
            or name == "method_calls" or hasattr(mock.NonCallableMock, name):
        raise WireError(f"{str(name)[:100]!r} may not be set on a mock by an answer")


def by_code(function):
    """How the candidate's process sends a function made in a function of the project's or a library's (scrapy's
    ``Crawler`` keeps a lambda of its ``__init__``): where its code stands, and what it holds (its closure's
    cells, defaults and attributes), which are data. The judge makes it again of its own copy of that code
    (``nested_function``); nothing of the candidate's code crosses."""
    code = function.__code__
    shown = {name: getattr(function, name) for name in _SHOWN if isinstance(getattr(function, name, None), str)}
    return nested_function, (function.__globals__.get("__name__"), getattr(code, "co_qualname", function.__qualname__),
                             code.co_firstlineno, tuple(function.__closure__ or ()), function.__defaults__,
                             function.__kwdefaults__, shown, dict(vars(function)))


_SHOWN = ("__name__", "__qualname__", "__module__", "__doc__")  # what functools.wraps sets, as the function shows it
_OPTIMIZED = 0x0001  # CO_OPTIMIZED: a function's code, not a class body's or a module's


def nested_function(module, qualname, line, cells, defaults, keyword_defaults, shown, attributes, roots=()):
    """The judge's own function for what ``by_code`` sent: the code standing at ``qualname`` and ``line`` within the
    judge's copy of the project's or library's module (never the focal module's target, which is a stub of the
    runtime's here, nor a test's), with those cells, defaults and attributes. What runs when a test calls it is
    that module's code on data, as a method of a project's object rebuilt from its state is."""
    owner = trusted_module(module, roots)
    outer_name, marker, _ = qualname.partition(".<locals>.") if isinstance(qualname, str) else ("", "", "")
    if owner is None or not marker or type(line) is not int or type(cells) is not tuple \
            or not all(type(cell) is types.CellType for cell in cells):
        raise WireError(f"a function made in {str(module)[:100]}.{str(qualname)[:100]} may not cross to the judge")
    outer = owner
    for part in outer_name.split("."):
        outer = vars(outer).get(part) if isinstance(outer, (type, types.ModuleType)) else None
        outer = getattr(outer, "__func__", None) or getattr(outer, "fget", None) or outer  # static, class, property
    while isinstance(outer, types.FunctionType) and outer.__globals__ is not vars(owner):
        outer = getattr(outer, "__wrapped__", None)  # a decorated method: the function its module defined
    source = os.path.realpath(getattr(owner, "__file__", None) or "/")
    code = _nested_code(outer.__code__, qualname, line) \
        if isinstance(outer, types.FunctionType) and os.path.realpath(outer.__code__.co_filename) == source else None
    if code is None or len(code.co_freevars) != len(cells):
        raise WireError(f"{module}.{qualname[:200]} (line {line}) is no function of the judge's {module}")
    if defaults is not None and type(defaults) is not tuple or keyword_defaults is not None and (
            type(keyword_defaults) is not dict or not all(type(key) is str for key in keyword_defaults)) \
            or type(shown) is not dict or not set(shown) <= set(_SHOWN) or type(attributes) is not dict \
            or not all(type(value) is str for value in shown.values()) or not all(type(key) is str for key in attributes):
        raise WireError(f"{module}.{qualname[:200]}'s defaults and attributes must be data")
    made = types.FunctionType(code, outer.__globals__, code.co_name, defaults, cells)
    made.__kwdefaults__ = keyword_defaults
    for name, value in shown.items():
        setattr(made, name, value)
    vars(made).update(attributes)
    return made


def _nested_code(code, qualname, line):
    """The code of a function defined, at any depth, in the function whose code this is, named and placed so."""
    name = qualname.rpartition(".")[2]
    for const in code.co_consts:
        if type(const) is not types.CodeType:
            continue
        if const.co_name == name and const.co_firstlineno == line and const.co_flags & _OPTIMIZED \
                and getattr(const, "co_qualname", qualname) == qualname:
            return const
        found = _nested_code(const, qualname, line)
        if found is not None:
            return found
    return None


def new_cell():
    return types.CellType()


def fill_cell(cell, contents):
    """A cell ``new_cell`` made for this answer gets what it holds, once (checked by ``JudgeUnpickler``)."""
    cell.cell_contents = contents[0]


def bound_method(owner, name):
    """A method of an object that crossed by value (``parser.getint``), as the judge's own object's method: the
    class's code, never the candidate's."""
    if not isinstance(name, str):
        raise WireError(f"a method {name!r} may not be bound by the judge")
    if not bindable(owner):
        raise WireError(f"a method of a {type(owner).__qualname__} may not be bound by the judge: only a class's, "
                        "a value's or a kept library object's")
    found = getattr(owner, name)
    if getattr(found, "__self__", None) is not owner:
        raise WireError(f"{name!r} is not a method of the object")
    return found


def class_descriptor(owner, name):
    """A class's own descriptor, from the class's namespace (never ``getattr``, which gives what the descriptor
    makes: a builtin type's ``__doc__`` string, ``chain.from_iterable`` bound): ``OSError.errno``, the ``__doc__``
    of ``builtin_function_or_method`` and ``dict.fromkeys`` that astroid's model of the builtins holds."""
    found = vars(owner).get(name) if isinstance(owner, type) and isinstance(name, str) else None
    if type(found) not in _DESCRIPTORS or found.__objclass__ is not owner:
        raise WireError(f"{name!r} is not a descriptor of the class")
    return found


_CODE_FIELDS = ("co_name", "co_qualname", "co_filename", "co_firstlineno", "co_argcount", "co_posonlyargcount",
                "co_kwonlyargcount", "co_nlocals", "co_flags", "co_varnames", "co_freevars", "co_cellvars", "co_names")


def code_summary(fields):
    """What a code object of the candidate's shows of itself (``f.__code__.co_varnames``), as a namespace of
    values: its names and counts only."""
    return types.SimpleNamespace(**{name: value for name, value in fields.items() if name in _CODE_FIELDS})


def type_variable(name, constraints, bound, covariant, contravariant):
    """A TypeVar made where pickle cannot name it (in a test, in a function): one of the same name and bounds."""
    import typing

    return typing.TypeVar(name, *constraints, bound=bound, covariant=covariant, contravariant=contravariant)


def _named_by_reduce(obj):
    import sys

    try:
        name = obj.__reduce_ex__(4)
    except Exception:
        return False
    return isinstance(name, str) and getattr(sys.modules.get(getattr(obj, "__module__", "")), name, None) is obj


def named_tuple(typename, fields, values):
    """A tuple of a namedtuple class made at run time (so pickle cannot name it), rebuilt as a namedtuple class
    of the same names made here: only names cross, and its ``__eq__`` is tuple's."""
    return _named_class(typename, tuple(fields))(*values)


@functools.lru_cache(maxsize=256)
def _named_class(typename, fields):
    return collections.namedtuple(typename, fields)


def dict_view(kind, items):
    """A view of a dict made for it: ``keys`` and ``values`` of the items given, or ``items`` of the pairs."""
    if kind == "keys":
        return dict.fromkeys(items).keys()
    if kind == "values":
        return dict(enumerate(items)).values()
    return dict(items).items()


def weak_reference(referent):
    """A weak reference where the candidate's process held one to an object the judge holds (pydicom's
    ``Sequence.parent``, to the test's dataset it was given): one to the judge's own object, so
    ``seq.parent() is parent`` holds as in one process; a dead one where it was dead. No callback crosses."""
    return weakref.ref(referent if referent is not None else _Gone())  # a _Gone is freed at once: a dead one


class _Gone:
    """What a dead weak reference is made to: nothing else holds it."""


def memory(data, form, shape, readonly):
    view = memoryview(data if readonly else bytearray(data))
    return view.cast("B").cast(form, shape) if shape is not None and (form != "B" or len(shape) != 1) else view


def new_condition(lock):
    """A condition where one was (a ``queue.Queue``'s three): a new one over the lock made for it, no one
    waiting. Only over a lock: anything else would be asked to acquire and release."""
    if type(lock) not in _LOCKS:
        raise WireError(f"a condition's lock must be a lock, not a {type(lock).__name__}")
    import threading

    return threading.Condition(lock)


def _locks():
    import threading

    return {type(threading.Lock()): "lock", type(threading.RLock()): "rlock"}


_LOCKS = _locks()
_CONDITION = __import__("threading").Condition
_DESCRIPTORS = (type(OSError.errno), type(type.__dict__["__name__"]),  # member, getset and class method descriptors
                type(dict.__dict__["fromkeys"]))
_VIEWS = {type({}.keys()): "keys", type({}.values()): "values", type({}.items()): "items"}


def socket_from(fd):
    return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)

