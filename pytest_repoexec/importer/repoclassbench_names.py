"""RepoClassBench's renames, read back from its ground truths: the benchmark case-flipped not only its task
classes but the repository definitions they use (classes, functions, methods), and published no table of them.
A name of a ground truth that the upstream tree lacks, and that equals one of the tree's definitions but for
case, is that definition renamed; the task classes are matched first, then a member role (``.x``, a method's
``def x``) prefers a method, a bare name a module-level definition, and a spelling the ground truths also use
unrenamed is not the one renamed. What stays ambiguous or unmatched is reported, not guessed.

The benchmark renamed by name where a rename by binding cannot follow (its ground truths read renamed methods on
objects of no known type, rename locals and words of docstrings): a renamed method is renamed on objects of no
known type too, where nothing else (no builtin type, no other attribute of the repository, no plugin's fixture)
holds an attribute of that name (``loose``); a name the ground truths rename as a local variable is renamed as
one (``local``); a string that is a renamed name (``setattr(x, "snap", ...)``, ``"ReprEntry"``) follows it, as
every such string of the ground truths does; and the words of a task class's strings and comments are spelled
as its ground truth spells them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from tree_sitter import Node

from ..paraphrase.index import ClassKey, Index, identifiers, top_level
from ..paraphrase.rename import Renames, in_annotation
from ..syntax import node_text, parse, unwrap, walk

_BUILTIN_TYPES = (object, type, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset,
                  BaseException, memoryview, range, slice, property, staticmethod, classmethod)


@dataclass
class Derived:
    names: dict[str, str] = field(default_factory=dict)  # upstream spelling -> the benchmark's
    top: set[ClassKey] = field(default_factory=set)  # (module, name) of renamed module-level definitions
    own: dict[ClassKey, set[str]] = field(default_factory=dict)  # renamed methods, by the classes defining them
    unresolved: list[str] = field(default_factory=list)  # "new: why", for names no single definition explains
    loose: set[str] = field(default_factory=set)  # renamed methods no other attribute of the repository shares
    local: set[str] = field(default_factory=set)  # renamed names the ground truths also rename as local variables

    def renames(self, index: Index) -> Renames:
        return Renames(index, dict(self.names), top=set(self.top), own={k: set(v) for k, v in self.own.items()},
                       loose=set(self.loose), local=set(self.local), strings=True)


def derive(index: Index, classes: dict[str, str], ground_truths: Iterable[str]) -> Derived:
    """The renames that explain ``ground_truths`` over the tree of ``index``; ``classes`` maps each task class's
    benchmark name to its upstream name (found in its file)."""
    top_defs: dict[str, set[str]] = {}
    for module, tree in index.trees.items():
        for node in map(unwrap, top_level(tree)):
            if node.type in ("function_definition", "class_definition"):
                top_defs.setdefault(node_text(node.child_by_field_name("name")), set()).add(module)
    member_defs: dict[str, set[ClassKey]] = {}
    for key, klass in index.classes.items():
        for member in klass.child_by_field_name("body").named_children:
            if unwrap(member).type == "function_definition":
                member_defs.setdefault(node_text(unwrap(member).child_by_field_name("name")), set()).add(key)
    by_lower: dict[str, set[str]] = {}
    for name in (*top_defs, *member_defs):
        by_lower.setdefault(name.lower(), set()).add(name)
    upstream = {name for tree in index.trees.values() for name in identifiers(tree)}
    derived = Derived()
    taken: dict[str, str] = {}  # old -> new, one spelling for one old name
    roles: dict[str, set[str]] = {}
    for text in ground_truths:
        for new, role in _names(text):
            roles.setdefault(new, set()).add(role)
    spelled = set(roles)
    for new, old in classes.items():
        if new != old:
            taken[old] = new
    for new in sorted(roles):
        if new in taken.values() or new in upstream or new.lower() not in by_lower:
            continue
        candidates = sorted(by_lower[new.lower()] - set(taken))
        if len(candidates) > 1:
            fitting = [old for old in candidates if ("member" in roles[new] and old in member_defs) or
                       ("bare" in roles[new] and old in top_defs)]
            candidates = fitting if fitting else candidates
        if len(candidates) > 1:  # a spelling the ground truths also use as written was not renamed
            candidates = [old for old in candidates if old not in spelled] or candidates
        if len(candidates) != 1:
            derived.unresolved.append(f"{new}: " + (f"one of {', '.join(candidates)}" if candidates else
                                                    "its upstream spelling is already renamed otherwise"))
            continue
        taken[candidates[0]] = new
    for old, new in taken.items():
        derived.names[old] = new
        derived.top |= {(module, old) for module in top_defs.get(old, ())}
        for key in member_defs.get(old, ()):
            derived.own.setdefault(key, set()).add(old)
    derived.loose = {old for old in taken if old in member_defs} - _held_otherwise(index, member_defs)
    derived.local = {old for old, new in taken.items() if "local" in roles.get(new, ())}
    return derived


def _held_otherwise(index: Index, methods: dict[str, set[ClassKey]]) -> set[str]:
    """Attribute names that something other than a method of a module-level class of the repository holds: a
    builtin type's attribute (``dict.get``), a class attribute, an attribute assigned (``x.m = ...``), a method
    of a nested class, an attribute read on a test's fixture that the repository does not define (``mocker.patch``;
    not a parameter its decorators give): a read of one on an object of no known type may mean that."""
    held = {name for kind in _BUILTIN_TYPES for name in dir(kind)}
    for key in index.classes:
        held |= {name for name in index.defines(key) if key not in methods.get(name, ())}
    tests, fixtures = [], set()
    for tree in index.trees.values():
        for node in walk(tree):
            if node.type in ("assignment", "augmented_assignment"):
                for target in walk(node.child_by_field_name("left")):
                    if target.type == "attribute":
                        held.add(node_text(target.child_by_field_name("attribute")))
            elif node.type == "function_definition":
                name = node_text(node.child_by_field_name("name"))
                if _in_class(node) and not _in_module_class(node):
                    held.add(name)
                if _is_fixture(node):
                    fixtures.add(name)
                if name.startswith("test") or _is_fixture(node):
                    tests.append(node)
    for test in tests:
        decorators = test.parent.children if test.parent is not None and test.parent.type == "decorated_definition" \
            else []
        parametrized = {word for d in decorators if d.type == "decorator" for word in re.findall(r"\w+", node_text(d))}
        foreign = {node_text(p) for p in test.child_by_field_name("parameters").named_children
                   if p.type == "identifier"} - fixtures - parametrized - {"self", "cls"}
        held |= {node_text(node.child_by_field_name("attribute")) for node in walk(test.child_by_field_name("body"))
                 if node.type == "attribute" and node_text(node.child_by_field_name("object")) in foreign}
    return held


def _is_fixture(node: Node) -> bool:
    return node.parent is not None and node.parent.type == "decorated_definition" and any(
        "fixture" in node_text(d) for d in node.parent.children if d.type == "decorator")


def _in_module_class(node: Node) -> bool:
    """A function defined at module level or as a method of a module-level class."""
    outer = node.parent if node.parent is not None and node.parent.type == "decorated_definition" else node
    if outer.parent is not None and outer.parent.type == "module":
        return True
    return _in_class(node) and _in_module_class(outer.parent.parent)


def _names(text: str) -> Iterable[tuple[str, str]]:
    """Each identifier of a class's source with its role: ``member`` (an attribute, a method's name) or ``bare``
    (a string annotation that is one name is one too)."""
    for node in walk(parse(text)[1]):
        if node.type == "string_content" and node_text(node).isidentifier() and in_annotation(node):
            yield node_text(node), "bare"
        if node.type in _TEXT:  # a call in a docstring's example or a comment: ``da.sel(time=...)``
            yield from ((name, "read") for name in _CALLED.findall(node_text(node)))
        if node.type != "identifier":
            continue
        parent = node.parent
        member = parent is not None and (
            (parent.type == "attribute" and parent.child_by_field_name("attribute") == node) or
            (parent.type == "function_definition" and parent.child_by_field_name("name") == node
             and _in_class(parent)))
        yield node_text(node), "member" if member else "bare"
        if member and parent.type == "attribute" and \
                node_text(parent.child_by_field_name("object")) not in ("self", "cls", "super()"):
            yield node_text(node), "read"  # on another object than the class's own
        if not member and _assigned_local(node):
            yield node_text(node), "local"


def _assigned_local(node: Node) -> bool:
    """The name is assigned (``x = ...``, ``for x in``, ``with ... as x``) in a function's body."""
    current, target = node.parent, node
    while current is not None and current.type in ("pattern_list", "tuple_pattern", "as_pattern_target"):
        current, target = current.parent, current
    if current is None or not (
            (current.type in ("assignment", "augmented_assignment", "for_statement") and
             current.child_by_field_name("left") == target) or current.type == "as_pattern"):
        return False
    while current is not None and current.type not in ("function_definition", "class_definition"):
        current = current.parent
    return current is not None and current.type == "function_definition"


