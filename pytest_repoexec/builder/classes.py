"""Which classes of a repository become class problems (``repoexec build --classes``), and why the others do not.

A candidate is a module-level class of an importable module outside tests, docs and setup scripts, public unless
private ones are asked for, bound once in its module, with a method that does something (a body after its
docstring). With the suite's run it is kept when it uses another part of the repository (a definition of the
project, in its module or another: RepoClassBench's classes are those that need their repository) and when
passing tests run enough of its methods (``min_method_coverage``, two-thirds by default): methods no test runs
would be judged by nothing. Its tests are the passing ones whose call ran a line of any of its methods.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node

from generators.standalone import ModelOptions

from .. import syntax
from ..syntax import docstring, node_text, parse, unwrap
from .context import module_classes
from .functions import body_lines, body_statements, definition_source, file_reason, module_name, python_files
from .suite import SuiteRun, tests_running

NO_REPOSITORY = "uses no other part of the repository"


@dataclass(frozen=True)
class ClassOptions:
    private: bool = False  # pick classes whose name starts with "_"
    min_method_coverage: float = 66.0  # percent of the methods that passing tests must run
    describe_model: str | None = None  # descriptions written by this model (any --repoexec-model name), not docstrings
    describe_options: ModelOptions | None = None  # that model's options


@dataclass(frozen=True)
class Method:
    name: str
    signature: str  # as a description lists it: "add(self, name) -> int"
    summary: str | None  # its docstring's first line
    body_lines: tuple[int, int]  # first and last line (1-based, in the module) after the docstring


@dataclass(frozen=True)
class Klass:
    """A candidate class: where it is, its reference (dedented, decorators included), its docstring, its methods.
    ``qualname`` is its name, the problem's entry point (the field functions have, for the shared steps)."""

    path: str  # the file, relative to the source root
    module: str
    qualname: str
    reference: str
    docstring: str | None
    methods: tuple[Method, ...]

    @property
    def name(self) -> str:
        return self.qualname


@dataclass
class PickedClasses:
    classes: list[Klass] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # ("module:Name", reason)


def pick_classes(source_root: Path, import_root: str = ".", options: ClassOptions = ClassOptions()) -> PickedClasses:
    """The module-level classes of the tree worth a problem before the suite runs, and the reasons for the rest."""
    picked = PickedClasses()
    base = source_root / import_root
    for path in python_files(base):
        module = module_name(path.relative_to(base))
        text = path.read_text(encoding="utf-8", errors="replace")
        where = file_reason(path.relative_to(base)) or (None if module else "not an importable module")
        found = module_classes(parse(text)[1])
        bound = Counter(name for _, _, name in found)
        for outer, definition, name in found:
            label = f"{module or path.relative_to(source_root).as_posix()}:{name}"
            methods = _methods(definition)
            reason = where or ("private" if name.startswith("_") and not options.private else None) or (
                "defined more than once in its module" if bound[name] > 1 else None) or (
                None if methods else "no method with a body")
            if reason:
                picked.skipped.append((label, reason))
                continue
            found_doc = docstring(definition)
            picked.classes.append(Klass(path.relative_to(source_root).as_posix(), module, name,
                                        definition_source(text, outer, definition),
                                        found_doc[1] if found_doc else None, tuple(methods)))
    return picked


def _methods(definition: Node) -> list[Method]:
    """The class's own methods that have statements after their docstring (abstract ones have none)."""
    body = definition.child_by_field_name("body")
    methods = []
    for member in body.named_children if body else ():
        function = unwrap(member)
        if function.type != syntax.FUNCTION or not body_statements(function):
            continue
        name = node_text(function.child_by_field_name("name"))
        returns = function.child_by_field_name("return_type")
        signature = name + node_text(function.child_by_field_name("parameters")) + (
            f" -> {node_text(returns)}" if returns else "")
        found = docstring(function)
        summary = found[1].strip().splitlines()[0].strip() if found and found[1].strip() else None
        methods.append(Method(name, " ".join(signature.split()), summary, body_lines(function)))
    return methods


def tested_methods(klass: Klass, run: SuiteRun) -> list[Method]:
    """The methods whose body a passing test's call ran."""
    return [method for method in klass.methods if tests_running(klass.path, klass.name, [method.body_lines], run, 1)]


def suite_reason(klass: Klass, run: SuiteRun, options: ClassOptions) -> str | None:
    """Why the suite cannot judge the class: too few of its methods run by passing tests."""
    tested = len(tested_methods(klass, run))
    if not tested:
        return "no passing test runs its methods"
    if 100 * tested / len(klass.methods) < options.min_method_coverage:
        return f"passing tests run under {options.min_method_coverage:g}% of its methods (--min-method-coverage)"
    return None


def class_suite(klass: Klass, run: SuiteRun, limit: int) -> list[str]:
    """The class's expected-to-pass tests: passing tests whose call ran a line of one of its methods."""
    return tests_running(klass.path, klass.name, [method.body_lines for method in klass.methods], run, limit)


def uses_repository(context: str, klass: Klass) -> bool:
    """Whether the class's body (or bases) uses a definition of the repository: a name its context defines rather
    than imports (imports that the context's definitions came through are the repository's too, but the
    definitions are what count)."""
    _, root = parse(context)
    definitions = "\n".join(node_text(statement) for statement in root.named_children
                            if statement.type not in (*syntax.IMPORTS, "try_statement", "if_statement"))
    defined = set(syntax.top_level_names(definitions))
    used = syntax.body_identifiers(klass.reference, syntax.CLASS) | set(_bases(klass.reference))
    return bool(defined & used)


def _bases(reference: str) -> list[str]:
    _, root = parse(reference)
    classes = module_classes(root)
    bases = classes[0][1].child_by_field_name("superclasses") if classes else None
    return [node_text(node) for node in syntax.walk(bases) if node.type == "identifier"] if bases else []
