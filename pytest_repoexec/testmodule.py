"""What a problem's test module does with the function under test, read from its syntax tree.

Three users: the sanity check (does every test call the function and assert something about it), the
capture of the values assertions compare (instrumentation, for the flakiness check and the assertion fixer),
and the fixer's rewriting of expected values. They share one notion of "about the function": an expression
that calls the entry point, calls a helper that does, or reads a variable assigned from such an expression.

Edits are made on the source text at the nodes' positions, so that everything else, line numbers included,
stays as it was.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

CAPTURE = "_repoexec_capture"  # the name an instrumented module calls; bound at its end, used only at run time
_IMPORT_CAPTURE = f"\nfrom repoexec_inner import capture as {CAPTURE}  # added by pytest-repoexec\n"


@dataclass(frozen=True)
class Span:
    """A node's place in the source: UTF-8 byte offsets into the whole text."""

    start: int
    end: int


@dataclass(frozen=True)
class AssertionSite:
    id: int
    test: str  # the test function's name
    line: int
    actual: Span  # the side that holds what the function gave
    expected: Span | None  # the other side of an ``==``; None where the assertion compares nothing it could fix


def parse(source: str) -> ast.Module:
    with warnings.catch_warnings():  # old test modules have invalid escapes: their problem, not ours
        warnings.simplefilter("ignore")
        return ast.parse(source)


def test_functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions pytest collects: ``test*`` at module level and in ``Test*`` classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            yield node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            yield from (
                item for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test")
            )


class _Relevance:
    """Which expressions of one test are about the function under test."""

    def __init__(self, tree: ast.Module, function_name: str, test: ast.AST) -> None:
        self.callees = {function_name}
        helpers = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and not node.name.startswith("test")]
        for helper in helpers:  # one level of helpers: a function of the module that calls the entry point
            if self.calls(helper):
                self.callees.add(helper.name)
        self.names: set[str] = set()
        for call in ast.walk(test):  # what a call may change: its receiver and its arguments
            if isinstance(call, ast.Call) and _callee(call) in self.callees:
                touched = [call.func.value] if isinstance(call.func, ast.Attribute) else []
                self.names |= {n.id for arg in [*touched, *call.args] for n in ast.walk(arg) if isinstance(n, ast.Name)}
        changed = True
        while changed:  # names assigned from relevant expressions, and names assigned from those
            changed = False
            for node in ast.walk(test):
                for target, value in _bindings(node):
                    new = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} - self.names
                    if new and self.about(value):
                        self.names |= new
                        changed = True

    def calls(self, node: ast.AST) -> bool:
        """A call of the function, or the function handed to a call (``map(f, xs)``, ``raises(E, f, x)``)."""
        return any(isinstance(n, ast.Call) and (_callee(n) in self.callees or any(
            _reference(argument) in self.callees for argument in [*n.args, *(k.value for k in n.keywords)]
        )) for n in ast.walk(node))

    def about(self, node: ast.AST) -> bool:
        return self.calls(node) or any(isinstance(n, ast.Name) and n.id in self.names for n in ast.walk(node))


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _reference(node: ast.AST) -> str | None:
    """The name an expression refers to, when it is a bare name or attribute (``f``, ``module.f``)."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _bindings(node: ast.AST) -> Iterator[tuple[ast.AST, ast.AST]]:
    if isinstance(node, ast.Assign):
        yield from ((target, node.value) for target in node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
        yield node.target, node.value
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        yield node.target, node.iter
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        yield from ((item.optional_vars, item.context_expr) for item in node.items if item.optional_vars)


def _checks(node: ast.AST, relevance: _Relevance) -> bool:
    """Whether a statement checks the function: an assert about it, ``pytest.raises`` or ``self.assert*``
    around or with a call of it."""
    if isinstance(node, ast.Assert):
        return relevance.about(node.test)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        raises = any(isinstance(item.context_expr, ast.Call) and _callee(item.context_expr) in
                     ("raises", "assertRaises", "assertRaisesRegex", "warns", "assertWarns")
                     for item in node.items)
        return raises and any(relevance.calls(statement) for statement in node.body)
    if isinstance(node, ast.Call) and (_callee(node) or "").startswith(("assert", "raises")):
        return any(relevance.about(a) for a in node.args) or relevance.calls(node)  # raises(Error, f, x)
    return False


def sanity_problems(source: str, function_name: str) -> list[str]:
    """Why tests are unfit, one line each: a module that does not parse, a test that never calls the
    function, or one that asserts nothing about it (``assert 1``, an unchecked call)."""
    try:
        tree = parse(source)
    except SyntaxError as exc:
        return [f"the test module does not parse: {exc.msg} (line {exc.lineno})"]
    if not any(test_functions(tree)):
        return ["the test module defines no test functions"]
    return list(unchecked_tests(tree, function_name).values())


def unchecked_tests(tree: ast.Module, function_name: str) -> dict[str, str]:
    """The tests whose syntax shows no check of the function, by name, each with the sanity check's line: they
    never call it, or assert nothing about it."""
    unchecked = {}
    for test in test_functions(tree):
        relevance = _Relevance(tree, function_name, test)
        if any(_checks(node, relevance) for node in ast.walk(test)):
            continue
        what = "asserts nothing about" if relevance.calls(test) else "never calls"
        unchecked[test.name] = f"{test.name} (line {test.lineno}) {what} {function_name}"
    return unchecked


def assertion_sites(source: str, function_name: str) -> list[AssertionSite]:
    """The assertions about the function, with the side that holds its result; numbered in source order."""
    tree = parse(source)
    offsets = _line_offsets(source)
    sites = []
    for test in test_functions(tree):
        relevance = _Relevance(tree, function_name, test)
        for node in ast.walk(test):
            if not isinstance(node, ast.Assert) or not relevance.about(node.test):
                continue
            actual, expected = node.test, None
            check = node.test
            if isinstance(check, ast.Compare) and len(check.ops) == 1:
                left, right = check.left, check.comparators[0]
                actual, other = (left, right) if relevance.about(left) or not relevance.about(right) else (right, left)
                if isinstance(check.ops[0], ast.Eq) and not relevance.about(other):
                    expected = other
            sites.append((node.lineno, node.col_offset, test.name, actual, expected))
    return [
        AssertionSite(index, name, line, _span(actual, offsets), _span(expected, offsets) if expected else None)
        for index, (line, _, name, actual, expected) in enumerate(sorted(sites, key=lambda s: s[:2]))
    ]


def instrument(source: str, sites: list[AssertionSite]) -> str:
    """The module with both sides of every site passed through the inner plugin's ``capture``."""
    edits = []
    for site in sites:
        for side, span in (("actual", site.actual), ("expected", site.expected)):
            if span is not None:
                edits.append((span, f"{CAPTURE}({site.id}, {side!r}, ", ")"))
    return _apply(source, edits).rstrip("\n") + "\n" + _IMPORT_CAPTURE


