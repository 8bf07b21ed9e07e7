"""The judge apart from the candidate (issue 33): what crosses and how the judge checks it, with a real candidate's
process (``python -m repoexec_serve``) on one end of a socket and the judge's channel here on the other; honest
idioms that the in-process defences accused pass apart; and a candidate apart reaches nothing of its tests."""

from __future__ import annotations

import collections
import io
import json
import os
import pickle
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import SHIPPED, write_replay
from honest_idioms import IDIOMS, honest, reshaped
from one_problem import KEPT_STATE, KEPT_STATE_TESTS, one_sample, write_one_problem
from pytest_repoexec.problem import load_problem

RUNTIME = Path(__file__).resolve().parents[1] / "pytest_repoexec" / "runtime"
sys.path.insert(0, str(RUNTIME))  # the judge's modules, as the inner plugin imports them in a project's virtualenv

import repoexec_judge  # noqa: E402
import repoexec_wire  # noqa: E402
from repoexec_wire import WireError  # noqa: E402

CANDIDATE = '''
import threading
import typing
from shop.money import Price

def doubled(items):
    items.extend(items)
    return items

def echo_field(field):
    import dataclasses
    return dataclasses.replace(field, name=field.name + "!")

def tuple_fields(value):
    return list(value._fields), value.x

def renamed(value, name, attribute="name"):
    setattr(value, attribute, name)
    return value

def more_attributes(attributes):
    from shop.money import Attributes
    return Attributes({**attributes._state, "more": attributes.first + 1})

def parsed(text):
    from shop.money import Parsed
    found = Parsed(text)
    found.words  # computed once, kept in the instance's dict under the property's name
    return found

def relayed(value):
    from shop.money import Relay
    return Relay(value)

def library_singletons(given=None):
    import dataclasses, pydoc
    return dataclasses.MISSING, pydoc.help, given is dataclasses.MISSING

_HELD = []


def weakly(value):
    import weakref
    from shop.money import Till
    gone = weakref.ref(Till())  # its referent freed at once
    _HELD.append(Till())
    return weakref.ref(value), gone, value, weakref.ref(_HELD[-1])

def descriptors():
    return type(len).__dict__["__doc__"], dict.__dict__["fromkeys"], OSError.__dict__["errno"]

def kind_of(value):
    import inspect
    return type(value).__name__, inspect.ismethoddescriptor(value)

async def later(value):
    return value * 2

async def fill(box, price, value):
    import asyncio

    await asyncio.sleep(0)
    box.append(value)
    price.tag = "awaited"

async def relay(fetch, value):
    return await fetch(value) + 1

async def waited(future, wait):
    return await future if wait else "kept"

def drive(fetch, value):
    import asyncio

    async def inner():
        return await fetch(value)
    return asyncio.run(inner())

_KEPT = []

def keep(value):
    _KEPT.append(value)

def kept():
    return _KEPT[-1]

def sentinel():
    return object()

def wrapped(function):
    import functools

    @functools.wraps(function)
    def wrapper(*args):
        return function(*args)
    return wrapper

def tagged(price):
    price.tag = "seen"
    return price.amount

def count_up(n):
    for i in range(n):
        yield i

def apply(function, values):
    return [function(v) for v in values]

MADE = []

def made_functions():
    import functools
    def inner(a, b=2, *rest, key=None, **more):
        """Inner's doc."""
        total = a + b
        return total
    @functools.wraps(inner)
    def wrapper(*args, **kwargs):
        return inner(*args, **kwargs) * 10
    @functools.wraps(inner)
    def lenient(*args, **kwargs):  # scrapy's defers: what it takes is not what it wraps
        return "called"
    def counted(x):
        counted.calls += 1
        return x
    counted.calls = 0
    def numbers():
        yield 1
    return inner, wrapper, lenient, counted, numbers

def listen_on(sock):
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname(), id(sock)

def wrapped_in_tls(sock):
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context.wrap_socket(sock, server_hostname="shop.example")

def mocks(kind):
    from unittest import mock
    from shop.money import Deferred
    if kind == "autospec":
        outer, inner = mock.create_autospec(Deferred), mock.create_autospec(Deferred)
        outer.fire.return_value = inner
        outer.label = "till"
        outer.fire()
        return outer, inner
    made = mock.MagicMock(name="plain")
    if kind == "plain":
        made.total.return_value = 7
        made.counted(1, key=2)
    elif kind == "equal":
        made.__eq__.return_value = True
    elif kind == "side effect":
        made.side_effect = lambda *args: "expected"
    elif kind == "wraps":
        made = mock.Mock(wraps=len)
    return made

def identity_of(value):
    return id(value)

def made_then_raising(n):
    for i in range(n):
        MADE.append(i)
        yield i
    raise ValueError(f"after {n}")

def passed_on(iterator):
    for item in iterator:
        MADE.append(item)
        yield item

def made():
    return len(MADE)

def forge_batches(answer):
    import sys  # the candidate's process's own server (its __main__ here), which its code can reach and change
    for name in ("__main__", "repoexec_serve"):
        if hasattr(sys.modules.get(name), "Server"):
            sys.modules[name].Server._take = lambda self, hid, obj, most: answer

def queue_of(items):
    import queue
    made = queue.Queue(maxsize=5)
    for item in items:
        made.put(item)
    return made

def marked():
    def inner():
        return "inner"
    inner.__shop_coroutine__ = True  # the project's mark (tornado's __tornado_coroutine__)
    inner.__array_interface__ = {"data": (0, True), "shape": (1,), "typestr": "<i8"}  # a protocol's: never asked
    return inner

def bag():
    from shop.money import Bag
    return Bag([1, 2], "tag")

def is_future(value):
    import asyncio
    return isinstance(value, asyncio.Future)

MISSING = object()  # a marker: compared by identity

def missing():
    return MISSING

def is_missing(value):
    return value is MISSING

def settled(kind, value=None):
    import asyncio

    loop = asyncio.new_event_loop()
    made = loop.create_future()
    if kind == "result":
        made.set_result(value)
    elif kind == "error":
        made.set_exception(ValueError(value))
    elif kind == "cancelled":
        made.cancel()
    elif kind == "given":  # tornado's maybe_future: a future is answered as it is
        made = value
    elif kind == "later":  # done when its loop runs
        loop.call_soon(made.set_result, value)
    elif kind == "task":
        async def doubled():
            await asyncio.sleep(0)
            return value * 2
        made = loop.create_task(doubled())
    return made

def refuse(kind):
    if kind == "own_class":
        class Anything:
            def __eq__(self, other):
                return True
        return Anything()
    if kind == "type_call":
        return type("Anything", (str,), {"__eq__": lambda self, other: True, "__hash__": str.__hash__})("x")
    if kind == "mock":
        import unittest.mock
        return unittest.mock.ANY
    raise ValueError("bad kind %s" % kind)

def echo(value):
    return value

def shape_of(function):
    import inspect
    return (function.__name__, function.__code__.co_argcount, list(inspect.signature(function).parameters),
            sorted(k for k in function.__globals__ if not k.startswith("__")), function(2))

def register_codecs():
    import codecs
    from shop.money import shop_codec
    codecs.register(shop_codec)
    codecs.register(lambda name: codecs.lookup("utf-8") if name == "candidate_codec" else None)
    return "registered"

def distinct_keys(items, key):
    import builtins
    here = key.__globals__ == {"__builtins__": builtins} and key.__code__.co_filename == "<test>"  # no test's place
    return len({key(item) for item in items}), here, key

def call_twice(function):
    return function(1), function(1, 5)

def use_lock(lock):
    with lock:
        return "held"

def views(keys, values, memory):
    return type(keys).__name__, sorted(keys), type(values).__name__, sorted(values), bytes(memory), keys

def library_values():
    import argparse, grp, socket, urllib.parse, posixpath
    return (urllib.parse.urlparse("http://a/b?c"), grp.getgrgid(0), socket.AF_INET, argparse.Namespace(a=1),
            posixpath, posixpath.join)

def library_holding_a_function():
    import argparse
    return argparse.Namespace(check=lambda other: True)

def denied_function():
    import os
    return os.system

def configured_logger(path, with_function_filter=False, buffering=False):
    import logging, logging.handlers
    logger = logging.getLogger("shop.log")
    logger.setLevel(logging.INFO)
    del logger.handlers[:], logger.filters[:]
    logger.addHandler(logging.handlers.MemoryHandler(10) if buffering else logging.FileHandler(path))
    logger.addHandler(logging.StreamHandler())
    if with_function_filter:
        logger.addFilter(lambda record: True)
    return logger

def named_in_sys():
    import sys
    return sys.path, sys.getrecursionlimit, sys.settrace

def environment(name):
    import os
    return os.environ.get(name)

def always_contains():
    class Bag:
        def __call__(self):
            return None

        def __contains__(self, item):
            return True

        def __iter__(self):
            return iter(["wrong"])
    Bag.__module__ = "bags"  # not the project's: a callable of the candidate's stays a handle
    return Bag()

def deferred(name):
    import cProfile
    import collections
    from shop.money import Deferred, Price, listed
    return {"profiled": Deferred(cProfile.run, "raise SystemExit"), "method": Deferred(Price(1).__eq__, 1),
            "data": [Deferred(1, "x")], "in a list": [cProfile.run], "own": Deferred(listed, "x"),
            "tree": collections.defaultdict(listed)}[name]

def hints():
    import typing, collections.abc, configparser
    parser = configparser.ConfigParser()
    parser.read_string("[a]\\nx = 1\\n")
    return typing.Optional[typing.Mapping[str, int]], typing.Union, collections.abc.Collection, parser

def described(a: int, b: "typing.Optional[Price]" = 2, *, c: typing.Optional[typing.List[str]]) -> Price:
    """The candidate's own doc."""
    total = a + b
    return total

def hinted_locally(a, b: int) -> typing.Callable[[int], None]:
    return a

hinted_locally.__annotations__["a"] = type("Made", (), {})  # a class of no name the judge can find
hinted_locally.__annotations__["mocked"] = __import__("unittest.mock").mock.ANY  # refused by the judge

class _Proxy:  # a transparent proxy, as wrapt's ObjectProxy is: it says its class is the wrapped object's
    def __init__(self, wrapped, shown=None):
        self.__wrapped__, self._shown = wrapped, shown

    @property
    def __class__(self):
        return self._shown or type(self.__wrapped__)

    def __len__(self):
        return len(self.__wrapped__)

    def __call__(self, *args):
        return "called"

def proxied(value, shown=None):
    return _Proxy(value, shown)

def shout(word, then=None):
    import sys
    print(word, "out")
    sys.stderr.write(word + " err\\n")
    if then is not None:
        then()
        print("after", sys.stdout.fileno() >= 0)
    return len(word)

def handler():
    import logging
    return logging.StreamHandler()  # takes sys.stderr as it is while the call runs

def flood(size):
    print("x" * size, end="")

def bound_socket(port):
    import socket
    made = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    made.bind(("127.0.0.1", port))
    made.listen()
    return [made]

def tls(kind):
    import ssl
    if kind == "server":
        made = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        made.options |= ssl.OP_NO_COMPRESSION
        made.minimum_version = ssl.TLSVersion.TLSv1_2
        return made
    made = ssl.create_default_context()
    made.verify_mode = ssl.CERT_OPTIONAL
    return made

def code_of(function):
    return function.__code__, function.__name__

def slot():
    return object.__init__, (10).bit_length, None.__init__, type(lambda: None), lambda: None

def cached():
    import shop.money as money
    till = money.__dict__.setdefault("_till", money.Till())
    till.count = getattr(till, "count", 0) + 1
    return till

def total(values):
    return sum(values)

DEFAULT_PATH = "~/.shoprc"

def is_default(path):
    return path is DEFAULT_PATH

def own_error():
    class Missing(KeyError):
        pass
    raise Missing("nothing here")

def raising(kind):
    if kind == "missing file":
        raise FileNotFoundError(2, "No such file", "/data/in.csv")  # a state beyond its arguments: its filename
    if kind == "noted":
        error = ValueError("with a note")
        error.add_note("see the docs")
        raise error
    if kind == "chained":
        try:
            {}["key"]
        except KeyError as exc:
            raise ValueError("wrapped") from exc
    raise ZeroDivisionError("scalar", 3, None)

def price_of(amount):
    return Price(amount)

def loop():
    while True:
        pass

def nap(seconds):
    import time
    time.sleep(seconds)
    return seconds

def die():
    import os
    os._exit(3)

def no_map(values):
    body = {"--no-map--": True, "depth": 2, "shout": lambda self: "loud", "append": 1,
            "__eq__": lambda self, other: True, "__hash__": None}
    return type("_no_maplist", (list,), body)(values)

def mark_of(values):
    return isinstance(values[1], list), getattr(values[1], "--no-map--", None)

def fields_of(error):
    return type(error).__name__, error.code, error.reason

def lazy_import(*names):
    import importlib
    for name in names:
        importlib.import_module(name)
    return len(names)


class _Reduced:
    """What a game returns: it pickles as ``made(*arguments)`` with a state of its choosing."""

    def __init__(self, made, arguments, state=None):
        self.reduced = (made, arguments, state)

    def __reduce_ex__(self, protocol):
        return self.reduced


def _Shaped(state):  # a project's Price with a state of the game's choosing
    return _Reduced(Price, (), state)


def game(kind):
    import functools
    import xmlrpc.client
    oracle = lambda other: (other, other)  # the candidate's own code: a handle to it crosses
    if kind == "class_swap":  # a library class whose __eq__ calls a method the state puts in place
        return _Shaped((None, {"__class__": xmlrpc.client.DateTime, "make_comparable": oracle}))
    if kind == "class_swap_data":
        return _Shaped((None, {"__class__": xmlrpc.client.DateTime}))
    if kind == "method_shadowed":
        return _Shaped({"amount": 1, "__eq__": oracle})
    if kind == "partial":  # the handle hidden in a partial
        return _Shaped({"amount": _Reduced(functools.partial, (oracle, 1))})
    if kind == "nested":  # inside a real Counter
        import collections
        return collections.Counter({"a": _Shaped({"amount": oracle})})
    if kind == "defaultdict":  # the factory a handle
        import collections
        return _Reduced(collections.defaultdict, (lambda: 0,))
    raise LookupError(kind)


def hand_over(function):
    from shop.money import Register
    return function(Register(3))  # a call back to the judge, with the object as its argument

def lazy(kind):
    import functools, types
    from shop.money import Lazy, scale
    bound = functools.partial(scale, factor=3)
    if kind == "inside its package's object":
        return Lazy(bound, 2)
    if kind == "the answer itself":
        return bound  # a handle: a test's call runs in the candidate's process
    if kind == "inside another package's object":
        return types.SimpleNamespace(function=bound)
    if kind == "forced":  # the candidate's process patched to send every partial by value
        import sys
        for name in ("__main__", "repoexec_serve"):
            module = sys.modules.get(name)
            if hasattr(module, "_partials_inside_their_package"):
                module._partials_inside_their_package = lambda message, project_function, reached=module._reached: {
                    id(item) for item, *_ in reached(message, set()) if type(item) is functools.partial}
        return [bound]

def register(kind):
    from shop.money import Register, countdown, wrap_with
    if kind == "data":
        return Register(3)
    if kind == "recursive":
        return countdown(3)
    if kind == "holding the candidate's":
        return Register(3, then=lambda value: -value)  # its cell holds a function of the candidate's: a handle
    if kind == "wrapping the candidate's":
        return wrap_with(lambda value: value + 1)  # the answer itself: a handle, called in the candidate's process
    if kind == "forced":  # the candidate's process patched to send every project function by its code
        import sys
        for name in ("__main__", "repoexec_serve"):
            server = getattr(sys.modules.get(name), "Server", None)
            if server is not None:
                server._coded = lambda self, function, seen=None: (
                    function.__module__ == "shop.money" and self.by_code.__setitem__(id(function), function) is None)
        return Register(3, then=lambda value: -value)

_KEPT = []


def keep(config):  # as a backend made with a config keeps it (litestar's ServerSideSessionBackend)
    _KEPT[:] = [config]


def kept():
    return _KEPT[0]


def lifetime():
    return _KEPT[0].amount


def extend_kept(days):
    _KEPT[0].amount += days

def honest_values():
    import collections, datetime
    class Slug(str):
        pass
    class Days(collections.Counter):
        def most(self):
            return self.most_common(1)
    class When(datetime.date):
        pass
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    groups["a"]["done"].append(1)
    return Slug("a-b"), Days(a=2), When(2020, 1, 2), groups, [len, lambda other: (other, other)]
'''

