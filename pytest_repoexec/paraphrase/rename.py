"""Code rewritten with the new spellings, by tree-sitter: a name is renamed where it is bound to a renamed
definition of the repository (its definition, its uses, its imports, ``module.name``), a member where the
object is a renamed class or an instance of one (``self.x``, ``Cls.x``, ``super().x``, ``obj.x`` for
``obj = Cls(...)`` or ``obj: Cls``; a ``loose`` member also on an object of no known type), and any member
read where the trace of the tests saw an instance's read (``trace``), and a member's definition where the trace
saw a subclass outside the benchmark (a test's) override it; strings (but their ``{...}`` code, a string
annotation that names a renamed definition, and with ``strings`` any string that is a renamed name), comments,
keyword arguments and attributes of anything else stay as written. ``__all__``'s strings name bindings, so they
follow."""

from __future__ import annotations

import re

from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node

from ..syntax import node_text, parse
from .index import LOCAL, Binding, ClassKey, Index

_SCOPES = ("function_definition", "class_definition", "lambda")
_REPR_OPENING = re.compile(r"<(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)(?=[( >]|$)")  # <Name(, <Name , <fields.Name(
_TARGETS = ("assignment", "augmented_assignment", "for_statement", "for_in_clause")
Sites = dict[str, frozenset[tuple[int, int, str]]]  # file -> (end line, end column in bytes, member) read there
Definitions = dict[str, frozenset[tuple[int, str]]]  # file -> (first line, a decorator's if any, name) of a def


@dataclass
class Scope:
    bindings: dict[str, Binding]
    parent: Scope | None = None
    klass: ClassKey | None = None  # a class body's class, where it is a module-level class of the repository
    in_class: bool = False  # a class body: names bound there are not seen from the functions inside it
    owner: ClassKey | None = None  # a method's class (for super())


@dataclass
class Renames:
    """The chosen spellings: the repository's top-level definitions renamed, the members renamed per class."""

    index: Index
    names: dict[str, str]  # old -> new spelling
    top: set[ClassKey] = field(default_factory=set)  # (module, name) of the renamed top-level definitions
    own: dict[ClassKey, set[str]] = field(default_factory=dict)  # a benchmark class's renamed members
    sites: Sites = field(default_factory=dict)  # traced reads of members on instances, by file under the root
    traced: int = 0  # members renamed only because the trace saw an instance's read there
    overrides: Definitions = field(default_factory=dict)  # traced overrides in subclasses outside the benchmark
    overridden: int = 0  # definitions renamed only because the trace saw them override a renamed member
    kept: set[tuple[ClassKey, str]] = field(default_factory=set)  # members kept as written (``keep``), by class
    loose: set[str] = field(default_factory=set)  # members renamed too where the object's type is not known
    local: set[str] = field(default_factory=set)  # names renamed too as a function's assigned local variables
    strings: bool = False  # a string that is exactly a renamed name (``"snap"``) renamed too

    def lineage(self, key: ClassKey | None, seen: frozenset = frozenset()) -> set[ClassKey]:
        """The class and its repository bases, theirs in turn."""
        if key is None or key in seen:
            return set()
        found = {key}
        for base in self.index.bases(key) if key in self.index.classes else ():
            found |= self.lineage(base, seen | {key})
        return found

    def members(self, key: ClassKey | None) -> set[str]:
        """A class's renamed members, its repository bases' included (an override is renamed with them)."""
        return set().union(*(self.own.get(cls, ()) for cls in self.lineage(key)))

    def keep(self, key: ClassKey, member: str) -> None:
        """``member`` as written in ``key`` and every class that shares its definition (bases that define it,
        classes deriving from them): a base outside the repository calls it by that name. A name no class renames
        any more leaves the table."""
        defining = {key} | {base for base in self.lineage(key) if member in self.own.get(base, ())}
        for cls, members in self.own.items():
            if self.lineage(cls) & defining:
                members.discard(member)
                self.kept.add((cls, member))
        if all(member not in members for members in self.own.values()) and all(n != member for _, n in self.top):
            self.names.pop(member, None)

    def keep_inherited(self) -> dict[str, str]:
        """A member that a repository base also defines without renaming it (an abstract declaration, a default
        its other subclasses override and its own code calls) is the same member there: renaming it in the
        benchmark class alone would split it, so it is kept as written (``keep``). ``Class.member`` -> that base."""
        kept = {}
        for key in sorted(self.own):
            for member in sorted(self.own.get(key, ())):
                base = next((base for base in sorted(self.lineage(key) - {key}) if member in
                             self.index.defines(base) and member not in self.own.get(base, ())), None)
                if base is not None:
                    kept[f"{key[1]}.{member}"] = f"{base[0]}.{base[1]}"
                    self.keep(key, member)
        return kept

    def renamed(self, binding: Binding | None) -> bool:
        return binding is not None and binding.kind == "def" and binding.follows and binding.key in self.top

    def rewrite_files(self) -> None:
        """Every module of the repository rewritten in place with the new spellings."""
        for path, module in self.index.modules.items():
            source = path.read_text(encoding="utf-8", errors="replace")
            rewritten = self.rewrite(source, module, path=path.relative_to(self.index.root).as_posix())
            if rewritten != source:
                path.write_text(rewritten, encoding="utf-8")

    def rewrite(self, source: str, module: str, klass: ClassKey | None = None, path: str | None = None) -> str:
        """``source`` read as code of ``module`` (with the module's bindings; its own for a module the repository
        lacks, such as a problem's test module), or as the body of its class ``klass`` (a method's reference),
        with every renamed name in its new spelling; ``path``: where it runs (relative to the source root), for
        the traced sites."""
        data, tree = parse(source)
        known = module in self.index.trees
        scope = Scope(dict(self.index.env(module) if known else self.index.bindings(tree, module)))
        rewriter = _Rewriter(self, module, path)
        rewriter.prescan(tree, scope)
        rewriter.visit(tree, Scope({}, scope, klass=klass, in_class=True) if klass is not None else scope)
        for start, end, text in sorted(rewriter.edits, reverse=True):
            data = data[:start] + text.encode("utf-8") + data[end:]
        return data.decode("utf-8")


