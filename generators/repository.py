"""A project's source as the agent's static tools read it: every module under the import root parsed once with
tree-sitter (so that broken files cost nothing but themselves), the classes and functions it defines, the names
its imports bind, and pieces of code that a lexical ranking (BM25, ``rank-bm25``) searches by a query.

The project's tests are left out: a tool that showed them would hand the model its oracle.
"""

from __future__ import annotations

import functools
import keyword
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from pytest_repoexec.syntax import IMPORTS, docstring, node_text, parse, unwrap, walk

_SKIPPED = {"tests", "test", "testing", "__pycache__", "build", "dist", "venv", ".venv", ".tox", ".git"}
_SCOPES = ("function_definition", "class_definition")
_BLOCKS = ("if_statement", "try_statement", "elif_clause", "else_clause", "except_clause", "finally_clause", "block")
_WORDS = re.compile(r"\w+")
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_NOISE = frozenset(keyword.kwlist) | {"self", "cls", "none", "true", "false"}


@dataclass(frozen=True)
class Definition:
    """A class, function or method of the repository."""

    module: str  # dotted, relative to the import root
    path: str  # the file, relative to the import root
    qualname: str  # "f", "Class", "Class.method"
    kind: str  # "class", "function" or "method"
    header: str  # decorators through the header's colon, dedented
    doc: str | None
    text: str  # the whole definition, dedented
    bases: tuple[str, ...] = ()  # a class's bases as written
    attributes: tuple[str, ...] = ()  # a class's attributes: assigned in its body or on self in its methods

    @property
    def name(self) -> str:
        return self.qualname.rpartition(".")[2]


@dataclass(frozen=True)
class Module:
    name: str
    path: str
    source: str
    imports: dict[str, str]  # name bound by an import -> that import, made absolute (usable from anywhere)
    defined: tuple[str, ...]  # names bound at the top level by definitions and assignments
    statements: str  # the module-level code that is neither an import nor a definition


@dataclass(frozen=True)
class Piece:
    """What the ranking returns: a definition (a class as its summary) or a module's other top-level code."""

    module: str
    path: str
    qualname: str  # "" for module-level code
    kind: str
    text: str


