"""Source-code operations on Python, done with tree-sitter.

tree-sitter rather than ``ast``: candidates and prompt contexts come from language models and may be
broken Python, and splicing a candidate into a module needs exact byte ranges, so that everything around
the replaced definition (comments, blank lines, formatting) survives byte for byte.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter_python
from tree_sitter import Language, Node, Parser

FUNCTION, CLASS = "function_definition", "class_definition"  # the kinds of definition an entry point names
_SCOPES = (FUNCTION, CLASS)
KEYWORDS = {FUNCTION: r"(async\s+)?def", CLASS: "class"}  # what opens each kind's header, as a regex
IMPORTS = ("import_statement", "import_from_statement", "future_import_statement")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


class DefinitionNotFound(LookupError):
    """The source defines no function (or class) under the requested qualified name."""


@dataclass(frozen=True)
class Definition:
    """Where a function (or class) lies in a source; offsets index the source's UTF-8 encoding."""

    start_byte: int  # the first decorator if decorated, else `def` / `async def`
    end_byte: int  # the end of the body
    column: int  # indentation of the first line
    decorated: bool


@functools.cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_python.language()))


def parse(source: str) -> tuple[bytes, Node]:
    """The UTF-8 bytes of `source` and their syntax tree (tree-sitter offsets are byte offsets)."""
    data = source.encode("utf-8")
    return data, _parser().parse(data).root_node


def walk(node: Node) -> Iterator[Node]:
    """`node` and all nodes under it in document order (iterative: trees can be deeper than the stack)."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def node_text(node: Node) -> str:
    return node.text.decode("utf-8")


def _name(definition: Node) -> str | None:
    name = definition.child_by_field_name("name")
    return node_text(name) if name else None


def unwrap(node: Node) -> Node:
    """The class or function inside a decorated definition; any other node as it is."""
    if node.type == "decorated_definition":
        return node.child_by_field_name("definition") or node
    return node


def _definitions(root: Node, kind: str) -> Iterator[tuple[Node, Node]]:
    """(outer, definition) for every definition of `kind` in document order; outer includes the decorators."""
    for node in walk(root):
        if node.type == kind:
            parent = node.parent
            yield (parent if parent.type == "decorated_definition" else node), node


def _first_definition(root: Node, kind: str) -> tuple[Node, Node] | None:
    """The first definition of `kind` in document order, which is an outermost one."""
    return next(_definitions(root, kind), None)


def _header_colon(definition: Node) -> Node:
    """The colon ending a class or function header (other colons lie deeper, e.g. in annotations)."""
    return next(child for child in definition.children if child.type == ":")


def _indent_of(data: bytes, node: Node) -> str:
    """The indentation of `node`'s line: what precedes it there, anything but whitespace blanked."""
    before = data[node.start_byte - node.start_point.column : node.start_byte].decode("utf-8")
    return re.sub(r"\S", " ", before)


def _string_rows(node: Node) -> set[int]:
    """Rows that begin inside a string literal under `node`: re-indenting them would change the string."""
    return {
        row
        for string in walk(node)
        if string.type == "string"
        for row in range(string.start_point.row + 1, string.end_point.row + 1)
    }


def _reindent(text: str, frozen: set[int], indent: str) -> list[str]:
    """The lines of `text` moved from the first line's indentation to `indent`.

    Rows in `frozen` lie inside strings and stay as they are; blank lines become empty. Lines left of the
    first one (legal inside brackets) lose only the whitespace they share with it.
    """
    lines = text.split("\n")
    margin = lines[0][: len(lines[0]) - len(lines[0].lstrip())]

    def move(line: str) -> str:
        return indent + line[len(os.path.commonprefix([line, margin])) :] if line.strip() else ""

    return [line if row in frozen else move(line) for row, line in enumerate(lines)]


