"""RepoClassBench's Python tasks into our format: ``python_data.json`` and the ``sources/`` tarballs (one per
repository state) become one project per state, its tree with the benchmark's renamed task classes renamed
by binding (the rename machinery of ``repoexec paraphrase``), and one class problem per task, judged by the
task's test directives run in place (``suite``). A project is built in a staging folder and moved into place
whole; a task that cannot be imported is reported by its id and leaves nothing behind."""

from __future__ import annotations

import difflib
import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import tomli_w
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from ..builder.classes import Klass
from ..builder.context import Modules, full_context, module_classes
from ..builder.pipeline import put_in_place
from ..builder.requirements import TEST_EXTRAS, declared_dependencies, keep_installable, requirement_files
from ..environment import EnvironmentBuildError, _download_pypi, extract_tar
from ..paraphrase.index import Index
from ..problem import PROBLEM_MANIFEST, PROJECT_MANIFEST, Project, Source
from ..syntax import definition_text, node_text, parse, walk
from .repoclassbench_names import Derived, adopt_text_spellings, derive

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DATA = "python_data.json"
SOURCES = "sources"
REPORT = "import-report.json"
SETTINGS = Path(__file__).with_name("repoclassbench.toml")
# A plugin put beside the project's code: its tests were written for a pytest before 9, under which what 9 made
# errors (marks applied to fixtures) were deprecation warnings; the engine's runner is newer.
COMPAT_PLUGIN = "repoexec_pytest_compat"
COMPAT_SOURCE = '''"""Added by repoexec import: what the pytest these tests were written for did and a newer one does not.
pytest's removed-in-9 deprecations are warnings again: from here on while the first conftest files load (pytest
catches warnings around that), and for the rest of the session through the configuration. A test class's
nose-style setup() and teardown() methods run around each of its tests, as pytest before 8 ran them (with a
deprecation warning). Parameter ids are made as the original's pytest 7 on Python 3.9 made them. A project's own
older pytest (runner = "project") does all of that itself."""

import inspect
import unittest
import warnings

import pytest

_REMOVED = getattr(pytest, "PytestRemovedIn9Warning", None)
if _REMOVED is not None:
    warnings.filterwarnings("default", category=_REMOVED)
try:
    import _pytest.nose  # noqa: F401  (pytest before 8 runs nose-style methods itself)
except ImportError:
    _NOSE_GONE = True
else:
    _NOSE_GONE = False


def pytest_configure(config):
    if _REMOVED is not None:
        config.addinivalue_line("filterwarnings", "default::pytest.PytestRemovedIn9Warning")


def _xunit(instance, preferred, nose, method):
    """The class's ``nose`` method where it has no ``preferred`` one, called as pytest 7 called it."""
    cls = type(instance)
    if isinstance(instance, unittest.TestCase) or getattr(cls, preferred, None) is not None:
        return
    function = getattr(cls, nose, None)
    if not callable(function) or type(function).__name__ == "FixtureFunctionDefinition" or \\
            hasattr(function, "_pytestfixturefunction"):
        return
    bound = getattr(instance, nose)
    try:
        takes = len(inspect.signature(bound).parameters)
    except (TypeError, ValueError):
        takes = 0
    bound(method) if takes else bound()


def _ids_as_pytest_7():
    """Parameter ids as the original's Python 3.9 and pytest 7 made them, which the benchmark's directives name:
    typing forms (``Annotated[...]``, ``List[int]``), which had no ``__name__`` before Python 3.10, take
    ``<argname><index>``; and a duplicate id takes its counter right after it (``2010``), where pytest 8 puts an
    underscore after a digit and skips counters already taken (``201_0``)."""
    from collections import Counter, defaultdict

    from _pytest.python import IdMaker

    by_value, unique = IdMaker._idval_from_value, IdMaker.make_unique_parameterset_ids

    def _idval_from_value(self, val):
        kind = type(val)
        if kind.__module__ in ("typing", "typing_extensions") and not isinstance(val, type) and \\
                (kind.__name__.endswith("Alias") or kind.__name__ in ("_SpecialForm", "_TupleType", "_CallableType")):
            return None
        return by_value(self, val)

    def make_unique_parameterset_ids(self):
        resolved = list(self._resolve_ids())
        if len(resolved) == len(set(resolved)) or not all(isinstance(id, str) for id in resolved):
            return unique(self)
        counts, suffixes = Counter(resolved), defaultdict(int)
        for index, id in enumerate(resolved):
            if counts[id] > 1:
                resolved[index] = f"{id}{suffixes[id]}"
                suffixes[id] += 1
        return resolved if len(resolved) == len(set(resolved)) else unique(self)

    IdMaker._idval_from_value = _idval_from_value
    IdMaker.make_unique_parameterset_ids = make_unique_parameterset_ids


if _NOSE_GONE:  # pytest 8 or later
    _ids_as_pytest_7()

    @pytest.fixture(autouse=True)
    def _repoexec_nose_style_methods(request):
        instance = request.instance
        if instance is not None:
            _xunit(instance, "setup_method", "setup", request.function)
        yield
        if instance is not None:
            _xunit(instance, "teardown_method", "teardown", request.function)
'''
# pytest-xdist's --dist=loadgroup reports a test of an xdist_group as "node id@group": an "@" inside a parameter's
# id (requests' "mailto:user@example.org") is not one
_GROUP_SUFFIX = re.compile(r"(?<=[\w\]])@\w+$")