class Repository:
    """The parsed modules of one source tree, its definitions, and the ranking over its pieces."""

    def __init__(self, import_root: Path) -> None:
        self.modules: dict[str, Module] = {}
        self.definitions: list[Definition] = []
        for path in sorted(import_root.rglob("*.py")):
            relative = path.relative_to(import_root)
            if _SKIPPED & set(relative.parts[:-1]) or _is_test_file(relative.name):
                continue
            name = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
            try:
                source = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            self._add(name, relative.as_posix(), source)
        self.pieces = [*(self._piece(d) for d in self.definitions),
                       *(Piece(m.name, m.path, "", "module-level code", m.statements)
                         for m in self.modules.values() if m.statements)]
        from rank_bm25 import BM25Okapi  # here, not at the plugin's import: it brings numpy into every session

        self._ranking = BM25Okapi([tokens(piece.text) or ["\0"] for piece in self.pieces]) if self.pieces else None

    def _add(self, name: str, path: str, source: str) -> None:
        data, root = parse(source)
        imports: dict[str, str] = {}
        defined: list[str] = []
        statements: list[str] = []
        for statement in _top_level(root):
            if statement.type in IMPORTS:
                imports |= _import_bindings(statement, name, path.endswith("__init__.py"))
                continue
            definition = unwrap(statement)
            if definition.type in _SCOPES:
                defined.append(self._definition(data, statement, name, path, ""))
            else:
                statements.append(node_text(statement))
                defined += _assigned(statement)
        self.modules[name] = Module(name, path, source, imports, tuple(defined), "\n".join(statements))

    def _definition(self, data: bytes, outer: Node, module: str, path: str, scope: str) -> str:
        node = unwrap(outer)
        qualname = f"{scope}.{_name(node)}" if scope else _name(node)
        kind = "class" if node.type == "class_definition" else "method" if scope else "function"
        found = docstring(node)
        bases, attributes = (), ()
        if kind == "class":
            body = node.child_by_field_name("body")
            for member in body.named_children if body else []:
                if unwrap(member).type == "function_definition":
                    self._definition(data, member, module, path, qualname)
            bases, attributes = _bases(node), _attributes(node)
        self.definitions.append(Definition(module, path, qualname, kind, _header(data, outer, node),
                                           found[1] if found else None, _dedented(data, outer, node.end_byte),
                                           bases, attributes))
        return _name(node)

    def _piece(self, definition: Definition) -> Piece:
        text = definition.text
        if definition.kind == "class":
            text = class_summary(definition, self.members(definition))
        return Piece(definition.module, definition.path, definition.qualname, definition.kind, text)

    def classes(self, name: str) -> list[Definition]:
        """The classes called ``name`` (or ``module.Name``), in module order."""
        module, _, short = name.rpartition(".")
        return [d for d in self.definitions if d.kind == "class" and d.name == short
                and (not module or d.module == module or d.module.endswith("." + module))]

    def functions(self, name: str) -> list[Definition]:
        return [d for d in self.definitions if d.kind == "function" and d.name == name]

    def members(self, cls: Definition) -> list[Definition]:
        return [d for d in self.definitions if d.module == cls.module and d.qualname.rpartition(".")[0] == cls.qualname]

    def lineage(self, cls: Definition) -> list[Definition]:
        """``cls`` and the repository's classes it inherits from, nearest first (bases outside the repository,
        such as ``dict``, have no entry)."""
        seen, order, queue = set(), [], [cls]
        while queue:
            current = queue.pop(0)
            if (current.module, current.qualname) in seen:
                continue
            seen.add((current.module, current.qualname))
            order.append(current)
            for base in current.bases:
                found = self.resolve_class(base.rpartition(".")[2], current.module)
                if found is not None:
                    queue.append(found)
        return order

    def resolve_class(self, name: str, near: str) -> Definition | None:
        """The class ``name`` as module ``near`` sees it: its own, else the one its import names, else any."""
        found = self.classes(name)
        if not found:
            return None
        module = self.modules.get(near)
        origin = _imported_from(module.imports.get(name, "")) if module else None
        return next((d for d in found if d.module == near), None) or next(
            (d for d in found if d.module == origin), found[0])

    def import_for(self, name: str) -> str | None:
        """An import that binds ``name``: from the module that defines it as a class or function, else the import
        the repository itself makes most often, else from a module that assigns it."""
        defining = next((d for d in self.definitions if d.kind != "method" and d.name == name), None)
        if defining is not None:
            return f"from {defining.module} import {name}"
        used = [module.imports[name] for module in self.modules.values() if name in module.imports]
        if used:
            return max(sorted(set(used)), key=used.count)
        assigning = next((module for module in self.modules.values() if name in module.defined), None)
        return f"from {assigning.name} import {name}" if assigning else None

    def rank(self, query: str) -> list[Piece]:
        """The pieces that share words with ``query``, best first (BM25)."""
        words = tokens(query)
        if self._ranking is None or not words:
            return []
        scores = self._ranking.get_scores(words)
        order = sorted(range(len(self.pieces)), key=lambda i: -scores[i])
        return [self.pieces[i] for i in order if scores[i] > 0]


@functools.lru_cache(maxsize=8)
def repository(import_root: Path) -> Repository:
    """Each source tree read once per process (the cached source is never written to)."""
    return Repository(import_root)


def tokens(text: str) -> list[str]:
    """Words for the ranking: each identifier whole and in its snake_case and CamelCase parts, lower case."""
    found = []
    for word in _WORDS.findall(text):
        parts = [part.lower() for part in _PARTS.findall(word)]
        found += [word.lower(), *parts] if len(parts) > 1 else [word.lower()]
    return [word for word in found if word not in _NOISE]