def _locate(root: Node, qualname: str, kind: str = FUNCTION) -> tuple[Node, Node]:
    """(outer, definition) for `qualname`, the last part of `kind`; among several bindings of a name the last
    wins, as at run time."""
    parts = qualname.split(".")
    scope = root
    for depth, part in enumerate(parts, 1):
        last = depth == len(parts)
        kinds = (kind,) if last else _SCOPES
        matches = [pair for pair in _bindings(scope) if pair[1].type in kinds and _name(pair[1]) == part]
        if not matches:
            what = kind.partition("_")[0] if last else "class or function"
            raise DefinitionNotFound(f"{qualname!r} is not defined: no {what} {part!r}")
        outer, definition = matches[-1]
        scope = definition.child_by_field_name("body") or definition
    return outer, definition


def _bindings(scope: Node) -> Iterator[tuple[Node, Node]]:
    """(outer, definition) for the classes and functions bound in `scope`.

    Compound statements (`if`, `try`, ...) are looked into; nested classes and functions are not, being
    scopes of their own.
    """
    for child in scope.children:
        definition = unwrap(child)
        if definition.type in _SCOPES:
            yield child, definition
        else:
            yield from _bindings(child)


def _trim(text: str) -> str:
    """`text` with "\\n" line ends and without leading blank lines or trailing whitespace."""
    return _LEADING_BLANK_LINES.sub("", text.replace("\r\n", "\n").rstrip())


@dataclass(frozen=True)
class _Target:
    """Where a definition to be replaced lies: byte offsets and the indentation of its first line."""

    data: bytes
    outer_start: int  # the first decorator if decorated, else `def` (or `class`)
    function_start: int
    end: int
    outer_indent: str
    function_indent: str


@functools.lru_cache(maxsize=32)
def _target(module_source: str, qualname: str, kind: str) -> _Target:
    """Cached: every sample of a problem splices into the same module, whose parse dominates a splice."""
    data, root = parse(module_source)
    outer, function = _locate(root, qualname, kind)
    return _Target(data, outer.start_byte, function.start_byte, function.end_byte,
                   _indent_of(data, outer), _indent_of(data, function))


def find_definition(source: str, qualname: str, kind: str = FUNCTION) -> Definition:
    """Locate the function `qualname` ("f", "Class.method", "outer.inner", ...), or the class, in `source`."""
    target = _target(source, qualname, kind)
    decorated = target.outer_start != target.function_start
    return Definition(target.outer_start, target.end, len(target.outer_indent), decorated)


def replace_definition(module_source: str, qualname: str, new_definition: str, kind: str = FUNCTION) -> str:
    """`module_source` with the function (or class) `qualname` replaced by `new_definition`, all else
    byte-identical.

    The candidate is re-indented to the target's column and takes the module's line ends. Without
    decorators of its own it keeps the original's (``@staticmethod``, ``@dataclass`` and the like are interface).
    """
    target, start, indent, text = _splice(module_source, qualname, new_definition, kind)
    return (target.data[:start] + text.removeprefix(indent).encode("utf-8") + target.data[target.end :]).decode("utf-8")


def splice_syntax_error(module_source: str, qualname: str, new_definition: str, kind: str = FUNCTION) -> str | None:
    """Why the module ``replace_definition`` makes does not parse, or None, parsing only the lines put in.

    Where the original module parses, the spliced one parses exactly where those lines parse alone (under an
    ``if`` where they are indented): they are whole statements at the original's column and first indentation,
    between whole statements, and the tokenizer compares their indentation with nothing above their column. A
    module of a few hundred lines then costs a candidate's few lines to check, not the whole parse again."""
    if not _parses(module_source):
        return _syntax_error(replace_definition(module_source, qualname, new_definition, kind))
    _, _, indent, text = _splice(module_source, qualname, new_definition, kind)
    return _syntax_error(f"if 1:\n{text}\n" if indent else f"{text}\n")


def _splice(module_source: str, qualname: str, new_definition: str, kind: str) -> tuple[_Target, int, str, str]:
    """(the target, where the new definition starts, its indentation, its lines as they stand in the module)."""
    target = _target(module_source, qualname, kind)
    candidate = _trim(new_definition)
    candidate_root = _parser().parse(candidate.encode("utf-8")).root_node
    candidate_function = _first_definition(candidate_root, kind)
    decorated = candidate_function is not None and candidate_function[0] != candidate_function[1]
    start, indent = (target.outer_start, target.outer_indent) if decorated else (target.function_start,
                                                                                   target.function_indent)
    newline = "\r\n" if "\r\n" in module_source else "\n"
    return target, start, indent, newline.join(_reindent(candidate, _string_rows(candidate_root), indent))


