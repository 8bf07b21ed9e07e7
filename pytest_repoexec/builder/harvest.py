"""Tests out of a model's answers, and the problem's test module they go into.

An answer's code is cut into top-level pieces (an import, an assertion, a test function, anything else),
each judged on its own, so that a broken piece costs only itself: a test must parse and must call the
function and assert something about it (``testmodule.sanity_problems``, the gate's own check). A bare
assertion (the paper's prompt is continued from ``assert``) becomes a test of its own, the first
``MAX_ASSERTIONS`` of an answer as the paper kept. Imports are kept from the standard library only: the test
module imports the focal module's names itself, and an import that fails would lose every test of the module.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field

from .. import testmodule
from ..postprocess import extract_code
from .functions import Function

MAX_ASSERTIONS = 20
_DEFINITION = re.compile(r"^((?:async\s+)?def\s+)(\w+)", re.MULTILINE)
_CONTINUATION = (" ", "\t", "#", ")", "]", "}")


@dataclass
class Harvest:
    """Tests taken from answers (name -> source at column 0), the imports they need, the pieces dropped."""

    tests: dict[str, str] = field(default_factory=dict)
    imports: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (test, reason)

    def drop(self, test: str, reason: str) -> None:
        if (test, reason) not in self.dropped:  # the same piece in several answers is one drop
            self.dropped.append((test, reason))


def harvest(answers: list[str], function: Function, continued: bool, existing: str = "") -> Harvest:
    """The new tests in ``answers`` for ``function``; ``continued``: the answers go on from the prompt's
    ``assert``. Tests that ``existing`` (a test module) already has, by name or by body, are not new."""
    found = Harvest()
    tree = testmodule.parse(existing) if existing else ast.Module(body=[], type_ignores=[])
    taken = {test.name for test in testmodule.test_functions(tree)}
    seen = {_shape(test) for test in testmodule.test_functions(tree)}
    for answer in answers:
        code = extract_code(("assert" if continued else "") + answer)
        assertions = 0
        for piece in _pieces(code):
            kind, name = _kind(piece)
            if kind == "import":
                if _standard(piece) and piece not in found.imports:
                    found.imports.append(piece)
                continue
            if kind == "assertion":
                assertions += 1
                if assertions > MAX_ASSERTIONS:
                    continue
                name = _free(f"test_{function.name}_1", taken)
                taken.add(name)
                piece = f"def {name}():\n" + "".join(f"    {line}\n" for line in piece.splitlines()).rstrip()
            if kind in ("assertion", "test"):
                why = _unfit(piece, function.name)
                if why:
                    found.drop(name, why)
                    continue
                node = ast.parse(piece).body[0]
                if _shape(node) in seen:
                    continue
                seen.add(_shape(node))
                name = name if kind == "assertion" else _free(name, taken)
                found.tests[name] = _DEFINITION.sub(lambda m: m.group(1) + name, piece, count=1)
                taken.add(name)
            elif kind in ("decorated", "class"):
                found.drop(name, "a test class: only test functions and assertions are kept" if kind == "class"
                           else "decorated (parametrized or marked): not kept")
    return found


def _pieces(code: str) -> list[str]:
    """Top-level pieces: each begins on a line at column 0 and takes the indented, blank, comment and
    closing-bracket lines after it; a decorator takes what it decorates."""
    pieces: list[list[str]] = []
    for line in code.splitlines():
        joins = not line.strip() or line.startswith(_CONTINUATION) or (pieces and pieces[-1][-1].startswith("@"))
        if joins and pieces:
            pieces[-1].append(line)
        elif not joins:
            pieces.append([line])
    return ["\n".join(piece).rstrip() for piece in pieces]


def _kind(piece: str) -> tuple[str, str]:
    """What a piece is ("import", "assertion", "test", "decorated", "class", "other"), and its name."""
    first = piece.split(None, 1)[0] if piece.strip() else ""
    definition = _DEFINITION.search(piece)
    name = definition.group(2) if definition else ""
    if first in ("import", "from"):
        return "import", ""
    if first == "assert":
        return "assertion", ""
    if first == "class" and re.match(r"class\s+Test", piece):
        return "class", piece.split()[1].split("(")[0].rstrip(":")
    if name.startswith("test") and definition.start() > 0 and piece.startswith("@"):
        return "decorated", name
    if name.startswith("test") and definition.start() == 0:
        return "test", name
    return "other", name


def _unfit(test: str, function_name: str) -> str | None:
    """Why a test cannot be kept (it does not parse, it never calls the function or asserts nothing about it)."""
    try:
        testmodule.parse(test)
    except SyntaxError as exc:
        return f"does not parse: {exc.msg}"
    problems = testmodule.sanity_problems(test, function_name)  # "test_x (line 2) never calls f"
    return re.sub(r"^\w+ \(line \d+\) (.*) \w+$", r"\1 the function", problems[0]) if problems else None


def _standard(statement: str) -> bool:
    """An import of the standard library (or pytest), which the test's environment surely has."""
    try:
        [node] = ast.parse(statement).body
    except (SyntaxError, ValueError):
        return False
    if isinstance(node, ast.ImportFrom):
        modules = [node.module or ""] if not node.level else [""]
    else:
        modules = [alias.name for alias in node.names]
    tops = {module.partition(".")[0] for module in modules}
    return tops <= (set(sys.stdlib_module_names) | {"pytest"}) - {"__future__"}


def _shape(test: ast.AST) -> str:
    """A test without its name, so that the same test under two names counts once."""
    return ast.dump(ast.Module(body=test.body, type_ignores=[])) + ast.dump(test.args)


def _free(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` with the first number suffix that no other test has."""
    if name not in taken:
        return name
    stem = re.sub(r"_\d+$", "", name)
    return next(f"{stem}_{n}" for n in range(2, len(taken) + 3) if f"{stem}_{n}" not in taken)


def new_module(function: Function, focal_imports: list[str], model: str) -> str:
    """A new test module's head: the pytest import, the focal module's own imports (relative ones work: the
    engine puts the tests beside the module, in its package), and the module's names."""
    top = function.qualname.partition(".")[0]
    lines = [f'"""Tests of {function.module}.{function.qualname}, written by {model}, kept by repoexec build."""',
             "", "import pytest",
             *(line for line in focal_imports if not line.startswith("from __future__")),
             f"from {function.module} import *  # noqa: F403",
             f"from {function.module} import {top}"]
    return "\n".join(lines) + "\n"


def extend(module: str, found: Harvest) -> str:
    """``module`` with the harvest's tests at its end and its imports after the module's last import."""
    present = {ast.unparse(node) for node in testmodule.parse(module).body if isinstance(node, (ast.Import,
                                                                                              ast.ImportFrom))}
    missing = [line for line in found.imports if ast.unparse(ast.parse(line).body[0]) not in present]
    if missing:
        tree = testmodule.parse(module)
        last = max((node.end_lineno for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))),
                   default=0)
        lines = module.splitlines(keepends=True)
        module = "".join(lines[:last]) + "".join(f"{line}\n" for line in missing) + "".join(lines[last:])
    return module.rstrip("\n") + "".join(f"\n\n\n{test}" for test in found.tests.values()) + "\n"


def shown_tests(module: str) -> str:
    """The module's test functions, as the coverage prompt shows them."""
    tree = testmodule.parse(module)
    return "\n\n".join(ast.get_source_segment(module, test) or "" for test in testmodule.test_functions(tree))


def count_tests(module: str) -> int:
    return sum(1 for _ in testmodule.test_functions(testmodule.parse(module)))