def _in_class(node: Node) -> bool:
    outer = node.parent.parent if node.parent is not None and node.parent.type == "decorated_definition" else node.parent
    return outer is not None and outer.type == "block" and outer.parent is not None and \
        outer.parent.type == "class_definition"


_CALLED = re.compile(r"\b(?!self\.|cls\.)\w+\.(\w+)\(")
_WORD = re.compile(rb"\w+")  # ASCII words, by byte offset
_TEXT = ("string_content", "comment")


def adopt_text_spellings(source: str, klass: str, truth: str, names: dict[str, str]) -> str:
    """``source`` with the words of class ``klass``'s strings and comments spelled as ``truth`` (its ground truth)
    spells them, where the two differ by a rename of ``names`` (old -> new): the benchmark renamed some words
    there (``"snap"``, ``Dataset.chunk()`` in a comment) and kept others (``PersonName`` in prose), with no rule
    that its data shows, so the ground truth is the only witness of which."""
    data, root = parse(source)
    node = next((unwrap(n) for n in top_level(root) if unwrap(n).type == "class_definition" and
                 node_text(unwrap(n).child_by_field_name("name")) == klass), None)
    if node is None:
        return source
    text = [(leaf.start_byte, leaf.end_byte) for leaf in walk(node) if leaf.type in _TEXT]
    ours = [(m.group().decode(), node.start_byte + m.start()) for m in _WORD.finditer(node.text)]
    theirs = [word.decode() for word in _WORD.findall(truth.encode("utf-8"))]
    edits = []
    matcher = SequenceMatcher(None, [word for word, _ in ours], theirs, autojunk=False)
    for operation, start, end, other, other_end in matcher.get_opcodes():
        if operation != "replace" or end - start != other_end - other:
            continue
        for (word, offset), spelled in zip(ours[start:end], theirs[other:other_end]):
            if names.get(word) == spelled and any(s <= offset < e for s, e in text):
                edits.append((offset, offset + len(word), spelled))
    for start, end, spelled in sorted(edits, reverse=True):
        data = data[:start] + spelled.encode("utf-8") + data[end:]
    return data.decode("utf-8")