def class_summary(cls: Definition, members: list[Definition]) -> str:
    """A class without its methods' bodies: header, docstring, attributes and each member's header."""
    lines = [cls.header]
    if cls.doc:
        lines.append(textwrap.indent(f'"""{cls.doc}"""', "    "))
    if cls.attributes:
        lines.append(f"    # attributes: {', '.join(cls.attributes)}")
    lines += [textwrap.indent(member.header, "    ") for member in members]
    return "\n".join(lines)


def _is_test_file(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def _top_level(scope: Node) -> Iterator[Node]:
    """The statements of a module, with those inside top-level compound blocks (guarded imports, ``try``)."""
    for child in scope.named_children:
        if child.type in _BLOCKS:
            yield from _top_level(child)
        elif child.type.endswith(("_statement", "_definition")):
            yield child


def _name(node: Node) -> str:
    name = node.child_by_field_name("name")
    return node_text(name) if name else ""


def _header(data: bytes, outer: Node, definition: Node) -> str:
    colon = next(child for child in definition.children if child.type == ":")
    return _dedented(data, outer, colon.end_byte)


def _dedented(data: bytes, outer: Node, end: int) -> str:
    return textwrap.dedent(" " * outer.start_point.column + data[outer.start_byte:end].decode("utf-8"))


def _bases(cls: Node) -> tuple[str, ...]:
    arguments = cls.child_by_field_name("superclasses")
    return tuple(node_text(a) for a in arguments.named_children if a.type in ("identifier", "attribute")) \
        if arguments else ()


def _attributes(cls: Node) -> tuple[str, ...]:
    """Names a class sets: in its body, and as ``self.NAME = ...`` in its methods."""
    names = []
    body = cls.child_by_field_name("body")
    for statement in body.named_children if body else []:
        names += _assigned(statement)
    for node in walk(cls):
        target = node.child_by_field_name("left") if node.type in ("assignment", "augmented_assignment") else None
        for part in walk(target) if target is not None else ():
            if part.type == "attribute" and node_text(part.child_by_field_name("object")) == "self":
                names.append(node_text(part.child_by_field_name("attribute")))
    return tuple(dict.fromkeys(names))


def _assigned(statement: Node) -> list[str]:
    """The names a top-level assignment statement binds (``A = B = 1``, ``x, y = ...``, ``T: int = 0``)."""
    if statement.type != "expression_statement":
        return []
    names = []
    for node in statement.named_children:
        while node is not None and node.type == "assignment":
            left = node.child_by_field_name("left")
            names += [node_text(n) for n in walk(left) if n.type == "identifier"] if left else []
            node = node.child_by_field_name("right")
    return names


def _import_bindings(statement: Node, module: str, package: bool) -> dict[str, str]:
    """Each name the import binds -> an import of that name alone, absolute."""
    if statement.type == "import_statement":
        bound = {}
        for item in statement.named_children:
            if item.type == "aliased_import":
                bound[node_text(item.child_by_field_name("alias"))] = f"import {node_text(item)}"
            else:
                bound[node_text(item).partition(".")[0]] = f"import {node_text(item)}"
        return bound
    if statement.type != "import_from_statement":
        return {}
    source = _absolute(node_text(statement.child_by_field_name("module_name")), module, package)
    bound = {}
    for item in statement.children_by_field_name("name"):
        if item.type == "aliased_import":
            original = node_text(item.child_by_field_name("name"))
            alias = node_text(item.child_by_field_name("alias"))
            bound[alias] = f"from {source} import {original} as {alias}"
        else:
            bound[node_text(item)] = f"from {source} import {node_text(item)}"
    return bound


def _absolute(target: str, module: str, package: bool) -> str:
    """``from .x import y`` as seen from ``module`` -> ``from pkg.x import y``."""
    dots = len(target) - len(target.lstrip("."))
    if not dots:
        return target
    parts = module.split(".")
    base = parts if package else parts[:-1]
    base = base[: len(base) - (dots - 1)] if dots > 1 else base
    return ".".join([*base, target[dots:]] if target[dots:] else base)


def _imported_from(statement: str) -> str | None:
    match = re.match(r"from (\S+) import", statement)
    return match.group(1) if match else None
