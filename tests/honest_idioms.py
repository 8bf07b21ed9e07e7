"""What honest candidates do (issue 33): each idiom runs at the start of a correct body, before the reference's own.

In-process, several of these were judged ``Tampered`` by the defences that watched the candidate beside its tests
(an import inside the function that loads a module not yet loaded, a local class with ``__eq__``, a thread pool
with a subprocess). Judged apart, each must pass: the candidate's process has nothing to refuse it.
"""

from __future__ import annotations

import textwrap

IDIOMS: dict[str, str] = {
    "imports_inside": r"""
        import asyncio, statistics, concurrent.futures, urllib.request, http.client, doctest, unittest.mock
        import json, csv, decimal, fractions, string, itertools
        assert statistics.mean([1, 2, 3]) == 2
        """,
    "asyncio": r"""
        import asyncio

        async def twice(x):
            await asyncio.sleep(0)
            return 2 * x
        assert asyncio.run(twice(2)) == 4
        """,
    "threads": r"""
        import threading
        box = []
        worker = threading.Thread(target=box.append, args=(1,))
        worker.start()
        worker.join()
        assert box == [1]
        """,
    "thread_pool_and_subprocess": r"""
        import concurrent.futures
        import subprocess
        import sys
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            done = pool.submit(subprocess.run, [sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
            assert done.result().stdout.strip() == "42"
        """,
    "multiprocessing_fork": r"""
        import multiprocessing
        context = multiprocessing.get_context("fork")
        child = context.Process(target=sum, args=([1, 2],))
        child.start()
        child.join()
        assert child.exitcode == 0
        """,
    "logging": r"""
        import logging
        logging.getLogger("honest").warning("computing %s", "value")
        logging.getLogger("honest").debug("details", stack_info=True)
        """,
    "warnings": r"""
        import warnings
        warnings.warn("this is deprecated", DeprecationWarning, stacklevel=2)
        """,
    "traceback_and_frames": r"""
        import sys
        import traceback
        traceback.format_stack()
        assert sys._getframe(0).f_code.co_name
        try:
            raise KeyError("x")
        except KeyError:
            traceback.format_exc()
        """,
    "dataclasses_enums_namedtuples": r"""
        import collections
        import dataclasses
        import enum

        @dataclasses.dataclass(frozen=True)
        class Point:
            x: int
            y: int

        class Colour(enum.Enum):
            RED = 1
            GREEN = 2

        Pair = collections.namedtuple("Pair", "left right")
        assert Point(1, 2) == Point(1, 2) and Colour(2) is Colour.GREEN and Pair(1, 2).right == 2
        """,
    "local_class_with_eq": r"""
        class Key:
            def __init__(self, value):
                self.value = value

            def __eq__(self, other):
                return isinstance(other, Key) and self.value == other.value

            def __hash__(self):
                return hash(self.value)
        assert len({Key(1), Key(1), Key(2)}) == 2
        """,
    "inspect_own_function": r"""
        import inspect
        own = globals()[(lambda: 0).__qualname__.split(".<locals>")[0].split(".")[0]]
        inspect.signature(own if callable(own) else len)
        inspect.getsource(own)
        """,
    "reads_own_module_file": r"""
        with open(__file__, encoding="utf-8") as handle:
            assert "def " in handle.read()
        """,
    "files_and_gc": r"""
        import gc
        import os
        import pickle
        import tempfile
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "scratch.pkl")
            with open(path, "wb") as handle:
                pickle.dump({"a": [1, 2]}, handle)
            with open(path, "rb") as handle:
                assert pickle.load(handle) == {"a": [1, 2]}
        gc.collect()
        """,
    "caches_and_generators": r"""
        import functools
        import re

        @functools.lru_cache(maxsize=None)
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        squares = (i * i for i in range(5))
        assert fib(20) == 6765 and sum(squares) == 30 and re.compile(r"\d+").findall("a1b22") == ["1", "22"]
        """,
    "signals_and_time": r"""
        import faulthandler
        import os
        import signal
        import time
        faulthandler.is_enabled()
        previous = signal.signal(signal.SIGUSR1, lambda number, frame: None)
        os.kill(os.getpid(), signal.SIGUSR1)
        signal.signal(signal.SIGUSR1, previous)
        time.sleep(0.01)
        """,
}


def honest(reference: str, idiom: str) -> str:
    """The reference with ``idiom`` run first in its body (after its header line)."""
    header, _, body = reference.strip("\n").partition("\n")
    return header + "\n" + textwrap.indent(textwrap.dedent(IDIOMS[idiom]).strip("\n"), "    ") + "\n" + body + "\n"


# What an honest body may do with its answer (issue 40): the value returned as an instance of a subclass of its
# type made in the function, a dict as a nested defaultdict whose factory is a lambda (as RepoExec's published
# phi-2 completion of luigi's ``_group_tasks_by_name_and_status`` does). Judged apart, each crosses as data.
RESHAPED = r"""
    def _reshaped(value):
        import collections
        import datetime
        if type(value) is dict:
            made = collections.defaultdict(lambda: collections.defaultdict(list))
            made.update(value)
            return made
        if type(value) is datetime.date:
            return type("OwnDate", (datetime.date,), {})(value.year, value.month, value.day)
        if type(value) in (str, int, float, tuple, list, collections.Counter):
            return type("Own", (type(value),), {"__doc__": "a subclass made in the function"})(value)
        return value
    """


def reshaped(reference: str) -> str:
    """The reference with each of its own ``return`` values passed through ``RESHAPED``."""
    import ast

    function = ast.parse(textwrap.dedent(reference.strip("\n"))).body[0]

    class Returns(ast.NodeTransformer):
        def visit_Return(self, node):
            value = node.value or ast.Constant(None)
            return ast.copy_location(ast.Return(ast.Call(ast.Name("_reshaped", ast.Load()), [value], [])), node)

        def visit_FunctionDef(self, node):  # a nested function's returns are its own
            return node if node is not function else self.generic_visit(node)

        visit_AsyncFunctionDef = visit_Lambda = visit_FunctionDef

    Returns().visit(function)
    function.body[:0] = ast.parse(textwrap.dedent(RESHAPED)).body
    return ast.unparse(ast.fix_missing_locations(function)) + "\n"