@functools.lru_cache(maxsize=32)
def _parses(module_source: str) -> bool:
    """Cached: every sample of a problem splices into the same module."""
    return _syntax_error(module_source) is None


def _syntax_error(source: str) -> str | None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return exc.msg
    return None


def find_function(text: str, name: str, kind: str = FUNCTION) -> str | None:
    """The last definition of function (or class, by `kind`) `name` in `text` (decorators included), dedented
    to column 0.

    Definitions free of syntax errors are preferred, `text` being typically a model's whole answer.
    """
    data, root = parse(text)
    matches = [pair for pair in _definitions(root, kind) if _name(pair[1]) == name]
    if not matches:
        return None
    outer, function = max(matches, key=lambda pair: (not pair[0].has_error, pair[0].start_byte))
    return definition_text(data, outer, function)


def definition_source(source: str, qualname: str, kind: str = FUNCTION) -> str:
    """The definition of `qualname` in `source` ("f", "Class.method"), decorators included, dedented to column 0."""
    data, root = parse(source)
    outer, function = _locate(root, qualname, kind)
    return definition_text(data, outer, function)


def definition_text(data: bytes, outer: Node, function: Node) -> str:
    """A definition from `outer` (its first decorator, or itself) to `function`'s end, dedented to column 0;
    lines inside its strings stay as they are."""
    source = _indent_of(data, outer) + data[outer.start_byte : function.end_byte].decode("utf-8")
    frozen = {row - outer.start_point.row for row in _string_rows(outer)}
    return "\n".join(_reindent(source, frozen, ""))


def docstring(definition: Node) -> tuple[Node, str] | None:
    """The docstring statement of a class or function and the string's value, if it has one."""
    body = definition.child_by_field_name("body")
    first = next((child for child in body.named_children if child.type != "comment"), None) if body else None
    if first is None or first.type != "expression_statement" or first.named_child_count != 1:
        return None
    literal = first.named_children[0]
    if literal.type not in ("string", "concatenated_string"):
        return None
    try:
        value = ast.literal_eval(node_text(literal))
    except (SyntaxError, ValueError):  # an f-string is no docstring, nor is a broken literal
        return None
    return (first, value) if isinstance(value, str) else None


def _body_text(rest: str) -> str:
    """The statements in `rest` (what follows the header or the docstring), at their original indentation.

    A comment ending the header's (or docstring's) line is no statement and is left out.
    """
    head, _, tail = rest.partition("\n")
    if head.strip() and not head.lstrip().startswith("#"):
        return rest.strip()  # a body on the header's line: `def f(): return 1`
    return _LEADING_BLANK_LINES.sub("", tail)


def split_function(function_source: str, kind: str = FUNCTION) -> tuple[str, str | None, str]:
    """(signature, docstring, body) of the function (or class, by `kind`) defined in `function_source` at
    column 0.

    The signature runs from the first decorator to the header's colon; the docstring is cleaned as
    ``inspect.getdoc`` would; the body is the source after the docstring. ValueError if there is no such
    definition.
    """
    data, root = parse(function_source)
    found = _first_definition(root, kind)
    if found is None:
        raise ValueError(f"no {kind.partition('_')[0]} definition in {function_source[:60]!r}")
    outer, function = found
    colon = _header_colon(function)
    found_docstring = docstring(function)
    after = found_docstring[0] if found_docstring else colon
    return (
        data[outer.start_byte : colon.end_byte].decode("utf-8"),
        inspect.cleandoc(found_docstring[1]) if found_docstring else None,
        _body_text(data[after.end_byte : function.end_byte].decode("utf-8")),
    )


