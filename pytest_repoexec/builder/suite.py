"""The project's own test suite, run once under coverage, mapped to the functions whose bodies it runs.

The run is the engine's kind of run: the project's virtualenv (from ``Environments``), the project tree as
a sample sees it (links into the cached source, so a test that writes where it lies fails here as it would
there), the source root as rootdir and working directory, the project's conftest files and pytest
configuration (its ``addopts`` dropped: they name plugins and options this run does not have), no plugin
auto-loading, a fixed environment, and bubblewrap unless ``--sandbox=none`` (then a subprocess on the host,
over a tree of links in a scratch folder). Each test's call phase is a coverage context; a test that does not
pass here, with every reference in place, is no test of anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..environment import ProjectEnv
from ..executor import sample_tree
from ..sandbox import HOME, SAMPLE, Bubblewrap, Sandbox, Unconfined, View, python_home
from . import BuildError
from .functions import Function

PLUGIN = Path(__file__).with_name("repoexec_suite.py")
_PLUGIN_AT = Path("/repoexec/suite")  # where the plugin's folder is bound inside the sandbox
_ENVIRONMENT = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC", "PYTHONHASHSEED": "0",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
_TMPFS = 1 << 30  # what the whole suite may write


@dataclass(frozen=True)
class SuiteSettings:
    test_timeout: float = 5.0  # each test, as the engine's --repoexec-timeout
    timeout: float = 900.0  # the whole suite
    max_tests: int = 50  # tests kept per function


@dataclass
class SuiteRun:
    outcomes: dict[str, str]  # node id -> passed, failed, skipped, xfail
    durations: dict[str, float]
    lines: dict[str, dict[str, list[int]]]  # file (relative to the source root) -> node id -> lines its call ran
    collect_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome == "passed"}


def has_tests(source_root: Path) -> bool:
    """Whether the project ships a test module (``test_*.py`` or ``*_test.py``) anywhere in its tree."""
    return any(name.startswith("test_") or name.endswith("_test.py")
               for _, _, files in os.walk(source_root) for name in files if name.endswith(".py"))


def run_suite(env: ProjectEnv, functions: Iterable[Function], sandbox: Sandbox, settings: SuiteSettings) -> SuiteRun:
    """Run the project's suite once, measuring the picked functions' files; a ``BuildError`` when it cannot
    be collected at all or runs past its time."""
    project = env.project.name
    source = env.source_root.resolve()
    files = sorted({source / function.path for function in functions})
    started = time.monotonic()
    document, tail = run_plugin(env, sandbox, PLUGIN, [f"--repoexec-suite-include={path}" for path in files], settings)
    data = json.loads(document)
    if not data["outcomes"]:
        errors = "\n".join(data["collect_errors"][:10]) or tail
        raise BuildError(project, "collecting the test suite", f"no test could be collected and run:\n{errors}")
    seconds = time.monotonic() - started
    lines = {}
    for filename, by_test in data["lines"].items():
        path = Path(filename)
        relative = path.relative_to(source) if path.is_relative_to(source) else None
        if relative is not None:
            lines[relative.as_posix()] = by_test
    return SuiteRun(data["outcomes"], data["durations"], lines, data["collect_errors"], seconds)


def run_plugin(env: ProjectEnv, sandbox: Sandbox, plugin: Path, arguments: list[str], settings: SuiteSettings,
               nodes: Iterable[str] = (), written: dict[Path, bytes] | None = None) -> tuple[bytes, str]:
    """Run pytest on the project's suite (or on ``nodes``, node ids relative to the source root) with the inner
    plugin ``plugin`` (a module file, loaded alone as ``-p NAME``), ``written`` files added to its tree; the one
    JSON document the plugin writes to the descriptor it is given as ``--NAME-fd`` (its name with dashes), and
    the output's tail. A ``BuildError`` when the run ends before the plugin wrote, or runs past its time."""
    project = env.project.name
    with tempfile.TemporaryDirectory(prefix="repoexec-suite-") as scratch, _memfd() as results:
        argv, environment, view = _plan(env, plugin, [f"--{plugin.stem.replace('_', '-')}-fd={results}", *arguments],
                                        list(nodes), written or {}, isinstance(sandbox, Bubblewrap), Path(scratch),
                                        settings)
        wrapped, fds = sandbox.wrap(view, argv)
        try:
            process = subprocess.Popen(wrapped, cwd=view.workdir if isinstance(sandbox, Unconfined) else None,
                                       env=environment, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(results, *fds))
        finally:
            for fd in fds:
                os.close(fd)
        try:
            output, _ = process.communicate(timeout=settings.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise BuildError(project, "running the test suite", f"it ran past {settings.timeout:g} s "
                             "(--suite-timeout)") from None
        os.lseek(results, 0, os.SEEK_SET)
        document = b"".join(iter(lambda: os.read(results, 1 << 20), b""))
    tail = output.decode("utf-8", "replace").strip()[-3000:]
    if not document:
        raise BuildError(project, "collecting the test suite", f"pytest ended before any test ran (exit status "
                         f"{process.returncode}):\n{tail}")
    return document, tail


@contextlib.contextmanager
def _memfd() -> Iterator[int]:
    """A file in memory that the suite's process inherits and writes its results to: read once it has ended."""
    fd = os.memfd_create("repoexec-suite")
    try:
        yield fd
    finally:
        os.close(fd)


def _plan(env: ProjectEnv, plugin: Path, arguments: list[str], nodes: list[str], written: dict[Path, bytes],
          confined: bool, scratch: Path, settings: SuiteSettings) -> tuple[list[str], dict[str, str], View]:
    """pytest's command line, its environment and what it sees, as a sample of the engine would."""
    plugin_folder = scratch / "plugin"
    plugin_folder.mkdir()
    shutil.copy2(plugin, plugin_folder / plugin.name)  # alone in its folder: nothing else joins sys.path
    if confined:
        root, home, tmp, seen_plugin = Path(SAMPLE), Path(HOME), Path("/tmp"), _PLUGIN_AT
    else:
        root, home, tmp, seen_plugin = scratch / "root", scratch / "home", scratch / "tmp", plugin_folder
        home.mkdir()
        tmp.mkdir()
    # node ids joined as text, as the executor joins them: a node id is no path ("[https://...]" keeps its "//")
    argv = [str(env.python), "-m", "pytest", *(f"{root}/{node}" for node in nodes), "-p", plugin.stem,
            "-p", "pytest_timeout", f"--timeout={settings.test_timeout}", f"--rootdir={root}", "-o", "addopts=",
            "-o", "required_plugins=", "-p", "no:cacheprovider", "-q", "--color=no",
            "--continue-on-collection-errors", *arguments]
    python_path = [str(seen_plugin), *([str(root / env.project.import_root)] if env.project.import_root != "." else [])]
    environment = _ENVIRONMENT | {
        "HOME": str(home), "TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join(python_path),
        "PATH": f"{env.python.parent}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
    }
    source = env.source_root.resolve()
    binds = [python_home(env.python), env.python.parent.parent, *([env.runtime] if env.runtime else []), source]
    view = View(tree=sample_tree(source, written), tree_at=root, workdir=root, tmpfs_bytes=_TMPFS,
                binds=tuple(dict.fromkeys([*((path, path) for path in binds), (plugin_folder, _PLUGIN_AT)])))
    return argv, environment, view


def suite_for(function: Function, run: SuiteRun, limit: int) -> list[str]:
    """The passing tests whose call phase ran a line of the function's body, at most ``limit``: those that
    name the function first, then the fastest; returned in node-id order."""
    return tests_running(function.path, function.name, [function.body_lines], run, limit)


def tests_running(path: str, name: str, spans: Iterable[tuple[int, int]], run: SuiteRun, limit: int) -> list[str]:
    """The passing tests whose call phase ran a line of ``path`` within one of ``spans`` (first and last line),
    at most ``limit``: those that name ``name`` first, then the fastest; returned in node-id order."""
    spans = list(spans)
    passed = run.passed
    found = [test for test, lines in run.lines.get(path, {}).items()
             if test in passed and any(first <= line <= last for line in lines for first, last in spans)]
    ranked = sorted(found, key=lambda test: (name not in test, run.durations.get(test, 0.0), test))
    return sorted(ranked[:limit])
