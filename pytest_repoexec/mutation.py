"""Mutants of a reference function (or class: its methods and class-level statements), for measuring how strong a
problem's tests are.

A mutant is the reference with one small bug planted in its body; tests that still pass on it cannot tell
that bug from the reference. Mutants are text edits at ``ast`` node positions rather than ``ast.unparse``
output, so each keeps the reference's formatting, comments and line numbers (tracebacks and coverage still
point at the right lines). Positions are UTF-8 byte offsets, so all editing is done on the encoded source.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

OPERATORS = ("arithmetic", "comparison", "boolean", "constant", "statement", "condition")

_ARITHMETIC = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
    ast.FloorDiv: ("//", "*"), ast.Mod: ("%", "*"), ast.Pow: ("**", "*"),
}  # fmt: skip
_COMPARISON = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
    ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
}  # fmt: skip
_BOOLEAN = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
_REMOVABLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_UNTOUCHED_FIELDS = ("annotation", "returns", "decorator_list")
# What may lie between an operand and its operator: blanks, parentheses, line continuations, comments.
_GAP = re.compile(rb"(?:[\s()\\]|#[^\r\n]*)*")
_WORD = re.compile(rb"\w+")


@dataclass(frozen=True)
class Mutant:
    """One planted bug, located and described, so that a mutant the tests miss shows what they leave unchecked."""

    operator: str  # one of OPERATORS
    description: str  # for people, e.g. "line 4: `+` -> `-`"
    line: int  # 1-based line within the function source
    function: str  # the mutated function's (or class's) whole source


# An edit: byte span to replace, its replacement, the operator, and what changed (for people).
_Point = tuple[int, int, bytes, str, str]


class _Source:
    """A function's (or class's) source as UTF-8 bytes, turning ast positions (line, byte column) into byte
    offsets."""

    def __init__(self, source: str) -> None:
        self.data = source.encode()
        function = next(iter(ast.parse(source).body), None)
        if not isinstance(function, _DEFINITIONS):
            raise ValueError("the source does not start with a function definition (or a class)")
        self.function = function
        self.starts = list(itertools.accumulate(map(len, self.data.splitlines(keepends=True)), initial=0))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.starts[node.lineno - 1] + node.col_offset,
            self.starts[node.end_lineno - 1] + node.end_col_offset,
        )

    def text(self, node: ast.AST) -> str:
        return _short(self.data[slice(*self.span(node))].decode())

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)


def mutants(function_source: str, limit: int = 10) -> list[Mutant]:
    """A small, deterministic set of behaviour changes to run a problem's tests against: at most `limit`, spread
    evenly over the function so that a long body is not judged by its first lines alone."""
    source = _Source(function_source)
    data = source.data
    seen = {ast.dump(ast.parse(function_source))}
    found = []
    for start, end, replacement, operator, change in sorted(_points(source), key=lambda point: point[0]):
        # Leading line continuations keep every later line where it was when the edit spans fewer lines.
        padding = b"\\\n" * (data.count(b"\n", start, end) - replacement.count(b"\n"))
        mutated = (data[:start] + padding + replacement + data[end:]).decode()
        try:
            tree = ast.dump(ast.parse(mutated))
        except SyntaxError:
            continue
        if tree not in seen:
            seen.add(tree)
            line = source.line(start)
            found.append(Mutant(operator, f"line {line}: {change}", line, mutated))
    if len(found) <= limit:
        return found
    return [found[i * (len(found) - 1) // max(limit - 1, 1)] for i in range(limit)]


def pass_body(function_source: str) -> str:
    """The reference's interface without its behaviour: a floor that any meaningful test must fail on. For a
    class, the empty class ``class Name: pass`` (spliced in, it keeps the original's decorators)."""
    source = _Source(function_source)
    if isinstance(source.function, ast.ClassDef):
        return f"class {source.function.name}:\n    pass\n"
    data, first = source.data, source.function.body[0]
    start, end = source.span(first)
    if not _is_docstring(first):
        decorators = getattr(first, "decorator_list", [])
        if decorators:  # a decorated definition's ast position is its `def`, after the decorators
            start = data.rindex(b"@", 0, source.span(decorators[0])[0])
        return (data[:start] + b"pass\n").decode()
    indent = data[source.starts[first.lineno - 1] : start]
    separator = b"\n" + indent if indent.isspace() else b"; "  # a docstring on the `def` line
    return (data[:end] + separator + b"pass\n").decode()


def _points(source: _Source) -> Iterator[_Point]:
    definitions = [node for node in ast.walk(source.function) if isinstance(node, _DEFINITIONS)]
    docstrings = {node.body[0] for node in definitions if _is_docstring(node.body[0])}
    for statement in source.function.body:
        for node in _walk(statement, docstrings):
            yield from _node_points(source, node)


def _walk(node: ast.AST, skipped: set[ast.AST]) -> Iterator[ast.AST]:
    """The nodes a mutant may touch: not docstrings, annotations, decorators, signatures or f-strings."""
    if node in skipped:
        return
    yield node
    if isinstance(node, ast.JoinedStr):  # before 3.12, positions inside f-strings are unreliable
        return
    for name, value in ast.iter_fields(node):
        if name in _UNTOUCHED_FIELDS or isinstance(value, ast.arguments):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _walk(child, skipped)


def _node_points(source: _Source, node: ast.AST) -> Iterator[_Point]:
    if isinstance(node, ast.BinOp):
        yield from _swap(source, node.left, node.right, _ARITHMETIC.get(type(node.op)), "arithmetic")
    elif isinstance(node, ast.AugAssign) and type(node.op) in _ARITHMETIC:
        old, new = _ARITHMETIC[type(node.op)]
        yield from _swap(source, node.target, node.value, (old + "=", new + "="), "arithmetic")
    elif isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:]):
            yield from _swap(source, left, right, _COMPARISON[type(op)], "comparison")
    elif isinstance(node, ast.BoolOp):
        for left, right in zip(node.values, node.values[1:]):
            yield from _swap(source, left, right, _BOOLEAN[type(node.op)], "boolean")
    elif isinstance(node, ast.Constant):
        yield from _constant(source, node)
    if isinstance(node, _REMOVABLE) and not (isinstance(node, ast.AnnAssign) and node.value is None):
        start, end = source.span(node)
        yield start, end, b"pass", "statement", f"removed `{source.text(node)}`"
    if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)):
        start, end = source.span(node.test)
        change = f"`{_keyword(source, node)} {source.text(node.test)}` negated"
        yield start, end, b"not (" + source.data[start:end] + b")", "condition", change


