"""A pytest plugin for one run of the problems' tests on the original repository: where in the source an attribute
named as one of a benchmark class's renamed members is read from one of its instances (a subclass's included),
so the paraphrase can rename the sites that static typing cannot tell (``self.cls([]).peek``, a factory's result).

It runs inside the project's virtualenv, loaded alone with ``-p repoexec_trace``; it wraps each benchmark class's
``__getattribute__`` (its own, or the one it inherits), which only records and returns what the original returns.
A site is the caller's instruction, read from ``co_positions()`` (Python 3.11 and later): an access made from C
(``getattr(x, "peek")``) lands on the span of a call, which no attribute of the source ends at. One JSON
document goes to an inherited descriptor: ``sites`` as [file, end line, end column in UTF-8 bytes, name, class],
the file relative to the rootdir or to the source root the tree links into; ``errors``; ``outcomes``.
"""

from __future__ import annotations

import importlib
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


class Tracer:
    def __init__(self, roots: list[str]) -> None:
        self.roots = [root.rstrip(os.sep) + os.sep for root in roots if root]
        self.seen: set[tuple[Any, int, str, str]] = set()  # (code, f_lasti, name, class)
        self.errors: list[str] = []
        self.outcomes: dict[str, str] = {}

    def wrap(self, module: str, name: str, members: list[str]) -> None:
        try:
            cls = getattr(importlib.import_module(module), name)
            original = cls.__getattribute__
            original = getattr(original, _WRAPPED, original)  # a traced base's: trace once, with these names
            names, label, seen = frozenset(members), f"{module}.{name}", self.seen

            def __getattribute__(self: Any, attribute: str) -> Any:
                if attribute in names:
                    frame = sys._getframe(1)
                    seen.add((frame.f_code, frame.f_lasti, attribute, label))
                return original(self, attribute)

            setattr(__getattribute__, _WRAPPED, original)
            cls.__getattribute__ = __getattribute__
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

    def results(self) -> dict[str, Any]:
        sites, files = set(), {}
        for code, lasti, attribute, label in self.seen:
            positions = list(code.co_positions())
            end_line, end_column = positions[lasti // 2][1:4:2] if lasti // 2 < len(positions) else (None, None)
            filename = self.relative(code.co_filename, files)
            if filename is not None and end_line is not None and end_column is not None:
                sites.add((filename, end_line, end_column, attribute, label))
        return {"sites": sorted(sites), "errors": self.errors, "outcomes": self.outcomes}


_tracer: Tracer | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _tracer
    _tracer = Tracer([str(config.rootpath), config.getoption("repoexec_trace_source")])
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
