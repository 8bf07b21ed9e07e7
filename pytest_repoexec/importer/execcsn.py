"""CodeBenchGen's Exec-CSN into our format: each example, a standalone program with its focal function and a test
function, becomes a function problem. The program less its test and ``__main__`` block is the focal module; the
test function goes into a test module of its own that imports the program's names, so the judge runs it apart
from the candidate as any function problem's. The prompt is the paper's: the masked context (the example's
tokenised field, read back into Python), then the target's header with the docstring or the revised instruction.
Examples whose third-party imports need the same distributions share one project, hence one virtualenv, its
requirements pinned at import (``distributions.py``). An example that cannot be imported is named in the report
with its reason; the others are written."""

from __future__ import annotations

import ast
import hashlib
import inspect
import io
import json
import os
import re
import shutil
import sys
import time
import tokenize
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
from packaging.utils import canonicalize_name

from .. import safety, syntax, testmodule
from ..builder.pipeline import put_in_place
from ..problem import PROBLEM_MANIFEST, PROJECT_MANIFEST
from .distributions import (
    ResolutionError, Settings, distribution_of, load_settings, requirements_of, resolve_all, third_party_imports,
)

REPORT = "import-report.json"
REQUIRED = ("idx", "func_name", "code", "docstring", "revised_instruction", "test_code",
            "masked_method_w_context_no_test_no_docstring")
INSTRUCTIONS = ("docstring", "revised")  # what the prompt puts below the header: the paper's two texts
SPACE_TOKEN = "SPACETOKEN"  # how the tokenised fields write a space inside a string literal
_LITERAL_WORD = re.compile(r""""[^"]*"|'[^']*'|\S+""")  # a token inside a tokenised string literal
_MAIN_PREFIX = re.compile(r"""(['"])__main__\.""")  # a string naming the program's own names as __main__'s
_NAME_LIMIT = 60  # a project's folder name, beyond which its distributions are counted rather than listed


class ExampleError(Exception):
    """An example that cannot become a problem; the message names the example and the field at fault."""


@dataclass(frozen=True)
class Example:
    position: int  # in the file, from 0
    idx: int
    func_name: str
    repo: str
    code: str
    docstring: str
    instruction: str  # revised_instruction
    test_code: str
    masked: str

    @property
    def where(self) -> str:
        return f"example {self.position} (idx {self.idx}, {self.func_name})"

    @property
    def module(self) -> str:
        return f"example_{self.idx}"

    @property
    def folder(self) -> str:
        return f"{self.idx}_{self.func_name}"


@dataclass
class Converted:
    example: Example
    program: str  # the focal module: the program less its test and __main__ block
    tests: str  # the test module
    test_count: int
    reference: str
    context: str  # the masked context, read back
    imports: list[str]  # third-party modules, dotted
    notes: list[str] = field(default_factory=list)  # what the import noticed without refusing the example
    allow: list[str] = field(default_factory=list)  # safety findings' kinds the gate accepts (network only)


@dataclass
class Outcome:
    """One example's row of the import report."""

    position: int
    idx: Any
    func_name: Any
    repo: Any = None
    problem: str | None = None  # project/folder, once written
    error: str | None = None
    imports: list[str] = field(default_factory=list)
    distributions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_examples(path: Path) -> tuple[list[Example], list[Outcome]]:
    """The examples of an Exec-CSN file (a JSON list, as published, or one object a line), and a row for each
    record that lacks a field or has one of the wrong type."""
    text = path.read_text(encoding="utf-8")
    try:
        records = json.loads(text)
    except json.JSONDecodeError:
        records = []
        for number, line in enumerate(text.splitlines(), 1):
            try:
                records += [json.loads(line)] if line.strip() else []
            except json.JSONDecodeError as exc:
                raise ExampleError(f"{path} line {number}: neither a JSON list nor one example a line ({exc})") from None
    if not isinstance(records, list):
        raise ExampleError(f"{path}: not a list of Exec-CSN examples (a JSON list, or one example a line)")
    examples, refused, seen = [], [], {}
    for position, record in enumerate(records):
        record = record if isinstance(record, dict) else {}
        idx, func_name = record.get("idx"), record.get("func_name")
        where = f"example {position} (idx {idx}, {func_name})"
        missing = [key for key in REQUIRED if key not in record]
        wrong = [key for key in REQUIRED if key in record and not isinstance(record[key], int if key == "idx" else str)]
        if missing or wrong:
            reason = "; ".join([*(f"field {key!r} is missing" for key in missing),
                                *(f"field {key!r} is not {'an int' if key == 'idx' else 'a string'}" for key in wrong)])
            refused.append(Outcome(position, idx, func_name, record.get("repo_name"), error=f"{where}: {reason}"))
            continue
        if idx in seen:
            refused.append(Outcome(position, idx, func_name, record.get("repo_name"),
                                   error=f"{where}: field 'idx': {idx} is example {seen[idx]}'s too"))
            continue
        seen[idx] = position
        examples.append(Example(position, record["idx"], func_name, str(record.get("repo_name", "")), record["code"],
                                record["docstring"], record["revised_instruction"], record["test_code"],
                                record["masked_method_w_context_no_test_no_docstring"]))
    return examples, refused


