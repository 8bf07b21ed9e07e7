"""What crosses between the judge (pytest, the tests, their expected values) and the candidate's process, and
how the judge checks it.

Both ends run under the project's interpreter with the standard library only. Messages are pickles framed by
their length on a Unix socket. The judge trusts nothing the candidate's process sends: it reads it with
``JudgeUnpickler``, the pure-Python unpickler with three doors narrowed:

- ``find_class`` names only builtins and standard value types (``VALUE_TYPES``), the builtin exceptions, and
  classes defined in the project's own modules (rebuilt with the project's class, so their ``__eq__`` is the
  project's code). A class the candidate made, ``mock.ANY``, a proxy: refused, naming the type.
- REDUCE (a call with arguments) calls only value types, ``VALUE_CALLS``, exceptions and project enums; any
  other project class is rebuilt without its ``__init__`` (``__new__`` and its state, as pickle's own
  protocol 2 does), so no project code runs on the candidate's arguments in the judge but ``__setstate__``.
- persistent ids are only the judge's own markers: an argument of the call (identity kept), a handle to an
  object that stays in the candidate's process, an object of the judge's that was lent to the candidate.

What the judge sends is its own (the tests' arguments): the candidate's process reads it with pickle as it is.
"""

import builtins
import collections
import datetime
import decimal
import enum
import fractions
import io
import os
import pathlib
import pickle
import socket
import struct
import types
import uuid

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
VALUE_CALLS = {("re", "_compile")}
# numpy's arrays and scalars, the one third-party value type RepoExec's expected outputs hold
NUMPY = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
         ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
         ("numpy._core.multiarray", "scalar")}
_NAMES = {(cls.__module__, cls.__qualname__): cls for cls in VALUE_TYPES | EXCEPTIONS}
_NAMES.update({("pathlib", "PosixPath"): pathlib.PosixPath, ("builtins", "NoneType"): type(None)})


class WireError(Exception):
    """What came from the candidate's process is not something the judge accepts."""


def send(sock, payload):
    if len(payload) < 1 << 16:  # one write: a small call's round trip is then two system calls
        sock.sendall(_LENGTH.pack(len(payload)) + payload)
    else:  # not copied to prefix it
        sock.sendall(_LENGTH.pack(len(payload)))
        sock.sendall(payload)


def receive(sock):
    """The next message's bytes, or None at the end of the stream."""
    header = _exactly(sock, _LENGTH.size)
    if header is None:
        return None
    (length,) = _LENGTH.unpack(header)
    if length > MESSAGE_LIMIT:
        raise WireError(f"a message of {length} bytes (more than {MESSAGE_LIMIT >> 20} MiB)")
    payload = _exactly(sock, length)
    if payload is None:
        raise WireError("the stream ended inside a message")
    return payload


def _exactly(sock, size):
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


IMMUTABLE = (bool, int, float, complex, str, bytes, tuple, frozenset, type(None))


def is_value_type(cls):
    return cls in VALUE_TYPES or cls in EXCEPTIONS


def module_of_project(name, roots):
    """Whether the imported module of this name was loaded from a file under one of the project's roots."""
    import sys

    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) if module is not None else None
    if not path:
        return False
    real = os.path.realpath(path)
    return any(real.startswith(root.rstrip("/") + "/") for root in roots)


class JudgeUnpickler(pickle._Unpickler):
    """Reads what the candidate's process sent. ``persistent`` resolves the judge's markers."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, data, project_roots, persistent):
        super().__init__(io.BytesIO(data))
        self.project_roots = project_roots
        self.persistent = persistent

    def persistent_load(self, pid):
        return self.persistent(pid)

    def find_class(self, module, name):
        if (module, name) in _NAMES:
            return _NAMES[(module, name)]
        if (module, name) in VALUE_CALLS or (module, name) in NUMPY:
            return super().find_class(module, name)
        if _of_tests(module):
            raise WireError(f"{module}.{name} may not cross to the judge: a class of the tests' own (an always-equal "
                            "helper of theirs would pass anything)")
        if module_of_project(module, self.project_roots) or self._project_module(module):
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:
                return found
        raise WireError(f"{module}.{name} may not cross to the judge: only builtins, standard value types and the "
                        "project's own classes do")

    def _project_module(self, module):
        """A project module the judge has not imported yet: imported now, from the project's own files."""
        import importlib.util

        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            return False
        origin = os.path.realpath(spec.origin) if spec and spec.origin else ""
        if not any(origin.startswith(root.rstrip("/") + "/") for root in self.project_roots):
            return False
        __import__(module)
        return True

    def load_reduce(self):
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        if isinstance(func, type) and issubclass(func, BaseException) and func not in EXCEPTIONS:
            # a project's exception: its arguments as it holds them, not as its __init__ takes them
            stack[-1] = func.__new__(func, *args)
            return
        if isinstance(func, type) and not _may_construct(func):
            # a project class: made as pickle's protocol 2 makes it, without running its __init__ on what came
            stack[-1] = func.__new__(func)
            return
        if not isinstance(func, type) and not any(func is _function(*name) for name in VALUE_CALLS | NUMPY):
            raise WireError(f"a call of a {type(func).__name__} may not be made by the judge")
        stack[-1] = func(*args)

    def refuse_instantiation(self):
        raise WireError("protocol 0 and 1 instantiation (INST, OBJ) is not read by the judge")

    def load_build(self):
        """State is set on instances only: on a class it would be setattr on the project's class (an __eq__
        of the candidate's put in place)."""
        inst = self.stack[-2]  # under the state
        if isinstance(inst, (type, types.ModuleType, *FUNCTION_TYPES)) or getattr(type(inst), "lent", False):
            raise WireError(f"a state for {type(inst).__name__} {getattr(inst, '__name__', '')} may not be set")
        super().load_build()

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.INST[0]] = refuse_instantiation
    dispatch[pickle.OBJ[0]] = refuse_instantiation
    dispatch[pickle.BUILD[0]] = load_build


def _function(module, name):
    import sys

    owner = sys.modules.get(module)
    return getattr(owner, name, None) if owner is not None else None


def _of_tests(module):
    """A test module or conftest, by its name as pytest imports it: never a source of values to compare with."""
    return any(part.startswith("test_") or part.endswith("_test") or part in ("conftest", "tests", "test")
               for part in module.split("."))


def _may_construct(cls):
    return is_value_type(cls) or issubclass(cls, enum.Enum) or "numpy" in cls.__module__


def loads_checked(data, project_roots, persistent):
    try:
        return JudgeUnpickler(data, project_roots, persistent).load()
    except WireError:
        raise
    except RecursionError:
        raise WireError("a value nested too deep") from None
    except Exception as exc:
        raise WireError(f"an answer the judge cannot read: {type(exc).__name__}: {exc}") from None


def dumps(value, persistent_id=None):
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=4)
    if persistent_id is not None:
        pickler.persistent_id = persistent_id
    pickler.dump(value)
    return buffer.getvalue()


def socket_from(fd):
    return socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)

FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType,
                  types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, types.LambdaType)
