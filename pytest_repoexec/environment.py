"""Project environments: each project's source materialised once in the cache, and its own virtualenv.

Everything here is built at most once per key, under a file lock, so that several xdist workers asking for
the same project at the same moment wait for one build instead of racing. A build that fails or is
interrupted leaves no completion marker, and the next attempt starts it over.
"""

from __future__ import annotations

import compileall
import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import py_compile
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import filelock
import platformdirs
import uv
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from . import progress
from .problem import Project

COMPLETE_MARKER = ".repoexec-complete"
# The inner plugin and the protocol it shares with the engine, imported inside the virtualenv as top-level modules.
RUNTIME_MODULES = tuple(Path(__file__).with_name("runtime") / name
                        for name in ("repoexec_inner.py", "repoexec_protocol.py", "repoexec_guard.py", "repoexec_warm.py",
                                     "repoexec_userns.py", "repoexec_judge.py", "repoexec_serve.py",
                                     "repoexec_wire.py", "repoexec_futures.py", "repoexec_mirror.py"))
# What the inner test run needs inside every project's virtualenv; copied from this interpreter, so no network.
RUNTIME_DISTRIBUTIONS = ("pytest", "pytest-timeout", "coverage")
# The runtime reaches a virtualenv through a .pth line, after its site-packages: a project with requirements gets its
# own pytest and pytest-timeout in site-packages, resolved with those requirements (the newest release its pinned
# plugins accept, free of its date cap, never older than the inner plugin supports, within project.toml's ``pytest``
# pin), so a plugin of its date runs on a pytest it knows (litestar's pytest-asyncio reads what pytest 9.2 removed);
# coverage stays at the runtime's version (uv's overrides). A project without requirements runs the runtime's copy
# of the engine's pytest. Part of the environment's key.
_RUNNER_RESOLVED = "runner resolved with the project's requirements"
RUNNER_FLOOR = {"pytest": ">=7.2", "pytest-timeout": ">=2.4"}  # what the inner plugin runs on (tests/test_runner_range.py)
_OVERRIDDEN = ("coverage",)
# A project with ``runner = "project"`` runs its samples under its own pytest (pytest's own suite imports the runner:
# the engine's would answer every ``import _pytest``). Its runtime holds the inner plugin, pytest-timeout and coverage
# but no pytest, and in pytest's place a module that says why none was found: the project's own pytest (its
# requirements, or its source on PYTHONPATH) is found before it; a warm process, which would import pytest
# outside the sample's tree (for pytest's own suite: the candidate's module), stops there, with this message, and
# the project's samples run in fresh processes. Part of that runtime's key and the environment's.
_OWN_RUNNER = "the project's own pytest"
_OWN_RUNNER_DISTRIBUTIONS = ("pytest-timeout", "coverage")
_NO_PYTEST = '''"""Added by repoexec: this runtime holds no pytest (the project's manifest says runner = "project")."""

raise ImportError(
    "this project runs its own pytest (project.toml: runner = \\"project\\") and none was found before the engine's "
    "runtime: its requirements or its source on PYTHONPATH must give one. A warm process, which imports pytest "
    "outside the sample's tree, cannot preload it"
)
'''
# What is installed comes with its bytecode: uv writes none by default, and every fresh interpreter then compiled
# pytest and numpy from their sources again (half a second of numpy's import). Part of the environment's key.
_COMPILED = "installed with bytecode"
_FAR_FUTURE = "2999-12-31T00:00:00Z"
_DOWNLOAD_LAYOUT = "sdist+wheel"  # what a PyPI source is made of; part of its cache key
# A cached source is readable by every user: where the engine is root its samples run as nobody, and an sdist may
# hold files only their owner reads (scrapy's, flutils'). Part of every source's key.
_SOURCE_LAYOUT = "readable by all"
_SKIPPED_FOLDERS = ("__pycache__", ".git", ".hg", ".tox", ".venv")  # neither copied nor hashed
_IGNORED = shutil.ignore_patterns(*_SKIPPED_FOLDERS, "*.pyc")


class EnvironmentBuildError(Exception):
    """A project whose source or virtualenv could not be made; the message carries the tool's output."""


class OwnRunnerWarning(UserWarning):
    """A project runs its samples under its own pytest (``runner = "project"``): said once per environment, since
    some of the engine's checks then stand on a pytest the engine did not choose, or are off."""