class _Rewriter:
    def __init__(self, renames: Renames, module: str, path: str | None) -> None:
        self.renames, self.index, self.module = renames, renames.index, module
        self.sites = renames.sites.get(path, frozenset()) if path is not None else frozenset()
        self.overrides = renames.overrides.get(path, frozenset()) if path is not None else frozenset()
        self.edits: list[tuple[int, int, str]] = []

    def rename(self, node: Node) -> None:
        self.edits.append((node.start_byte, node.end_byte, self.renames.names[node_text(node)]))

    def lookup(self, scope: Scope, name: str) -> Binding | None:
        """A bare name as Python finds it: enclosing functions, then the module (class bodies are skipped)."""
        current: Scope | None = scope
        while current is not None:
            if not current.in_class or current is scope:
                if name in current.bindings:
                    return current.bindings[name]
            current = current.parent
        return None

    def entity(self, node: Node, scope: Scope) -> Binding | None:
        return self.index.entity(node, lambda name: self.lookup(scope, name), _owner(scope))

    def visit(self, node: Node, scope: Scope) -> None:
        kind = node.type
        if kind == "string":
            if self.renames.strings:
                self.named_string(node)
            elif in_annotation(node):
                self.forward_reference(node, scope)
            if not self.renames.strings:  # the RepoClassBench import spells its tests' reprs as the benchmark did
                self.repr_string(node)
            for child in node.children:
                if child.type == "interpolation":
                    self.visit(child, scope)
        elif kind == "import_from_statement":
            self.import_from(node, scope)
        elif kind in ("import_statement", "future_import_statement", "comment"):
            return
        elif kind in ("class_definition", "function_definition"):
            self.definition(node, scope)
        elif kind == "lambda":
            inner = Scope({name: LOCAL for name in _parameters(node)}, scope)
            self.visit(node.child_by_field_name("body"), inner)
        elif kind == "identifier":
            self.bare(node, scope)
        elif kind == "attribute":
            self.attribute(node, scope)
        elif kind == "keyword_argument":
            self.visit(node.child_by_field_name("value"), scope)
        elif kind == "assignment" and node_text(node.child_by_field_name("left")) == "__all__":
            self.exported_names(node.child_by_field_name("right"), scope)
        else:
            for child in node.children:
                self.visit(child, scope)

    def bare(self, node: Node, scope: Scope) -> None:
        name = node_text(node)
        if scope.klass is not None and name in self.renames.members(scope.klass):
            # a bare name in a class body is a member only where that body binds it: Python never finds an
            # inherited one there (``validate=validate.OneOf(...)`` in a Schema subclass reads the module)
            if name in self.index.defines(scope.klass):
                self.rename(node)
            elif self.renames.renamed(self.lookup(scope, name)):
                self.rename(node)
        elif self.renames.renamed(binding := self.lookup(scope, name)) or binding == Binding("local", name=name):
            self.rename(node)

    def attribute(self, node: Node, scope: Scope) -> None:
        holder, name = node.child_by_field_name("object"), node.child_by_field_name("attribute")
        self.visit(holder, scope)
        binding = self.entity(holder, scope)
        if binding is not None and binding.kind == "module":
            if self.renames.renamed(self.index.target(binding.module, node_text(name))):
                self.rename(name)
        elif binding is not None and node_text(name) in self.renames.members(self.index.class_key(binding)):
            self.rename(name)
        elif (name.end_point[0] + 1, name.end_point[1], node_text(name)) in self.sites:
            self.rename(name)
            self.renames.traced += 1
        elif node_text(name) in self.renames.loose and (binding is None or binding.kind == "local"):
            self.rename(name)

    def definition(self, node: Node, scope: Scope) -> None:
        name = node.child_by_field_name("name")
        text = node_text(name)
        if scope.klass is not None:
            renamed = text in self.renames.members(scope.klass)
        else:
            renamed = scope.parent is None and self.renames.renamed(scope.bindings.get(text))
        if not renamed and node.type == "function_definition" and (_first_line(node), text) in self.overrides:
            renamed = True
            self.renames.overridden += 1
        if renamed:
            self.rename(name)
        if node.type == "class_definition":
            key = self.index.class_key(scope.bindings.get(text)) if scope.parent is None else None
            if node.child_by_field_name("superclasses"):
                self.visit(node.child_by_field_name("superclasses"), scope)
            inner = Scope({}, scope, klass=key, in_class=True)
            self.prescan(node.child_by_field_name("body"), inner)
            self.visit(node.child_by_field_name("body"), inner)
            return
        inner = Scope({}, scope, owner=scope.klass)
        for index, (parameter, annotation, default) in enumerate(_parameter_nodes(node)):
            for part in (annotation, default):
                if part is not None:
                    self.visit(part, scope)
            typed = self.entity(annotation, scope) if annotation is not None else None
            if index == 0 and scope.klass is not None and _decorated(node, "@classmethod"):
                inner.bindings[parameter] = Binding("def", *scope.klass, follows=False)  # cls: the class itself
            elif index == 0 and scope.klass is not None and not _decorated(node, "@staticmethod"):
                inner.bindings[parameter] = Binding("instance", *scope.klass)
            elif typed is not None and self.index.class_key(typed) and typed.kind == "def":
                inner.bindings[parameter] = Binding("instance", *typed.key)
            else:
                inner.bindings[parameter] = LOCAL
        if node.child_by_field_name("return_type"):
            self.visit(node.child_by_field_name("return_type"), scope)
        self.prescan(node.child_by_field_name("body"), inner)
        self.visit(node.child_by_field_name("body"), inner)

    def prescan(self, body: Node, scope: Scope) -> None:
        """The names a scope binds before its statements are read: assigned ones are local (an instance where
        the value is a call of a repository class), imports bind what they reach; the module scope keeps its
        definitions and only learns its instances."""
        module = scope.parent is None
        for node in _own_nodes(body):
            if node.type == "import_from_statement" or node.type == "import_statement":
                if not module:
                    scope.bindings.update(self.index.imported(node, self.module))
            elif node.type in _TARGETS or node.type in ("as_pattern", "named_expression"):
                value = node.child_by_field_name("right") or node.child_by_field_name("value") or (
                    node.named_children[0] if node.type == "as_pattern" and node.named_children else None)
                made = self.entity(value, scope) if value is not None and node.type != "for_statement" else None
                made = made if made is not None and made.kind == "instance" else None
                typed = node.child_by_field_name("type")
                if made is None and typed is not None and (hint := self.entity(typed, scope)) is not None and \
                        hint.kind == "def" and self.index.class_key(hint):
                    made = Binding("instance", *hint.key)
                for target in _target_names(node):
                    if made is not None:
                        scope.bindings[target] = made
                    elif not module:
                        scope.bindings.setdefault(target, Binding("local", name=target) if target in
                                                  self.renames.local and not scope.in_class else LOCAL)
            elif node.type in ("function_definition", "class_definition") and not module and not scope.in_class:
                scope.bindings[node_text(node.child_by_field_name("name"))] = LOCAL

    def import_from(self, node: Node, scope: Scope) -> None:
        source = self.index.from_module(node, self.module)
        for name in node.children_by_field_name("name"):
            original = name.child_by_field_name("name") if name.type == "aliased_import" else name
            if self.renames.renamed(self.index.target(source, node_text(original))):
                self.rename(original)
                alias = name.child_by_field_name("alias") if name.type == "aliased_import" else None
                if alias is not None and node_text(alias) == node_text(original):  # a re-export: X as X
                    self.rename(alias)

    def forward_reference(self, node: Node, scope: Scope) -> None:
        """A string annotation that is one name (``-> "Source"``) is that name as code: it follows its binding."""
        content = [child for child in node.children if child.type == "string_content"]
        if len(content) == 1 and node_text(content[0]).isidentifier() and \
                self.renames.renamed(self.lookup(scope, node_text(content[0]))):
            self.rename(content[0])

    def named_string(self, node: Node) -> None:
        content = [child for child in node.children if child.type != "string_start" and child.type != "string_end"]
        if len(content) == 1 and content[0].type == "string_content" and node_text(content[0]) in self.renames.names:
            self.rename(content[0])

    def repr_string(self, node: Node) -> None:
        """A string that opens as a renamed class's repr does (``"<Length(min=1, ...)>"``, ``"<Length "``,
        ``"<fields.Integer(..."``, the ``"<fields.Integer"`` a test looks for in one): a repr
        shows the class's ``__name__``, which the rename changed, so the expectation follows it (everywhere, so a
        literal repr of the source and a test's expectation stay alike)."""
        content = [child for child in node.children if child.type not in ("string_start", "string_end")]
        if not content or content[0].type != "string_content":
            return
        text = node_text(content[0])
        match = _REPR_OPENING.match(text)
        if match and (name := match.group(1)) in self.renames.names and \
                any(top == name and (module, top) in self.index.classes for module, top in self.renames.top):
            start = content[0].start_byte + len(text[:match.start(1)].encode("utf-8"))
            self.edits.append((start, start + len(name.encode("utf-8")), self.renames.names[name]))

    def exported_names(self, value: Node, scope: Scope) -> None:
        """``__all__ = [...]``: its strings are the names the module exports, so they follow their bindings."""
        for item in value.named_children if value is not None else ():
            content = [child for child in item.children if child.type == "string_content"]
            if item.type == "string" and len(content) == 1 and \
                    self.renames.renamed(self.lookup(scope, node_text(content[0]))):
                self.rename(content[0])


