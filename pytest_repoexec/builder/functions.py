"""Which functions of a repository become problems, and why the others do not.

A candidate is a module-level function or a method (``Class.method``, nested classes too) of an importable
module outside tests, docs and setup scripts. It is picked when it has a docstring (the prompt's
problem statement), is public unless private ones are asked for, is not trivial (a lone ``return self.x``,
``pass``, ``...`` or ``raise NotImplementedError``: nothing to ask a model for), is bound once in its module
(the engine replaces the last binding; an earlier one would be a different function), and its body, after
the docstring, has a size within the options. Every candidate left out is kept with its reason for the report.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from ..syntax import definition_text, docstring, parse, unwrap

TEST_FOLDERS = {"tests", "test", "testing"}
DOC_FOLDERS = {"docs", "doc", "examples", "example", "benchmarks"}
SETUP_FILES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py"}
_NEVER_WALKED = {".git", ".hg", "__pycache__", ".tox", ".nox", ".venv", "venv", "build", "dist", "node_modules"}
_IDENTIFIER = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class Options:
    private: bool = False  # pick functions whose name (or class's) starts with "_"
    min_lines: int = 2  # lines of code in the body after the docstring
    max_lines: int = 60


@dataclass(frozen=True)
class Function:
    """A picked function: where it is and its reference, dedented to column 0 (decorators included)."""

    path: str  # the file, relative to the source root
    module: str  # dotted, relative to the import root
    qualname: str  # "f" or "Class.method"
    reference: str
    body_lines: tuple[int, int]  # first and last line (1-based) of the body after the docstring

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


@dataclass
class Picked:
    functions: list[Function] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # ("module:qualname" or a path, reason)

    def skip(self, what: str, reason: str) -> None:
        self.skipped.append((what, reason))


def pick(source_root: Path, import_root: str = ".", options: Options = Options()) -> Picked:
    """The functions of the tree under ``source_root`` worth a problem, and the reasons for the rest."""
    picked = Picked()
    base = source_root / import_root
    for path in python_files(base):
        relative = path.relative_to(source_root).as_posix()
        module = module_name(path.relative_to(base))
        text = path.read_text(encoding="utf-8", errors="replace")
        where = file_reason(path.relative_to(base))
        if where is None and module is None:
            where = "not an importable module"
        elif where is None and path.name != "__init__.py" and (path.with_suffix("") / "__init__.py").is_file():
            where = "shadowed by the package of the same name"  # import finds the package, never this file
        found = list(definitions(parse(text)[1]))
        bound = Counter(qualname for qualname, _, _ in found)
        for qualname, outer, function in found:
            label = f"{module or relative}:{qualname}"
            if where:
                picked.skip(label, where)
                continue
            reason = _reason(qualname, outer, function, options) or (
                "defined more than once in its module" if bound[qualname] > 1 else None)
            if reason:
                picked.skip(label, reason)
            else:
                picked.functions.append(Function(relative, module, qualname, definition_source(text, outer, function),
                                                 body_lines(function)))
    return picked


def python_files(base: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in _NEVER_WALKED and not d.startswith("."))
        yield from (Path(folder) / name for name in sorted(files) if name.endswith(".py"))


def module_name(relative: Path) -> str | None:
    """The dotted module of a file under the import root, None where no import could name it."""
    parts = [*relative.parent.parts, relative.stem] if relative.stem != "__init__" else [*relative.parent.parts]
    if not parts or not all(_IDENTIFIER.match(part) for part in parts):
        return None
    return ".".join(parts)


def file_reason(relative: Path) -> str | None:
    """Why no function of this file is a candidate: a test file, documentation or examples, a setup script."""
    folders = {part.lower() for part in relative.parent.parts}
    name = relative.name
    if folders & TEST_FOLDERS or name.startswith("test_") or name.endswith("_test.py") or name == "tests.py":
        return "in a test file"
    if folders & DOC_FOLDERS:
        return "in docs or examples"
    if name in SETUP_FILES:
        return "in a setup or conftest file"
    return None


def definitions(root: Node) -> Iterator[tuple[str, Node, Node]]:
    """(qualname, outer, function) for module-level functions and methods of classes at any depth of classes."""

    def scope(node: Node, prefix: str) -> Iterator[tuple[str, Node, Node]]:
        for child in node.children:
            definition = unwrap(child)
            name = definition.child_by_field_name("name")
            if definition.type == "function_definition" and name is not None:
                yield prefix + name.text.decode(), child, definition
            elif definition.type == "class_definition" and name is not None:
                body = definition.child_by_field_name("body")
                if body is not None:
                    yield from scope(body, f"{prefix}{name.text.decode()}.")

    yield from scope(root, "")


def _reason(qualname: str, outer: Node, function: Node, options: Options) -> str | None:
    if not options.private and any(part.startswith("_") for part in qualname.split(".")):
        return "private"
    if outer.type == "decorated_definition" and any(
        decorator.text.decode().lstrip("@").strip().rpartition(".")[2] == "overload"
        for decorator in outer.children if decorator.type == "decorator"
    ):
        return "an overload stub"
    if docstring(function) is None:
        return "no docstring"
    statements = body_statements(function)
    if not statements:
        return "trivial"
    if len(statements) == 1 and _trivial(statements[0]):
        return "trivial"
    lines = _code_lines(statements)
    if lines < options.min_lines:
        return f"body under {options.min_lines} lines"
    if lines > options.max_lines:
        return f"body over {options.max_lines} lines"
    return None


def body_statements(function: Node) -> list[Node]:
    """The statements of a function's body after its docstring (comments are not statements)."""
    body = function.child_by_field_name("body")
    statements = [child for child in body.named_children if child.type != "comment"] if body else []
    doc = docstring(function)
    return statements[1:] if doc and statements and statements[0] == doc[0] else statements


def body_lines(function: Node) -> tuple[int, int]:
    """The 1-based lines of the body after the docstring: the ones whose execution means the function ran."""
    statements = body_statements(function)
    return statements[0].start_point.row + 1, function.end_point.row + 1


def _trivial(statement: Node) -> bool:
    """``pass``, ``...``, a bare ``return``, ``return name`` or ``return a.b``, ``raise NotImplementedError``."""
    text = statement.text.decode()
    if statement.type == "pass_statement" or text == "...":
        return True
    if statement.type == "return_statement":
        value = statement.named_children
        return not value or value[0].type in ("identifier", "attribute", "none", "true", "false")
    return statement.type == "raise_statement" and "NotImplementedError" in text


def _code_lines(statements: list[Node]) -> int:
    rows: set[int] = set()
    for statement in statements:
        lines = statement.text.decode().split("\n")
        rows |= {statement.start_point.row + index for index, line in enumerate(lines)
                 if line.strip() and not line.strip().startswith("#")}
    return len(rows)


def definition_source(text: str, outer: Node, function: Node) -> str:
    """A definition as it stands in its module (decorators included), dedented to column 0, strings untouched."""
    return definition_text(text.encode("utf-8"), outer, function) + "\n"
