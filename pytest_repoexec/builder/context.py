"""A picked function's (or class's) dependency context (``prompt.context.full``), as the paper builds it.

The focal module's imports come first (top-level ones, and top-level ``try``/``if`` blocks of imports), then the
definitions the function's body uses, with their bodies: cross-file ones first, in the order of the imports
that bring them (``from pkg.x import y`` and relative imports of the project, followed through re-exports and
``from .x import *``; ``import pkg.x as m`` for ``m.y``), then in-file ones in module order. A method also
gets its class, without itself and without the methods it does not use (``__init__`` stays); a class gets what
any of its methods uses. A name the
function only reads as an attribute (``obj.name``) or a keyword (``f(name=1)``) is not a use. The engine
derives the medium and small contexts and the DIR dependencies from this text (``syntax.strip_bodies``,
``syntax.dependencies``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from ..executor import ProblemLayoutError, module_file
from ..syntax import CLASS, IMPORTS, node_text, parse, unwrap, walk
from .functions import Function, definitions

_FOLLOWED = 5  # re-exports followed at most this deep
_BLANK_RUNS = re.compile(r"\n(?:[ \t]*\n){2,}")


@dataclass(frozen=True)
class _Binding:
    """A name bound by a module-level import: from which module (absolute, dotted), under which name there."""

    module: str
    name: str | None  # None: the module itself (``import a.b as m``)
    position: tuple[int, int]  # the import's offset and the name's place in it: the context's order


class Modules:
    """The project's modules under its import root, parsed once each."""

    def __init__(self, import_root: Path) -> None:
        self.root = import_root
        self._parsed: dict[str, tuple[bytes, Node] | None] = {}

    def file(self, module: str) -> Path | None:
        try:
            return module_file(self.root, module)
        except ProblemLayoutError:
            return None

    def tree(self, module: str) -> tuple[bytes, Node] | None:
        if module not in self._parsed:
            path = self.file(module)
            self._parsed[module] = parse(path.read_text(encoding="utf-8", errors="replace")) if path else None
        return self._parsed[module]

    def is_package(self, module: str) -> bool:
        path = self.file(module)
        return path is not None and path.name == "__init__.py"


def full_context(modules: Modules, function: Function) -> str:
    """The dependency context of ``function`` (or of a module-level class, by its name as ``qualname``): imports,
    then cross-file and in-file definitions it uses."""
    data, root = modules.tree(function.module)
    qualname = function.qualname
    classes = ((name, outer, node) for outer, node, name in module_classes(root))
    outer, node = next((outer, node) for name, outer, node in (*definitions(root), *classes) if name == qualname)
    top = next(statement for statement in root.named_children if statement.start_byte <= outer.start_byte
               and outer.end_byte <= statement.end_byte)
    used, attributes = free_names(node)
    bases = node.child_by_field_name("superclasses") if node.type == CLASS else None
    if bases is not None:  # a class's bases are used too: its prompt's header names them
        used = list(dict.fromkeys([*(node_text(n) for n in walk(bases) if n.type == "identifier"), *used]))
    statements = root.named_children
    imports = module_imports(root)
    own = _top_level_bindings(statements)
    bindings = _import_bindings(modules, function.module, statements)

    cross: list[tuple[tuple[int, int], str]] = []
    in_file: list[tuple[int, str]] = []
    class_name = qualname.split(".")[0] if "." in qualname else None
    for name in used:
        if name == class_name or own.get(name) == top:
            continue
        if name in own and own[name].type not in IMPORTS:
            in_file.append((own[name].start_byte, node_text(own[name])))
        elif name in bindings:
            binding = bindings[name]
            if binding.name is None:
                cross += [(binding.position, text) for attribute in sorted(attributes.get(name, ()))
                          if (text := _definition_in(modules, binding.module, attribute))]
            elif text := _definition_in(modules, binding.module, binding.name):
                cross.append((binding.position, text))
        elif text := _star_definition(modules, function.module, statements, name):
            cross.append(text)
    if class_name:
        in_file.append((top.start_byte, _class_without(data, top, outer, attributes)))
    parts = ["\n".join(imports)] if imports else []
    parts += list(dict.fromkeys(text for _, text in sorted(cross, key=lambda pair: pair[0]) + sorted(in_file)))
    return "\n\n\n".join(parts) + "\n" if parts else ""