class BenchmarkError(Exception):
    """The benchmark folder cannot be read at all (no data file, a data file that is not the benchmark's)."""


@dataclass(frozen=True)
class Task:
    """One task as published, with the file relative to its repository's root."""

    task_id: str
    class_name: str
    path: str
    repository: str  # owner/name
    version: str | None
    commit: str
    directives: tuple[str, ...]
    ground_truth: str
    detailed: str
    sketchy: str

    @property
    def project(self) -> str:
        """The repository state's project name: ``litestar-1fb981da4b61``, as its tarball is named."""
        return f"{self.repository.rpartition('/')[2]}-{self.commit[:12]}"


@dataclass
class TaskImport:
    task: Task
    source: str | None = None  # the tarball it came from
    imported: bool = False
    matches: bool | None = None  # the imported class equals the ground truth up to white space and decorators
    code_matches: bool | None = None  # ... and up to its strings and comments (the benchmark renamed words there too)
    difference: list[str] = field(default_factory=list)
    error: str | None = None
    # a task whose tree is not in sources/ comes from a PyPI release: which one, and what it held
    release: str | None = None  # "pvlib==0.9.0"
    file_found: bool | None = None
    class_found: bool | None = None
    tests_in_source: bool | None = None  # every directive's test file is in the release's tree

    def row(self) -> dict[str, Any]:
        return {"task_id": self.task.task_id, "project": self.task.project, "problem": self.task.class_name,
                "repository": self.task.repository, "version": self.task.version, "source": self.source,
                "imported": self.imported, "class_matches": self.matches, "code_matches": self.code_matches,
                "difference": self.difference, "release": self.release, "file_found": self.file_found,
                "class_found": self.class_found, "tests_in_source": self.tests_in_source,
                "error": self.error}


def read_tasks(folder: Path) -> list[Task]:
    """The published tasks of ``folder/python_data.json``."""
    path = folder / DATA
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot be read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}: not JSON ({exc})") from None
    if not isinstance(records, list):
        raise BenchmarkError(f"{path}: not a list of tasks")
    tasks = []
    for number, record in enumerate(records):
        try:
            tasks.append(task_of(record))
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchmarkError(f"{path}: task {number} ({record.get('task_id', '?') if isinstance(record, dict) else '?'}):"
                                 f" field {exc} missing or malformed") from None
    return tasks


def task_of(record: dict[str, Any]) -> Task:
    """One published record as a task (its directives as node ids: xdist's group suffix cut off)."""
    metadata = record["repo_metadata"]
    setup = metadata.get("setup_details") or {}
    instance = record["task_id"][:-len(record["class_name"]) - 1]
    repository = setup.get("repo") or instance.rpartition("-")[0].replace("__", "/")
    short = repository.rpartition("/")[2]
    marker = f"{instance}/" if f"{instance}/" in record["file"] else f"repos/{short}/"
    if marker not in record["file"]:
        raise ValueError("'file' (no instance id or repos/<name>/ in it)")
    directives = (_GROUP_SUFFIX.sub("", directive) for directive in record["evaluation_metadata"]["test_directives"])
    return Task(record["task_id"], record["class_name"], record["file"].split(marker, 1)[1], repository,
                setup.get("version"), setup.get("base_commit") or metadata["commit_id"],
                tuple(dict.fromkeys(directives)), record["ground_truth_class_body"],
                record["detailed_description"], record["sketchy_description"])