def body_identifiers(function_source: str, kind: str = FUNCTION) -> set[str]:
    """The identifiers used in the body of the first function (or class, by `kind`) in `function_source`
    (for dependencies).

    Only the body block is searched, so the signature (a class's bases) does not count; a docstring holds no
    identifiers. A class's body holds its methods, every one of them searched.
    """
    _, root = parse(function_source)
    found = _first_definition(root, kind)
    body = found[1].child_by_field_name("body") if found else None
    if body is None:
        return set()
    return {node_text(node) for node in walk(body) if node.type == "identifier"}


def _identifiers(node: Node) -> Iterator[str]:
    return (node_text(each) for each in walk(node) if each.type == "identifier")


def _statement_names(statement: Node) -> list[str]:
    """What a top-level statement imports or defines, by the RepoExec rule (see `top_level_names`)."""
    if statement.type in IMPORTS:
        return list(_identifiers(statement))
    first = next(_identifiers(statement), None)
    names = [first] if first else []
    if statement.type == "decorated_definition":
        names.append(_name(unwrap(statement)))
    return [name for name in names if name]


def top_level_names(source: str) -> list[str]:
    """The names a module-level source imports or defines at its top level, in order, without repeats.

    Every identifier of an import counts (``import a.b as c``: a, b, c); of any other statement the first
    identifier (a def's or class's name, an assignment's target), and for a decorated definition also its
    name, after the decorator's.
    """
    _, root = parse(source)
    names = (name for statement in root.named_children for name in _statement_names(statement))
    return list(dict.fromkeys(names))


def dependencies(context: str, reference: str, entry_point: str, kind: str = FUNCTION) -> list[str]:
    """The context's top-level names that the reference's body uses (the DIR metric), in context order."""
    own_name = entry_point.rpartition(".")[2]
    used = body_identifiers(reference, kind)
    return [name for name in top_level_names(context) if name in used and name != own_name]


def _blank_line_above(data: bytes, node: Node) -> bool:
    """Whether a blank line precedes `node`'s line: the layout stripped contexts keep between items."""
    line_start = node.start_byte - node.start_point.column
    return line_start > 0 and not data[: line_start - 1].rpartition(b"\n")[2].strip()


def _strip_items(data: bytes, items: list[Node], keep_docstrings: bool) -> str:
    """`items` stripped, each on its own lines, after a blank line where the source had one."""
    return "".join(
        ("\n\n" if _blank_line_above(data, item) else "\n") + _strip_statement(data, item, keep_docstrings)
        for item in items
    )


def _strip_statement(data: bytes, statement: Node, keep_docstrings: bool) -> str:
    """One statement at its indentation: a class or function stripped, anything else verbatim."""
    definition = unwrap(statement)
    text = _indent_of(data, statement)
    if definition.type not in _SCOPES:
        return text + node_text(statement)
    text += data[statement.start_byte : _header_colon(definition).end_byte].decode("utf-8")
    found_docstring = docstring(definition)
    if keep_docstrings and found_docstring:
        text += "\n" + _indent_of(data, found_docstring[0]) + node_text(found_docstring[0])
    if definition.type == "function_definition":
        return text
    body = definition.child_by_field_name("body")
    members = [
        member
        for member in (body.named_children if body else [])
        if unwrap(member).type in _SCOPES or keep_docstrings and _is_assignment(member)
    ]
    return text + _strip_items(data, members, keep_docstrings)


def _is_assignment(statement: Node) -> bool:
    first = statement.named_child(0)
    return statement.type == "expression_statement" and first is not None and first.type == "assignment"


def strip_bodies(source: str, keep_docstrings: bool) -> str:
    """The paper's smaller contexts from a full one: "medium" (keep_docstrings) or "small".

    Functions keep their signature (and docstring for medium), classes their header and stripped methods
    (and docstring and class-level assignments for medium); other top-level statements stay verbatim. A
    function left bare is written as its signature line, as RepoExec shows it, which is not valid Python.
    """
    data, root = parse(source.replace("\r\n", "\n"))
    return _strip_items(data, root.named_children, keep_docstrings).lstrip("\n") + "\n"
