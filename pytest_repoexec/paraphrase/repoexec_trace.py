"""A pytest plugin for one run of the problems' tests on the original repository: where in the source an attribute
named as one of the benchmark classes' renamed members is read from an instance of one (a subclass's included),
and which class's definition the read finds (a sibling's own ``expire``, not renamed yet), so the paraphrase can
rename the sites that static typing cannot tell (``self.cls([]).peek``, a factory's result); which of those
members a base outside the repository also defines (``MutableMapping.popitem``: its own methods call it by that
name, so it must keep it); and where a subclass outside the benchmark (a test's) overrides one.

It runs inside the project's virtualenv, loaded alone with ``-p repoexec_trace``; it wraps each benchmark class's
``__getattribute__`` and ``__setattr__`` (its own, or the ones it inherits: a store reaches a renamed property's
setter, ``field.default = 0``), which only record and do what the originals do.
A site is the caller's instruction, read from ``co_positions()`` (Python 3.11 and later): an access made from C
(``getattr(x, "peek")``) lands on the span of a call, which no attribute of the source ends at. One JSON
document goes to an inherited descriptor: ``sites`` as [file, end line, end column in UTF-8 bytes, name, the
traced class whose wrapper saw it, the class whose definition it found ("" for none: an instance's own)], the
file relative to the rootdir or to the source root the tree links into; ``interface`` as [module, class, member,
the outside class's qualified name] (those members are not traced); ``overrides`` as [file, the line of the
definition (its first decorator's), name, class]; ``errors``; ``outcomes``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from typing import Any

import pytest

_WRAPPED = "__repoexec_trace_original__"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("repoexec-trace")
    group.addoption("--repoexec-trace-fd", type=int, help="descriptor to write the results to")
    group.addoption("--repoexec-trace-classes", default="[]",
                    help="JSON list of [module, class, [renamed members]] to trace")
    group.addoption("--repoexec-trace-source", default="", help="the source root the tree's links point into")
    group.addoption("--repoexec-trace-packages", default="[]",
                    help="JSON list of the repository's top-level module names (any other module is outside it)")


class Tracer:
    def __init__(self, roots: list[str], packages: list[str]) -> None:
        self.roots = [root.rstrip(os.sep) + os.sep for root in roots if root]
        self.packages = frozenset(packages)
        self.seen: set[tuple[Any, int, str, str, type]] = set()  # (code, f_lasti, name, class, the instance's)
        self.traced: dict[type, frozenset[str]] = {}  # a benchmark class -> the members traced (renamed)
        self.labels: dict[type, str] = {}  # a benchmark class -> module.name
        self.watched: set[str] = set()  # every traced class's renamed members, read on any traced instance
        self.interface: list[list[str]] = []
        self.errors: list[str] = []
        self.outcomes: dict[str, str] = {}

    def outside(self, cls: type) -> bool:
        """A class the paraphrase does not rewrite: its module is not the repository's (``builtins`` included)."""
        return str(getattr(cls, "__module__", "") or "").partition(".")[0] not in self.packages

    def wrap(self, module: str, name: str, members: list[str]) -> None:
        try:
            cls = getattr(importlib.import_module(module), name)
            kept = {member: f"{base.__module__}.{base.__qualname__}" for base in reversed(cls.__mro__)
                    if self.outside(base) for member in members if member in vars(base)}
            self.interface += [[module, name, member, owner] for member, owner in sorted(kept.items())]
            original = cls.__getattribute__
            original = getattr(original, _WRAPPED, original)  # a traced base's: trace once, with these names
            label, seen, watched = f"{module}.{name}", self.seen, self.watched
            self.traced[cls], self.labels[cls] = frozenset(members) - kept.keys(), label
            watched.update(self.traced[cls])

            def __getattribute__(self: Any, attribute: str) -> Any:
                if attribute in watched:
                    frame = sys._getframe(1)
                    seen.add((frame.f_code, frame.f_lasti, attribute, label, type(self)))  # a test's class lives on
                return original(self, attribute)

            setattr(__getattribute__, _WRAPPED, original)
            cls.__getattribute__ = __getattribute__
            stored = cls.__setattr__
            stored = getattr(stored, _WRAPPED, stored)

            def __setattr__(self: Any, attribute: str, value: Any) -> None:  # a store: a property's setter
                if attribute in watched:
                    frame = sys._getframe(1)
                    seen.add((frame.f_code, frame.f_lasti, attribute, label, type(self)))
                stored(self, attribute, value)

            setattr(__setattr__, _WRAPPED, stored)
            cls.__setattr__ = __setattr__
        except Exception as exc:  # an unimportable module, a class that cannot take an attribute
            self.errors.append(f"{module}.{name}: {type(exc).__name__}: {exc}")

    def relative(self, filename: str, cache: dict[str, str | None]) -> str | None:
        if filename not in cache:
            cache[filename] = None
            for path in (filename, os.path.realpath(filename)):
                for root in self.roots:
                    if path.startswith(root) and cache[filename] is None:
                        cache[filename] = path[len(root):]
        return cache[filename]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.outcomes[report.nodeid] = "failed"
        elif report.when == "call" or report.skipped:
            self.outcomes.setdefault(report.nodeid, "skipped" if report.skipped else "passed")

    def subclasses(self) -> set[type]:
        """The classes deriving from a traced one that are not traced themselves (a test's, a repository's)."""
        found, stack = {read[4] for read in self.seen}, list(self.traced)
        while stack:
            for sub in type.__subclasses__(stack.pop()):
                if sub not in found:
                    found.add(sub)
                    stack.append(sub)
        return {cls for cls in found if cls not in self.traced and any(base in self.traced for base in cls.__mro__)}

    def overrides(self, files: dict[str, str | None]) -> set[tuple[str, int, str, str]]:
        """Where a subclass defines a traced member of a benchmark ancestor (the base calls it by the new name):
        [file, first line, member, the ancestor]."""
        found = set()
        for cls in self.subclasses():
            for base in cls.__mro__:
                for member in self.traced.get(base, frozenset()) & vars(cls).keys():
                    for code in _codes(vars(cls)[member]):
                        filename = self.relative(code.co_filename, files)
                        if filename is not None:
                            found.add((filename, code.co_firstlineno, member, self.labels[base]))
        return found

    def results(self) -> dict[str, Any]:
        sites, files = set(), {}
        for code, lasti, attribute, label, cls in self.seen:
            positions = list(code.co_positions())
            end_line, end_column = positions[lasti // 2][1:4:2] if lasti // 2 < len(positions) else (None, None)
            filename = self.relative(code.co_filename, files)
            if filename is not None and end_line is not None and end_column is not None:
                definer = next((f"{base.__module__}.{base.__qualname__}" for base in cls.__mro__
                                if attribute in vars(base)), "")
                sites.add((filename, end_line, end_column, attribute, label, definer))
        return {"sites": sorted(sites), "interface": self.interface, "overrides": sorted(self.overrides(files)),
                "errors": self.errors, "outcomes": self.outcomes}


def _codes(value: Any) -> list[Any]:
    """The code objects a class attribute defines: a function's (its ``__wrapped__`` original's), a static or
    class method's, a property's accessors'."""
    value = getattr(value, "__func__", value) if isinstance(value, (staticmethod, classmethod)) else value
    functions = [value.fget, value.fset, value.fdel] if isinstance(value, property) else [value]
    codes = [getattr(inspect.unwrap(f), "__code__", None) for f in functions if callable(f)]
    return [code for code in codes if code is not None]


_tracer: Tracer | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _tracer
    _tracer = Tracer([str(config.rootpath), config.getoption("repoexec_trace_source")],
                     json.loads(config.getoption("repoexec_trace_packages")))
    config.pluginmanager.register(_tracer, "repoexec-trace-recorder")
    if sys.version_info < (3, 11):
        _tracer.errors.append(f"Python {sys.version_info[0]}.{sys.version_info[1]}: the trace needs 3.11 or later "
                              "(code positions)")
        return
    for module, name, members in json.loads(config.getoption("repoexec_trace_classes")):
        _tracer.wrap(module, name, members)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _tracer is None:
        return
    document = json.dumps(_tracer.results()).encode("utf-8")
    fd = config.getoption("repoexec_trace_fd")
    while document:
        document = document[os.write(fd, document):]