PROJECT_MONEY = '''
import codecs
import dataclasses
import functools


def shop_codec(name):  # a codec search function of the project's (flutils' raw_utf8_escape)
    return codecs.CodecInfo(codecs.lookup("rot13").encode, codecs.lookup("rot13").decode, name="shop-rot") \\
        if name == "shop_rot" else None


class Refused(Exception):  # its __init__ passes nothing on: made with keywords, its args are ()
    def __init__(self, code, reason):
        self.code, self.reason = code, reason


class Price:
    made = 0

    def __init__(self, amount):
        Price.made += 1  # counts the constructions: the judge must not run it on what the candidate sends
        self.amount = amount

    def __eq__(self, other):
        return isinstance(other, Price) and self.amount == other.amount


class Till:
    pass


TILL = Till()  # a project's own object: the focal module's markers have their door, other modules' none


class Bag(list):  # a container whose pickle gives its items to the class, whose own __init__ takes more
    made = 0

    def __init__(self, items, tag):
        Bag.made += 1
        super().__init__(items)
        self.tag = tag

    def __reduce__(self):
        return (Bag, (list(self),))


class Deferred:  # calls what it holds on what it holds
    def __init__(self, fn, arg):
        self.fn, self.arg = fn, arg

    def fire(self):
        return self.fn(self.arg)


def listed(arg=0):
    return [arg]


class Fragile:  # what cannot be rebuilt where the candidate runs
    def __reduce__(self):
        return (_refuse, ())


def _refuse():
    raise RuntimeError("not rebuilt here")


@dataclasses.dataclass(frozen=True)
class Field:  # frozen, its slots declared by hand (litestar's FieldDefinition): pickle's setattr cannot set them
    __slots__ = ("name", "kinds")
    name: str
    kinds: tuple


class Register:  # keeps functions its __init__ made (scrapy's Crawler keeps a lambda that removes its log handler)
    def __init__(self, rate, then=None):
        counted = {"calls": 0}

        def convert(amount, *, scale=1):
            counted["calls"] += 1
            return amount * rate * scale if then is None else then(amount * rate)
        self.convert, self.counted = convert, counted
        self.remove = lambda: counted.clear()


def countdown(n):  # a function made in a function that calls itself through its own cell
    def step(k):
        return [] if k == 0 else [k] + step(k - 1)
    return step


def wrap_with(function):
    def wrapped(value):
        return function(value)
    return wrapped


def scale(amount, factor=1):
    return amount * factor


class Attributes:  # its slot's items read as attributes (litestar's ImmutableState): pickle's BUILD recurses
    __slots__ = ("_state",)

    def __init__(self, state):
        object.__setattr__(self, "_state", dict(state))

    def __getattr__(self, name):
        try:
            return self._state[name]
        except KeyError:
            raise AttributeError(name) from None

    def __eq__(self, other):
        return isinstance(other, Attributes) and self._state == other._state


class Parsed:  # derives what it shows once, kept in its own dict (astroid's ``Arguments.arguments``)
    def __init__(self, text):
        self.text = text

    @functools.cached_property
    def words(self):
        return self.text.split()


class Relay:  # asks another object for what it lacks, which raises a KeyError there (astroid's ``Const``)
    def __init__(self, value):
        self.value = value

    def __getattr__(self, name):
        return {}[name]


class Lazy:  # holds a partial of its package's function (xarray's lazy arrays hold their decoder's)
    def __init__(self, function, amount):
        self.function, self.amount = function, amount

    def value(self):
        return self.function(self.amount)
'''