def _owner(scope: Scope) -> ClassKey | None:
    current: Scope | None = scope
    while current is not None and current.owner is None:
        current = current.parent
    return current.owner if current is not None else None


def _own_nodes(body: Node) -> Iterator[Node]:
    """The nodes of a scope's body, not those of the functions, classes and lambdas in it (their names are)."""
    stack = list(reversed(body.children))
    while stack:
        node = stack.pop()
        yield node
        if node.type not in _SCOPES:
            stack.extend(reversed(node.children))


def _target_names(node: Node) -> list[str]:
    """The plain names an assignment, loop, ``with ... as`` or ``:=`` binds (not attributes, not subscripts)."""
    if node.type == "as_pattern":
        target = node.child_by_field_name("alias")
    elif node.type == "named_expression":
        target = node.child_by_field_name("name")
    else:
        target = node.child_by_field_name("left")
    if target is None:
        return []
    stack, found = [target], []
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.append(node_text(current))
        elif current.type in ("pattern_list", "tuple_pattern", "list_pattern", "as_pattern_target",
                              "list_splat_pattern", "parenthesized_expression", "expression_list", "tuple", "list"):
            stack.extend(current.named_children)
    return found


def _parameter_nodes(node: Node) -> Iterator[tuple[str, Node | None, Node | None]]:
    """(name, annotation, default) of each parameter of a function definition."""
    for parameter in node.child_by_field_name("parameters").named_children:
        if parameter.type == "identifier":
            yield node_text(parameter), None, None
            continue
        name = parameter.child_by_field_name("name")
        if name is None:
            name = next((child for child in parameter.named_children if child.type == "identifier"), None)
            if name is None and parameter.named_children:  # *args, **kwargs
                name = parameter.named_children[0]
        if name is not None and name.type == "identifier":
            yield node_text(name), parameter.child_by_field_name("type"), parameter.child_by_field_name("value")


def _parameters(node: Node) -> list[str]:
    parameters = node.child_by_field_name("parameters")
    return [node_text(n) for n in (parameters.named_children if parameters else []) if n.type == "identifier"]


def _first_line(node: Node) -> int:
    """A definition's first line, its first decorator's where it has one (as its code's ``co_firstlineno``)."""
    outer = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node
    return outer.start_point[0] + 1


def in_annotation(node: Node) -> bool:
    """The node lies in a type annotation (a parameter's, a return type, an annotated assignment's)."""
    current = node.parent
    while current is not None and current.type not in ("block", "module", *_SCOPES):
        if current.type == "type":
            return True
        current = current.parent
    return False


def _decorated(node: Node, decorator: str) -> bool:
    decorated = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else None
    return decorated is not None and any(node_text(d).strip() == decorator
                                         for d in decorated.children if d.type == "decorator")