@dataclass
class StateImport:
    """One repository state's project: its tasks' outcomes and the renames read back from the ground truths."""

    name: str
    tasks: list[TaskImport]
    renamed: dict[str, str] = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {"renamed": self.renamed, "unresolved": self.unresolved, "tasks": [task.row() for task in self.tasks]}


def import_benchmark(folder: Path, out: Path, projects: set[str] | None = None) -> list[StateImport]:
    """Import every repository state of the benchmark (or those named in ``projects``) into ``out``; each state's
    outcome, also written as ``out/import-report.json``."""
    tasks = read_tasks(folder)
    states: dict[str, list[Task]] = {}
    for task in tasks:
        states.setdefault(task.project, []).append(task)
    if projects and (unknown := projects - set(states)):
        raise BenchmarkError(f"no such repository state: {', '.join(sorted(unknown))} (there are "
                             f"{', '.join(sorted(states))})")
    settings = tomllib.loads(SETTINGS.read_text(encoding="utf-8"))
    out.mkdir(parents=True, exist_ok=True)
    imported = [import_state(folder / SOURCES, state, settings.get(name, {}), out)
                for name, state in sorted(states.items()) if projects is None or name in projects]
    report = {"from": str(folder), "projects": {state.name: state.row() for state in imported}}
    (out / REPORT).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return imported


def import_state(sources: Path, tasks: list[Task], settings: dict[str, Any], out: Path) -> StateImport:
    """One repository state's project into ``out/<project>``: whole, with the tasks that import, or nothing."""
    name = tasks[0].project
    outcomes = [TaskImport(task) for task in tasks]
    state = StateImport(name, outcomes)
    found = sorted(sources.glob(f"*-{tasks[0].commit[:12]}.tar.gz"))
    if not found and not settings.get("pypi"):
        for outcome in outcomes:
            outcome.error = (f"no source tree: sources/*-{tasks[0].commit[:12]}.tar.gz is not there, and "
                             f"repoclassbench.toml names no PyPI project for {name}")
        return state
    staging = out / f".{name}.importing-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    project = staging / name
    try:
        if found:
            try:
                date = _unpack(found[0], project / "repo")
            except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
                for outcome in outcomes:
                    outcome.source, outcome.error = found[0].name, f"{found[0].name}: cannot be unpacked ({exc})"
                return state
            source = found[0].name
        else:
            try:
                source = nearest_release(settings["pypi"], tasks[0].version, settings.get("release"))
                date = _fetch_release(name, source, project / "repo")
            except (LookupError, EnvironmentBuildError) as exc:
                for outcome in outcomes:
                    outcome.error = f"{outcome.task.task_id}: no source tree here, and from PyPI: {exc}"
                return state
            for outcome in outcomes:
                outcome.release = source
            # an sdist has its PKG-INFO at the top; the engine's download falls back to the wheel alone
            kind = "sdist" if (project / "repo" / "PKG-INFO").is_file() else "wheel"
            source = f"PyPI {source} " + ("sdist" if kind == "sdist" else "wheel (no sdist could be had)")
        for outcome in outcomes:
            outcome.source = source
        derived = _write_state(project, outcomes, settings, date, released=None if found else kind)
        state.renamed, state.unresolved = derived.names, derived.unresolved
        if any(outcome.imported for outcome in outcomes):
            put_in_place(project, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return state


def nearest_release(distribution: str, version: str | None, pinned: str | None = None) -> str:
    """``name==version`` of the PyPI release nearest the task's version (``0.9`` -> ``0.9.0``): the first final
    release of its series, what the version number itself names; ``pinned`` (repoclassbench.toml's ``release``)
    where the benchmark's version and the commit disagree. The releases are listed by pip, as the engine fetches
    them."""
    if pinned:
        return f"{distribution}=={pinned}"
    if not version:
        raise LookupError(f"the task gives no version to find a {distribution} release by")
    result = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "--disable-pip-version-check",
                             distribution], capture_output=True, text=True)
    listed = re.search(r"^Available versions: (.+)$", result.stdout, re.MULTILINE)
    if not listed:
        raise LookupError(f"pip index versions {distribution} lists no release: "
                          f"{(result.stdout + result.stderr).strip()[-500:]}")
    wanted = Version(version)
    releases = []
    for text in listed.group(1).split(", "):
        try:
            release = Version(text)
        except InvalidVersion:
            continue
        if not release.is_prerelease and release.release[:len(wanted.release)] == wanted.release:
            releases.append((release, text))
    if not releases:
        raise LookupError(f"{distribution} has no release of the series {version} on PyPI")
    return f"{distribution}=={min(releases)[1]}"


