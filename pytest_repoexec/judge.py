"""Which problems the judge can run apart from the candidate, and the focal module as the judge imports it.

A split sample runs in two processes: the judge (pytest, the tests, their expected values, the verdict stream),
whose focal module has the target replaced by a stub (``runtime/repoexec_judge.py``), and the candidate's
process (``runtime/repoexec_serve.py``), which holds the module with the candidate in place and nothing of the
tests. ``split_plan`` says whether a problem can be judged so, and gives the judge's module.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from . import syntax
from .problem import Problem

JUDGE_MODULE = "repoexec_judge"
_BINDINGS = {"staticmethod": "static", "classmethod": "class", "property": "property"}


@dataclass(frozen=True)
class SplitPlan:
    """The judge's focal module (the target a stub), or why the problem runs in-process."""

    stub_module: str | None
    in_process: str | None = None  # the reason, where the problem cannot be split


def split_plan(problem: Problem, original: str) -> SplitPlan:
    """The judge's module for this problem, or why it stays in-process: a module of the pytest that runs the
    tests, a method of a nested function, a property with a setter. An async function's stub answers a coroutine
    that stays in the candidate's process and runs there when the test awaits it."""
    if problem.module.partition(".")[0] in ("pytest", "_pytest"):
        return SplitPlan(None, "its module is part of the pytest that runs its tests: the judge's own session "
                               "would run the candidate's code")
    qualname = problem.entry_point
    if problem.kind == syntax.CLASS:  # a remote class: its instances live in the candidate's process
        try:
            definition = syntax.find_definition(original, qualname, syntax.CLASS)
        except syntax.DefinitionNotFound as exc:
            return SplitPlan(None, f"its definition cannot be found: {exc}")
        specials, bases, fields, coroutines = _class_shape(
            original.encode("utf-8")[definition.start_byte:definition.end_byte].decode())
        return SplitPlan(_replaced(original, definition, f'{qualname} = __import__("{JUDGE_MODULE}").klass('
                                                         f'__name__, "{qualname}", {specials!r}, ({bases}), {fields!r}, '
                                                         f'{coroutines!r})'))
    try:
        definition = syntax.find_definition(original, qualname, problem.kind)
    except syntax.DefinitionNotFound as exc:
        return SplitPlan(None, f"its definition cannot be found: {exc}")
    data = original.encode("utf-8")
    text = data[definition.start_byte:definition.end_byte].decode("utf-8")
    found = re.search(r"^\s*(?:async\s+)?def\s", text, re.M)
    header = text[: found.end()] if found else text
    decorators = re.findall(r"^\s*@\s*([\w.]+)", header, re.M)
    if any(name.endswith((".setter", ".getter", ".deleter")) for name in decorators):
        return SplitPlan(None, "a property's accessor: the property object is built across several definitions")
    owner, _, name = qualname.rpartition(".")
    if owner:
        try:
            syntax.find_definition(original, owner, syntax.CLASS)
        except syntax.DefinitionNotFound:
            return SplitPlan(None, "a function nested in another function")
        binding = next((_BINDINGS[d] for d in decorators if d in _BINDINGS), "instance")
        stub = f'{name} = __import__("{JUDGE_MODULE}").method(__name__, "{qualname}", "{binding}")'
    else:  # a single-dispatch function's overloads, registered below it, are the candidate's process's to call
        dispatch = ", dispatch=True" if any(d.rpartition(".")[2] == "singledispatch" for d in decorators) else ""
        stub = f'{name} = __import__("{JUDGE_MODULE}").function(__name__, "{name}"{dispatch})'
    return SplitPlan(_replaced(original, definition, stub))


def _class_shape(source: str) -> tuple[tuple[str, ...], str, tuple[tuple[str, bool], ...] | None, tuple[str, ...]]:
    """The special methods the reference class's own body defines (or its ``dataclass`` decorator makes), its
    bases as written (a tuple's inside, evaluated where the class stood), its dataclass fields as (name,
    whether ``__init__`` takes it), None where it is no dataclass, and its methods that are coroutine functions:
    the judge asks the candidate's instances only for the special methods the reference has, its own or its
    bases', so a comparison the reference would not make is never made; a dataclass's fields let
    ``dataclasses.asdict``, ``fields`` and ``replace`` work on its instances in the judge, each field read from
    the candidate's instance as any attribute is; a coroutine method's stub is marked one, so that a test's
    ``mock.patch`` of it makes an ``AsyncMock``, as it does beside the reference."""
    import textwrap

    node = next(node for node in ast.parse(textwrap.dedent(source)).body if isinstance(node, ast.ClassDef))
    specials = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                and item.name.startswith("__") and item.name.endswith("__")} \
        | {target.id for item in node.body if isinstance(item, ast.Assign)
           and not (isinstance(item.value, ast.Constant) and item.value.value is None)
           for target in item.targets if isinstance(target, ast.Name) and target.id == "__hash__"}
    fields = None
    for decorator in node.decorator_list:
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        if ast.unparse(called).rpartition(".")[2] != "dataclass":
            continue
        given = {keyword.arg: keyword.value.value for keyword in getattr(decorator, "keywords", ())
                 if isinstance(keyword.value, ast.Constant)}
        if given.get("eq", True):
            specials.add("__eq__")
            if given.get("frozen") or given.get("unsafe_hash"):
                specials.add("__hash__")
        if given.get("order"):
            specials.update(("__lt__", "__le__", "__gt__", "__ge__"))
        fields = tuple((item.target.id, _field_init(item.value)) for item in node.body
                       if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                       and not any(name in ast.unparse(item.annotation) for name in ("ClassVar", "InitVar", "KW_ONLY")))
    coroutines = tuple(sorted(item.name for item in node.body if isinstance(item, ast.AsyncFunctionDef)))
    return tuple(sorted(specials)), "".join(f"{ast.unparse(base)}, " for base in node.bases), fields, coroutines


def _field_init(value: ast.expr | None) -> bool:
    """Whether a dataclass field's ``__init__`` takes it: not where it is ``field(init=False)``."""
    if isinstance(value, ast.Call) and ast.unparse(value.func).rpartition(".")[2] == "field":
        return not any(keyword.arg == "init" and isinstance(keyword.value, ast.Constant) and keyword.value.value
                       is False for keyword in value.keywords)
    return True


def _replaced(original: str, definition: syntax.Definition, stub: str) -> str:
    """The module with the definition (its decorators included) replaced by the stub's one line."""
    data = original.encode("utf-8")
    newline = "\r\n" if "\r\n" in original else "\n"
    return (data[:definition.start_byte] + stub.encode("utf-8") + newline.encode("utf-8")
            + data[definition.end_byte:]).decode("utf-8")