class StaleRuntimeError(EnvironmentBuildError):
    """A cached runtime whose inner plugin speaks another protocol schema than this engine: only clearing
    the cache folders it names helps, so it fails the sample's item, naming them, instead of judging it."""


@dataclass(frozen=True)
class ProjectEnv:
    project: Project
    source_root: Path  # the materialised tree: never written to by a sample
    python: Path  # the virtualenv's interpreter
    runtime: Path | None = None  # the inner runtime the virtualenv reaches through its .pth file
    compiled: Path | None = None  # where the engine keeps test modules' rewritten code, by content (rewritten.py)

    @property
    def import_root(self) -> Path:
        return self.source_root / self.project.import_root


def default_cache_dir() -> Path:
    return Path(os.environ.get("REPOEXEC_CACHE") or platformdirs.user_cache_path("pytest-repoexec"))


class Environments:
    """The environments of one process, built on first use and remembered (failures too)."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._built: dict[str, ProjectEnv | EnvironmentBuildError] = {}
        self._runtimes: dict[bool, Path] = {}  # by ``own_runner``: its key walks the installed distributions

    def get(self, project: Project) -> ProjectEnv:
        key = str(project.manifest)
        if key not in self._built:
            try:
                self._built[key] = self._build(project)
            except EnvironmentBuildError as exc:
                self._built[key] = exc
        built = self._built[key]
        if isinstance(built, EnvironmentBuildError):
            raise built
        return built

    def prepare(self, projects: Sequence[Project], workers: int, shown: bool) -> None:
        """Build the projects' environments before the first sample, ``workers`` at a time, with a bar that names
        the builds under way. A build that fails is remembered: each of its samples reports it."""
        todo = list({str(project.manifest): project for project in projects}.values())
        under_way: list[str] = []

        def build(project: Project) -> None:
            under_way.append(project.name)
            shown_bar.set_postfix_str(", ".join(under_way), refresh=True)
            try:
                self.get(project)
            except EnvironmentBuildError:
                pass
            finally:
                under_way.remove(project.name)
                shown_bar.set_postfix_str(", ".join(under_way), refresh=False)
                shown_bar.update()

        with progress.bar(len(todo), "environments", "project", shown) as shown_bar, \
                ThreadPoolExecutor(max(1, workers)) as pool:
            list(pool.map(build, todo))

    def _build(self, project: Project) -> ProjectEnv:
        _check_python(project)
        source_key = project_source_key(project)
        source_root = self.cache / "sources" / f"{project.name}-{source_key}"
        build_once(source_root, lambda target: _materialise(project, target), self.cache)
        own = project.runner == "project"
        runtime = self._runtime(own)
        env_key = _digest(
            [source_key, *sorted(project.requirements), project.resolve_before or "", *sorted(project.resolve_exempt),
             sys.executable, platform.python_version(), runtime.name,
             *([_OWN_RUNNER if own else _RUNNER_RESOLVED, project.pytest or "", _COMPILED]
               if project.requirements else [])]
        )  # an own runner's runtime (``runtime.name``) already tells its environments apart
        venv = self.cache / "venvs" / f"{project.name}-{env_key}"
        build_once(venv, lambda target: _make_virtualenv(project, target, runtime), self.cache)
        if own:
            warnings.warn(OwnRunnerWarning(
                f"project {project.name} runs its samples under its own pytest ({project.manifest}: runner = "
                "\"project\"): the engine's plugin, pytest-timeout and coverage run inside it; no warm process can "
                "preload it (fresh processes); where the candidate's module is part of that pytest (pytest's own "
                "suite), the audit hook, class watch and integrity check are off, and suite problems get no decoy"),
                stacklevel=2)
        return ProjectEnv(project, source_root, _interpreter(venv), runtime, self.cache / "compiled")

    def _runtime(self, own_runner: bool = False) -> Path:
        """The inner runner's packages, shared by every virtualenv through a .pth file; for a project that runs
        its own pytest, the same less pytest and what only pytest needs."""
        if own_runner not in self._runtimes:
            self._runtimes[own_runner] = self._make_runtime(own_runner)
        return self._runtimes[own_runner]

    def _make_runtime(self, own_runner: bool) -> Path:
        if own_runner:
            dists = [importlib.metadata.distribution(name) for name in _OWN_RUNNER_DISTRIBUTIONS]
        else:
            dists = _distribution_closure(RUNTIME_DISTRIBUTIONS)
        key = _digest([f"{d.metadata['Name']}=={d.version}" for d in dists] + [m.read_text() for m in RUNTIME_MODULES]
                      + ([_OWN_RUNNER, _NO_PYTEST] if own_runner else []))
        runtime = self.cache / "runtime" / key
        build_once(runtime, lambda target: _copy_runtime(dists, target, own_runner), self.cache)
        return runtime


def build_once(target: Path, build: Callable[[Path], None], cache: Path) -> None:
    """Run ``build(target)`` unless a complete build is there; one builder at a time across processes."""
    if (target / COMPLETE_MARKER).exists():
        return
    locks = cache / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with filelock.FileLock(str(locks / f"{target.parent.name}-{target.name}.lock")):
        if (target / COMPLETE_MARKER).exists():
            return
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            build(target)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        (target / COMPLETE_MARKER).write_text("")


def _check_python(project: Project) -> None:
    if project.python and not SpecifierSet(project.python).contains(platform.python_version(), prereleases=True):
        raise EnvironmentBuildError(
            f"project {project.name} needs Python {project.python} ({project.manifest}); "
            f"this interpreter is {platform.python_version()}"
        )


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def project_source_key(project: Project) -> str:
    """The project's source as its environment is keyed: a folder's files, else the pinned release or revision."""
    source = project.source
    built = ["build_extensions"] if project.build_extensions else []
    if source.kind != "path":
        return _digest([source.kind, source.location, source.rev or "", *built, _DOWNLOAD_LAYOUT, _SOURCE_LAYOUT])
    hasher = hashlib.sha256()
    root = Path(source.location)
    for path in sorted(_walk_files(root)):
        hasher.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    hasher.update("".join(built).encode() + _SOURCE_LAYOUT.encode())
    return hasher.hexdigest()[:16]


def _walk_files(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_FOLDERS]
        yield from (Path(folder) / name for name in files if not name.endswith(".pyc"))


def _materialise(project: Project, target: Path) -> None:
    source = project.source
    if source.kind == "path":
        shutil.copytree(source.location, target, ignore=_IGNORED, symlinks=True)
    elif source.kind == "pypi":
        _download_pypi(project, target)
    else:
        _clone_git(project, target)
    if project.build_extensions:
        _run_tool([sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"], "building C extensions", project,
                  cwd=target)
    _readable_by_all(target)
    if not (target / project.import_root).is_dir():
        raise EnvironmentBuildError(
            f"project {project.name}: import_root {project.import_root!r} is not a folder of its source "
            f"({project.manifest})"
        )
    # Checked-hash pycs stay valid for every unchanged module imported through a sample's symlinks, and are
    # never mistaken for a candidate's module, whatever its size and timestamp.
    compileall.compile_dir(
        target, quiet=2, workers=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH
    )


def _readable_by_all(root: Path) -> None:
    """Every file of the tree readable, every folder listable, by anyone (links are left as they are)."""
    for folder, dirs, files in os.walk(root):
        for name, wanted in [*((d, 0o555) for d in dirs), *((f, 0o444) for f in files)]:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                if mode & wanted != wanted:
                    os.chmod(path, mode | wanted)
    os.chmod(root, os.stat(root).st_mode | 0o555)


def _run_tool(command: list[str], what: str, project: Project, **kwargs) -> None:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise EnvironmentBuildError(f"project {project.name}: {what} failed:\n{output[-4000:]}")


def _download_pypi(project: Project, target: Path) -> None:
    """The pinned release's sdist (it has the project's root files and tests), completed with the modules that
    only its wheel ships (a MANIFEST.in can leave some out of the sdist); the wheel alone where no sdist exists."""
    pin = project.source.location
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="repoexec-download-") as downloads:
        sdist = _pip_download(pin, "--no-binary", Path(downloads, "sdist"), failures)
        wheel = _pip_download(pin, "--only-binary", Path(downloads, "wheel"), failures)
        if sdist is None and wheel is None:
            raise EnvironmentBuildError(
                f"project {project.name}: no sdist or wheel of {pin} could be had:\n" + "\n".join(failures)
            )
        _unpack(sdist or wheel, target)
        if sdist is not None and wheel is not None:
            _fill_from_wheel(wheel, target, project.import_root)


def _pip_download(pin: str, kind: str, folder: Path, failures: list[str]) -> Path | None:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
         kind, ":all:", "--dest", str(folder), pin],
        capture_output=True, text=True,
    )
    archives = list(folder.iterdir()) if folder.is_dir() else []
    if result.returncode == 0 and len(archives) == 1:
        return archives[0]
    failures.append(f"pip download {kind} :all: {pin}:\n{(result.stdout + result.stderr).strip()[-2000:]}")
    return None


def _fill_from_wheel(wheel: Path, target: Path, import_root: str) -> None:
    """Files the sdist lacks (generated ones, such as a version module) taken from the wheel into the import
    root; a package the sdist keeps under ``src/`` is filled there, never copied beside it (that copy, not the
    sdist's, is what tests run from the source root would import)."""
    with zipfile.ZipFile(wheel) as bundle:
        for name in bundle.namelist():
            top = name.split("/", 1)[0]
            base = target / "src" if (target / "src" / top).is_dir() else target / import_root
            if top.endswith((".dist-info", ".data")) or name.endswith("/") or (base / name).exists():
                continue
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_bytes(bundle.read(name))


def _unpack(archive: Path, target: Path) -> None:
    """Unpack an sdist; its single top folder becomes the source root."""
    with tempfile.TemporaryDirectory(prefix="repoexec-unpack-") as scratch:
        try:
            if zipfile.is_zipfile(archive):  # a wheel, or a zipped sdist
                with zipfile.ZipFile(archive) as bundle:
                    bundle.extractall(scratch)
            else:
                with tarfile.open(archive) as bundle:
                    extract_tar(bundle, scratch)
        except (OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
            raise EnvironmentBuildError(f"cannot unpack {archive.name}: {exc}") from exc
        entries = list(Path(scratch).iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else Path(scratch)
        shutil.copytree(top, target, ignore=_IGNORED, symlinks=True)


def extract_tar(bundle: tarfile.TarFile, target: str | Path) -> None:
    """Unpack with the "data" filter where this Python has it (3.11.4 and later; Debian 12's 3.11.2 has not)."""
    if hasattr(tarfile, "data_filter"):
        bundle.extractall(target, filter="data")
    else:  # pragma: no cover - such a Python's own behaviour: no filter
        bundle.extractall(target)


def _clone_git(project: Project, target: Path) -> None:
    _run_tool(["git", "clone", "--quiet", project.source.location, str(target)], "git clone", project)
    _run_tool(["git", "checkout", "--quiet", project.source.rev or "HEAD"], "git checkout", project, cwd=target)
    shutil.rmtree(target / ".git", ignore_errors=True)


def _make_virtualenv(project: Project, target: Path, runtime: Path) -> None:
    try:
        import virtualenv  # here: a run whose environments are built pays nothing for it

        virtualenv.cli_run([str(target), "--python", sys.executable, "--quiet", "--no-seed"], setup_logging=False)
    except Exception as exc:  # virtualenv raises a variety of errors; all mean "no environment"
        raise EnvironmentBuildError(f"project {project.name}: virtualenv failed: {exc}") from exc
    python = _interpreter(target)
    if project.requirements:
        _install_requirements(project, python, runtime, own_runner=project.runner == "project")
    site_packages = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    Path(site_packages, "_repoexec_runtime.pth").write_text(f"{runtime}\n")


def _install_requirements(project: Project, python: Path, runtime: Path, own_runner: bool = False) -> None:
    """The project's requirements resolved together with the runner: pytest and pytest-timeout as its plugins accept
    them (the newest such release, free of the date cap, at least ``RUNNER_FLOOR``, within project.toml's
    ``pytest``), coverage at the runtime's version (an override beats any pin), and the rest of the runner's closure
    free of the date cap (an old date has no pluggy a new pytest takes). A requirement that cannot live with them is
    refused, naming the project. A project that runs its own pytest gets its requirements as they are: its pytest
    and plugins are the ones it pins."""
    if own_runner:
        result = subprocess.run(_install_command(project, python, None, ()), capture_output=True, text=True)
        if result.returncode != 0:
            raise EnvironmentBuildError(
                f"project {project.name}: installing its requirements ({project.manifest}) failed (runner = "
                f"\"project\": resolved as they are, its own pytest among them):\n"
                f"{(result.stdout + result.stderr).strip()[-4000:]}")
        return
    closure = json.loads((runtime / "manifest.json").read_text())
    pins = {name: closure[name] for name in _OVERRIDDEN}
    runner = runner_requirements(project)
    with tempfile.TemporaryDirectory(prefix="repoexec-overrides-") as scratch:
        overrides = Path(scratch, "runner.txt")
        overrides.write_text("".join(f"{name}=={version}\n" for name, version in pins.items()))
        runner_file = Path(scratch, "runner-range.txt")
        runner_file.write_text("".join(f"{line}\n" for line in runner))
        result = subprocess.run(_install_command(project, python, overrides, (*closure, *RUNNER_FLOOR), runner_file),
                                capture_output=True, text=True)
    if result.returncode != 0:
        pinned = ", ".join([*runner, *(f"{name}=={version}" for name, version in pins.items())])
        raise EnvironmentBuildError(
            f"project {project.name}: installing its requirements ({project.manifest}) failed (they are resolved "
            f"with the runner, {pinned}: the inner plugin needs pytest 7.2 or later; a `pytest` constraint in "
            f"project.toml narrows it; uv names the requirement that conflicts or could not be built):\n"
            f"{(result.stdout + result.stderr).strip()[-4000:]}"
        )


def runner_requirements(project: Project) -> list[str]:
    """The runner's requirements for a project that runs under the engine: its floor, and project.toml's pin."""
    return [f"pytest{RUNNER_FLOOR['pytest']}{',' + project.pytest if project.pytest else ''}",
            f"pytest-timeout{RUNNER_FLOOR['pytest-timeout']}"]


def _install_command(project: Project, python: Path, overrides: Path | None, runner: tuple[str, ...],
                     runner_file: Path | None = None) -> list[str]:
    """uv resolves and installs; it can also resolve as of a date, which old releases need."""
    pinned = ["--overrides", str(overrides), "--requirements", str(overrides)] if overrides else []
    pinned += ["--requirements", str(runner_file)] if runner_file else []
    command = [uv.find_uv_bin(), "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python),
               *pinned, *project.requirements]
    if project.resolve_before:
        command += ["--exclude-newer", f"{project.resolve_before}T23:59:59Z"]
        command += [f"--exclude-newer-package={name}={_FAR_FUTURE}"
                    for name in dict.fromkeys((*project.resolve_exempt, *runner))]
    return command


@functools.lru_cache(maxsize=None)
def runner_version(env: ProjectEnv) -> tuple[int, ...] | None:
    """The version of the pytest that ``env``'s samples import: its virtualenv's (resolved with its requirements),
    else the runtime's copy; None where neither has one (a project's own pytest in its tree)."""
    venv = env.python.parent.parent
    found = sorted(venv.glob("lib/python*/site-packages/pytest-*.dist-info")) or sorted(
        (env.runtime or venv).glob("pytest-*.dist-info"))
    for info in found:
        with contextlib.suppress(ValueError):
            return tuple(int(part) for part in info.name[len("pytest-"):-len(".dist-info")].split(".")[:2])
    return None


def legacy_ids(env: ProjectEnv) -> list[str]:
    """pytest's arguments that keep parameter ids as pytest made them before 9.2: from 9.2 on, a string parameter of
    over 100 characters is named ``argname+index`` (``parametrize_long_str_id_strategy = short``), so the node ids
    a benchmark's directives name (made by an older pytest) would not be found. An older pytest knows no such
    option: it gets none."""
    version = runner_version(env)
    return ["-o", "parametrize_long_str_id_strategy=legacy"] if version and version >= (9, 2) else []


def _interpreter(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _distribution_closure(names: tuple[str, ...]) -> list[importlib.metadata.Distribution]:
    """The installed distributions ``names`` need, following their requirements for this interpreter."""
    environment = default_environment() | {"extra": ""}
    seen: dict[str, importlib.metadata.Distribution] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        normalised = name.lower().replace("_", "-")
        if normalised in seen:
            continue
        dist = importlib.metadata.distribution(name)
        seen[normalised] = dist
        for requirement in map(Requirement, dist.requires or []):
            if requirement.marker is None or requirement.marker.evaluate(environment):
                pending.append(requirement.name)
    return sorted(seen.values(), key=lambda d: d.metadata["Name"].lower())


def _copy_runtime(dists: list[importlib.metadata.Distribution], target: Path, own_runner: bool = False) -> None:
    target.mkdir(parents=True)
    for dist in dists:
        for file in dist.files or []:
            if file.parts[0] == ".." or "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            destination = target / file
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(dist.locate_file(file), destination)
    for module in RUNTIME_MODULES:
        shutil.copy2(module, target / module.name)
    if own_runner:
        (target / "pytest.py").write_text(_NO_PYTEST)
    compileall.compile_dir(target, quiet=2, workers=1)
    (target / "manifest.json").write_text(
        json.dumps({d.metadata["Name"]: d.version for d in dists}, indent=1, sort_keys=True)
    )