def _fetch_release(name: str, pin: str, target: Path) -> str:
    """The release's sdist (completed from its wheel, or the wheel alone: the engine's own download of a PyPI
    source) as ``target``; the date of its newest file, the release's date, for resolving its requirements."""
    _download_pypi(Project(name, target / PROJECT_MANIFEST, Source("pypi", pin)), target)
    stamp = max(path.stat().st_mtime for path in target.rglob("*") if path.is_file())
    return datetime.fromtimestamp(stamp, timezone.utc).date().isoformat()


def _unpack(tarball: Path, target: Path) -> str:
    """The tarball's one folder as ``target``; the commit's date (``git archive`` stamps every file with it)."""
    unpacked = target.parent / ".unpacked"
    with tarfile.open(tarball, "r:gz") as archive:
        members = archive.getmembers()
        tops = {member.name.split("/")[0] for member in members}
        if len(tops) != 1:
            raise tarfile.TarError(f"expected one top folder, found {len(tops)}")
        extract_tar(archive, unpacked)
    (unpacked / tops.pop()).rename(target)
    unpacked.rmdir()
    stamp = max(member.mtime for member in members)
    return datetime.fromtimestamp(stamp, timezone.utc).date().isoformat()


def _write_state(project: Path, outcomes: list[TaskImport], settings: dict[str, Any], date: str,
                 released: str | None = None) -> Derived:
    repo = project / "repo"
    import_root = "src" if all(o.task.path.startswith("src/") for o in outcomes) else "."
    located = {}
    for outcome in outcomes:
        try:
            located[outcome.task.task_id] = _locate(repo, import_root, outcome.task)
            outcome.file_found = outcome.class_found = True
        except LookupError as exc:
            outcome.error = str(exc)
            outcome.file_found, outcome.class_found = (repo / outcome.task.path).is_file(), False
    index = Index(repo, import_root)
    derived = derive(index, {o.task.class_name: located[o.task.task_id][1] for o in outcomes if o.error is None},
                     [outcome.task.ground_truth for outcome in outcomes])
    derived.renames(index).rewrite_files()
    _spell_reprs(repo, outcomes, {name: derived.names[name] for _, name in index.classes if name in derived.names},
                 derived.names if settings.get("respell_strings") else None)
    for outcome in outcomes:
        if outcome.error is None:
            path = repo / outcome.task.path
            source = path.read_text(encoding="utf-8")
            adopted = adopt_text_spellings(source, outcome.task.class_name, outcome.task.ground_truth, derived.names)
            if adopted != source:
                path.write_text(adopted, encoding="utf-8")
    for relative, text in settings.get("files", {}).items():
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(text, encoding="utf-8")
    _load_plugins(repo, import_root, settings.get("plugins", []))
    modules = Modules(repo / import_root)
    known = settings.get("known_failure", {})
    for outcome in outcomes:
        if outcome.error is None:
            try:
                _write_problem(project, modules, located[outcome.task.task_id][0], outcome, known,
                               {key: settings[key] for key in ("timeout", "limits") if key in settings}, released)
            except LookupError as exc:
                outcome.error = str(exc)
    requirements = [*declared_dependencies(repo), *(_released_dependencies(repo) if released else []),
                    *requirement_files(repo), *settings.get("requirements", [])]
    manifest = {"import_root": import_root, "requirements": list(dict.fromkeys(requirements)),
                "resolve_before": settings.get("resolve_before", date), "source": {"path": "repo"}}
    if exempt := settings.get("resolve_exempt"):
        manifest["resolve_exempt"] = exempt
    if runner := settings.get("runner"):
        manifest["runner"] = runner
    if pytest_pin := settings.get("pytest"):
        manifest["pytest"] = pytest_pin
    (project / PROJECT_MANIFEST).write_text(tomli_w.dumps(manifest), encoding="utf-8")
    return derived


