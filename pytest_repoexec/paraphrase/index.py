"""What each name of a repository is bound to, read from its modules with tree-sitter: the modules (as Python's
import finds them: a package before a same-named ``.py``), their top-level bindings (definitions, imports
followed through re-exports and ``*``), and their module-level classes with their bases; enough to tell that
``tally.total``, ``Cart.add`` or ``self.add`` name a definition of the repository, and which."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from ..syntax import node_text, parse, unwrap, walk

ClassKey = tuple[str, str]  # (module, class name)
_BLOCKS = ("if_statement", "else_clause", "elif_clause", "try_statement", "except_clause", "finally_clause",
           "with_statement", "block")


@dataclass(frozen=True)
class Binding:
    """What a name stands for: a repository ``module``; a top-level definition ``name`` of ``module`` (``def``);
    an ``instance`` of the class (module, name); or a ``local`` name, which stands for nothing renamed.
    ``follows``: the name is the definition's own (not an import alias), so it changes with it."""

    kind: str
    module: str = ""
    name: str = ""
    follows: bool = True

    @property
    def key(self) -> ClassKey:
        return self.module, self.name


LOCAL = Binding("local")


class Index:
    """The repository under ``root`` (modules named from ``import_root``, other files from ``root``)."""

    def __init__(self, root: Path, import_root: str) -> None:
        self.root = root
        self.files: dict[str, Path] = {}
        self.modules: dict[Path, str] = {}  # a file's module name (not for a file a package shadows)
        self.packages: set[str] = set()
        base = root / import_root
        for path in sorted(root.rglob("*.py"), key=lambda p: (p.name != "__init__.py", str(p))):
            relative = path.relative_to(base if path.is_relative_to(base) else root)
            parts = relative.with_suffix("").parts
            package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if package else parts)
            if name and name not in self.files:  # a package before a same-named .py, as import finds it
                self.files[name] = path
                self.modules[path] = name
                if package:
                    self.packages.add(name)
        self.trees = {name: parse(path.read_text(encoding="utf-8", errors="replace"))[1]
                      for name, path in self.files.items()}
        self.classes: dict[ClassKey, Node] = {
            (module, node_text(node.child_by_field_name("name"))): node
            for module, tree in self.trees.items() for node in map(unwrap, top_level(tree))
            if node.type == "class_definition"}
        self._envs: dict[str, dict[str, Binding]] = {}
        self._reading: list[str] = []  # the modules whose bindings are being read, outermost first
        self._cycle = False  # a module read a half-read one's bindings (an import cycle)

    def env(self, module: str) -> dict[str, Binding]:
        """The module's top-level bindings. An import cycle first sees the part read so far, so the modules read
        in one go are read again until none changes (``TYPE_CHECKING`` imports make such cycles common)."""
        if module in self._reading:
            self._cycle = True
        if module not in self._envs:
            first = len(self._envs)
            self._envs[module] = {}
            self._reading.append(module)
            self._envs[module].update(self.bindings(self.trees[module], module) if module in self.trees else {})
            self._reading.pop()
            if not self._reading and self._cycle:
                self._cycle = False
                self._settle(list(self._envs)[first:])
        return self._envs[module]

    def _settle(self, read: list[str]) -> None:
        """``read``'s bindings read again, with every module's bindings now at hand, until none changes."""
        for _ in read:
            again = {name: self.bindings(self.trees[name], name) if name in self.trees else {} for name in read}
            if all(again[name] == self._envs[name] for name in read):
                return
            for name in read:
                self._envs[name].clear()
                self._envs[name].update(again[name])

    def bindings(self, tree: Node, module: str) -> dict[str, Binding]:
        """The bindings made by ``tree``'s top-level statements, read as the module ``module``."""
        found: dict[str, Binding] = {}
        for node in top_level(tree):
            if node.type in ("import_statement", "import_from_statement"):
                found.update(self.imported(node, module))
            elif unwrap(node).type in ("function_definition", "class_definition"):
                found[node_text(unwrap(node).child_by_field_name("name"))] = Binding("def", module, node_text(
                    unwrap(node).child_by_field_name("name")))
        return found

    def imported(self, node: Node, module: str) -> dict[str, Binding]:
        """The names an import statement binds, each to the repository's module or definition it reaches."""
        found = {}
        if node.type == "import_statement":
            for name in node.children_by_field_name("name"):
                if name.type == "aliased_import":
                    found[node_text(name.child_by_field_name("alias"))] = Binding(
                        "module", node_text(name.child_by_field_name("name")))
                else:
                    found[node_text(name).split(".")[0]] = Binding("module", node_text(name).split(".")[0])
            return found
        source = self.from_module(node, module)
        if any(child.type == "wildcard_import" for child in node.children):
            return {name: binding for name, binding in self.env(source).items() if not name.startswith("_")}
        for name in node.children_by_field_name("name"):
            alias = name.child_by_field_name("alias") if name.type == "aliased_import" else None
            original = node_text(name.child_by_field_name("name") if alias else name)
            binding = self.target(source, original)
            follows = binding.follows and (alias is None or node_text(alias) == original)  # X as X: a re-export
            found[node_text(alias) if alias else original] = Binding(binding.kind, binding.module, binding.name,
                                                                     follows)
        return found

    def target(self, module: str, name: str) -> Binding:
        """What ``from module import name`` reaches: a submodule, a re-exported definition, or the module's own."""
        if f"{module}.{name}" in self.files:
            return Binding("module", f"{module}.{name}")
        return self.env(module).get(name) or Binding("def", module, name)

    def from_module(self, node: Node, module: str) -> str:
        """The absolute module a ``from ... import`` reads, relative ones resolved against ``module``."""
        name = node.child_by_field_name("module_name")
        if name.type != "relative_import":
            return node_text(name)
        text = node_text(name)
        rest = text.lstrip(".")
        base = module.split(".") if module in self.packages else module.split(".")[:-1]
        base = base[:len(base) - (len(text) - len(rest) - 1)]
        return ".".join([*base, rest] if rest else base)

    def class_key(self, binding: Binding | None) -> ClassKey | None:
        """The class a binding names or is an instance of, where it is a module-level class of the repository."""
        if binding is not None and binding.kind in ("def", "instance") and binding.key in self.classes:
            return binding.key
        return None

    def defines(self, key: ClassKey) -> set[str]:
        """The names a class's body defines: its methods (abstract ones included) and its class attributes."""
        found = set()
        for node in self.classes[key].child_by_field_name("body").named_children:
            node = unwrap(node)
            if node.type in ("function_definition", "class_definition"):
                found.add(node_text(node.child_by_field_name("name")))
            elif node.type == "expression_statement" and node.named_children and \
                    node.named_children[0].type == "assignment":
                target = node.named_children[0].child_by_field_name("left")
                if target is not None and target.type == "identifier":
                    found.add(node_text(target))
        return found

    def bases(self, key: ClassKey) -> list[ClassKey]:
        """The repository classes ``key`` derives from directly."""
        arguments = self.classes[key].child_by_field_name("superclasses")
        lookup = self.env(key[0]).get
        return [base for node in (arguments.named_children if arguments else [])
                if (base := self.class_key(self.entity(node, lookup))) is not None]

    def entity(self, node: Node, lookup: Callable[[str], Binding | None],
               owner: ClassKey | None = None) -> Binding | None:
        """What an expression stands for, where it can tell: a name, ``module.name``, an instance made by calling
        a class (``super()`` in a method of ``owner``: an instance of it)."""
        if node.type == "identifier":
            return lookup(node_text(node))
        if node.type in ("parenthesized_expression", "type") and node.named_children:
            return self.entity(node.named_children[0], lookup, owner)
        if node.type == "attribute":
            inner = self.entity(node.child_by_field_name("object"), lookup, owner)
            if inner is not None and inner.kind == "module":
                return self.target(inner.module, node_text(node.child_by_field_name("attribute")))
            return None
        if node.type == "call":
            function = node.child_by_field_name("function")
            if node_text(function) == "super" and owner is not None:
                return Binding("instance", *owner)
            called = self.entity(function, lookup, owner)
            key = self.class_key(called) if called is not None and called.kind == "def" else None
            return Binding("instance", *key) if key else None
        return None


def top_level(tree: Node) -> Iterator[Node]:
    """The module's top-level statements, those under top-level ``if``/``try``/``with`` blocks included."""
    for node in tree.children:
        if node.type in _BLOCKS:
            yield from top_level(node)
        else:
            yield node


def identifiers(tree: Node) -> Iterator[str]:
    return (node_text(node) for node in walk(tree) if node.type == "identifier")