def read_back(tokenised: str) -> str:
    """A tokenised field (tokens joined by spaces, comments gone; a string literal with spaces tokenised too, its
    tokens joined by spaces and its own spaces written SPACETOKEN) as Python again: each such literal's tokens
    joined back, then the whole laid out by ``ast``. SyntaxError where the field is not Python."""
    lines = tokenised.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = []
    for token in tokenize.generate_tokens(io.StringIO(tokenised).readline):
        if token.type == tokenize.STRING and SPACE_TOKEN in token.string:
            quote = next(i for i, char in enumerate(token.string) if char in "'\"")
            width = 3 if token.string[quote:quote + 3] in ('"""', "'''") else 1
            head, body = token.string[:quote + width], token.string[quote + width:-width]
            words = _LITERAL_WORD.findall(body)  # the literal's tokens; a quoted one keeps its own spaces
            mended = head + "".join(" " if word == SPACE_TOKEN else word for word in words) + token.string[-width:]
            edits.append((starts[token.start[0] - 1] + token.start[1], starts[token.end[0] - 1] + token.end[1], mended))
    for start, end, text in reversed(edits):
        tokenised = tokenised[:start] + text + tokenised[end:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes of old code: the program's, not ours
        return ast.unparse(ast.parse(tokenised)) + "\n"


def _parse(text: str) -> ast.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def _is_main_block(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare) or len(node.test.comparators) != 1:
        return False
    sides = [node.test.left, node.test.comparators[0]]
    return (any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides))


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", []))])


def _bindings(statements: list[ast.stmt]) -> set[str]:
    """The names a module binds at its top level, inside its compound statements too (not in functions or
    classes, which are scopes of their own)."""
    names: set[str] = set()
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name.partition(".")[0]) for alias in node.names if alias.name != "*")
            continue
        targets = [*getattr(node, "targets", []), *([node.target] if hasattr(node, "target") else []),
                   *(item.optional_vars for item in getattr(node, "items", []) if item.optional_vars)]
        names.update(name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name))
        for block in ("body", "orelse", "finalbody"):
            names |= _bindings(getattr(node, block, []))
        for handler in getattr(node, "handlers", []):
            names |= _bindings(handler.body) | ({handler.name} if handler.name else set())
    return names


def _without_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and \
                isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]


def _scopes(statements: list[ast.stmt]) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """The classes and functions a block defines, inside its compound statements too, in order."""
    found = []
    for node in statements:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node)
            continue
        for block in ("body", "orelse", "finalbody"):
            found += _scopes(getattr(node, block, []))
        for handler in getattr(node, "handlers", []):
            found += _scopes(handler.body)
    return found


def _masked_from_program(program: str, func_name: str) -> ast.Module | None:
    """What the masked context should be, made from the program: docstrings gone, the focal body ``...``; None
    where ``ast`` does not find the definition where tree-sitter did."""
    tree = _parse(program)
    scope: Any = tree
    for part in func_name.split("."):
        found = [node for node in _scopes(scope.body) if node.name == part]
        if not found:
            return None
        scope = found[-1]
    scope.body = [ast.Expr(ast.Constant(Ellipsis))]
    _without_docstrings(tree)
    return tree