def _released_dependencies(repo: Path) -> list[str]:
    """A release's dependencies and its test extras' requirements from its sdist's ``PKG-INFO`` (or its wheel's
    ``METADATA``, where the wheel alone could be had): a release whose ``setup.py`` declares them in code (pvlib)
    has them there only."""
    found_files = [repo / "PKG-INFO", *sorted(repo.glob("*.dist-info/METADATA"))]
    path = next((path for path in found_files if path.is_file()), None)
    if path is None:
        return []
    metadata = email.parser.Parser().parsestr(path.read_text(encoding="utf-8", errors="replace"))
    found = []
    for text in metadata.get_all("Requires-Dist") or []:
        try:
            marker = Requirement(text).marker
        except InvalidRequirement:
            continue
        extras = re.findall(r"""extra\s*==\s*["']([^"']+)["']""", str(marker or ""))
        if not extras or any(extra.lower() in TEST_EXTRAS for extra in extras):
            found.append(re.sub(r"""\s*(and\s+)?extra\s*==\s*["'][^"']+["']""", "", text).rstrip().rstrip(";"))
    return keep_installable(found)


def _spell_reprs(repo: Path, outcomes: list[TaskImport], classes: dict[str, str],
                 names: dict[str, str] | None = None) -> None:
    """In the tasks' test files, a renamed class's name where Python shows a class's ``__name__`` (a string that
    opens as a repr does, ``"<FDCapture 1 oldfd=..."``, and the ``'PersonName' object is not ...`` of its messages)
    is spelled with the class's new name: the benchmark's tests compare them so (FDCAPTURe's
    ``test_simple_resume_suspend`` and PeRSoNnAmE's ``test_next`` are among their directives). With ``names``
    (every rename; repoclassbench.toml's ``respell_strings``), also where a dataclass's repr shows a class
    (``FixedMount(surface_tilt=``) and a renamed name at the end of a dotted path into the tree
    (``mocker.patch('pvlib.pvsystem.scale_voltage_current_power')``): pvlib's directives use both."""
    if not classes:
        return
    alternatives = "|".join(map(re.escape, sorted(classes, key=len, reverse=True)))
    opening = re.compile(rf"^<({alternatives})(?=[ >])|(?<=')({alternatives})(?=' object\b)" +
                         (rf"|(?<![\w.])({alternatives})(?=\()" if names else ""))
    packages = {path.name for path in repo.iterdir() if path.is_dir()}
    dotted = re.compile(r"((?:[A-Za-z_]\w*\.)+)([A-Za-z_]\w*)")

    def respell(text: str) -> str:
        text = opening.sub(_respelled(classes), text)
        if names and (path := dotted.fullmatch(text)) and path.group(1).split(".")[0] in packages and \
                path.group(2) in names:
            text = path.group(1) + names[path.group(2)]
        return text

    for relative in sorted({d.split("::", 1)[0] for o in outcomes if o.error is None for d in o.task.directives}):
        path = repo / relative
        if not path.is_file():
            continue
        data, root = parse(path.read_text(encoding="utf-8"))
        edits = [(node.start_byte, node.end_byte, respell(node_text(node)))
                 for node in walk(root) if node.type == "string_content" and respell(node_text(node)) != node_text(node)]
        for start, end, text in sorted(edits, reverse=True):
            data = data[:start] + text.encode("utf-8") + data[end:]
        if edits:
            path.write_bytes(data)


def _respelled(classes: dict[str, str]):
    def respell(match: re.Match) -> str:
        return "<" + classes[match.group(1)] if match.group(1) else classes[match.group(2) or match.group(3)]
    return respell


