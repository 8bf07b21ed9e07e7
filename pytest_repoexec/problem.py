"""Problems and projects, loaded from their TOML manifests and checked field by field.

Every error names the manifest and the field at fault, so that a malformed problem shows up as a clear
collection error instead of a crash halfway through a run.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from . import syntax
from .safety import KINDS as SAFETY_KINDS
from .sandbox import LIMIT_FIELDS, parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PROJECT_MANIFEST = "project.toml"
PROBLEM_MANIFEST = "problem.toml"
CONTEXT_LEVELS = ("full", "medium", "small")
DESCRIPTIONS = ("detailed", "sketchy")  # a class problem's two descriptions, as RepoClassBench has them

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


class ManifestError(Exception):
    """A manifest that cannot be used; the message names the file and the field."""

    def __init__(self, path: Path, field: str, message: str) -> None:
        super().__init__(f"{path}: {field}: {message}")
        self.path = path
        self.field = field


@dataclass(frozen=True)
class Source:
    """Where a project's code comes from: a local folder, a pinned PyPI sdist, or a git revision."""

    kind: Literal["path", "pypi", "git"]
    location: str  # absolute folder, "name==version", or git URL
    rev: str | None = None


@dataclass(frozen=True)
class Project:
    name: str
    manifest: Path
    source: Source
    import_root: str = "."
    requirements: tuple[str, ...] = ()
    python: str | None = None
    resolve_before: str | None = None  # resolve requirements as of this date (YYYY-MM-DD)
    resolve_exempt: tuple[str, ...] = ()  # packages resolved without that date (no old wheels for this Python)
    mount: str | None = None  # an absolute path where the tests import the source from (bubblewrap)
    workdir: str | None = None  # an absolute path where the source is also seen, as working directory
    build_extensions: bool = False  # compile the source's C extensions in place (setup.py build_ext --inplace)
    # whose pytest runs the samples: the engine's (resolved over the project's pins) or the project's own, for a
    # suite written for another pytest, or pytest's own, whose tests import the runner (see environment.py)
    runner: str = "engine"
    # a constraint on the pytest the samples run under ("<9.2"), beside what its requirements' plugins accept
    pytest: str | None = None


@dataclass(frozen=True)
class Problem:
    project: Project
    name: str
    manifest: Path
    module: str
    entry_point: str
    test_count: int
    tests: Path | None  # the problem's own test module; None for a problem judged by the project's suite
    expected: Path
    reference: str
    declared_dependencies: tuple[str, ...] | None  # the manifest's; None: found in the reference when asked
    context_full: str
    number: int | None = None
    timeout: float | None = None
    known_failure: str | None = None  # why the reference cannot pass here; such problems stay out of the metrics
    quarantine: tuple[str, ...] = ()  # flaky tests, left out of every run (a function name takes all its cases)
    allow: tuple[str, ...] = ()  # kinds of safety findings the admission gate accepts for this problem
    network: bool = False  # the tests need the network: the sandbox shares the host's
    limits: dict[str, int] = field(default_factory=dict, compare=False, hash=False)  # over the run's, by Limits field
    prompt_overrides: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    suite: tuple[str, ...] = ()  # node ids of the project's own tests, relative to its source root, run in place
    # the test module is a program's own test, as its author wrote it (Exec-CSN): the gate compares its outcomes,
    # not its values (no fixer captured them), and takes a test that reaches the function only through other code
    # when the `pass` body fails it
    program_tests: bool = False
    kind: str = syntax.FUNCTION  # what the entry point names: a function (or method), or a module-level class
    description_form: str = "detailed"  # which of a class problem's descriptions its prompts hold (a run option)

    @property
    def id(self) -> str:
        return f"{self.project.name}/{self.name}"

    @property
    def folder(self) -> Path:
        return self.manifest.parent

    @property
    def function_name(self) -> str:
        """The name the candidate must define: the last part of ``Class.method``, or the class's name."""
        return self.entry_point.rpartition(".")[2]

    @property
    def noun(self) -> str:
        """What the candidate is, in the prompts' and messages' words: "function" or "class"."""
        return self.kind.partition("_")[0]

    @functools.cached_property
    def dependencies(self) -> tuple[str, ...]:
        """The context's names the reference's body uses (DIR's denominator): parsed only when a sample is
        scored or a prompt made, not when a rerun reads its verdicts."""
        if self.declared_dependencies is not None:
            return self.declared_dependencies
        return tuple(syntax.dependencies(self.context_full, self.reference, self.entry_point, self.kind))

    @functools.cached_property
    def _split_reference(self) -> tuple[str, str | None, str]:
        return syntax.split_function(self.reference, self.kind)

    @property
    def signature(self) -> str:
        return self.prompt_overrides.get("signature") or self._split_reference[0]

    @property
    def docstring(self) -> str | None:
        return self.prompt_overrides.get("docstring") or self._split_reference[1]

    @property
    def description(self) -> str | None:
        """What the prompt says the candidate must do: a function's docstring; a class's description in the
        run's form (the class is written from words, as in RepoClassBench, not from its own docstring)."""
        if self.kind == syntax.CLASS:
            return self.prompt_overrides[f"description_{self.description_form}"]
        return self.docstring

    def context(self, level: str) -> str:
        """The dependency context at one of the paper's three levels (full, medium, small)."""
        if level not in CONTEXT_LEVELS:
            raise ValueError(f"unknown context level {level!r}; expected one of {', '.join(CONTEXT_LEVELS)}")
        if level == "full":
            return self.context_full
        return self.prompt_overrides.get(level) or syntax.strip_bodies(
            self.context_full, keep_docstrings=level == "medium"
        )