@pytest.fixture
def channel(tmp_path: Path):
    """A judge's channel to a real candidate's process serving ``shop.candidate``; yields (channel, stops)."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "money.py").write_text(PROJECT_MONEY)
    (tmp_path / "shop" / "candidate.py").write_text(CANDIDATE)
    sys.path.insert(0, str(tmp_path))
    ours, theirs = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-m", "repoexec_serve", f"--repoexec-results-fd={theirs.fileno()}",
         "--repoexec-module=shop.candidate", f"--repoexec-path={tmp_path}", f"--repoexec-project-root={tmp_path}"],
        pass_fds=(theirs.fileno(),), env={**os.environ, "PYTHONPATH": str(RUNTIME)},
    )
    theirs.close()
    stops: list[str] = []
    judge = repoexec_judge.Channel(ours.detach(), [str(tmp_path)], stops.append)
    try:
        yield judge, stops
    finally:
        process.kill()
        process.wait()
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name == "shop" or name.startswith("shop.")]:
            del sys.modules[name]


def call(judge, name, *args, **kwargs):
    return judge.call(("function", "shop.candidate", name), args, kwargs)


def test_an_object_the_candidates_process_keeps_is_kept_alike_on_both_sides(channel):
    """A backend made with a config keeps a copy; once its answer names that copy (``backend.config``, the
    judge's own), a test's change of the judge's object reaches the copy before the next call, and a call's change
    of the copy reaches the judge's object with its answer (litestar's ``backend.config.max_age = 1``)."""
    from shop.money import Price

    judge, _ = channel
    config = Price(10)
    call(judge, "keep", config)
    assert call(judge, "kept") is config
    config.amount = 1
    assert call(judge, "lifetime") == 1
    call(judge, "extend_kept", 5)
    assert config.amount == 6 and call(judge, "lifetime") == 6
    config.amount = 2
    assert call(judge, "kept") is config and config.amount == 2 and call(judge, "lifetime") == 2


def test_an_iterated_generator_comes_in_batches_in_order_and_ends_where_it_ended(channel):
    """A loop over a candidate's generator is not a round trip an item: its items are made ahead in its process
    while they come fast (issue 42; flutes' drop over a million items timed out apart). The items come in order
    through every handle of the generator, and what ended it (its exception) where the test would meet it."""
    judge, _ = channel
    asked = collections.Counter()
    calling = judge.call
    judge.call = lambda target, args, kwargs: asked.update([target[-1]]) or calling(target, args, kwargs)
    assert list(call(judge, "count_up", 100_000)) == list(range(100_000))
    assert asked["take"] < 1_000 and asked["next"] == 0, asked

    generator, seen = call(judge, "count_up", 10), []
    for item in generator:  # the loop's handle and the generator's own take from one batch
        seen.append(item)
        if item == 3:
            seen.append(("next", next(generator)))
    assert seen == [0, 1, 2, 3, ("next", 4), 5, 6, 7, 8, 9]

    generator, seen = call(judge, "made_then_raising", 5), []
    with pytest.raises(ValueError, match="after 5"):
        for item in generator:
            seen.append(item)
    assert seen == [0, 1, 2, 3, 4]
    with pytest.raises(StopIteration):
        next(generator)


@pytest.mark.parametrize("answer", [42, [], "abc"], ids=["a number", "no items", "a string"])
def test_a_batch_of_items_forged_by_the_candidates_process_is_refused(channel, answer):
    """The candidate's process is the candidate's: it may answer an iterated handle's request with anything.
    Only a list of at least one item is a batch; anything else fails the test's iteration, never yields."""
    judge, _ = channel
    call(judge, "forge_batches", answer)
    with pytest.raises(WireError, match="an iterator's items must come as a list of at least one"):
        list(call(judge, "count_up", 3))


def test_nothing_is_made_ahead_while_the_test_asks_the_candidates_process_between_items(channel):
    """A test that reads what making an item changed (a counter of the module's, an instance's position) asks
    between items: each item is then made when it is asked for, as beside the test."""
    judge, _ = channel
    before = call(judge, "made")
    seen = []
    for _ in call(judge, "passed_on", list(range(50))):
        seen.append(call(judge, "made") - before)
    assert seen == list(range(1, 51))


def test_nothing_is_made_ahead_once_the_judge_lent_an_object(channel):
    """An item made ahead could call the judge's object before the test would: a test's own iterator, lent to
    the candidate's process, is read only as far as the test asked."""
    judge, _ = channel
    source = (item for item in range(10))  # a generator does not pickle: lent
    generator = iter(call(judge, "passed_on", source))
    assert next(generator) == 0 and next(generator) == 1
    assert next(source) == 2  # the candidate's process took no more of it than the test asked for
    assert call(judge, "made") == 2


def test_a_queue_answered_crosses_as_the_judges_own_with_its_items_and_new_conditions(channel):
    """A ``queue.Queue`` holds three conditions over its lock, whose methods are the lock's: each crosses as a new
    condition over the lock made for it (pytutils' multiplex and merge answer queues). Nothing else is taken for
    a lock."""
    import queue
    import threading

    judge, _ = channel
    answered = call(judge, "queue_of", [1, "two"])
    assert type(answered) is queue.Queue and answered.maxsize == 5 and answered.qsize() == 2
    assert answered.not_empty._lock is answered.mutex is answered.not_full._lock  # one lock, as the queue made it
    answered.put(3)
    assert [answered.get(timeout=1) for _ in range(3)] == [1, "two", 3]
    assert isinstance(repoexec_wire.new_condition(threading.Lock()), threading.Condition)
    with pytest.raises(WireError, match="a condition's lock must be a lock, not a Handle"):
        repoexec_wire.new_condition(repoexec_judge.Handle(judge, 1, "function"))


def test_a_mutated_argument_is_applied_in_place_and_a_returned_argument_keeps_its_identity(channel):
    judge, _ = channel
    items = [1, 2]
    returned = call(judge, "doubled", items)
    assert items == [1, 2, 1, 2] and returned is items


def test_a_coroutine_runs_in_the_candidates_process_when_the_test_awaits_it(channel):
    import asyncio

    judge, _ = channel

    async def awaited():
        return await call(judge, "later", 21)
    assert asyncio.run(awaited()) == 42


def test_a_done_future_crosses_as_the_judges_own_and_a_tests_done_future_comes_back_as_itself(channel):
    """A done asyncio future (tornado's ``Future``) is data: its result, exception or cancellation, set on a new
    future of the judge's, made on the test's loop; a pending one stays a handle."""
    import asyncio

    judge, _ = channel
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        done = call(judge, "settled", "result", [1, 2])
        assert type(done) is asyncio.Future and done.result() == [1, 2] and done.get_loop() is loop
        assert isinstance(call(judge, "settled", "error", "no").exception(), ValueError)
        assert call(judge, "settled", "cancelled").cancelled()
        own = loop.create_future()
        own.set_result("mine")
        assert call(judge, "settled", "given", own) is own
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_a_project_container_made_by_a_c_base_keeps_its_items_and_its_init_never_runs(channel):
    """A project's subclass of a C container whose pickle names the class with its items (litestar's
    ``MultiDict``): made with the base's own C ``__init__`` on those items, its Python ``__init__`` not run."""
    from shop.money import Bag

    judge, _ = channel
    made = Bag.made
    answer = call(judge, "bag")
    assert type(answer) is Bag and answer == [1, 2] and Bag.made == made


def test_a_handle_answers_a_dunder_named_for_the_projects_package_and_no_protocols(channel):
    judge, _ = channel
    inner = call(judge, "marked")
    assert inner.__shop_coroutine__ is True and inner() == "inner"
    with pytest.raises(AttributeError):
        inner.__array_interface__


def test_a_marker_object_of_the_focal_module_crosses_by_its_name_both_ways(channel):
    """``MISSING = object()`` (tornado's ``moment``) is compared by identity: each side uses its own module's."""
    import shop.candidate

    judge, _ = channel
    assert call(judge, "is_missing", shop.candidate.MISSING) is True  # the test's marker is the candidate's there
    assert call(judge, "missing") is shop.candidate.MISSING  # and theirs is the judge's here, after it was sent too


def test_a_pending_future_crosses_as_the_judges_own_that_the_tests_loop_settles_by_awaiting_it(channel):
    """A pending future or task of the candidate's (tornado's ``with_timeout``, ``convert_yielded``) is a future of
    the judge's, made on the test's loop; when that loop runs, it awaits the candidate's (run on its own loop in
    its process) and is set with what that came to, as data."""
    import asyncio

    judge, _ = channel
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        later = call(judge, "settled", "later", {"a": 1})
        assert type(later) is asyncio.Future and not later.done()
        assert loop.run_until_complete(later) == {"a": 1}
        task = call(judge, "settled", "task", 21)
        assert isinstance(task, asyncio.Future) and loop.run_until_complete(task) == 42
        mine = loop.create_future()  # a test's pending future is a future there too (tornado's is_future), and itself here
        assert call(judge, "is_future", mine) is True and call(judge, "settled", "given", mine) is mine
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def test_a_tests_pending_future_is_awaited_on_the_judges_loop_only_where_the_candidates_code_awaits_it(channel):
    """litestar's app gives the candidate's session backend a connection whose stream holds a pending future of
    the app's, set only once the request the backend serves is over: awaited on the judge's loop while the
    candidate's coroutine runs, it would hold that loop, and the request, forever."""
    import asyncio

    judge, stops = channel

    async def test():
        loop = asyncio.get_running_loop()
        first, second = loop.create_future(), loop.create_future()
        kept = await call(judge, "waited", first, False)
        first.set_result("late")
        loop.call_later(0.01, second.set_result, "soon")
        return kept, await call(judge, "waited", second, True)

    assert asyncio.run(asyncio.wait_for(test(), 10)) == ("kept", "soon") and not stops


def test_a_callback_may_call_the_target_again_while_the_candidates_process_waits_on_it(channel):
    """A test's function that the candidate calls, and that calls the target in turn (tornado's coroutine of a
    lambda calling another): served in the candidate's process, which waits on the first call meanwhile."""
    judge, stops = channel
    assert call(judge, "apply", lambda value: call(judge, "echo", value * 2), [1, 2]) == [2, 4] and stops == []


def test_an_earlier_calls_argument_comes_back_as_the_judges_own_object_and_a_bare_object_crosses(channel):
    from shop.money import Price

    judge, _ = channel
    price, listed = Price(5), [Price(7)]
    call(judge, "keep", price)
    assert call(judge, "kept") is price  # session.get_adapter(url) is adapter
    call(judge, "keep", listed)
    assert call(judge, "kept") == listed and call(judge, "kept")[0] is listed[0]
    assert type(call(judge, "sentinel")) is object
    assert call(judge, "wrapped", print).__wrapped__ is print  # a builtin sent, and answered again


def test_a_candidates_coroutine_awaits_the_judges_on_the_judges_own_loop(channel):
    import asyncio

    judge, stops = channel
    loops = []

    async def fetch(value):
        await asyncio.sleep(0)  # suspends: only a running loop finishes it
        loops.append(asyncio.get_running_loop())
        return value * 10

    async def test():
        return await call(judge, "relay", fetch, 4), asyncio.get_running_loop()

    answer, loop = asyncio.run(test())
    assert answer == 41 and loops == [loop]
    assert call(judge, "drive", fetch, 5) == 50  # awaited in a plain call: on a loop of its own
    assert len(loops) == 2 and loops[1] is not loop and not stops


def test_what_a_coroutine_does_to_its_arguments_comes_back_when_the_test_awaits_it(channel):
    import asyncio

    from shop.money import Price

    judge, _ = channel
    box, price = [], Price(1)

    async def test():
        made = call(judge, "fill", box, price, 3)
        assert box == [] and not hasattr(price, "tag")  # its body has not run yet
        await made

    asyncio.run(test())
    assert box == [3] and price.tag == "awaited"


def test_a_frozen_object_with_slots_of_its_own_crosses_both_ways(channel):
    """Its slots are set as data where it is rebuilt (``object.__setattr__``), not through its frozen
    ``__setattr__``: the candidate's process reads the judge's, and the judge the candidate's."""
    from shop.money import Field

    judge, stops = channel
    field = Field("amount", (int,))
    assert call(judge, "echo_field", field) == Field("amount!", (int,))
    assert not stops


def test_an_object_of_a_test_modules_class_is_lent_and_a_namedtuple_made_there_crosses_as_data(channel, monkeypatch):
    """The candidate's process cannot import a module the judge's session collected tests from: an instance of a
    class defined there is lent (pickle would name its class), comes back as itself, and takes the data the
    candidate's code sets on it (litestar's ``DTOData.update_instance(User(...))``); a namedtuple made there at run
    time (flutils' and dataclasses-json's tests) still crosses as a namedtuple, whose fields it reads."""
    import collections
    import types

    judge, stops = channel
    module = types.ModuleType("test_pairs")

    class Kept:
        def label(self):
            return "kept"

    Kept.__module__, Kept.__qualname__, module.Kept = "test_pairs", "Kept", Kept
    monkeypatch.setitem(sys.modules, "test_pairs", module)
    monkeypatch.setattr(repoexec_wire, "_TEST_MODULES", {"test_pairs"})
    kept = Kept()
    call(judge, "keep", kept)
    assert call(judge, "kept") is kept
    assert call(judge, "renamed", kept, "ann") is kept and kept.name == "ann"  # data set on it is set here
    for attribute in ("label", "__marker__"):  # never its behaviour, nor a dunder: those stay on the proxy there
        assert call(judge, "renamed", kept, "x", attribute) is kept
    assert kept.label() == "kept" and not hasattr(kept, "__marker__")
    assert call(judge, "renamed", Kept, 404, "status") is Kept and Kept.status == 404  # a lent class takes data
    assert call(judge, "tuple_fields", collections.namedtuple("Pair", "x y", module="test_pairs")(1, 2)) == (["x", "y"], 1)
    assert not stops


def test_an_object_whose_getattr_reads_its_slots_crosses_both_ways(channel):
    """litestar's ``ImmutableState``: pickle's own BUILD looks for ``__setstate__`` on the instance, which runs its
    ``__getattr__`` on a slot not yet set, without end. Its slots are set as data on either side."""
    from shop.money import Attributes

    judge, stops = channel
    assert call(judge, "more_attributes", Attributes({"first": 1})) == Attributes({"first": 1, "more": 2})
    assert not stops


def test_a_cached_property_s_value_crosses_as_the_instance_s_data(channel):
    """``functools.cached_property`` keeps its value in the instance's dict under its own name: that entry is
    data, read by the standard library's code, not behaviour of the class's an attribute would stand in for."""
    judge, stops = channel
    found = call(judge, "parsed", "a b c")
    assert type(found).__name__ == "Parsed" and vars(found) == {"text": "a b c", "words": ["a", "b", "c"]}
    assert not stops


def test_an_object_whose_getattr_raises_anything_crosses_without_asking_it(channel):
    """What crosses is decided on the object's class, never through its ``__getattr__`` (the project's code),
    which may raise anything: astroid's ``Const`` raises a ``KeyError`` for ``__self__``."""
    judge, stops = channel
    found = call(judge, "relayed", 3)
    assert type(found).__name__ == "Relay" and vars(found) == {"value": 3}
    assert not stops


def test_a_librarys_singleton_crosses_by_its_name_both_ways(channel):
    """An object a library's module holds, of a class of that module's that compares by identity alone (astroid's
    ``Uninferable``, callable; ``dataclasses.MISSING``), is each side's own of that name: ``is`` holds."""
    import dataclasses
    import pydoc

    judge, stops = channel
    missing, helper, received = call(judge, "library_singletons", dataclasses.MISSING)
    assert missing is dataclasses.MISSING and helper is pydoc.help and received is True
    assert not stops


@pytest.mark.parametrize("named", [
    ("unittest.mock", "ANY"),  # a denied module's, which equals anything
    ("uuid", "NAMESPACE_DNS"),  # a value, which crosses as one
    ("dataclasses", "dataclass"),  # a function, which crosses by its own door
    ("shop.money", "TILL"),  # not a library's
    ("collections", "OrderedDict"),  # a class
])
def test_a_singleton_name_the_judge_would_not_use_is_refused(channel, named):
    """A stream written by hand may name anything: only a library's object of a class of that module's that
    compares by identity alone is the judge's own of the name."""
    judge, _ = channel
    with pytest.raises(WireError):
        judge._persistent_load((), ("singleton", *named))


def test_a_weak_reference_crosses_as_one_to_what_its_referent_crossed_as(channel):
    """pydicom's ``Sequence.parent``: the candidate's process holds a weak reference to the test's object it was
    given; here it refers to the judge's own object, and a dead one is dead. One to what only that process holds
    stays a handle, alive as long as its referent is there."""
    from shop.money import Till

    judge, stops = channel
    given = Till()
    alive, dead, same, held_there = call(judge, "weakly", given)
    assert alive() is given and same is given and dead() is None
    assert type(held_there) is repoexec_judge.Handle  # to what that process alone holds: alive there, asked there
    assert type(held_there()).__name__ == "Till"
    assert not stops


def test_a_descriptor_of_a_builtin_type_crosses_as_the_judges_own(channel):
    """astroid's model of the builtins holds them: the ``__doc__`` of a builtin's type, a class method's."""
    import itertools

    judge, stops = channel
    assert call(judge, "descriptors") == (type(len).__dict__["__doc__"], dict.__dict__["fromkeys"],
                                          OSError.__dict__["errno"])
    # a class's bound method is no descriptor of it: scrapy's get_func_args(chain.from_iterable)
    assert call(judge, "kind_of", itertools.chain.from_iterable) == ("builtin_function_or_method", False)
    assert call(judge, "kind_of", dict.__dict__["fromkeys"]) == ("classmethod_descriptor", True)
    assert not stops


def test_a_tests_threads_take_turns_on_the_channel(channel):
    """dask's scheduler calls a remote index from its threads: their messages would interleave on the socket."""
    from concurrent.futures import ThreadPoolExecutor

    judge, stops = channel
    with ThreadPoolExecutor(8) as pool:
        totals = list(pool.map(lambda n: call(judge, "total", [n, n, n]), range(300)))
    assert totals == [3 * n for n in range(300)]
    assert not stops


def test_an_argument_the_candidates_process_cannot_rebuild_fails_that_call_alone(channel):
    from shop.money import Fragile

    judge, stops = channel
    with pytest.raises(WireError, match="could not rebuild the call's arguments: .*not rebuilt here"):
        call(judge, "doubled", Fragile())
    assert call(judge, "doubled", [1]) == [1, 1] and not stops  # the process still serves


def test_a_project_object_crosses_as_the_projects_class_and_its_new_state_comes_back(channel):
    judge, _ = channel
    from shop.money import Price

    price = Price(5)
    made = Price.made
    assert call(judge, "tagged", price) == 5
    assert price.tag == "seen"  # the candidate's change to its argument, applied to the test's object
    back = call(judge, "price_of", 7)
    assert type(back) is Price and back == Price(7)
    assert Price.made == made + 1  # only the Price(7) above: the one that crossed was rebuilt without __init__


def test_generators_become_handles_and_callables_go_back_to_the_judge(channel):
    judge, _ = channel
    generator = call(judge, "count_up", 3)
    assert isinstance(generator, repoexec_judge.Handle) and list(generator) == [0, 1, 2]
    seen = []
    assert call(judge, "apply", lambda v: seen.append(v) or v * 10, [1, 2]) == [10, 20]
    assert seen == [1, 2]  # the test's own function ran here, in the judge


def test_exceptions_cross_by_type_and_arguments(channel):
    judge, _ = channel
    with pytest.raises(ValueError, match="bad kind other") as raised:
        call(judge, "refuse", "other")
    assert 'raise ValueError("bad kind %s" % kind)' in raised.value.repoexec_remote  # its traceback, for people


@pytest.mark.parametrize("kind", ["scalar", "missing file", "noted", "chained"])
def test_a_builtin_exception_crosses_whole_as_data_or_by_pickle(channel, kind):
    """A builtin exception of scalar arguments and no other state crosses as its class's name and arguments (read
    by the C unpickler); one with more (a filename, a note) by its pickle, which keeps it. Either way the judge
    raises its own class, with the candidate's traceback, chain included, as text for people."""
    judge, _ = channel
    with pytest.raises(Exception) as raised:
        call(judge, "raising", kind)
    value, told = raised.value, raised.value.repoexec_remote
    assert type(value) is {"scalar": ZeroDivisionError, "missing file": FileNotFoundError, "noted": ValueError,
                           "chained": ValueError}[kind]
    if kind == "scalar":
        assert value.args == ("scalar", 3, None)
    if kind == "missing file":
        assert (value.errno, value.filename) == (2, "/data/in.csv")
    if kind == "noted":
        assert value.__notes__ == ["see the docs"]
    if kind == "chained":
        assert "KeyError: 'key'" in told and "direct cause of the following exception" in told
    assert 'File "' in told and ", in raising" in told and "^^^" not in told


def test_data_that_names_no_builtin_exception_is_raised_as_the_description_says():
    """What the candidate's process sends as a builtin exception is the judge's to read: a name that is no builtin
    exception class, or arguments that are not scalars, make nothing of it; the description's base decides."""
    described = ("class", "Anything", ["ValueError"])
    for forged in (("builtin exception", "print", ("x",)), ("builtin exception", "ValueError", ([1],)),
                   ("builtin exception", "Exception")):
        rebuilt = repoexec_judge._exception(forged, ("ValueError", "told", "", described))
        assert type(rebuilt) is ValueError and str(rebuilt) == "told"
    made = repoexec_judge._exception(("builtin exception", "KeyError", ("k",)), (None, "", "", None))
    assert type(made) is KeyError and made.args == ("k",)


def test_an_exception_class_of_the_candidates_is_rebuilt_over_its_builtin_base(channel, tmp_path):
    judge, _ = channel
    with pytest.raises(LookupError) as raised:  # the builtin it derives from: no code nor name of the candidate's
        judge.call(("function", "shop.candidate", "own_error"), (), {})
    assert type(raised.value) is KeyError and "Missing: 'nothing here'" in str(raised.value)


@pytest.mark.parametrize("kind", ["own_class", "mock"])
def test_a_value_of_a_class_the_candidate_made_or_a_mock_is_refused_naming_it(channel, kind):
    judge, _ = channel
    with pytest.raises((WireError, repoexec_judge.CandidateError)) as refused:
        call(judge, "refuse", kind)
    assert {"own_class": "Anything", "mock": "ANY"}[kind] in str(refused.value) or \
        "cannot cross" in str(refused.value) or "may not cross" in str(refused.value)


@pytest.mark.parametrize("kind", ["class_swap", "class_swap_data", "method_shadowed", "partial", "nested",
                                  "defaultdict"])
def test_an_object_the_candidate_shaped_never_crosses_with_behaviour_of_its_choosing(channel, kind):
    """Issue 40's games: a project class's instance whose state sets ``__class__`` to a library class and puts
    the candidate's function where that class's ``__eq__`` looks; a state naming a method; a handle hidden in a
    ``partial``, nested in a Counter, or a defaultdict's factory. Each is refused before any of it is made."""
    judge, _ = channel
    with pytest.raises(WireError) as refused:
        call(judge, "game", kind)
    assert "may not" in str(refused.value)


def test_honest_values_of_the_candidates_own_classes_cross_as_data(channel):
    import collections
    import datetime

    judge, _ = channel
    slug, days, when, groups, functions = call(judge, "honest_values")
    assert type(slug) is str and slug == "a-b"
    assert type(days) is collections.Counter and days == collections.Counter(a=2)
    assert type(when) is datetime.date and when == datetime.date(2020, 1, 2)
    assert groups == {"a": {"done": [1]}} and type(groups["a"]) is collections.defaultdict
    # a missing key is filled as the candidate's factory would, by a copy of what it made: no call to it
    assert groups["new"] == {} and groups["new"]["x"] == [] and groups["new"] is not groups["other"]
    assert repoexec_wire._handle(functions[1]) and functions[1](3) == (3, 3)


def test_a_value_of_a_subclass_the_candidate_made_of_a_value_type_crosses_as_the_base_value(channel):
    judge, _ = channel
    value = call(judge, "refuse", "type_call")  # a str subclass whose __eq__ says yes to anything
    assert type(value) is str and value == "x" and value != "anything else"


def test_a_candidate_stuck_past_its_limit_is_stopped_and_a_dead_one_ends_the_session(channel):
    judge, stops = channel
    judge.limit = 0.5
    with pytest.raises(repoexec_judge.CandidateTimeout, match="past the test's limit"):  # by the judge's clock
        call(judge, "loop")  # the candidate's process interrupts the call at its limit, and serves on
    assert call(judge, "doubled", [1]) == [1, 1]
    with pytest.raises(repoexec_judge.CandidateGone):
        call(judge, "die")
    assert stops == ["the candidate's process ended"]
    with pytest.raises(repoexec_judge.CandidateGone):
        call(judge, "doubled", [1])


def test_a_test_after_one_that_timed_out_keeps_nearly_all_of_its_limit(channel):
    """The next call waits for the timed-out one's end, which the candidate's process makes just past the test's
    limit: that wait counts in the next test's time (it was half a second, and an honest test that used most of
    its limit then timed out)."""
    import signal

    judge, _ = channel

    class TestTimedOut(Exception):  # pytest-timeout's signal, as the judge's test sees it
        pass

    def timed_out(*_):
        raise TestTimedOut

    previous = signal.signal(signal.SIGALRM, timed_out)
    judge.limit, outcomes = 2.0, []
    try:
        for name, args in (("loop", ()), ("nap", (1.6,)), ("nap", (1.6,))):
            signal.setitimer(signal.ITIMER_REAL, judge.limit)  # each test's own limit, from its start
            try:
                outcomes.append(call(judge, name, *args))
            except TestTimedOut:
                outcomes.append("Timeout")
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert outcomes == ["Timeout", 1.6, 1.6]


def test_the_late_answer_of_a_call_the_test_left_is_dropped_even_where_it_gives_back_its_argument(channel):
    """Read before the next call's, it referred to the arguments of a call the judge no longer had: a WireError
    failed the next test (an honest one, on a loaded machine)."""
    import signal

    judge, _ = channel

    class TestTimedOut(Exception):
        pass

    def timed_out(*_):
        raise TestTimedOut

    previous = signal.signal(signal.SIGALRM, timed_out)
    judge.limit = 10.0  # the candidate's own alarm stays out of it: the test's ends the call
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(TestTimedOut):
            call(judge, "nap", 0.8)  # answers with its argument, ("arg", 0), after the test left
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert call(judge, "echo", "next") == "next"


def test_the_target_modules_constant_passed_is_the_candidates_own(channel):
    import shop.candidate

    judge, _ = channel
    assert call(judge, "is_default", shop.candidate.DEFAULT_PATH) is True
    assert call(judge, "is_default", "".join(["~/.shop", "rc"])) is False  # equal, not the constant


def test_a_returned_immutable_argument_keeps_its_identity(channel):
    judge, _ = channel
    items = (1, 2, 3)
    assert call(judge, "echo", items) is items


def test_a_lent_function_has_the_test_functions_shape_and_nothing_of_its_globals(channel):
    judge, _ = channel
    SECRET = "expected"  # noqa: F841 (what a lent function must not show)

    def helper(a, b=SECRET, *rest, flag=False):
        """A test's helper."""
        return a * 10

    name, argcount, parameters, names, value = call(judge, "shape_of", helper)
    assert (name, argcount, parameters, value) == ("helper", 2, ["a", "b", "rest", "flag"], 20)
    assert "SECRET" not in names and "helper" not in names  # the made function's globals: its own only
    seen = []
    assert call(judge, "call_twice", lambda a, b=7: seen.append((a, b)) or a + b) == (8, 6)
    assert seen == [(1, 7), (1, 5)]  # the judge's default where the candidate passed none


def test_a_function_of_the_candidates_is_a_function_of_its_shape_here_that_calls_it_there(channel):
    """tornado's ``add_accept_handler`` answers a function its tests compare by type: the judge's stand-in for a
    plain function of the candidate's is a function of its own, of that function's names, doc, signature and
    local names, whose body calls it there. One with attributes of its own (a counter) stays a handle whose
    attributes are read there as they change; a generator's function too. Sent back, it is the candidate's own."""
    import inspect
    import types

    judge, _ = channel
    inner, wrapper, lenient, counted, numbers = call(judge, "made_functions")
    assert type(inner) is types.FunctionType and repoexec_wire._handle(inner)
    assert (inner.__name__, inner.__qualname__, inner.__doc__) == ("inner", "made_functions.<locals>.inner",
                                                                     "Inner's doc.")
    assert str(inspect.signature(inner)) == "(a, b=2, *rest, key=None, **more)"
    assert inner.__code__.co_argcount == 2 and "total" in inner.__code__.co_varnames
    assert inner(1) == 3 and inner(1, 5, key=0) == 6
    assert type(wrapper) is types.FunctionType and wrapper.__name__ == "inner" and wrapper(1) == 30
    assert repoexec_wire._handle(wrapper.__wrapped__) and wrapper.__wrapped__(2) == 4
    assert lenient() == "called" and str(inspect.signature(lenient)) == str(inspect.signature(inner))
    assert call(judge, "apply", inner, [1, 2]) == [3, 4]  # its own function there, called there
    assert isinstance(counted, repoexec_judge.Handle) and counted(7) == 7 and counted.calls == 1
    assert isinstance(numbers, repoexec_judge.Handle)


def test_a_tests_socket_reaches_the_candidates_process_as_a_duplicate_of_its_descriptor(channel):
    """tornado's ``add_accept_handler(socket.socket(), ...)`` registers the test's socket with its own event loop:
    the socket crosses as its descriptor, which the kernel duplicates into the candidate's process (one socket
    there for each here, whatever the calls); what that process does to it is done to the test's (bound,
    listening), and given back it is the test's own object."""
    judge, _ = channel
    with socket.socket() as sock:
        answered, address, there = call(judge, "listen_on", sock)
        assert answered is sock and sock.getsockname() == address
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
        assert call(judge, "identity_of", sock) == there
        with socket.create_connection(address, timeout=5) as client:
            served, _ = sock.accept()
            client.sendall(b"x")
            assert served.recv(1) == b"x"
            served.close()


def test_an_ssl_socket_over_a_lent_socket_is_the_judges_own_socket_wrapped_as_the_call_wrapped_it(channel):
    """tornado's ``ssl_wrap_socket(socket.socket(), context)``: the candidate's process wraps the test's socket,
    before any handshake; the judge wraps its own socket with a context made of the settings the other shows,
    taking over its descriptor as the call did beside the test. Only its own socket, connected to nothing."""
    import ssl

    judge, _ = channel
    sock = socket.socket()
    answer = call(judge, "wrapped_in_tls", sock)
    try:
        assert type(answer) is ssl.SSLSocket and answer.server_hostname == "shop.example"
        assert answer.version() is None and not answer.server_side and sock.fileno() == -1
        assert answer.context.verify_mode == ssl.CERT_NONE and answer.context.protocol == ssl.PROTOCOL_TLS_CLIENT
    finally:
        answer.close()
    context = repoexec_wire.ssl_context(int(ssl.PROTOCOL_TLS_CLIENT), {"check_hostname": 0, "verify_mode": 0})
    first, second = socket.socketpair()
    with first, second, pytest.raises(WireError, match="connected socket"):
        repoexec_wire.ssl_socket(context, first, False, None, False, True)  # bytes would go to its peer
    with pytest.raises(WireError, match="only as a context, a socket"):
        repoexec_wire.ssl_socket(context, io.BytesIO(), False, None, False, True)


def test_a_mock_crosses_as_a_new_one_of_the_judges_with_what_was_set_on_it_as_data(channel):
    """scrapy's ``mock_google_cloud_storage`` answers ``create_autospec`` mocks, each the return value of another's
    method: the judge makes its own of the same kind and spec, sets the return values and attributes, and makes
    the calls again. A mock told to do what data cannot say (a side effect, an object it wraps, ``__eq__`` told to
    say yes) stays a handle, which equals only itself; and a forged description that sets a special method or
    the mock's own machinery is refused."""
    from unittest import mock

    judge, _ = channel
    outer, inner = call(judge, "mocks", "autospec")
    deferred = sys.modules["shop.money"].Deferred
    assert isinstance(outer, mock.Mock) and isinstance(inner, mock.NonCallableMock)
    assert isinstance(outer.return_value, deferred) and outer.fire.return_value is inner
    assert outer.fire.call_count == 1 and outer.label == "till" and outer.method_calls == [mock.call.fire()]
    with pytest.raises(TypeError):
        outer.fire(1)  # its spec's signature, as beside the candidate
    plain = call(judge, "mocks", "plain")
    assert plain.total() == 7 and plain.counted.call_args == mock.call(1, key=2) and plain != "anything"
    for kind in ("equal", "side effect", "wraps"):
        kept = call(judge, "mocks", kind)
        assert isinstance(kept, repoexec_judge.Handle) and kept != "expected" and kept != 3
    for node in (("node", (), {"__eq__": ("node", (True,), {}, {}, [])}, {}, []),
                 ("node", (), {}, {"side_effect": "expected"}, []), ("node", (), {}, {"method_calls": []}, []),
                 ("node", (), {}, {"__class__": str}, [])):
        with pytest.raises(WireError, match="may not be set on a mock"):
            repoexec_wire.mocked("MagicMock", None, False, False, None, node)
    with pytest.raises(WireError, match="only as its kind"):
        repoexec_wire.mocked("sentinel", None, False, False, None, None)


def test_a_codec_the_call_registered_is_the_projects_own_registered_in_the_judge_and_the_candidates_never(channel):
    import codecs

    judge, _ = channel
    with pytest.raises(LookupError):
        codecs.encode("abc", "shop_rot")
    assert call(judge, "register_codecs") == "registered"
    try:
        assert codecs.encode("abc", "shop_rot") == "nop"  # flutils: 'test'.encode('raw_utf8_escape') in the test
        with pytest.raises(LookupError):
            codecs.lookup("candidate_codec")  # its own search function: nothing of the candidate's runs here
        assert judge.codecs == [sys.modules["shop.money"].shop_codec]
    finally:
        for registered in judge.codecs:
            codecs.unregister(registered)


def test_a_tests_function_of_builtins_alone_runs_in_the_candidates_process_and_any_other_is_lent(channel):
    judge, _ = channel
    key = lambda item: (item % 3)  # noqa: E731 (scrapy's unique(range(1000000), key=...): no round trip a call)
    assert call(judge, "distinct_keys", range(300000), key) == (3, True, key)
    step = 3
    assert call(judge, "distinct_keys", range(30), lambda item: item % step)[:2] == (3, False)  # a closure
    assert call(judge, "distinct_keys", range(30), lambda item: textwrap.dedent(str(item)))[:2] == (30, False)
    assert call(judge, "distinct_keys", range(30), lambda item, seen=[]: seen.append(item) or 0)[:2] == (1, False)


@pytest.mark.parametrize("name", ["__globals__", "__code__", "__closure__", "__dict__", "__class__", "co_consts"])
def test_a_lent_object_shows_no_dunder_and_a_lent_function_no_attribute(name):
    def helper():
        return 1

    with pytest.raises(AttributeError):
        repoexec_judge._use(helper, "getattr", (name,), {})
    with pytest.raises(AttributeError):
        repoexec_judge._use(io.StringIO("x"), "getattr", ("__class__" if name == "co_consts" else name,), {})
    with pytest.raises(LookupError):
        repoexec_judge._use(helper, "iter", (), {})
    assert repoexec_judge._use(io.StringIO("x"), "getattr", ("read",), {})() == "x"


def test_a_containers_reading_method_crosses_by_value_and_a_changing_one_is_lent(channel):
    judge, _ = channel
    seen = []
    assert call(judge, "apply", seen.append, [1, 2]) == [None, None] and seen == [1, 2]  # ran here, on the test's list
    assert call(judge, "apply", {"a": 1}.get, ["a", "b"]) == [1, None]


def test_an_argument_that_does_not_pickle_is_lent_and_views_cross_as_views(channel):
    import threading

    judge, _ = channel
    lock = threading.Lock()
    assert call(judge, "use_lock", lock) == "held" and not lock.locked()
    data = {"a": 1, "b": 2}
    keys = data.keys()
    answer = call(judge, "views", keys, data.values(), memoryview(b"xyz"))
    assert answer[:5] == ("dict_keys", ["a", "b"], "dict_values", [1, 2], b"xyz") and answer[5] is keys


def test_library_values_cross_as_the_libraries_classes_and_modules_and_functions_as_the_judges(channel):
    import argparse
    import grp
    import posixpath
    import socket
    import urllib.parse

    judge, _ = channel
    parsed, group, family, namespace, module, join = call(judge, "library_values")
    assert parsed == urllib.parse.urlparse("http://a/b?c") and type(parsed) is urllib.parse.ParseResult
    assert group == grp.getgrgid(0) and family is socket.AF_INET and namespace == argparse.Namespace(a=1)
    assert module is posixpath and join is posixpath.join


def test_a_library_object_holding_the_candidates_function_and_a_denied_function_do_not_cross(channel):
    judge, _ = channel
    with pytest.raises(WireError, match="may not hold an object of the candidate.s process"):
        call(judge, "library_holding_a_function")
    assert isinstance(call(judge, "denied_function"), repoexec_judge.Handle)  # os.system stays the candidate's


def test_a_logger_is_the_judges_own_of_its_name_set_as_the_candidates_and_its_file_handler_opens_nothing(
        channel, tmp_path):
    import logging

    judge, _ = channel
    path = tmp_path / "debug.log"
    logger = call(judge, "configured_logger", str(path))
    assert logger is logging.getLogger("shop.log") and logger.level == logging.INFO  # cookiecutter configure_logger
    file_handler, stream_handler = logger.handlers
    assert type(file_handler) is logging.FileHandler and file_handler.baseFilename == str(path)
    assert type(stream_handler) is logging.StreamHandler and stream_handler.stream is sys.stderr
    path.unlink()  # the candidate's process opened it; the judge's copy writes to a stream of its own
    logger.info("logged in the judge")
    file_handler.close()
    logger.info("after close")
    assert not path.exists() and type(file_handler.stream) is io.StringIO  # reopened: a stream again
    with pytest.raises(WireError, match="may not hold an object of the candidate.s process"):
        call(judge, "configured_logger", str(path), True)  # a filter that is the candidate's function
    with pytest.raises(WireError, match="handlers that are logging's StreamHandler"):
        call(judge, "configured_logger", str(path), False, True)  # a handler that hands records on


def test_the_import_path_and_sys_readers_cross_as_the_judges_own_and_no_other_function_of_sys_does(channel):
    judge, _ = channel
    path, reader, tracer = call(judge, "named_in_sys")
    assert path is sys.path and reader is sys.getrecursionlimit  # scrapy's load_object("sys.path") is sys.path
    assert isinstance(tracer, repoexec_judge.Handle)  # sys.settrace changes the process: the candidate's own


def test_the_environment_a_test_changes_reaches_the_candidate_and_the_runtimes_own_does_not(channel, monkeypatch):
    judge, _ = channel
    monkeypatch.setenv("RX_SETTING", "on")
    monkeypatch.setenv("REPOEXEC_RX_SECRET", "expected")
    assert call(judge, "environment", "RX_SETTING") == "on"
    assert call(judge, "environment", "REPOEXEC_RX_SECRET") is None
    monkeypatch.delenv("RX_SETTING")
    assert call(judge, "environment", "RX_SETTING") is None


def test_a_candidates_container_cannot_say_it_holds_the_expected_value(channel):
    judge, _ = channel
    bag = call(judge, "always_contains")  # callable: a handle; `in` iterates it and compares here
    assert isinstance(bag, repoexec_judge.Handle) and "expected" not in bag and "wrong" in bag


def test_no_function_the_candidate_names_crosses_inside_an_object(channel):
    """A project object holding ``cProfile.run`` and code (its method calls one on the other), or a method of an
    object of the candidate's (which stays there, a handle), is refused; an object of data crosses, and a function
    by its name crosses alone or in a list (where only a test calls it), as a defaultdict's factory (called with
    no arguments) and in an object of its own package's class (the package's code calling its own function)."""
    import cProfile

    judge, _ = channel
    with pytest.raises(WireError, match="function run may not cross inside another object"):
        call(judge, "deferred", "profiled")
    with pytest.raises(WireError, match="may not hold an object of the candidate's process"):
        call(judge, "deferred", "method")  # the method stays there, a handle
    assert call(judge, "deferred", "data")[0].arg == "x" and call(judge, "deferred", "in a list") == [cProfile.run]
    assert call(judge, "deferred", "own").fire() == ["x"]  # its own package's function, called by its own code
    assert call(judge, "deferred", "tree")["missing"] == [0]  # a defaultdict's factory is called with nothing


def test_a_function_a_projects_function_made_crosses_as_the_judges_own_code_holding_data(channel):
    """An object holding functions its project's ``__init__`` made (scrapy's ``Crawler``, a lambda that removes its
    log handler) crossed as nothing: a handle inside an object is refused. Such a function now crosses by where its
    code stands: the judge makes it of its own copy of the project's code, with its cells, defaults and attributes
    as data (a recursive one through its own cell too). One that holds a function of the candidate's stays a handle
    (inside an object: refused; the answer itself: called in the candidate's process)."""
    judge, _ = channel
    import types

    made = call(judge, "register", "data")
    assert type(made.convert) is types.FunctionType and made.convert.__module__ == "shop.money"
    own = sys.modules["shop.money"].Register.__init__.__code__.co_consts
    assert any(made.convert.__code__ is code for code in own)  # the judge's own code object, not one that crossed
    assert made.convert(2) == 6 and made.convert(2, scale=2) == 12 and made.counted == {"calls": 2}
    made.remove()
    assert made.counted == {}  # the lambda and the method share the dict: one object on the judge's side
    step = call(judge, "register", "recursive")
    assert type(step) is types.FunctionType and step(3) == [3, 2, 1]
    with pytest.raises(WireError, match="may not hold an object of the candidate's process"):
        call(judge, "register", "holding the candidate's")
    wrapped = call(judge, "register", "wrapping the candidate's")
    assert repoexec_wire._handle(wrapped) and wrapped(1) == 2
    seen = []  # the test's function holds a list: it is lent, and the call comes back to the judge
    assert call(judge, "hand_over", lambda register: seen.append(register) or register.convert(5)) == 15
    assert type(seen[0].convert) is types.FunctionType  # so in a call back to the judge, by its code


def test_a_partial_of_a_projects_function_crosses_inside_an_object_of_its_package_only(channel):
    """xarray's lazy arrays hold a ``partial`` of its own decoder bound to data: inside an object of the function's
    own package it crosses as the judge's own function so bound (the package's code calls it on data). As the
    answer itself it stays a handle, called in the candidate's process; inside another package's object it is
    refused, as any handle inside an object; and a candidate's process patched to send it by value as the answer
    is refused by the judge."""
    import functools

    judge, _ = channel
    made = call(judge, "lazy", "inside its package's object")
    assert type(made.function) is functools.partial and made.function.func is sys.modules["shop.money"].scale
    assert made.function.keywords == {"factor": 3} and made.value() == 6
    answer = call(judge, "lazy", "the answer itself")
    assert isinstance(answer, repoexec_judge.Handle) and answer(5) == 15
    with pytest.raises(WireError, match="may not hold an object of the candidate's process"):
        call(judge, "lazy", "inside another package's object")
    with pytest.raises(WireError, match="a partial of scale may cross only inside an object of its function's own"):
        call(judge, "lazy", "forced")


def test_a_function_sent_by_its_code_must_be_the_judges_own_and_hold_data_only(channel):
    """The candidate's process decides nothing here: patched to send a function holding one of the candidate's
    by its code, the judge finds the handle in its cell; a place that holds no such function of the judge's own
    module, the focal module's stub, a test's module and a second fill of a cell are refused."""
    import pickle

    judge, _ = channel
    with pytest.raises(WireError, match="the arguments of fill_cell may not hold an object of the candidate's"):
        call(judge, "register", "forced")

    class Sent:
        def __init__(self, *made):
            self.made = made

        def __reduce__(self):
            return self.made

    def crossed(module, qualname, line, cells=()):
        made = Sent(repoexec_wire.nested_function, (module, qualname, line, cells, None, None, {}, {}))
        roots = [str(Path(sys.modules["shop.money"].__file__).parents[1])]
        return repoexec_wire.loads_checked(pickle.dumps(made, protocol=4), roots, lambda pid: None)

    line = next(c for c in vars(sys.modules["shop.money"])["countdown"].__code__.co_consts
                if getattr(c, "co_name", "") == "step").co_firstlineno
    cell = Sent(repoexec_wire.new_cell, ())
    assert crossed("shop.money", "countdown.<locals>.step", line, (cell,)).__code__.co_name == "step"
    for module, qualname, where in (("shop.money", "countdown.<locals>.step", line + 1),  # not where it stands
                                    ("shop.money", "countdown.<locals>.nothing", line),
                                    ("os", "walk.<locals>.step", line),  # a denied module
                                    ("repoexec_judge", "function.<locals>.stub", line),  # the runtime's
                                    ("shop.money", "Register.<locals>.step", line)):  # a class, not a function
        with pytest.raises(WireError):
            crossed(module, qualname, where, (cell,))
    twice = Sent(repoexec_wire.fill_cell, (cell, (1,)))
    with pytest.raises(WireError, match="only a cell made for the answer may be filled, once"):
        repoexec_wire.loads_checked(pickle.dumps([cell, twice, Sent(repoexec_wire.fill_cell, (cell, (2,)))],
                                                 protocol=4), [], lambda pid: None)


def test_type_hints_named_library_objects_and_a_parser_cross(channel):
    import collections.abc
    import configparser
    import typing

    judge, _ = channel
    optional, union, collection, parser = call(judge, "hints")
    assert optional == typing.Optional[typing.Mapping[str, int]] and union is typing.Union
    assert collection is collections.abc.Collection
    assert type(parser) is configparser.ConfigParser and parser.getint("a", "x") == 1 and parser["a"]["x"] == "1"


def test_the_stub_shows_the_candidates_doc_and_signature_and_builtin_slots_are_the_judges(channel, monkeypatch):
    import inspect

    judge, _ = channel
    monkeypatch.setattr(repoexec_judge, "_CHANNEL", judge)
    stub = repoexec_judge.function("shop.candidate", "described")
    assert stub.__doc__ == "The candidate's own doc." and str(inspect.signature(stub)) == "(a, b=2, *, c)"
    assert stub.__defaults__ == (2,)
    init, bit_length, none_init, function_type, function = call(judge, "slot")
    assert init is object.__init__ and bit_length == (10).bit_length and none_init == None.__init__  # noqa: E711
    assert function_type is type(lambda: None) and repoexec_wire._handle(function) and bool(function)
    assert stub.__code__.co_varnames == ("a", "b", "c", "total") and stub.__code__.co_argcount == 2  # its local too
    assert stub(1, c=0) == 3
    # the judge's own code of the lambda's shape: nothing of the candidate's code (its constants) crosses
    assert function.__code__.co_argcount == 0 and function.__code__.co_name == "shaped" and function() is None
    with pytest.raises(repoexec_judge.CandidateError):  # the judge's code objects never cross
        call(judge, "code_of", (lambda: "expected").__code__)


def test_the_stubs_annotations_are_the_candidates_hints_as_data_and_text_where_refused(channel, monkeypatch):
    """tornado's websocket_connect tests compare its annotations with typing's hints: they cross as any answer
    does (the judge's own typing objects and classes), apart from the doc and signature, so that a hint the judge
    refuses (a class it cannot name) leaves its text and the rest as they are."""
    import inspect
    import typing

    judge, _ = channel
    monkeypatch.setattr(repoexec_judge, "_CHANNEL", judge)
    stub = repoexec_judge.function("shop.candidate", "described")
    from shop.money import Price

    assert stub.__annotations__ == {"a": int, "b": "typing.Optional[Price]", "c": typing.Optional[typing.List[str]],
                                    "return": Price}
    assert str(inspect.signature(stub)) == "(a, b=2, *, c)" and stub.__doc__ == "The candidate's own doc."
    hinted = repoexec_judge.function("shop.candidate", "hinted_locally")
    assert hinted.__annotations__ == {"a": "shop.candidate.Made", "b": int, "mocked": "<ANY>",
                                      "return": typing.Callable[[int], None]}
    assert str(inspect.signature(hinted)) == "(a, b)"


def test_an_object_the_judge_let_go_of_is_let_go_of_in_the_candidates_process(channel):
    """A socket the candidate's function bound stays in its process, a handle; once the test drops it, the next
    call lets it go there too, as beside the test (tornado's bind_sockets tests bind one port in turn)."""
    judge, _ = channel
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sockets = call(judge, "bound_socket", port)
    assert len(sockets) == 1 and isinstance(sockets[0], repoexec_judge.Handle)
    with pytest.raises(OSError, match="Address already in use"):  # still held there
        call(judge, "bound_socket", port)
    del sockets
    assert len(call(judge, "bound_socket", port)) == 1  # let go with this call, before it ran
    assert len(call(judge, "bound_socket", port)) == 1


def test_a_transparent_proxy_of_a_value_crosses_as_that_value(channel):
    """pytutils' dedupe, a wrapt decorator, answers a wrapt proxy around the list it was given; a test takes its
    length. The value it stands for crosses, as data; a proxy that says it is of another class than what it
    wraps does not cross as a value."""
    judge, _ = channel
    items = [3, 1, 2]
    answer = call(judge, "proxied", items)
    assert answer is items and len(answer) == 3  # the judge's own argument, given back
    fresh = call(judge, "proxied", {"a": (1, 2)})
    assert type(fresh) is dict and fresh == {"a": (1, 2)}
    with pytest.raises(repoexec_judge.CandidateError, match="cannot cross"):  # says str, holds an int
        call(judge, "proxied", 7, str)


def test_what_the_candidate_writes_during_a_call_reaches_the_tests_capture_in_order(channel, capsys):
    """pylint's MessageDefinitionStore.list_messages prints, and its test reads capsys: what the call writes to
    sys.stdout and sys.stderr reaches the judge's streams before the answer, and before a callback that writes
    too; the streams keep a descriptor (httpie's code asks for one). A flood is cut at the wire's limit."""
    judge, _ = channel
    assert call(judge, "shout", "first") == 5
    assert capsys.readouterr() == ("first out\n", "first err\n")
    call(judge, "shout", "second", lambda: print("judge's"))
    assert capsys.readouterr() == ("second out\njudge's\nafter True\n", "second err\n")
    call(judge, "flood", 3 << 20)
    assert capsys.readouterr().out == "x" * (1 << 20)
    call(judge, "flood", 0)
    assert capsys.readouterr() == ("", "")
    assert call(judge, "handler").stream is sys.stderr  # the stream it took while the call ran is the judge's


def test_an_object_of_a_module_the_judges_session_collected_tests_from_is_lent_whatever_its_name(
        channel, tmp_path, monkeypatch):
    """pylint names its test files ``unittest_*.py``: a checker class defined there was named to the candidate's
    process, which has no tests to import it from. A module the session collected tests from is a test module:
    where a call's arguments are lent (one does not pickle), its objects are lent too. (Alone, such an object is
    still named: the first pickling lends only what pickle refuses.)"""
    judge, _ = channel
    elsewhere = tmp_path / "tests_of_the_judge"  # on the judge's path only, as a project's tests folder is
    elsewhere.mkdir()
    (elsewhere / "unittest_checkers.py").write_text("class Checker:\n    name = 'achecker'\n")
    monkeypatch.syspath_prepend(str(elsewhere))
    import unittest_checkers

    checker, lent = unittest_checkers.Checker(), open(os.devnull, "rb")  # a file: pickle refuses it, so it is lent
    with pytest.raises(WireError, match="could not rebuild"):  # named there, by a name it cannot import
        call(judge, "echo", [checker, lent])
    monkeypatch.setattr(repoexec_wire, "_TEST_MODULES", {"unittest_checkers"})  # as the inner plugin registers it
    answered = call(judge, "echo", [checker, lent])
    assert answered[0] is checker and answered[1] is lent  # both lent, and given back as the judge's own
    lent.close()
    monkeypatch.delitem(sys.modules, "unittest_checkers")


def test_an_ssl_context_crosses_as_a_new_one_with_the_settings_it_shows(channel):
    """tornado's ssl_options_to_context: a context's protocol, options, verification and versions are data; the
    judge makes its own ssl module's context with them."""
    import ssl

    judge, _ = channel
    server = call(judge, "tls", "server")
    assert type(server) is ssl.SSLContext and server.protocol == ssl.PROTOCOL_TLS_SERVER
    assert server.options & ssl.OP_NO_COMPRESSION and server.minimum_version == ssl.TLSVersion.TLSv1_2
    assert server.verify_mode == ssl.CERT_NONE and not server.check_hostname
    client = call(judge, "tls", "client")
    assert client.protocol == ssl.PROTOCOL_TLS_CLIENT and client.verify_mode == ssl.CERT_OPTIONAL
    assert client.check_hostname
    with pytest.raises(WireError, match="verify_mode"):
        repoexec_wire.ssl_context(int(ssl.PROTOCOL_TLS_CLIENT), {"verify_mode": 99})


def test_the_same_object_answered_twice_is_the_same_object_with_its_new_state(channel):
    judge, _ = channel
    first = call(judge, "cached")
    second = call(judge, "cached")
    assert first is second and second.count == 2


def test_a_module_the_call_imported_is_imported_in_the_judge_where_it_trusts_it(channel, monkeypatch):
    judge, _ = channel
    for name in ("xml.dom.pulldom", "pty"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert call(judge, "lazy_import", "xml.dom.pulldom", "pty") == 2
    import xml.dom
    assert sys.modules["xml.dom.pulldom"] is xml.dom.pulldom  # as a test reading `xml.dom.pulldom` finds it
    assert "pty" not in sys.modules  # a denied module is not imported on the candidate's word


def test_a_value_of_a_class_made_at_run_time_keeps_its_classs_scalar_marks_and_the_bases_behaviour(channel):
    judge, _ = channel
    value = call(judge, "no_map", [1, 2])
    assert isinstance(value, list) and type(value) is not list and value == [1, 2] and value != [9]
    assert getattr(value, "--no-map--") is True and value.depth == 2  # flutes' map_structure reads the mark
    assert not hasattr(value, "shout") and callable(value.append) and type(value).__module__ == "repoexec_wire"
    assert call(judge, "mark_of", {1: value}) == (True, True)  # sent back, it is a marked list there too
    value.seen = True  # as on a value of a class type() made: flutes sets its mark so where it can
    assert value.seen is True

    class Shadowing:  # what a game sends by hand: a mark that would stand in for the base's method
        def __reduce__(self):
            return repoexec_wire.marked, ("x", (("append", 1),), [1])
    with pytest.raises(WireError):
        judge_loads(pickle.dumps(Shadowing()))


def test_a_project_exception_made_with_keywords_crosses_to_the_candidates_process(channel):
    from shop.money import Refused
    judge, _ = channel
    assert call(judge, "fields_of", Refused(code=3, reason="closed")) == ("Refused", 3, "closed")


def test_a_lent_generator_is_iterated_and_never_looked_into(channel):
    judge, _ = channel
    assert call(judge, "total", (x for x in [1, 2, 3])) == 6
    generator = (x for x in [1])
    for name in ("gi_frame", "gi_code"):
        with pytest.raises(AttributeError):
            repoexec_judge._use(generator, "getattr", (name,), {})


# --- the restricted unpickler, on streams a candidate may write by hand -------------------------------------

def judge_loads(data: bytes, roots=()):
    return repoexec_wire.loads_checked(data, list(roots), lambda pid: (_ for _ in ()).throw(WireError("no ids")))


@pytest.mark.parametrize(("stream", "named"), [
    (b"cos\nsystem\n(S'true'\ntR.", "os.system"),  # protocol 0: a global called with arguments
    (b"\x80\x04\x95\x1d\x00\x00\x00\x00\x00\x00\x00\x8c\x08builtins\x94\x8c\x04eval\x94\x93\x94\x8c\x011\x94\x85\x94R\x94.",
     "builtins.eval"),
    (b"cunittest.mock\nANY\n.", "unittest.mock.ANY"),
    (b"csubprocess\nPopen\n.", "subprocess.Popen"),
    (b"(ccollections\nOrderedDict\no.", "instantiation"),  # protocol 0 OBJ: refused outright
])
def test_the_judge_refuses_a_stream_that_names_anything_but_an_allowed_type(stream, named):
    with pytest.raises(WireError) as refused:
        judge_loads(stream)
    assert named.split(".")[-1] in str(refused.value) or named in str(refused.value)


def test_a_partial_binds_only_a_method_of_what_crossed_with_it_or_a_value_type():
    """A library function with the candidate's arguments bound would run the candidate's code in the judge when a
    test calls it (``partial(cProfile.run, code)``); a config parser's sections hold partials of their own methods,
    and ``partial(int, base=2)`` is a value type's constructor: those cross."""
    import configparser
    import cProfile
    import functools

    parser = configparser.ConfigParser()
    parser.read_string("[section]\nkey = 3\n")
    assert judge_loads(repoexec_wire.dumps(parser, as_values=True))["section"].getint("key") == 3
    assert judge_loads(pickle.dumps(functools.partial(int, base=2), protocol=4))("101") == 5
    with pytest.raises(WireError, match="a partial of run may not cross"):
        judge_loads(pickle.dumps(functools.partial(cProfile.run, "raise SystemExit"), protocol=4))

    class Swapped:  # made of a method, then its state (``partial.__setstate__``) puts a function in its place
        def __reduce__(self):
            return functools.partial, (",".join,), (cProfile.run, ("raise SystemExit",), {}, None)

    with pytest.raises(WireError, match="a partial of run may not cross"):
        judge_loads(repoexec_wire.dumps(Swapped(), as_values=True))


def test_a_signature_crosses_as_data_made_by_inspects_own_constructors():
    """What ``inspect.signature`` shows (litestar's route handlers answer theirs) crosses: its parts made from
    data by inspect's own constructors, which check what they are given; nothing else of ``inspect`` does."""
    import inspect
    import os

    def handler(a: int, /, b=1, *args, c: str = "x", **kwargs) -> bool:
        return True

    signature = inspect.signature(handler)
    crossed = judge_loads(repoexec_wire.dumps(signature, as_values=True))
    assert crossed == signature and crossed is not signature
    assert crossed.parameters["c"].kind is inspect.Parameter.KEYWORD_ONLY
    kind = repoexec_wire.dumps(inspect.Parameter.KEYWORD_ONLY, as_values=True)  # by value: Python 3.11.2 names
    assert b"getattr" not in kind and judge_loads(kind) is inspect.Parameter.KEYWORD_ONLY  # some by getattr

    class Unnamed:  # a parameter inspect's constructor refuses
        def __reduce__(self):
            return inspect.Parameter, ("not a name", inspect.Parameter.POSITIONAL_ONLY)

    class Defaulted:  # a default that names a function of a denied module
        def __reduce__(self):
            return inspect.Parameter, ("a", inspect.Parameter.KEYWORD_ONLY), {"_default": os.system,
                                                                               "_annotation": int}

    with pytest.raises(WireError, match="not a valid parameter name"):
        judge_loads(repoexec_wire.dumps(Unnamed(), as_values=True))
    with pytest.raises(WireError, match="posix.system may not cross"):
        judge_loads(repoexec_wire.dumps(Defaulted(), as_values=True))
    with pytest.raises(WireError, match="inspect.getsource may not cross"):
        judge_loads(pickle.dumps(inspect.getsource, protocol=4))


def test_a_project_object_whose_new_takes_arguments_is_made_for_its_state(tmp_path):
    """litestar's ``URL`` has slots and a ``__new__(cls, url)`` that parses: pickled by protocol 2, it comes as
    its class and a state. The judge makes it as a class without a ``__new__`` is made (object's), then sets the
    state as data; a class whose memory a C ``__new__`` lays out (a ``str``'s) is still made by that one."""
    (tmp_path / "url_rx.py").write_text(
        "class URL:\n    __slots__ = ('raw', 'parts')\n"
        "    def __new__(cls, url):\n        made = super().__new__(cls)\n"
        "        made.raw, made.parts = url, tuple(url.split('/'))\n        return made\n"
        "class Name(str):\n    def __new__(cls, value):\n        return super().__new__(cls, value.lower())\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import url_rx

        url, name = judge_loads(pickle.dumps([url_rx.URL("a/b"), url_rx.Name("X")], protocol=4), roots=[str(tmp_path)])
    finally:
        sys.path.remove(str(tmp_path))
    assert (type(url), url.raw, url.parts) == (url_rx.URL, "a/b", ("a", "b"))
    assert (type(name), name) == (url_rx.Name, "x")


def test_no_method_of_a_shaped_library_object_is_bound():
    """A scheduler whose queue holds a call of the candidate's choosing, bound to its ``run``: a test calling what
    it got would make it. The judge binds no such method; a value's does, and a library function by its name
    crosses as the judge's own."""
    import cProfile
    import sched
    import time

    scheduler = sched.scheduler(time.monotonic, time.sleep)
    scheduler._queue = [sched.Event(0, 0, 0, cProfile.run, ("raise SystemExit",), {})]

    class Bound:
        def __reduce__(self):
            return repoexec_wire.bound_method, (scheduler, "run")

    with pytest.raises(WireError, match="a method of a scheduler may not be bound"):
        judge_loads(repoexec_wire.dumps(Bound(), as_values=True))
    import json

    assert judge_loads(repoexec_wire.dumps([",".join, json.dumps], as_values=True)) == [",".join, json.dumps]


def test_no_function_crosses_inside_an_object_its_methods_would_call_it_with_the_candidates_data(tmp_path):
    """A project's object (a lazy value that calls what it holds) or a library's (a scheduler's queue) holding
    ``cProfile.run`` beside a string of code: a test calling the object's method would run the code in the judge.
    Functions cross only as the answer or in plain containers; a project object of data, and a config parser
    (whose sections hold their own methods), cross whole."""
    import cProfile
    import configparser
    import sched
    import time

    (tmp_path / "lazy_rx.py").write_text(
        "class Lazy:\n    def __init__(self, fn, arg):\n        self.fn, self.arg = fn, arg\n"
        "    def get(self):\n        return self.fn(self.arg)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import lazy_rx

        with pytest.raises(WireError, match="function run may not cross inside another object"):
            judge_loads(pickle.dumps(lazy_rx.Lazy(cProfile.run, "raise SystemExit"), protocol=4), roots=[str(tmp_path)])
        assert judge_loads(pickle.dumps([lazy_rx.Lazy(3, "x")], protocol=4), roots=[str(tmp_path)])[0].arg == "x"

    finally:
        sys.path.remove(str(tmp_path))
    scheduler = sched.scheduler(time.monotonic, time.sleep)
    scheduler.enter(0, 0, cProfile.run, ("raise SystemExit",))
    with pytest.raises(WireError, match="may not cross inside another object"):
        judge_loads(repoexec_wire.dumps(scheduler, as_values=True))
    parser = configparser.ConfigParser()
    parser.read_string("[section]\nkey = 3\n")
    assert judge_loads(repoexec_wire.dumps({"parser": parser}, as_values=True))["parser"]["section"].getint("key") == 3


def test_the_judge_refuses_a_class_of_the_tests_own(tmp_path):
    (tmp_path / "test_helpers_rx.py").write_text("class Anything:\n    def __eq__(self, other):\n        return True\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import test_helpers_rx

        with pytest.raises(WireError, match="the tests' own"):
            judge_loads(pickle.dumps(test_helpers_rx.Anything(), protocol=4), roots=[str(tmp_path)])
    finally:
        sys.path.remove(str(tmp_path))


def test_the_judge_refuses_to_set_state_on_a_class():
    # BUILD on the class object itself: would put a candidate's __eq__ on the project's class
    stream = b"cdecimal\nDecimal\n(N}S'__eq__'\nNstb."
    with pytest.raises(WireError, match="may not be set"):
        judge_loads(stream)


def test_the_judge_sets_no_state_on_a_librarys_named_object():
    """``typing.Union`` crosses as the judge's own object: a state after it would change the judge's typing."""
    import typing

    with pytest.raises(WireError, match="may not be set"):
        judge_loads(b"ctyping\nUnion\n(dS'_name'\nS'Any'\nsb.")
    assert typing.Union._name == "Union"


def test_the_judge_refuses_to_set_state_on_a_library_class():
    stream = b"curllib.parse\nParseResult\n(N}S'__eq__'\nNstb."
    with pytest.raises(WireError, match="may not be set"):
        judge_loads(stream)


@pytest.mark.parametrize("stream", [
    b"\x80\x04\x8c\runittest.mock\x94\x8c\x04_ANY\x94\x93\x94)\x81\x94.",  # NEWOBJ of mock.ANY's class
    b"\x80\x04\x8c\x12_pytest.python_api\x94\x8c\x0cApproxScalar\x94\x93\x94)\x81\x94.",
    b"\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93\x94.",
])
def test_the_judge_refuses_mocks_matchers_and_denied_modules_names(stream):
    with pytest.raises(WireError, match="may not cross"):
        judge_loads(stream)


def test_a_class_of_a_denied_module_crosses_as_a_reference_never_made():
    import inspect

    assert judge_loads(pickle.dumps(inspect.BlockFinder, protocol=4)) is inspect.BlockFinder
    with pytest.raises(WireError, match="reference only"):
        judge_loads(pickle.dumps(inspect.BlockFinder(), protocol=4))


def test_the_judge_opens_no_file_for_a_candidate(tmp_path):
    target = tmp_path / "kept"
    target.write_text("the judge's")
    stream = b"c_io\nFileIO\n(S'" + str(target).encode() + b"'\nS'w'\ntR."  # would truncate the file
    with pytest.raises(WireError):
        judge_loads(stream)
    assert target.read_text() == "the judge's"


def test_a_library_object_that_equals_anything_is_refused(tmp_path, monkeypatch):
    (tmp_path / "matchlib_rx.py").write_text(
        "class Anything:\n    def __eq__(self, other):\n        return getattr(self, 'on', True)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(repoexec_wire, "_LIBRARY_ROOTS", (*repoexec_wire._LIBRARY_ROOTS, str(tmp_path) + "/"))
    import matchlib_rx

    with pytest.raises(WireError, match="equals anything"):
        judge_loads(pickle.dumps(matchlib_rx.Anything(), protocol=4))
    shy = matchlib_rx.Anything()
    shy.on = False
    assert type(judge_loads(pickle.dumps(shy, protocol=4))) is matchlib_rx.Anything


def test_standard_values_cross_unchanged():
    import collections
    import datetime
    import decimal
    import fractions
    import pathlib

    values = [1, 2.5, "s", b"b", None, [1, {2: (3,)}], {1, 2}, frozenset({3}), collections.Counter("aab"),
              collections.OrderedDict(a=1), collections.deque([1]), datetime.date(2020, 1, 2),
              datetime.datetime(2020, 1, 2, 3, 4, tzinfo=datetime.timezone.utc), decimal.Decimal("1.10"),
              fractions.Fraction(1, 3), pathlib.PurePosixPath("/a/b"), ValueError("x"), range(3), complex(1, 2)]
    for value in values:
        back = judge_loads(pickle.dumps(value, protocol=4))
        assert type(back) is type(value) and (back == value or isinstance(value, BaseException))


def test_builtin_data_is_read_in_c_and_anything_named_by_the_checked_reader():
    """A message of builtin data alone is read by pickle's C unpickler, which names and refers to nothing; one
    that names a class or refers to an object is not (the checked reader reads it, and refuses what it refuses)."""
    shared = [1, "a"]
    value = [shared, shared, {"k": (1.5, None, b"x", True)}, {1, 2}, frozenset({3}), 10 ** 30, -0.0]
    data = pickle.dumps(value, protocol=4)
    back = repoexec_wire._PlainUnpickler(io.BytesIO(data)).load()
    assert back == value and back[0] is back[1] and judge_loads(data) == value
    for named in (pickle.dumps(collections.OrderedDict(a=1), protocol=4), b"cos\nsystem\n(S'true'\ntR."):
        with pytest.raises(repoexec_wire._NotPlain):
            repoexec_wire._PlainUnpickler(io.BytesIO(named)).load()
    with pytest.raises(WireError, match="os.system"):
        judge_loads(b"cos\nsystem\n(S'true'\ntR.")


def _pickled_answer(value, pid_of):
    """An answer message as the candidate's process writes it: ``pid_of`` gives the objects sent as references."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=4)
    pickler.persistent_id = pid_of
    pickler.dump(value)
    return buffer.getvalue()


def _read_both_ways(data, persistent):
    """(what ``loads_checked`` made, what the checked reader alone made): each a value, or ``WireError`` where it
    refused the message (``loads_checked`` tells any error of the checked reader as one)."""
    def outcome(read):
        try:
            return read()
        except Exception:  # noqa: BLE001 (refused, whatever the reader's own error)
            return WireError
    return (outcome(lambda: repoexec_wire.loads_checked(data, [], persistent)),
            outcome(lambda: repoexec_wire.JudgeUnpickler(data, [], persistent).load()))


def test_an_answer_that_is_one_reference_is_read_in_c_as_the_checked_reader_reads_it():
    """A call's answer that is a reference alone (a handle: pyMonet's ``memoize`` answers a function ten thousand
    times in one test) is read by pickle's C unpickler and the reference resolved after; a reference anywhere
    else, two of them, or one an opcode acts on (a memo's copy put in a dict, a BUILD) goes to the checked
    reader. Either way the message is what the checked reader alone makes of it."""
    judges = {("judge", 1): ["the judge's own"], ("judge", 2): ["another"]}
    persistent = judges.__getitem__
    marker = object()
    bare = _pickled_answer(("return", 7, {}, marker), lambda obj: ("judge", 1) if obj is marker else None)
    message, pid = repoexec_wire._plain(bare)
    assert pid == ("judge", 1) and message[:3] == ("return", 7, {})
    assert _read_both_ways(bare, persistent) == (("return", 7, {}, judges[("judge", 1)]),) * 2
    assert repoexec_wire.loads_checked(bare, [], persistent)[3] is judges[("judge", 1)]

    two = _pickled_answer(("return", 7, {"k": marker}, marker), lambda obj: ("judge", 1) if obj is marker else None)
    # by hand: ("return", 7, {...}, <the reference>), the reference also put in the dict by the memo (one marker,
    # two places), or given a state by BUILD
    start, pid = b"\x80\x04(\x8c\x06returnK\x07}", b"\x8c\x05judgeK\x01\x86Q"
    memo = start + b"\x8c\x01k" + pid + b"\x94sh\x00t."  # MEMOIZE, SETITEM, BINGET 0, TUPLE
    shaped = start + pid + b"}\x8c\x01aK\x01sbt."  # a state {"a": 1}, BUILD
    for data in (two, memo, shaped):
        with pytest.raises(Exception):
            repoexec_wire._plain(data)
        both = _read_both_ways(data, persistent)
        assert both[0] == both[1], both
    made = repoexec_wire.loads_checked(memo, [], persistent)
    assert made[2]["k"] is made[3] is judges[("judge", 1)]
    with pytest.raises(WireError):
        repoexec_wire.loads_checked(_pickled_answer(("return", 7, {}, marker), lambda obj: "not a tuple"
                                                    if obj is marker else None), [], judges.__getitem__)


def test_a_message_bigger_than_the_limit_is_not_read():
    ours, theirs = socket.socketpair()
    theirs.sendall((repoexec_wire.MESSAGE_LIMIT + 1).to_bytes(8, "big"))
    with pytest.raises(WireError, match="bytes"):
        repoexec_wire.receive(ours)


# --- whole runs ------------------------------------------------------------------------------------------

HONEST_PROBLEMS = ("textkit/slugify", "textkit/word_frequencies", "ledger/money_add")

# What a candidate apart must not find: its tests' file, their expected values, the inner plugin's state, a
# verdict pipe. It raises Reached where it finds any: so it passes only where it reached nothing.
REACH = r'''
    import glob
    import os
    import sys

    class Reached(Exception):
        pass

    here = os.path.dirname(os.path.abspath(__file__))
    found = glob.glob(os.path.join(here, "test_*.py")) + glob.glob(os.path.join(here, "__pycache__", "test_*"))
    found += [path for path in ("/repoexec/expected",) if os.path.exists(path)]
    if found:
        raise Reached(str(found))
    inner = sys.modules.get("repoexec_inner")
    if inner is not None and getattr(inner, "_RECORDER", None) is not None:
        raise Reached("the inner plugin's recorder")
    if any(name.rpartition(".")[2].startswith("test_") for name in list(sys.modules)):
        raise Reached("a test module is imported here")
'''


@pytest.mark.timeout(900)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_honest_idioms_pass_apart_and_a_candidate_reaches_nothing_of_its_tests(run_repoexec, pytester, executor):
    completions = {}
    for name in HONEST_PROBLEMS:
        reference = load_problem(SHIPPED / name / "problem.toml").reference
        completions[name] = [honest(reference, idiom) for idiom in IDIOMS]
        header, _, body = reference.strip("\n").partition("\n")
        completions[name].append(header + "\n" + textwrap.indent(textwrap.dedent(REACH).strip("\n"), "    ")
                                 + "\n" + body + "\n")
    replay = write_replay(pytester.path / "honest.jsonl", completions)
    result, report = run_repoexec(*(str(SHIPPED / name) for name in HONEST_PROBLEMS), f"--repoexec-model=replay:{replay}",
                                  f"--repoexec-executor={executor}", "--repoexec-timeout-factor=0", subprocess=True)
    assert report is not None, "\n".join(result.outlines[-30:])
    failed = [(s["problem"], s["sample"], s["error_type"], (s["error_log"] or "")[-400:])
              for s in report["samples"] if not s["passed"]]
    assert failed == []
    assert {s["judge"] for s in report["samples"]} == {"apart"}
    assert len(report["samples"]) == len(HONEST_PROBLEMS) * (len(IDIOMS) + 1)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_answers_reshaped_as_the_candidates_own_values_pass_apart_on_every_shipped_problem(run_repoexec, pytester,
                                                                                            executor):
    """Issue 40: an answer returned as an instance of a subclass of its type made in the function, or a dict as a
    nested defaultdict with a lambda factory, is honest: on each of the 24 shipped problems it passes, apart."""
    folders = sorted(path.parent for path in SHIPPED.glob("*/*/problem.toml"))
    completions = {f"{folder.parent.name}/{folder.name}": [reshaped(load_problem(folder / "problem.toml").reference)]
                   for folder in folders}
    replay = write_replay(pytester.path / "reshaped.jsonl", completions)
    result, report = run_repoexec(*map(str, folders), f"--repoexec-model=replay:{replay}",
                                  f"--repoexec-executor={executor}", "--repoexec-timeout-factor=0",
                                  "--repoexec-timeout=30", subprocess=True)  # 3,999 round trips on a loaded machine
    assert report is not None, "\n".join(result.outlines[-30:])
    failed = [(s["problem"], s["error_type"], (s["error_log"] or "")[-400:]) for s in report["samples"] if not s["passed"]]
    assert failed == []
    assert len(report["samples"]) == 24 and {s["judge"] for s in report["samples"]} == {"apart"}


def test_a_cython_module_function_crosses_to_the_candidate_by_its_name():
    """Cython's module-level functions are builtins whose ``__self__`` is None (pandas' unpickling helpers): left
    to pickle, which sends them by name, not as a method of None, which no process could rebuild."""
    from numpy.random import _generator

    function = getattr(_generator, "__pyx_unpickle_Enum")
    assert function.__self__ is None
    assert repoexec_wire.converted(function) is NotImplemented
    assert repoexec_wire.converted((10).bit_length)[0] is repoexec_wire.bound_method  # a value's method still is one


LEAKED_THREAD = '''
import threading as _threading
_threading.Thread(target=__import__("time").sleep, args=(60,)).start()  # not a daemon: the process cannot end
'''


@pytest.mark.timeout(300)
def test_a_program_that_never_ends_fails_apart_as_beside_its_tests(run_repoexec, pytester):
    """A judge's process ends at its Finish record (what pytest does after it reaches no one), but the sample's
    program is the candidate's: a correct body that leaves a thread running, so that its program never ends,
    fails as a hang fails any program, beside its tests (its process outlives its session) and apart (the
    candidate's process outlives the judge's session; issue 40's workload found four pytutils mutants that
    passed apart so, and had timed out beside their tests)."""
    name = "textkit/slugify"
    header, _, body = load_problem(SHIPPED / name / "problem.toml").reference.strip("\n").partition("\n")
    leaking = header + "\n" + textwrap.indent(LEAKED_THREAD.strip("\n"), "    ") + "\n" + body + "\n"
    replay = write_replay(pytester.path / "leak.jsonl", {name: [leaking]})
    outcomes = {}
    for judge, executor in (("apart", "warm"), ("apart", "process"), ("in-process", "warm")):
        result, report = run_repoexec(str(SHIPPED / name), f"--repoexec-model=replay:{replay}",
                                      f"--repoexec-judge={judge}", f"--repoexec-executor={executor}",
                                      "--repoexec-fresh", subprocess=True)
        assert report is not None, "\n".join(result.outlines[-30:])
        sample, = report["samples"]
        outcomes[judge, executor] = (sample["judge"].partition(":")[0], sample["passed"], sample["error_type"])
    assert outcomes == {("apart", "warm"): ("apart", False, "Timeout"), ("apart", "process"): ("apart", False, "Timeout"),
                        ("in-process", "warm"): ("in-process", False, "Timeout")}


@pytest.mark.timeout(300)
def test_a_problem_that_cannot_be_judged_apart_is_judged_beside_its_candidate_only_when_the_run_says_so(
        run_repoexec, pytester):
    """The engine never picks the weaker guarantee on its own (issue 40): by default such a problem's samples
    get no verdict, left out of the metrics with why and the option that allows it; the option judges them beside
    the candidate, saying so; and the gate turns the problem away."""
    project = write_one_problem(pytester.path, KEPT_STATE, "remember", KEPT_STATE_TESTS)
    result, report = run_repoexec(str(project), "--repoexec-fresh", subprocess=True)
    assert report is not None, "\n".join(result.outlines[-30:])
    assert report["samples"] == [] and result.ret == pytest.ExitCode.TESTS_FAILED
    (entry,) = report["not_run"]
    assert "keeper/remember is not judged" in entry["reason"], entry
    assert "test_remember passed in-process, failed apart" in entry["reason"], entry
    assert "--repoexec-judge=apart-or-in-process" in entry["reason"], entry

    result, report = run_repoexec(str(project), "--repoexec-fresh", "--repoexec-judge=apart-or-in-process",
                                  subprocess=True)
    (sample,) = report["samples"]
    assert sample["passed"] and sample["judge"].startswith("in-process: the reference's outcomes differ"), sample
    assert report["judge"]["problems_in_process"] == {"keeper/remember": sample["judge"].partition(": ")[2]}

    result, report = run_repoexec(str(project), "--repoexec-validate", "--repoexec-reruns=2", "--repoexec-mutants=0",
                                  subprocess=True)
    (row,) = report["problems"]
    assert not row["passed"]
    assert any(reason.startswith("not judged apart from its candidate: the reference's outcomes differ")
               for reason in row["reasons"]), row["reasons"]


MANY_CALLS = '''
def double(x):
    return 2 * x
'''

MANY_CALLS_TESTS = '''
from keeper.state import double


def test_many_calls():
    assert sum(map(double, range(300_000))) == 300_000 * 299_999
'''


@pytest.mark.timeout(300)
def test_a_judges_decision_that_a_time_limit_made_is_made_again_by_the_next_run(run_repoexec, pytester,
                                                                                 repoexec_cache):
    """A test past its limit may be the host's doing (a loaded machine: RepoExec's validation, run while the
    environments were built, kept pyMonet's ``memoize`` beside its candidate, and the decision was kept in the
    cache for every later run). Here the split's round trips alone take the test past its 1 s limit: the
    problem is judged beside its candidate, saying why, and the decision is tried again and never kept."""
    project = write_one_problem(pytester.path, MANY_CALLS, "double", MANY_CALLS_TESTS)
    for _ in range(2):
        result, report = run_repoexec(str(project), "--repoexec-fresh", "--repoexec-judge=apart-or-in-process",
                                      "--repoexec-timeout=1", subprocess=True)
        assert report is not None, "\n".join(result.outlines[-30:])
        (sample,) = report["samples"]
        assert sample["passed"], sample
        assert "test_many_calls passed in-process, failed apart" in sample["judge"], sample["judge"]
        assert sample["judge"].endswith("the first went past its time limit: a later run decides again"), \
            sample["judge"]
    kept = [path for path in (repoexec_cache / "judge").glob("*.json") if "test_many_calls" in path.read_text()]
    assert kept == []


CALLING_FOR_A_WHILE = '''
def seconds_of_calls(_):
    return 7.5
'''

CALLING_FOR_A_WHILE_TESTS = '''
import time

import repoexec_judge
from keeper.state import seconds_of_calls


def test_calls_for_a_while():
    if repoexec_judge._CHANNEL is None:  # beside its candidate its calls would cost nothing: nothing to time
        return
    started = time.monotonic()
    while time.monotonic() - started < seconds_of_calls(0):
        pass
'''


@pytest.mark.timeout(300)
def test_a_test_judged_apart_is_given_its_calls_across_up_to_its_limit_again(run_repoexec, pytester):
    """The crossing is the host's time: apart, the reference's test calls across for 7.5 s (thousands of round
    trips) in a 5 s limit, and passes, so the problem is judged apart (nor does the engine take the test for stuck
    2 s past its limit); a candidate whose answer keeps the test calling for 12 s is stopped as a ``Timeout``: the
    allowance is at most the limit again."""
    project = write_one_problem(pytester.path, CALLING_FOR_A_WHILE, "seconds_of_calls", CALLING_FOR_A_WHILE_TESTS)
    replay = write_replay(pytester.path / "slow.jsonl", {"keeper/seconds_of_calls": [
        "def seconds_of_calls(_):\n    return 7.5\n", "def seconds_of_calls(_):\n    return 12\n"]})
    result, report = run_repoexec(str(project), "--repoexec-fresh", f"--repoexec-model=replay:{replay}",
                                  "--repoexec-timeout=5", subprocess=True)
    assert report is not None, "\n".join(result.outlines[-30:])
    honest, slow = sorted(report["samples"], key=lambda sample: sample["sample"])
    assert honest["judge"] == "apart" and honest["passed"], honest
    assert slow["judge"] == "apart" and not slow["passed"] and slow["error_type"] == "Timeout", slow


DISPATCHED = '''\
import functools


@functools.singledispatch
def shown(value):
    """``value`` as text."""
    return f"value {value!r}"


@shown.register(bytes)
def _shown_bytes(value):
    return shown(value.decode())


@shown.register
def _shown_int(value: int):
    return shown(str(value * 2))
'''

DISPATCHED_TESTS = '''\
from .state import shown


def test_text():
    assert shown("a") == "value 'a'"


def test_bytes():
    assert shown(b"b") == "value 'b'"


def test_int():
    assert shown(2) == "value '4'"
'''


@pytest.mark.timeout(300)
def test_a_single_dispatch_function_is_judged_apart_its_overloads_called_where_they_were_registered(
        run_repoexec, pytester):
    """The module registers its overloads on the target (flutils' normalize_path): the judge's stub takes each
    registration as it is, and the candidate's process, on whose function they were registered, dispatches."""
    project = write_one_problem(pytester.path, DISPATCHED, "shown", DISPATCHED_TESTS)
    wrong = DISPATCHED.split("\n\n\n")[1].replace('f"value {value!r}"', 'f"value {value}"')
    replay = write_replay(pytester.path / "wrong.jsonl", {"keeper/shown": [wrong]})
    outcomes = [one_sample(run_repoexec, project, f"--repoexec-model={model}")
                for model in ("reference", f"replay:{replay}")]
    assert outcomes == [(True, "apart", 3), (False, "apart", 0)]


FOLDERS = '''\
import os
import pathlib


def ensure(path):
    """Make the folder ``path`` and its parents; answer it."""
    if os.path.isabs(path):
        os.makedirs(path, mode=0o750, exist_ok=True)
    else:
        pathlib.Path(path).mkdir(parents=True, exist_ok=True)
    return path
'''
FOLDERS_TESTS = '''\
import importlib.util
import os
import stat

from .state import ensure


def test_a_folder_and_its_parents():
    assert os.path.isdir(ensure("/tmp/made/here/too"))
    assert stat.S_IMODE(os.stat("/tmp/made/here/too").st_mode) == 0o750
    assert os.path.isdir("/tmp/made/here")


def test_a_relative_folder_in_home():
    os.chdir(os.path.expanduser("~"))
    ensure("relative/one")
    with open(os.path.expanduser("~/relative/one/written.txt"), "w") as written:  # the test's own file in it
        written.write("kept")


def test_nothing_importable():
    ensure("/tmp/plain")
    assert importlib.util.find_spec("planted") is None
'''
PLANTING = '''\
def ensure(path):
    import os
    import sys
    os.makedirs(path, mode=0o750, exist_ok=True)
    for entry in sys.path:  # a namespace package of that name wherever the judge might import from
        try:
            os.makedirs(os.path.join(entry or ".", "planted"), exist_ok=True)
        except OSError:
            pass
    return path
'''


@pytest.mark.timeout(300)
def test_folders_the_candidate_made_are_made_in_the_judge_but_never_where_they_could_be_imported(
        run_repoexec, pytester):
    """flutils' ``directory_present``: the test looks for the folders the call made, in the judge's own root.
    The candidate's process tells where it made folders; the judge makes empty ones of its own, except where the
    import system would find one as a package (a candidate planting ``planted`` in every folder of its import
    path fails nothing, and the judge imports nothing of it)."""
    project = write_one_problem(pytester.path, FOLDERS, "ensure", FOLDERS_TESTS)
    replay = write_replay(pytester.path / "planting.jsonl", {"keeper/ensure": [PLANTING]})
    runs = (("reference", "apart"), (f"replay:{replay}", "apart"), ("reference", "in-process"))
    outcomes = [one_sample(run_repoexec, project, f"--repoexec-model={model}", f"--repoexec-judge={judge}")
                for model, judge in runs]
    assert outcomes == [(True, "apart", 3), (True, "apart", 3), (True, "in-process", 3)]


PATCHED = '''\
class Clock:
    def now(self):
        return 0


def helper(said="nothing"):
    return said


def stamp():
    """What the module's helper says, and a clock's time."""
    return helper(said="real"), Clock().now()
'''
PATCHED_TESTS = '''\
from unittest import mock

from . import state


def test_a_mock_patched_on_the_module():
    with mock.patch("keeper.state.helper", return_value="mocked") as helper:
        assert state.stamp() == ("mocked", 0)
        assert helper.call_count == 1
    assert state.stamp() == ("real", 0)


def test_a_method_monkeypatched_on_a_class(monkeypatch):
    monkeypatch.setattr(state.Clock, "now", lambda self: 42)
    assert state.stamp() == ("real", 42)


def test_a_method_patched_with_a_mock():
    with mock.patch.object(state.Clock, "now", return_value=7) as now:
        assert state.stamp() == ("real", 7)
    assert now.call_count == 1 and state.stamp() == ("real", 0)


def test_a_spy_sees_the_keywords_it_was_called_with():
    with mock.patch("keeper.state.helper", autospec=True, side_effect=state.helper) as helper:
        assert state.stamp() == ("real", 0)
    assert helper.call_args.args == () and helper.call_args.kwargs == {"said": "real"}
'''


@pytest.mark.timeout(300)
def test_what_a_test_patches_on_a_module_or_class_is_patched_in_the_candidates_process_too(
        run_repoexec, pytester):
    """litestar's ``mocker.patch("...UploadFile.close")`` counts the closes the class under test makes: the code
    under test, in the candidate's process, calls the test's mock (lent: its calls come back to the judge, where
    the test counts them), and gets its own back where the test's patch ends. A function lent that takes
    ``(*args, **kwargs)`` and shows another signature (an autospec'd mock: pytest-mock's spy, whose
    ``call_args[1]["module_height"]`` pvlib's tests read) gets the keywords as they were passed. A candidate that
    does not call the helper fails as beside the tests."""
    project = write_one_problem(pytester.path, PATCHED, "stamp", PATCHED_TESTS)
    wrong = PATCHED.split("\n\n\n")[2].replace('return helper(said="real"), Clock().now()',
                                                'return "real", Clock().now()')
    replay = write_replay(pytester.path / "wrong.jsonl", {"keeper/stamp": [wrong]})
    runs = (("reference", "warm"), ("reference", "process"), (f"replay:{replay}", "warm"))
    outcomes = [one_sample(run_repoexec, project, f"--repoexec-model={model}", f"--repoexec-executor={executor}")
                for model, executor in runs]
    assert outcomes == [(True, "apart", 4), (True, "apart", 4), (False, "apart", 2)]


def test_only_patches_on_the_projects_own_modules_and_classes_are_told_to_the_candidates_process(
        tmp_path, monkeypatch):
    """pytest itself patches twisted's ``Failure.__init__`` around every test (its unittest plugin): told to the
    candidate's process, every ``Failure`` made there ran a function lent by the judge (31 of scrapy's samples
    changed). A library's class or module, and the tests' own, stay where they are; the project's are told, and
    the ``time`` module's (a test's stopped clock)."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("class Thing:\n    pass\n")
    (tmp_path / "proj" / "test_thing.py").write_text("class Fixture:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import proj
    import proj.test_thing

    roots = [str(tmp_path)]
    assert repoexec_judge._where(proj, roots) == ("module", "proj")
    assert repoexec_judge._where(proj.Thing, roots) == ("class", "proj", "Thing")
    assert repoexec_judge._where(time, roots) == ("module", "time")  # the standard library's clock, all the same
    assert [repoexec_judge._where(target, roots) for target in (json, json.JSONDecoder, pytest.MonkeyPatch,
                                                                 proj.test_thing, proj.test_thing.Fixture)] == [None] * 5


DOUBLED = '''\
def doubled(value):
    """Twice ``value``."""
    return value * 2
'''
CAPTURED_TESTS = '''\
import os
import sys

from .state import doubled


def test_printed(capsys):
    print(doubled(2))
    assert capsys.readouterr().out == "4\\n"


def test_written_to_its_descriptor(capfd):
    os.write(1, str(doubled(3)).encode())
    assert capfd.readouterr().out == "6"


def test_output_has_a_descriptor():  # as httpie's code, run by its tests, asks
    assert sys.stdout.fileno() >= 0 and doubled(0) == 0
'''
LOGGED_TESTS = '''\
import logging

from .state import doubled


def test_logged(caplog):
    with caplog.at_level(logging.INFO):
        logging.getLogger("keeper").info("got %s", doubled(4))
    assert caplog.messages == ["got 8"]
'''


@pytest.mark.timeout(300)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_judge_without_the_logging_plugin_still_gives_the_tests_their_capture_fixtures(
        run_repoexec, pytester, executor):
    """A judge runs without the logging plugin where its test module asks for no ``caplog`` (the first module
    here), with it where it does (the second): tests that read their own output (``capsys``, ``capfd``) and logs
    (``caplog``) pass apart with the reference, and fail with a wrong candidate. A test asks ``sys.stdout`` for
    its descriptor, which pytest's capture at Python's level alone would refuse (httpie's code does)."""
    wrong = DOUBLED.replace("value * 2", "value * 3")
    outcomes = []
    for name, tests in (("captured", CAPTURED_TESTS), ("logged", LOGGED_TESTS)):
        project = write_one_problem(pytester.path / name, DOUBLED, "doubled", tests)
        replay = write_replay(pytester.path / name / "wrong.jsonl", {"keeper/doubled": [wrong]})
        outcomes += [one_sample(run_repoexec, project, f"--repoexec-model={model}", f"--repoexec-executor={executor}")
                     for model in ("reference", f"replay:{replay}")]
    assert outcomes == [(True, "apart", 3), (False, "apart", 1), (True, "apart", 1), (False, "apart", 0)]


PLAIN_AND_NOT_TESTS = '''\
import pytest

from .state import doubled


def test_skipped_by_itself():
    if doubled(1) == 3:
        pytest.skip("tripled")
    assert doubled(1) == 2


def test_xfailed_by_itself():
    if doubled(2) == 6:
        pytest.xfail("tripled")
    assert doubled(2) == 4


def test_plain():
    assert doubled(2) == 4


@pytest.mark.skipif(False, reason="never")
def test_marked():
    assert doubled(3) == 6


def test_with_a_fixture(tmp_path):
    (tmp_path / "six").write_text(str(doubled(3)))
    assert (tmp_path / "six").read_text() == "6"


def test_raises_inside():
    with pytest.raises(TypeError):
        doubled(None)
'''


@pytest.mark.timeout(300)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_plain_tests_keep_pytests_outcomes_in_a_judge(run_repoexec, pytester, executor):
    """A judge runs a test with no fixture and no mark with the hooks and reports of its call alone: a skip or
    xfail the test raises itself, an exception it expects, and a failing assertion (pytest's explanation in
    the log) come out as pytest's own runner gives them, beside tests with a fixture or a mark that run the
    whole protocol. (A skipped test fails its sample, as it always has.)"""
    project = write_one_problem(pytester.path, DOUBLED, "doubled", PLAIN_AND_NOT_TESTS)
    tripled = DOUBLED.replace("value * 2", "value * 3")
    off_at_two = DOUBLED.replace("value * 2", "value * 2 if value != 2 else 5")
    replay = write_replay(pytester.path / "wrong.jsonl", {"keeper/doubled": [tripled, off_at_two]})
    seen, logs = [], []
    for model in ("reference", f"replay:{replay}"):
        result, report = run_repoexec(str(project), "--repoexec-fresh", f"--repoexec-model={model}",
                                      f"--repoexec-executor={executor}", subprocess=True)
        assert report is not None, "\n".join(result.outlines[-30:])
        for sample in sorted(report["samples"], key=lambda sample: sample["sample"]):
            seen.append((sample["passed"], sample["judge"], sample["tests_passed"], sample["tests_total"],
                         sample["failed_test"], sample["error_type"]))
            logs.append(sample["error_log"] or "")
    assert seen == [(True, "apart", 6, 6, None, None),
                    (False, "apart", 1, 6, "test_skipped_by_itself", "Skipped"),
                    (False, "apart", 4, 6, "test_xfailed_by_itself", "AssertionError")]
    assert "assert 5 == 4" in logs[2], logs[2]


DEADLINES = '''\
import time


def expired(deadline):
    """Whether ``deadline`` (an aware datetime) has passed."""
    return time.time() >= deadline.timestamp()
'''
DEADLINES_TESTS = '''\
import datetime

from unittest import mock

import time_machine

from keeper.state import expired

START = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)


def test_a_frozen_clock_and_its_shift():
    deadline = START + datetime.timedelta(seconds=1)
    with time_machine.travel(START, tick=False) as traveller:
        assert not expired(deadline)
        traveller.shift(1)
        assert expired(deadline)
    assert expired(datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5))


def test_a_ticking_clock():
    with time_machine.travel(START):
        assert not expired(START + datetime.timedelta(days=1)) and expired(START)
    assert expired(START + datetime.timedelta(days=1))


def test_a_patched_time_function():
    with mock.patch("time.time", return_value=START.timestamp()):
        assert not expired(START + datetime.timedelta(seconds=1)) and expired(START)
    assert expired(START + datetime.timedelta(seconds=1))
'''


@pytest.mark.timeout(600)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_the_candidates_clock_is_the_judges_where_a_test_travelled_with_time_machine(run_repoexec, pytester,
                                                                                      executor):
    """litestar's stores and sessions expire by the clock, which their tests move with time-machine, or stop by
    patching ``time.time``, in the judge: the candidate's process travels to the judge's time at each call, frozen
    or ticking, and back to the real clock where the test's travel ended, and its ``time.time`` is the test's mock
    while the patch lasts. Its own clock would fail the reference apart (2020 is past)."""
    project = write_one_problem(pytester.path, DEADLINES, "expired", DEADLINES_TESTS)
    manifest = project / "project.toml"
    manifest.write_text('requirements = ["time-machine"]\n\n' + manifest.read_text())
    assert one_sample(run_repoexec, project, f"--repoexec-executor={executor}") == (True, "apart", 3)