def convert(example: Example) -> Converted:
    """The example's focal module, test module, reference and prompt; ExampleError names what is wrong."""
    where = example.where
    try:
        tree = _parse(example.code)
    except (SyntaxError, ValueError) as exc:  # ValueError: a null byte
        raise ExampleError(f"{where}: code: the program does not parse: {getattr(exc, 'msg', exc)} "
                           f"(line {getattr(exc, 'lineno', '?')})") from None
    try:
        reference = syntax.definition_source(example.code, example.func_name)
    except LookupError as exc:
        raise ExampleError(f"{where}: func_name: {example.func_name!r} names nothing in code ({exc})") from None
    try:
        test_tree = _parse(read_back(example.test_code))
    except (SyntaxError, ValueError, tokenize.TokenError) as exc:
        raise ExampleError(f"{where}: test_code: not Python once read back ({exc})") from None
    try:
        context = read_back(example.masked)
    except (SyntaxError, ValueError, tokenize.TokenError) as exc:
        raise ExampleError(f"{where}: masked_method_w_context_no_test_no_docstring: not Python once read back "
                           f"({exc})") from None
    wanted = [node.name for node in test_tree.body
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    if not any(name.startswith("test") for name in wanted):
        raise ExampleError(f"{where}: test_code: defines no test function")
    moved = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
             and node.name in wanted]
    if missing := sorted(set(wanted) - {node.name for node in moved}):
        raise ExampleError(f"{where}: code: defines no {', '.join(missing)}, which test_code defines")
    if any(node.name == example.func_name.partition(".")[0] for node in moved):
        raise ExampleError(f"{where}: test_code: defines {example.func_name.partition('.')[0]}, the focal code")
    lines = example.code.splitlines(keepends=True)
    spans = [(_first_line(node), node.end_lineno) for node in [*moved, *filter(_is_main_block, tree.body)]]
    gone = {line for start, end in spans for line in range(start, end + 1)}
    program = "".join(line for number, line in enumerate(lines, 1) if number not in gone).rstrip() + "\n"
    test_sources = ["".join(lines[_first_line(node) - 1:node.end_lineno]).rstrip() + "\n" for node in moved]

    program_tree = _parse(program)
    used = {node.id for moved_node in moved for node in ast.walk(moved_node) if isinstance(node, ast.Name)}
    names = sorted(used & _bindings(program_tree.body))
    star = any(isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
               for node in ast.walk(program_tree))
    head = f'"""Exec-CSN example {example.idx} ({example.repo}, {example.func_name}): the program\'s test, run ' \
           f'apart from the program ({example.module}.py)."""\n\n'
    imports = (f"from {example.module} import *  # the program imports names by *\n" if star else "") + \
              (f"from {example.module} import {', '.join(names)}\n" if names else "")
    # The program ran as __main__, and its tests name it so (``patch('__main__.Record.set_defaults')``).
    test_sources = [_MAIN_PREFIX.sub(rf"\g<1>{example.module}.", source) for source in test_sources]
    tests = head + imports + "".join(f"\n\n{source}" for source in test_sources)

    notes = []
    network = [finding for source, label in ((reference, "reference"), (tests, "test"))
               for finding in safety.scan(source, label) if finding.kind == "network"]
    if network:
        notes.append(f"allow = [\"network\"]: {', '.join(map(str, network))} (the sandbox has no network: what "
                     "the tests do not replace with a stand-in fails there)")
    expected = _masked_from_program(program, example.func_name)
    if expected is None or ast.dump(_parse(context)) != ast.dump(expected):
        notes.append("the masked context read back differs from the program's (the prompt shows the field's)")
    test_count = len(list(testmodule.test_functions(_parse(tests))))
    return Converted(example, program, tests, test_count, reference, context,
                     sorted(third_party_imports(program_tree) | third_party_imports(test_tree)), notes,
                     ["network"] if network else [])


def _description(example: Example, instruction: str) -> str:
    """What stands below the header: the upstream docstring (cleaned as ``inspect.getdoc`` cleans one: its field
    keeps the original's indentation) or the revised instruction."""
    return inspect.cleandoc(example.instruction if instruction == "revised" else example.docstring)


def problem_manifest(converted: Converted, instruction: str) -> dict[str, Any]:
    example = converted.example
    return {
        "module": example.module,
        "entry_point": example.func_name,
        "number": example.position,
        "test_count": converted.test_count,
        "program_tests": True,  # the program's own test: the gate compares outcomes, and takes an indirect call
        **({"allow": converted.allow} if converted.allow else {}),
        "reference": converted.reference.rstrip() + "\n",
        "prompt": {"docstring": _description(example, instruction), "context": {"full": converted.context}},
    }


def project_name(distributions: list[str]) -> str:
    """``execcsn-<distributions>``, joined by ``+`` (a name holds ``-``: python-dateutil is not python and
    dateutil); ``execcsn-stdlib`` for none; the first two and a hash of all where the list is long."""
    if not distributions:
        return "execcsn-stdlib"
    names = sorted(canonicalize_name(name) for name in distributions)
    name = "execcsn-" + "+".join(names)
    if len(name) <= _NAME_LIMIT:
        return name
    digest = hashlib.sha256("\0".join(names).encode()).hexdigest()[:8]
    return f"execcsn-{'+'.join(names[:2])}+{len(names) - 2}-more-{digest}"


def _project_text(requirements: list[str], imports: dict[str, str]) -> str:
    said = ", ".join(f"{module} -> {dist}" for module, dist in sorted(imports.items())) or "none (standard library)"
    return (f"# Written by repoexec import --format execcsn. Third-party imports: {said}.\n"
            "# requirements: the distributions and their dependencies, pinned at import (newest releases, under "
            "execcsn.toml's caps).\n" + tomli_w.dumps({"requirements": requirements, "source": {"path": "repo"}}))


