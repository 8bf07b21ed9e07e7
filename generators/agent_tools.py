"""The agent's static tools over one problem's repository (RepoClassBench's RRR set): read-only lookups in the
parsed source (``repository.py``) that answer the model in plain text.

The definition being written is hidden from every tool (its body, and for a class its members' bodies), and the
project's tests are not indexed: the tools show the repository around the task, never its answer or its oracle.
"""

from __future__ import annotations

import builtins
import difflib
from collections.abc import Mapping
from typing import Any

from tree_sitter import Node

from pytest_repoexec.postprocess import extract_code
from pytest_repoexec.syntax import node_text, parse, walk

from .repository import Definition, Piece, Repository

RESULT_LIMIT = 6000  # characters of one tool's answer
PIECES = 5  # pieces of code a ranking answers with
PIECE_LINES = 40

_CLASS_AND_METHOD = {"class_name": "the class (empty for a module-level function)", "method": "the method's name"}
TOOLS: dict[str, tuple[str, dict[str, str], tuple[str, ...]]] = {  # name -> (what it does, parameters, required)
    "get_class_info": ("A class of the repository: its bases, attributes and members with their signatures, "
                       "inherited ones included.", {"name": "the class's name"}, ("name",)),
    "get_signature": ("The signature and docstring of a method, or of a module-level function.",
                      _CLASS_AND_METHOD, ("class_name", "method")),
    "get_method_body": ("The whole source of a method, or of a module-level function.",
                        _CLASS_AND_METHOD, ("class_name", "method")),
    "get_relevant_code": ("The repository's classes, functions and module-level code that best match a query "
                          "(words or names).", {"query": "what to look for"}, ("query",)),
    "get_imports": ("Import statements, as the repository makes them, for the names your latest attempt (or "
                    "`code`) uses without defining or importing them.",
                    {"code": "code to check instead of your latest attempt"}, ()),
}
_KNOWN = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__package__", "__spec__", "__path__"}


def openai_tools() -> list[dict[str, Any]]:
    """The tools as an OpenAI-compatible ``tools`` list (function calling)."""
    return [{"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "required": list(required),
                       "properties": {key: {"type": "string", "description": text} for key, text in params.items()}},
    }} for name, (description, params, required) in TOOLS.items()]


def describe_tools() -> str:
    """The tools as the text protocol lists them."""
    return "\n".join(f"- {name}({', '.join(params)}): {description}"
                     for name, (description, params, _) in TOOLS.items())


class Toolbox:
    """The tools for one problem: the repository with the definition ``entry_point`` of ``module`` hidden."""

    def __init__(self, repository: Repository, module: str, entry_point: str) -> None:
        self.repository, self.module, self.entry_point = repository, module, entry_point

    def call(self, name: str, arguments: Mapping[str, Any], attempt: str = "") -> str:
        """The tool's answer as the model reads it. A wrong call is answered with what is wrong (the model
        can correct itself), never raised."""
        if name not in TOOLS:
            return f"error: there is no tool {name!r}; the tools are {', '.join(TOOLS)}"
        _, params, required = TOOLS[name]
        unknown, missing = sorted(set(arguments) - set(params)), [key for key in required if key not in arguments]
        if unknown or missing:
            return f"error: {name} takes ({', '.join(params)})" + (f"; unknown: {', '.join(unknown)}" * bool(unknown)) \
                + (f"; missing: {', '.join(missing)}" * bool(missing))
        given = {key: "" if value is None else str(value) for key, value in arguments.items()}
        if name == "get_imports":
            given = {"code": given.get("code") or attempt}
        text = getattr(self, name)(**given)
        return text if len(text) <= RESULT_LIMIT else text[:RESULT_LIMIT] + "\n... (cut)"

    def hidden(self, module: str, qualname: str) -> bool:
        """Whether a definition is the one being written, or lies inside it."""
        return module == self.module and (qualname == self.entry_point or qualname.startswith(self.entry_point + "."))

    def get_related_snippets(self, query: str) -> str:
        """What the loop gives the model up front: the repository's code that best matches the task's text."""
        return self._ranked(query) or "(no code of the repository matches the task's words)"

    def get_relevant_code(self, query: str) -> str:
        return self._ranked(query) or f"nothing in the repository matches {query!r}"

    def _ranked(self, query: str) -> str:
        pieces = [piece for piece in self.repository.rank(query) if not self.hidden(piece.module, piece.qualname)]
        return "\n\n".join(_show(piece) for piece in pieces[:PIECES])

    def get_class_info(self, name: str) -> str:
        found = self.repository.classes(name)
        if not found:
            return _not_found("class", name, [d.name for d in self.repository.definitions if d.kind == "class"])
        cls = self.repository.resolve_class(found[0].name, self.module) if "." not in name else found[0]
        if self.hidden(cls.module, cls.qualname):
            return f"{name} is the class you are writing: its members are yours to define"
        lineage = self.repository.lineage(cls)
        outside = [base for c in lineage for base in c.bases
                   if self.repository.resolve_class(base.rpartition(".")[2], c.module) is None]
        lines = [f"{cls.header.splitlines()[-1].removesuffix(':')}  # module {cls.module} ({cls.path})"]
        if outside:
            lines.append(f"bases outside the repository: {', '.join(outside)}")
        shown: set[str] = set()
        for owner in lineage:
            members = [m for m in self.repository.members(owner) if m.name not in shown]
            attributes = [a for a in owner.attributes if a not in shown]
            shown.update(m.name for m in members)
            shown.update(attributes)
            if owner is not cls and (members or attributes):
                lines.append(f"inherited from {owner.name} (module {owner.module}):")
            if attributes:
                lines.append(f"    attributes: {', '.join(attributes)}")
            lines += [_member_line(member) for member in members]
        others = [f"{d.module}.{d.qualname}" for d in found if d is not cls]
        if others:
            lines.append(f"also defined: {', '.join(others)}")
        return "\n".join(lines)

    def get_signature(self, class_name: str, method: str) -> str:
        found = self._member(class_name, method)
        if isinstance(found, str):
            return found
        return found.header + (f'\n    """{found.doc}"""' if found.doc else "") + f"\n# module {found.module}"

    def get_method_body(self, class_name: str, method: str) -> str:
        found = self._member(class_name, method)
        if isinstance(found, str):
            return found
        if self.hidden(found.module, found.qualname):
            return f"{found.qualname} is the definition you are writing: its body is yours to write"
        return f"# module {found.module} ({found.path})\n{found.text}"

    def get_imports(self, code: str) -> str:
        if not code.strip():
            return "error: there is no attempt yet; pass the code to check as `code`"
        focal = self.repository.modules.get(self.module)
        known = set(focal.defined) | set(focal.imports) if focal else set()
        lines, missing = [], []
        for name in undefined_names(extract_code(code), known):
            statement = self.repository.import_for(name)
            if statement is None:
                missing.append(name)
            else:
                lines.append(statement)
        if missing:
            lines.append(f"# not found in the repository: {', '.join(missing)}")
        return "\n".join(lines) or (f"every name the code uses is a builtin, bound in the code, or defined or "
                                    f"imported by module {self.module}")

    def _member(self, class_name: str, method: str) -> Definition | str:
        """The method of the class (or its bases), or the module-level function; else what was not found."""
        if not class_name:
            found = self.repository.functions(method)
            if not found:
                return _not_found("module-level function", method,
                                  [d.name for d in self.repository.definitions if d.kind == "function"])
            return next((d for d in found if d.module == self.module), found[0])
        classes = self.repository.classes(class_name)
        if not classes:
            return _not_found("class", class_name, [d.name for d in self.repository.definitions if d.kind == "class"])
        cls = self.repository.resolve_class(classes[0].name, self.module) if "." not in class_name else classes[0]
        for owner in self.repository.lineage(cls):
            match = next((m for m in self.repository.members(owner) if m.name == method), None)
            if match is not None:
                return match
        names = [m.name for owner in self.repository.lineage(cls) for m in self.repository.members(owner)]
        return _not_found(f"method of {cls.name}", method, names)