def module_classes(root: Node) -> list[tuple[Node, Node, str]]:
    """(outer, class, name) for each class defined at a module's top level (decorators in outer)."""
    found = []
    for statement in root.named_children:
        definition = unwrap(statement)
        name = definition.child_by_field_name("name")
        if definition.type == CLASS and name is not None:
            found.append((statement, definition, node_text(name)))
    return found


def module_imports(root: Node) -> list[str]:
    """A module's top-level imports, and its top-level ``try``/``if`` blocks that only import, as written."""
    return [node_text(s) for s in root.named_children if s.type in IMPORTS or _import_block(s)]


def free_names(function: Node) -> tuple[list[str], dict[str, set[str]]]:
    """The names a function's body reads (in order of first use), and the attributes read on each name
    (``self.x``, ``m.f``). Attribute names and keyword-argument names are not names read."""
    body = function.child_by_field_name("body")
    names: dict[str, None] = {}
    attributes: dict[str, set[str]] = {}
    for node in walk(body) if body else ():
        if node.type == "attribute":
            owner, attribute = node.child_by_field_name("object"), node.child_by_field_name("attribute")
            if owner is not None and owner.type == "identifier" and attribute is not None:
                attributes.setdefault(node_text(owner), set()).add(node_text(attribute))
        if node.type != "identifier":
            continue
        parent = node.parent
        if parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
            continue
        if parent.type == "keyword_argument" and parent.child_by_field_name("name") == node:
            continue
        names[node_text(node)] = None
    return list(names), attributes


def _import_block(statement: Node) -> bool:
    """A top-level ``try``/``if`` that only imports (``try: import simplejson as json except ImportError: ...``)."""
    if statement.type not in ("try_statement", "if_statement"):
        return False
    inner = [node for node in walk(statement) if node.type.endswith("statement") and node != statement]
    simple = ("pass_statement", "expression_statement", "raise_statement", *IMPORTS)
    return any(node.type in IMPORTS for node in inner) and all(node.type in simple for node in inner)


def _top_level_bindings(statements: list[Node]) -> dict[str, Node]:
    """Name -> the module-level statement that binds it last (definitions, assignments, imports)."""
    bound: dict[str, Node] = {}
    for statement in statements:
        for name in _bound_names(statement):
            bound[name] = statement
    return bound


def _bound_names(statement: Node) -> Iterator[str]:
    definition = unwrap(statement)
    if definition.type in ("function_definition", "class_definition"):
        name = definition.child_by_field_name("name")
        if name is not None:
            yield node_text(name)
    elif statement.type == "expression_statement" and statement.named_children:
        assignment = statement.named_children[0]
        while assignment.type == "assignment":
            left = assignment.child_by_field_name("left")
            if left is not None:
                yield from (node_text(node) for node in walk(left) if node.type == "identifier"
                            and node.parent.type in ("pattern_list", "tuple_pattern", "assignment"))
            assignment = assignment.child_by_field_name("right") or statement
    elif statement.type in IMPORTS:
        yield from _imported_names(statement)


def _imported_names(statement: Node) -> Iterator[str]:
    for name in statement.children_by_field_name("name"):
        if name.type == "aliased_import":
            yield node_text(name.child_by_field_name("alias"))
        else:
            yield node_text(name).split(".")[0] if statement.type == "import_statement" else node_text(name)