def write_project(name: str, members: list[Converted], requirements: list[str], imports: dict[str, str],
                  instruction: str, out: Path) -> list[str]:
    """One project (its examples' modules under repo/, a folder per problem) built in a staging folder and put in
    place whole; the problems' folder names."""
    staging = out / f".{name}.importing-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "repo").mkdir(parents=True)
        (staging / PROJECT_MANIFEST).write_text(_project_text(requirements, imports), encoding="utf-8")
        written = []
        for converted in members:
            example = converted.example
            (staging / "repo" / f"{example.module}.py").write_text(converted.program, encoding="utf-8")
            folder = staging / example.folder
            folder.mkdir()
            (folder / f"test_{example.module}.py").write_text(converted.tests, encoding="utf-8")
            (folder / PROBLEM_MANIFEST).write_text(
                tomli_w.dumps(problem_manifest(converted, instruction), multiline_strings=True), encoding="utf-8")
            written.append(example.folder)
        put_in_place(staging, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def import_examples(path: Path, out: Path, instruction: str = "docstring",
                    settings: Settings | None = None) -> tuple[list[Outcome], dict[str, Any]]:
    """Import every example of ``path`` into ``out``, grouped by the distributions they need; each example's
    outcome and each project's resolution, also written as ``out/import-report.json``."""
    settings = settings or load_settings()
    examples, outcomes = read_examples(path)
    groups: dict[tuple[str, ...], list[tuple[Converted, Outcome]]] = {}
    for example in examples:
        outcome = Outcome(example.position, example.idx, example.func_name, example.repo)
        outcomes.append(outcome)
        try:
            converted = convert(example)
        except ExampleError as exc:
            outcome.error = str(exc)
            continue
        outcome.imports, outcome.notes = converted.imports, converted.notes
        outcome.distributions = sorted({distribution_of(module, settings) for module in converted.imports},
                                       key=canonicalize_name)
        groups.setdefault(tuple(canonicalize_name(d) for d in outcome.distributions), []).append((converted, outcome))
    out.mkdir(parents=True, exist_ok=True)
    projects: dict[str, Any] = {}
    ordered = [members for _, members in sorted(groups.items())]
    asked_of = [requirements_of(members[0][1].distributions, settings) for members in ordered]
    for members, asked, pins in zip(ordered, asked_of, resolve_all(asked_of)):
        distributions = members[0][1].distributions
        name = project_name(distributions)
        imports = {module: distribution_of(module, settings) for converted, _ in members for module in converted.imports}
        projects[name] = {"imports": imports, "asked": asked, "requirements": None, "examples": []}
        if isinstance(pins, ResolutionError):
            for converted, outcome in members:
                outcome.error = f"{converted.example.where}: no environment for {', '.join(distributions)}: {pins}"
            projects[name]["error"] = str(pins)
            continue
        written = write_project(name, [converted for converted, _ in members], pins, imports, instruction, out)
        for (converted, outcome), folder in zip(members, written):
            outcome.problem = f"{name}/{folder}"
        projects[name] |= {"requirements": pins, "examples": [outcome.problem for _, outcome in members]}
    outcomes.sort(key=lambda outcome: outcome.position)
    report = {"from": str(path), "instruction": instruction, "projects": projects,
              "examples": [asdict(outcome) for outcome in outcomes]}
    (out / REPORT).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return outcomes, projects


def command(path: Path, out: Path, instruction: str) -> int:
    """``repoexec import --format execcsn FILE --out DIR``: import, print a line per project and each example that
    was not imported with its reason; 1 when any example was refused."""
    started = time.monotonic()
    if not path.is_file():
        print(f"repoexec import: {path} is not a file (Exec-CSN's examples, a JSON list)", file=sys.stderr)
        return 2
    try:
        outcomes, projects = import_examples(path, out, instruction)
    except ExampleError as exc:
        print(f"repoexec import: {exc}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as exc:
        print(f"repoexec import: {path}: not text ({exc})", file=sys.stderr)
        return 2
    print(f"{'project':40} {'examples':>8}  requirements")
    for name, project in projects.items():
        pins = "(not resolved)" if project["requirements"] is None else ", ".join(project["requirements"])
        print(f"{name:40} {len(project['examples']):>8}  {pins[:200]}")
    for outcome in outcomes:
        for note in outcome.notes:
            print(f"note: example {outcome.position} (idx {outcome.idx}, {outcome.func_name}): {note}")
    for outcome in outcomes:
        if outcome.error:
            print(f"not imported: {outcome.error}")
    imported = sum(1 for outcome in outcomes if outcome.problem)
    print(f"{imported} of {len(outcomes)} examples imported to {out} (report: {out / REPORT}) in "
          f"{time.monotonic() - started:.1f} s")
    return 1 if imported < len(outcomes) else 0