def _locate(repo: Path, import_root: str, task: Task) -> tuple[str, str]:
    """The task's module and its class's name in the upstream tree (the benchmark's, case aside)."""
    path = repo / task.path
    if not path.is_file():
        raise LookupError(f"{task.task_id}: {task.path} is not in the tree")
    names = [name for _, _, name in module_classes(parse(path.read_text(encoding="utf-8"))[1])]
    found = [name for name in names if name == task.class_name] or \
        [name for name in names if name.lower() == task.class_name.lower()]
    if len(found) != 1:
        raise LookupError(f"{task.task_id}: class {task.class_name!r} not found in {task.path} "
                          f"({'defined twice' if found else 'no class of that name, case aside'})")
    relative = Path(task.path).relative_to(import_root).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts), found[0]


def _write_problem(project: Path, modules: Modules, module: str, outcome: TaskImport,
                   known: dict[str, str], run: dict[str, Any], released: str | None = None) -> None:
    """The task's problem folder, once its class and every test directive are found in the renamed tree; from a
    PyPI release (``released``: "sdist" or "wheel"), only where the class also equals the ground truth (a release is
    not the task's commit, and a class that differs would be another task) and from its sdist: a wheel's compiled
    extensions import the names the benchmark renamed by their old spelling (scikit-learn's ``_random.pyx``
    imports ``check_random_state``), and only a build of the renamed sources would follow them."""
    task, repo = outcome.task, project / "repo"
    source = (repo / task.path).read_text(encoding="utf-8")
    data, root = parse(source)
    found = [(outer, node) for outer, node, name in module_classes(root) if name == task.class_name]
    if not found:
        raise LookupError(f"{task.task_id}: class {task.class_name!r} not in {task.path} after the rename")
    outer, node = found[0]
    reference = definition_text(data, outer, node)
    truth = _without_decorators(task.ground_truth)
    outcome.matches = _squeezed(truth) == _squeezed(_without_decorators(reference))
    outcome.code_matches = _code(truth) == _code(_without_decorators(reference))
    if not outcome.matches:
        outcome.difference = list(difflib.unified_diff(
            [line.strip() for line in truth.splitlines() if line.strip()],
            [line.strip() for line in _without_decorators(reference).splitlines() if line.strip()],
            "ground_truth_class_body", "imported", n=0, lineterm=""))[2:22]
    outcome.tests_in_source = all((repo / d.split("::", 1)[0]).is_file() for d in task.directives)
    _check_directives(repo, task)
    if released == "wheel":
        raise LookupError(f"{task.task_id}: only the wheel of {outcome.release} could be had, and a wheel's compiled "
                          "extensions import the renamed names by their old spelling: a task is written from its "
                          "release's sdist only")
    if released and not outcome.matches:
        raise LookupError(f"{task.task_id}: class {task.class_name!r} of {outcome.release} differs from the "
                          f"ground truth ({len(outcome.difference)} lines of difference, first: "
                          f"{outcome.difference[0] if outcome.difference else '?'})")
    try:
        context = full_context(modules, Klass(task.path, module, task.class_name, reference, None, ()))
    except StopIteration:  # a class the context reader cannot place (defined under a block): no context
        context = ""
    manifest: dict[str, Any] = {"module": module, "entry_point": task.class_name,
                                "test_count": len(task.directives), "suite": list(task.directives), **run}
    if task.task_id in known:
        manifest["known_failure"] = known[task.task_id]
    manifest["reference"] = reference.rstrip() + "\n"
    manifest["prompt"] = {"description_detailed": task.detailed, "description_sketchy": task.sketchy,
                          "context": {"full": context}}
    folder = project / task.class_name
    folder.mkdir()
    (folder / PROBLEM_MANIFEST).write_text(tomli_w.dumps(manifest, multiline_strings=True), encoding="utf-8")
    outcome.imported = True


def _check_directives(repo: Path, task: Task) -> None:
    """Each directive's file is in the tree and each name along its node id is a name of that file."""
    names: dict[str, set[str]] = {}
    for directive in task.directives:
        path, *parts = directive.split("[", 1)[0].split("::")
        if path not in names:
            if not (repo / path).is_file():
                raise LookupError(f"{task.task_id}: test directive {directive}: {path} is not in the tree")
            tree = parse((repo / path).read_text(encoding="utf-8", errors="replace"))[1]
            names[path] = {node_text(node) for node in walk(tree) if node.type == "identifier"}
        if missing := [part for part in parts if part not in names[path]]:
            raise LookupError(f"{task.task_id}: test directive {directive} names no test of the tree "
                              f"({', '.join(missing)} not in {path})")