def undefined_names(code: str, known: set[str] = frozenset()) -> list[str]:
    """The names ``code`` reads without binding them (as parameter, assignment, loop variable, import,
    definition, ``as`` target...), less builtins and ``known``, in order of first use."""
    _, root = parse(code)
    used, bound = [], set()
    for node in walk(root):
        if node.type != "identifier" or _is_field(node, "attribute", "attribute") \
                or _is_field(node, "keyword_argument", "name"):
            continue
        (bound.add if _binds(node) else used.append)(node_text(node))
    return [name for name in dict.fromkeys(used) if name not in bound and name not in known and name not in _KNOWN]


_PASS_THROUGH = {"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "dictionary_splat_pattern",
                 "typed_parameter", "default_parameter", "typed_default_parameter", "parenthesized_expression",
                 "tuple", "list", "as_pattern_target", "dotted_name", "aliased_import"}
_BINDING_FIELDS = {"function_definition": "name", "class_definition": "name", "assignment": "left",
                   "augmented_assignment": "left", "for_statement": "left", "for_in_clause": "left",
                   "as_pattern": "alias", "named_expression": "name"}
_BINDERS = {"parameters", "lambda_parameters", "global_statement", "nonlocal_statement", "import_statement",
            "import_from_statement", "future_import_statement"}


def _binds(node: Node) -> bool:
    """Whether this identifier is bound where it stands, rather than read."""
    child, parent = node, node.parent
    while parent is not None and parent.type in _PASS_THROUGH:
        if parent.type in ("default_parameter", "typed_default_parameter") and not _is_field(child, parent.type, "name"):
            return False  # a default value is read
        if parent.type == "typed_parameter" and _is_field(child, "typed_parameter", "type"):
            return False  # so is an annotation
        child, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type in _BINDING_FIELDS:
        return _is_field(child, parent.type, _BINDING_FIELDS[parent.type])
    return parent.type in _BINDERS


def _is_field(node: Node, parent_type: str, field: str) -> bool:
    parent = node.parent
    return parent is not None and parent.type == parent_type and parent.child_by_field_name(field) == node


def _member_line(member: Definition) -> str:
    summary = member.doc.strip().splitlines()[0] if member.doc and member.doc.strip() else ""
    lines = member.header.splitlines()
    lines[-1] += f"  # {summary}" if summary else ""
    return "\n".join(f"    {line}" for line in lines)


def _show(piece: Piece) -> str:
    lines = piece.text.splitlines()
    text = "\n".join(lines[:PIECE_LINES]) + ("\n    ..." if len(lines) > PIECE_LINES else "")
    what = f"{piece.qualname} ({piece.kind})" if piece.qualname else piece.kind
    return f"# {piece.path}: {what}\n{text}"


def _not_found(what: str, name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name.rpartition(".")[2], sorted(set(names)), n=3)
    return f"no {what} named {name!r} in the repository" + (f"; did you mean {', '.join(close)}?" if close else "")