class _Fields:
    """Typed access to a manifest's table that reports the exact field at fault."""

    def __init__(self, path: Path, table: dict[str, Any], prefix: str = "") -> None:
        self.path, self.table, self.prefix = path, table, prefix

    def error(self, key: str, message: str) -> ManifestError:
        return ManifestError(self.path, self.prefix + key, message)

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ..., *, required: bool = False) -> Any:
        if key not in self.table:
            if required or default is ...:
                raise self.error(key, "required field is missing")
            return default
        value = self.table[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            names = " or ".join(t.__name__ for t in _as_tuple(kind))
            raise self.error(key, f"expected {names}, got {type(value).__name__} {value!r:.60}")
        return value

    def table_at(self, key: str) -> _Fields:
        value = self.get(key, dict, {})
        return _Fields(self.path, value, f"{self.prefix}{key}.")

    def reject_unknown(self, known: set[str]) -> None:
        for key in self.table:
            if key not in known:
                raise self.error(key, f"unknown field (known: {', '.join(sorted(known))})")


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(path, "(toml)", str(exc)) from None
    except OSError as exc:
        raise ManifestError(path, "(file)", exc.strerror or str(exc)) from None


RUNNERS = ("engine", "project")  # project.toml's runner: whose pytest runs the samples


@functools.cache
def load_project(manifest: Path) -> Project:
    """Load ``project.toml``; cached, since every problem of the project asks for it."""
    fields = _Fields(manifest, _read_toml(manifest))
    fields.reject_unknown(
        {"source", "import_root", "requirements", "python", "resolve_before", "resolve_exempt", "mount", "workdir",
         "build_extensions", "runner", "pytest"}
    )
    source = _load_source(fields.table_at("source"), manifest.parent)
    import_root = fields.get("import_root", str, ".")
    if Path(import_root).is_absolute() or ".." in Path(import_root).parts:
        raise fields.error("import_root", "must be a relative folder inside the source")
    requirements = fields.get("requirements", list, [])
    for index, requirement in enumerate(requirements):
        try:
            Requirement(requirement)
        except (InvalidRequirement, TypeError) as exc:
            raise fields.error(f"requirements[{index}]", f"not a requirement: {exc}") from None
    python = fields.get("python", str, None)
    if python is not None:
        try:
            SpecifierSet(python)
        except InvalidSpecifier:
            raise fields.error("python", f"not a version constraint: {python!r}") from None
    resolve_before = fields.get("resolve_before", str, None)
    if resolve_before is not None and not _DATE.match(resolve_before):
        raise fields.error("resolve_before", f"expected a date as YYYY-MM-DD, got {resolve_before!r}")
    resolve_exempt = fields.get("resolve_exempt", list, [])
    if not all(isinstance(name, str) for name in resolve_exempt):
        raise fields.error("resolve_exempt", "expected a list of package names")
    mount, workdir = (_absolute_folder(fields, key) for key in ("mount", "workdir"))
    runner = fields.get("runner", str, "engine")
    if runner not in RUNNERS:
        raise fields.error("runner", f"expected one of {', '.join(RUNNERS)}, got {runner!r}")
    pytest_pin = fields.get("pytest", str, None)
    if pytest_pin is not None:
        try:
            SpecifierSet(pytest_pin)
        except InvalidSpecifier:
            raise fields.error("pytest", f"not a version constraint: {pytest_pin!r} (such as \"<9.2\")") from None
    return Project(
        name=manifest.parent.name,
        manifest=manifest,
        source=source,
        import_root=import_root,
        requirements=tuple(requirements),
        python=python,
        resolve_before=resolve_before,
        resolve_exempt=tuple(resolve_exempt),
        mount=mount,
        workdir=workdir,
        build_extensions=fields.get("build_extensions", bool, False),
        runner=runner,
        pytest=pytest_pin,
    )


def _absolute_folder(fields: _Fields, key: str) -> str | None:
    folder = fields.get(key, str, None)
    if folder is not None and (not Path(folder).is_absolute() or Path(folder) == Path("/")):
        raise fields.error(key, f"expected an absolute folder other than /, got {folder!r}")
    return folder


def _load_source(fields: _Fields, project_dir: Path) -> Source:
    fields.reject_unknown({"path", "pypi", "git", "rev"})
    kinds = [kind for kind in ("path", "pypi", "git") if kind in fields.table]
    if len(kinds) != 1:
        raise fields.error("", "exactly one of path, pypi or git is required")
    kind = kinds[0]
    location = fields.get(kind, str)
    if kind == "path":
        folder = (project_dir / location).resolve()
        if not folder.is_dir():
            raise fields.error("path", f"folder {folder} does not exist")
        return Source("path", str(folder))
    if kind == "pypi":
        try:
            pinned = Requirement(location)
        except InvalidRequirement as exc:
            raise fields.error("pypi", f"not a requirement: {exc}") from None
        if len(pinned.specifier) != 1 or next(iter(pinned.specifier)).operator != "==":
            raise fields.error("pypi", f"pin one release, as in 'name==1.0.0' (got {location!r})")
        return Source("pypi", location)
    rev = fields.get("rev", str, None)
    if rev is None:
        raise fields.error("rev", "a git source needs a revision to pin it")
    return Source("git", location, rev)


_PROBLEM_FIELDS = {
    "module", "entry_point", "test_count", "number", "tests", "expected", "timeout", "dependencies",
    "reference", "prompt", "known_failure", "quarantine", "allow", "network", "limits", "suite", "program_tests",
}


def load_problem(manifest: Path, description: str = "detailed") -> Problem:
    """Load and check ``problem.toml`` together with its project (``../project.toml``); a class problem's prompts
    hold its ``description`` form (one of ``DESCRIPTIONS``)."""
    manifest = manifest.resolve()
    project_manifest = manifest.parent.parent / PROJECT_MANIFEST
    if not project_manifest.is_file():
        raise ManifestError(manifest, "(project)", f"no {PROJECT_MANIFEST} in {manifest.parent.parent}")
    project = load_project(project_manifest)
    fields = _Fields(manifest, _read_toml(manifest))
    fields.reject_unknown(_PROBLEM_FIELDS)

    module = fields.get("module", str)
    if not _DOTTED.match(module):
        raise fields.error("module", f"not a dotted module name: {module!r}")
    entry_point = fields.get("entry_point", str)
    if not _DOTTED.match(entry_point):
        raise fields.error("entry_point", f"expected a name or Class.method, got {entry_point!r}")
    test_count = fields.get("test_count", int)
    if test_count < 1:
        raise fields.error("test_count", "must be at least 1")
    number = fields.get("number", int, None)
    timeout = fields.get("timeout", (int, float), None)
    if timeout is not None and timeout <= 0:
        raise fields.error("timeout", "must be a positive number of seconds")

    reference = fields.get("reference", str)
    kind = _check_reference(fields, reference, entry_point)
    suite = _suite(fields)
    program_tests = fields.get("program_tests", bool, False)
    if suite:
        tests = None
        if len(suite) != test_count:
            raise fields.error("test_count", f"is {test_count} but suite names {len(suite)} tests")
        if program_tests:
            raise fields.error("program_tests", "a problem judged by the project's suite has no test module")
    else:
        tests = _find_tests(fields, manifest.parent)
        _check_test_count(fields, tests, test_count)
    expected = manifest.parent / fields.get("expected", str, "expected")
    if "expected" in fields.table and not expected.is_dir():
        raise fields.error("expected", f"folder {expected} does not exist")

    prompt = fields.table_at("prompt")
    described = [f"description_{form}" for form in DESCRIPTIONS]
    prompt.reject_unknown({"signature", "docstring", "context", *described})
    context = prompt.table_at("context")
    context.reject_unknown(set(CONTEXT_LEVELS))
    context_full = context.get("full", str, required=True)
    _check_descriptions(prompt, described, kind, entry_point)
    overrides = {key: prompt.get(key, str) for key in ("signature", "docstring", *described) if key in prompt.table}
    overrides |= {key: context.get(key, str) for key in ("medium", "small") if key in context.table}

    quarantine = _names(fields, "quarantine")
    if len(quarantine) >= test_count:
        raise fields.error("quarantine", f"leaves none of the {test_count} tests to run")
    allow = _names(fields, "allow")
    unknown = sorted(set(allow) - set(SAFETY_KINDS))
    if unknown:
        raise fields.error("allow", f"unknown kinds {unknown}; known: {', '.join(SAFETY_KINDS)}")

    dependencies = None
    if "dependencies" in fields.table:
        dependencies = tuple(fields.get("dependencies", list))
        if not all(isinstance(name, str) for name in dependencies):
            raise fields.error("dependencies", "expected a list of names")

    return Problem(
        project=project,
        name=manifest.parent.name,
        network=fields.get("network", bool, False),
        limits=_limits(fields.table_at("limits")),
        manifest=manifest,
        module=module,
        entry_point=entry_point,
        test_count=test_count,
        tests=tests,
        expected=expected,
        reference=reference,
        declared_dependencies=dependencies,
        context_full=context_full,
        number=number,
        timeout=float(timeout) if timeout is not None else None,
        known_failure=fields.get("known_failure", str, None),
        quarantine=quarantine,
        allow=allow,
        prompt_overrides=overrides,
        suite=suite,
        program_tests=program_tests,
        kind=kind,
        description_form=description,
    )


def _limits(fields: _Fields) -> dict[str, int]:
    """A problem's own limits (``[limits]``: sizes as "512M" or bytes, counts and seconds as integers)."""
    fields.reject_unknown(set(LIMIT_FIELDS))
    limits = {}
    for key, value in fields.table.items():
        if LIMIT_FIELDS[key] == "size" and isinstance(value, str):
            try:
                limits[key] = parse_size(value)
            except ValueError:
                raise fields.error(key, f"expected a size such as 512M or 4G, got {value!r}") from None
        else:
            limits[key] = fields.get(key, int)
            if limits[key] < 1:
                raise fields.error(key, "must be at least 1")
    return limits


def _names(fields: _Fields, key: str) -> tuple[str, ...]:
    names = fields.get(key, list, [])
    if not all(isinstance(name, str) and name for name in names):
        raise fields.error(key, "expected a list of names")
    return tuple(names)


def _check_reference(fields: _Fields, reference: str, entry_point: str) -> str:
    """The kind of definition the entry point names: a class where a plain name is a class of the reference,
    else a function (or method), which the reference must define."""
    try:
        tree = ast.parse(reference)
    except SyntaxError as exc:
        raise fields.error("reference", f"does not parse: {exc.msg} (line {exc.lineno})") from None
    if "." not in entry_point and any(isinstance(node, ast.ClassDef) and node.name == entry_point
                                      for node in tree.body):
        return syntax.CLASS
    function_name = entry_point.rpartition(".")[2]
    defined = [
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    if function_name not in defined:
        alternative = "" if "." in entry_point else f" or class {entry_point!r}"
        raise fields.error("reference", f"does not define function {function_name!r}{alternative}")
    return syntax.FUNCTION


def _check_descriptions(prompt: _Fields, described: list[str], kind: str, entry_point: str) -> None:
    """A class is written from its descriptions, so it needs both; a function is written from its docstring."""
    given = [key for key in described if key in prompt.table]
    if kind != syntax.CLASS and given:
        raise prompt.error(given[0], f"only a class problem has a description ({entry_point!r} is a function)")
    for key in described:
        if kind == syntax.CLASS and not prompt.get(key, str, "").strip():
            raise prompt.error(key, f"class {entry_point!r} needs a description in words "
                                    f"({' and '.join(f'prompt.{each}' for each in described)})")


def _suite(fields: _Fields) -> tuple[str, ...]:
    """The project's own tests that judge the problem, by node id (``tests/test_x.py::Class::test_y[1]``),
    relative to the source root; such a problem has no test module of its own."""
    suite = _names(fields, "suite")
    if suite and "tests" in fields.table:
        raise fields.error("suite", "a problem is judged by its own test module (tests) or by the project's suite, "
                                    "not both")
    for node in suite:
        path = node.partition("::")[0]
        if not path.endswith(".py") or path.startswith("/") or ".." in Path(path).parts or "::" not in node:
            raise fields.error("suite", f"not a test's node id relative to the source root: {node!r}")
    if len(set(suite)) != len(suite):
        raise fields.error("suite", "names a test twice")
    return suite


def _find_tests(fields: _Fields, folder: Path) -> Path:
    if "tests" in fields.table:
        tests = folder / fields.get("tests", str)
        if not tests.is_file():
            raise fields.error("tests", f"file {tests} does not exist")
        return tests
    candidates = sorted(folder.glob("test_*.py"))
    if len(candidates) != 1:
        found = ", ".join(path.name for path in candidates) or "none"
        raise fields.error("tests", f"name the test module: expected one test_*.py in {folder}, found {found}")
    return candidates[0]


_TOP_LEVEL_TEST = re.compile(rb"^(?:async[ \t]+)?def[ \t]+test", re.MULTILINE)


def _check_test_count(fields: _Fields, tests: Path, test_count: int) -> None:
    """Compare the declared count with the module's test functions, where the module is simple enough to count.
    Where a scan of its lines agrees, the module is not parsed (every process of a run loads every problem);
    otherwise the parse gives the exact count, or the syntax error."""
    source = tests.read_bytes()
    if len(_TOP_LEVEL_TEST.findall(source)) == test_count:
        return
    try:
        with warnings.catch_warnings():  # old test modules have invalid escapes: their problem, not ours
            warnings.simplefilter("ignore")
            tree = ast.parse(source, filename=str(tests))
    except SyntaxError as exc:
        raise ManifestError(tests, "(syntax)", f"{exc.msg} (line {exc.lineno})") from None
    if b"parametrize" in source or any(
        isinstance(node, ast.ClassDef) and node.name.startswith("Test") for node in tree.body
    ):
        return
    defined = sum(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
        for node in tree.body
    )
    if defined != test_count:
        raise fields.error("test_count", f"is {test_count} but {tests.name} defines {defined} tests")


def find_manifests(paths: list[Path]) -> list[Path]:
    """Every problem manifest under the given files or folders, in a stable order."""
    found: set[Path] = set()
    for path in paths:
        if path.is_file() and path.name == PROBLEM_MANIFEST:
            found.add(path.resolve())
        elif path.is_dir():
            found.update(
                manifest.resolve()
                for manifest in path.rglob(PROBLEM_MANIFEST)
                if not any(part.startswith(".") for part in manifest.relative_to(path).parts)
            )
        elif (path.parent / PROBLEM_MANIFEST).is_file():  # a file inside a problem folder
            found.add((path.parent / PROBLEM_MANIFEST).resolve())
    return sorted(found)


def set_order(problems: list[Problem]) -> list[Problem]:
    """The canonical order of a set: numbered problems by number, then the rest by id."""
    return sorted(problems, key=lambda p: (p.number is None, p.number or 0, p.id))