def _without_decorators(text: str) -> str:
    """A class's source from its ``class`` line on."""
    data, root = parse(text)
    classes = [node for node in walk(root) if node.type == "class_definition"]
    return data[classes[0].start_byte:].decode("utf-8") if classes else text


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _code(text: str) -> list[str]:
    """The source's tokens less its comments and the contents of its strings."""
    data, root = parse(text)
    return [node_text(node) for node in walk(root) if not node.children and node.type not in ("comment",
            "string_content", "string_start", "string_end", "escape_sequence")]


def _load_plugins(repo: Path, import_root: str, plugins: list[str]) -> None:
    """The pytest plugins the project's configuration loads through its ``addopts`` or entry points, which a
    run without plugin auto-loading (the engine's) does not, and ours: named by the root ``conftest.py``."""
    (repo / import_root / f"{COMPAT_PLUGIN}.py").write_text(COMPAT_SOURCE, encoding="utf-8")
    conftest = repo / "conftest.py"
    before = conftest.read_text(encoding="utf-8") if conftest.is_file() else ""
    line = (f"pytest_plugins = [*globals().get('pytest_plugins', ()), *{[*plugins, COMPAT_PLUGIN]!r}]"
            "  # added by repoexec import\n")
    conftest.write_text(before + ("\n" if before and not before.endswith("\n") else "") + line, encoding="utf-8")


def command(folder: Path, out: Path, projects: str | None) -> int:
    """``repoexec import --format repoclassbench``: import, print a table per repository state, each task that was
    not imported with its reason and each class that differs from the ground truth; 1 when any task failed."""
    started = time.monotonic()
    try:
        states = import_benchmark(folder, out, set(projects.split(",")) if projects else None)
    except BenchmarkError as exc:
        print(f"repoexec import: {exc}", file=sys.stderr)
        return 2
    print(f"{'project':28} {'tasks':>5} {'imported':>8} {'class matches':>13} {'code matches':>12} {'renamed':>7}")
    for state in states:
        rows = state.tasks
        print(f"{state.name:28} {len(rows):>5} {sum(o.imported for o in rows):>8} "
              f"{sum(bool(o.matches) for o in rows):>13} {sum(bool(o.code_matches) for o in rows):>12} "
              f"{len(state.renamed):>7}")
        for note in state.unresolved:
            print(f"    rename not read back: {note}")
    outcomes = [outcome for state in states for outcome in state.tasks]
    for outcome in outcomes:
        if outcome.release:
            print(f"from PyPI: {outcome.task.task_id}: {outcome.source}, class found: {_yes(outcome.class_found)}, "
                  f"equal: {_yes(outcome.matches)}, tests in the release: {_yes(outcome.tests_in_source)}")
    for outcome in outcomes:
        if outcome.error:
            print(f"not imported: {outcome.task.task_id}: {outcome.error}")
        elif not outcome.code_matches:
            print(f"differs from the ground truth: {outcome.task.task_id}: " + " | ".join(outcome.difference[:4]))
    print(f"written to {out} (report: {out / REPORT}) in {time.monotonic() - started:.1f} s")
    return 1 if any(outcome.error for outcome in outcomes) else 0


def _yes(value: bool | None) -> str:
    return "-" if value is None else "yes" if value else "no"


def emptied(reference: str) -> str:
    """The class with every method's body (its docstring aside) replaced by ``pass``: what a task's tests must
    fail, if they test the class at all."""
    data, root = parse(reference)
    edits = []
    for node in walk(root):
        if node.type == "function_definition":
            body = node.child_by_field_name("body")
            statements = body.named_children
            keep = statements[:1] if statements and statements[0].type == "expression_statement" and \
                statements[0].named_children[0].type == "string" else []
            start = keep[0].end_byte if keep else body.start_byte
            edits.append((start, body.end_byte, ("\n" + " " * body.start_point[1] if keep else "") + "pass"))
    for start, end, text in sorted(edits, reverse=True):
        if not any(s <= start and end <= e and (s, e) != (start, end) for s, e, _ in edits):
            data = data[:start] + text.encode("utf-8") + data[end:]
    return data.decode("utf-8")