def _keyword(source: _Source, node: ast.If | ast.While | ast.Assert | ast.IfExp) -> str:
    """The keyword as written, so that the description tells an `elif` from an `if`."""
    if isinstance(node, ast.IfExp):
        return "... if"
    return _WORD.match(source.data, source.span(node)[0]).group().decode()


def _swap(
    source: _Source, left: ast.AST, right: ast.AST, pair: tuple[str, str] | None, operator: str
) -> Iterator[_Point]:
    """Replace the operator token between two operands, found in the text between them."""
    if pair is None:
        return
    old, new = pair
    position = _GAP.match(source.data, source.span(left)[1]).end()
    token = re.compile(rb"\s+".join(map(re.escape, old.encode().split())))
    match = token.match(source.data, position, source.span(right)[0])
    if match:
        yield match.start(), match.end(), new.encode(), operator, f"`{old}` -> `{new}`"


def _constant(source: _Source, node: ast.Constant) -> Iterator[_Point]:
    value = node.value
    if isinstance(value, bool):
        operator, new = "boolean", not value
    elif isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        operator, new = "constant", value + 1
    elif isinstance(value, str):
        operator, new = "constant", value + "XX"
    else:  # None, bytes, complex, Ellipsis, infinite floats: nothing plausible to turn them into
        return
    start, end = source.span(node)
    yield start, end, repr(new).encode(), operator, f"`{source.text(node)}` -> `{_short(repr(new))}`"


def _is_docstring(statement: ast.stmt) -> bool:
    value = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."