def replace_spans(source: str, replacements: dict[Span, str]) -> str:
    """The source with each span's text replaced."""
    return _apply(source, [(span, text, None) for span, text in replacements.items()])


def _apply(source: str, edits: list[tuple[Span, str, str | None]]) -> str:
    """Wrap (prefix and suffix) or replace (suffix None) byte spans; spans may nest but not overlap."""
    data = source.encode("utf-8")
    inserts: list[tuple[int, int, bytes]] = []  # (offset, order, text): ends before starts at one offset
    cuts: list[Span] = []
    for span, prefix, suffix in edits:
        if suffix is None:
            cuts.append(span)
            inserts.append((span.start, 1, prefix.encode("utf-8")))
        else:
            inserts += [(span.start, 1, prefix.encode("utf-8")), (span.end, 0, suffix.encode("utf-8"))]
    out, position = [], 0
    for offset, _, text in sorted(inserts, key=lambda insert: (insert[0], insert[1])):
        out.append(data[position:offset])
        out.append(text)
        position = offset
        for cut in cuts:
            if cut.start == offset:
                position = cut.end
    out.append(data[position:])
    return b"".join(out).decode("utf-8")


def _line_offsets(source: str) -> list[int]:
    offsets, total = [0], 0
    for line in source.encode("utf-8").splitlines(keepends=True):
        total += len(line)
        offsets.append(total)
    return offsets


def _span(node: ast.AST, offsets: list[int]) -> Span:
    return Span(offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset)


def remove_functions(source: str, names: set[str]) -> str:
    """The module without the test functions of these names (decorators included)."""
    tree = parse(source)
    offsets = _line_offsets(source)
    spans = []
    for test in test_functions(tree):
        if test.name in names:
            first = min([test.lineno, *(d.lineno for d in test.decorator_list)])
            spans.append(Span(offsets[first - 1], offsets[test.end_lineno]))
    return replace_spans(source, dict.fromkeys(spans, ""))
