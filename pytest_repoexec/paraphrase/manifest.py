"""A problem's manifest in the new spellings: entry point, reference, contexts, signature, the code spans of
its descriptions, its dependencies and its suite's node ids (a test's own name only where it is renamed)."""

from __future__ import annotations

from typing import Any

from ..syntax import node_text, parse, walk
from .index import ClassKey
from .rename import Renames

_CODE = ("full", "medium", "small")


def benchmark_names(renames: Renames, module: str, entry_point: str) -> tuple[ClassKey, list[str]]:
    """The entry point's definition (module, name) as its module binds it, and its identifiers: the class or
    function first, then a method's name or a class's own methods (dunders stay: Python calls them by name)."""
    first, _, method = entry_point.partition(".")
    binding = renames.index.env(module).get(first)
    key = binding.key if binding is not None and binding.kind == "def" else (module, first)
    names = [first, *([method] if method else [])]
    if not method and key in renames.index.classes:
        body = renames.index.classes[key].child_by_field_name("body")
        for node in body.named_children:
            definition = node.child_by_field_name("definition") if node.type == "decorated_definition" else node
            if definition is not None and definition.type == "function_definition":
                names.append(node_text(definition.child_by_field_name("name")))
    return key, [name for name in names if not (name.startswith("__") and name.endswith("__"))]


def rewrite_manifest(manifest: dict[str, Any], renames: Renames, own: list[str]) -> dict[str, Any]:
    """A copy of ``manifest`` with the new spellings; ``own`` are the problem's benchmark identifiers (those
    kept as written for their class stay so in its descriptions)."""
    module, entry_point = manifest["module"], manifest["entry_point"]
    first, _, method = entry_point.partition(".")
    binding = renames.index.env(module).get(first)
    key = renames.index.class_key(binding)
    new = dict(manifest)
    new["entry_point"] = renames.names[first] if renames.renamed(binding) else first
    if method:
        new["entry_point"] += "." + (renames.names[method] if method in renames.members(key) else method)
    klass = key if method else None
    new["reference"] = renames.rewrite(manifest["reference"], module, klass)
    if "dependencies" in manifest:
        env = renames.index.env(module)
        new["dependencies"] = [renames.names[name] if renames.renamed(env.get(name)) else name
                               for name in manifest["dependencies"]]
    if "suite" in manifest:
        new["suite"] = [_node_id(node, renames) for node in manifest["suite"]]
    prompt = dict(manifest.get("prompt", {}))
    if "signature" in prompt:
        prompt["signature"] = renames.rewrite(prompt["signature"], module, klass)
    spelled = {name: renames.names[name] for name in own if name == first or name in renames.members(key)}
    for form in ("description_detailed", "description_sketchy"):
        if form in prompt:
            prompt[form] = code_spans(prompt[form], spelled)
    if "context" in prompt:
        prompt["context"] = {level: renames.rewrite(text, module) if level in _CODE else text
                             for level, text in prompt["context"].items()}
    if prompt:
        new["prompt"] = prompt
    return new


def code_spans(text: str, names: dict[str, str]) -> str:
    """Prose as written; in its backquoted code spans, the identifiers ``names`` renames."""
    pieces = text.split("`")
    for index in range(1, len(pieces), 2):
        data, tree = parse(pieces[index])
        for node in sorted((n for n in walk(tree) if n.type == "identifier" and node_text(n) in names),
                           key=lambda n: n.start_byte, reverse=True):
            data = data[:node.start_byte] + names[node_text(node)].encode("utf-8") + data[node.end_byte:]
        pieces[index] = data.decode("utf-8")
    return "`".join(pieces)


def _node_id(node_id: str, renames: Renames) -> str:
    """``path::Class::test[param]`` with the test module's renamed definitions (a benchmark's name is rarely one)."""
    path, *parts = node_id.split("::")
    module = renames.index.modules.get(renames.index.root / path)
    if module is None or not parts:
        return node_id
    key, renamed = None, []
    for part in parts:
        name, bracket, rest = part.partition("[")
        if key is None:
            binding = renames.index.env(module).get(name)
            new = renames.names[name] if renames.renamed(binding) else name
            key = renames.index.class_key(binding)
        else:
            new = renames.names[name] if name in renames.members(key) else name
        renamed.append(new + bracket + (_parameter_id(rest, renames) if bracket else rest))
    return "::".join([path, *renamed])


def _parameter_id(rest: str, renames: Renames) -> str:
    """``Integer-2]``: pytest names a parameter that is a class or a function by its ``__name__`` (a duplicate with
    a counter after it), so a renamed definition's part of the id is spelled anew; other parts stay."""
    top = {name for _, name in renames.top}
    parts = rest[:-1].split("-") if rest.endswith("]") else [rest]

    def spelled(part: str) -> str:
        name = part.rstrip("0123456789")
        return renames.names[name] + part[len(name):] if name in top and name in renames.names else part

    return "-".join(map(spelled, parts)) + ("]" if rest.endswith("]") else "")