def _absolute(modules: Modules, module: str, target: Node) -> str:
    """The absolute module an import's ``module_name`` names, relative imports resolved against ``module``."""
    if target.type != "relative_import":
        return node_text(target)
    dots = len(node_text(target)) - len(node_text(target).lstrip("."))
    rest = node_text(target).lstrip(".")
    package = module.split(".") if modules.is_package(module) else module.split(".")[:-1]
    base = package[: len(package) - (dots - 1)] if dots > 1 else package
    return ".".join([*base, *([rest] if rest else [])])


def _import_bindings(modules: Modules, module: str, statements: list[Node]) -> dict[str, _Binding]:
    """The names the module's top-level imports bind to modules of the project (others are not followed)."""
    bindings: dict[str, _Binding] = {}
    for position, statement in enumerate(statements):
        if statement.type == "import_from_statement":
            source = _absolute(modules, module, statement.child_by_field_name("module_name"))
            if modules.file(source) is None:
                continue
            for index, name in enumerate(statement.children_by_field_name("name")):
                original = name.child_by_field_name("name") if name.type == "aliased_import" else name
                alias = name.child_by_field_name("alias") if name.type == "aliased_import" else name
                bindings[node_text(alias)] = _Binding(source, node_text(original), (statement.start_byte, index))
        elif statement.type == "import_statement":
            for index, name in enumerate(statement.children_by_field_name("name")):
                if name.type == "aliased_import" and modules.file(node_text(name.child_by_field_name("name"))):
                    bindings[node_text(name.child_by_field_name("alias"))] = _Binding(
                        node_text(name.child_by_field_name("name")), None, (statement.start_byte, index))
    return bindings


def _definition_in(modules: Modules, module: str, name: str, depth: int = 0) -> str | None:
    """The text of ``name``'s module-level definition in ``module``, following re-exports of the project."""
    parsed = modules.tree(module)
    if parsed is None or depth > _FOLLOWED:
        return None
    statements = parsed[1].named_children
    statement = _top_level_bindings(statements).get(name)
    if statement is not None and statement.type not in IMPORTS:
        return node_text(statement)
    binding = _import_bindings(modules, module, statements).get(name)
    if binding is not None and binding.name is not None:
        return _definition_in(modules, binding.module, binding.name, depth + 1)
    return None


def _star_definition(
    modules: Modules, module: str, statements: list[Node], name: str
) -> tuple[tuple[int, int], str] | None:
    """``name``'s definition in a project module that ``module`` star-imports, with the import's position."""
    for statement in statements:
        if statement.type == "import_from_statement" and any(c.type == "wildcard_import" for c in statement.children):
            source = _absolute(modules, module, statement.child_by_field_name("module_name"))
            text = _definition_in(modules, source, name) if modules.file(source) else None
            if text:
                return (statement.start_byte, 0), text
    return None


def _class_without(data: bytes, klass: Node, target: Node, attributes: dict[str, set[str]]) -> str:
    """A method's class (top-level statement) without the method itself and without the methods it does not
    reach through ``self``, ``cls`` or the class's name; ``__init__`` and everything but methods stay."""
    definition = unwrap(klass)
    name = node_text(definition.child_by_field_name("name"))
    reached = attributes.get("self", set()) | attributes.get("cls", set()) | attributes.get(name, set())
    cuts = [target]
    body = definition.child_by_field_name("body")
    for member in body.named_children if body else ():
        method = unwrap(member)
        if method.type == "function_definition" and member != target:
            method_name = node_text(method.child_by_field_name("name"))
            if method_name != "__init__" and method_name not in reached:
                cuts.append(member)
    pieces, at = [], klass.start_byte
    for cut in sorted(cuts, key=lambda node: node.start_byte):
        line_start = cut.start_byte - cut.start_point.column
        pieces.append(data[at:line_start])
        at = cut.end_byte
    pieces.append(data[at:klass.end_byte])
    text = b"".join(pieces).decode("utf-8")
    text = _BLANK_RUNS.sub("\n\n", text).rstrip()
    return text + "\n    pass" if text.endswith(":") else text
