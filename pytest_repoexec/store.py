"""Verdicts kept on disk, content-addressed, so that a candidate is run once however often it is asked about.

The key covers everything that can change a verdict: the engine's own code, the project's environment (its
folder name holds the source, the requirements, the interpreter and the inner runtime), the problem's manifest,
tests and expected files, the candidate module as spliced, and the run's limits and sandbox. Two samples of one
problem whose spliced modules are the same text share one evaluation (the second waits on the first's lock,
then reads it); a run that is started again, after finishing or after ``kill -9``, reads back what was done
and evaluates only the rest. An entry that cannot be read (cut off, or of another layout) is evaluated again.

Beside each entry, the completions that led to it: an alias keyed by the completion's own text (and the same
context) names the entry, so that a rerun finds a verdict without putting the candidate together again. And for
a rerun of many samples, a pack: a problem's samples' verdicts, by alias, copied into one file named by the
problem and that run's completions, so that reading them back costs a file a problem rather than two a sample
(``pack``). A pack is a copy: what it holds is also in the entries, and each of its verdicts is taken only under
its own alias's key. To have a verdict judged again, delete the ``results`` folder or run with ``fresh``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import stat
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock

from .problem import Problem

LAYOUT = 2  # of an entry; an entry of another layout is not read
_RACY_NS = 2_000_000_000  # a problem's file changed more recently than this: its digest is not kept (coarse clocks)


@functools.cache
def engine_digest() -> str:
    """The engine's own code: any change to it is a new engine, whose verdicts are its own."""
    package = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def problem_digest(problem: Problem) -> str:
    """The problem as its tests see it: manifest, test module, expected files."""
    return _content_digest(_problem_files(problem))


def _problem_files(problem: Problem) -> list[tuple[str, str, os.stat_result]]:
    """(name, path, its inode's word) of each file ``problem_digest`` covers, in its order: a suite's tests are
    the project's source, which the environment's key covers."""
    files = [("", str(path), os.stat(path)) for path in (problem.manifest, problem.tests) if path is not None]
    expected: list[tuple[str, str, os.stat_result]] = []
    folders = [("", str(problem.expected))] if problem.expected.is_dir() else []
    while folders:  # as ``rglob``: into no linked folder
        prefix, folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append((f"{prefix}{entry.name}/", entry.path))
                    continue
                with contextlib.suppress(OSError):  # a link to nothing
                    info = os.stat(entry.path)
                    if stat.S_ISREG(info.st_mode):
                        expected.append((prefix + entry.name, entry.path, info))
    return files + sorted(expected)


def _content_digest(files: list[tuple[str, str, os.stat_result]]) -> str:
    digest = hashlib.sha256()
    for name, path, _ in files:
        with open(path, "rb") as file:
            digest.update(name.encode() + b"\0" + file.read() if name else file.read() + b"\0")
    return digest.hexdigest()


def _load(path: str) -> Any:
    """A JSON file's value (``OSError``, ``ValueError`` as ``json.loads`` and ``open`` raise them)."""
    with open(path, "rb") as file:
        return json.loads(file.read())


class ProblemDigests:
    """Each problem's digest, kept under ``<cache>/results/problems`` beside what its files' inodes said when
    it was taken (size, modification and change times, inode): a later run whose every file says the same
    reads no file's content. The change time is the kernel's (no ``utime`` sets it), so a file written again
    since is read again, whatever its size and modification time say."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __call__(self, problem: Problem) -> str:
        files = _problem_files(problem)
        said = hashlib.sha256()
        for name, path, info in files:
            said.update(f"{name}\0{path}\0{info.st_size} {info.st_mtime_ns} {info.st_ctime_ns} {info.st_ino} "
                        f"{info.st_dev}\0".encode())
        named = hashlib.sha256(str(problem.manifest).encode()).hexdigest()[:32]
        kept = self.folder / named[:2] / f"{named}.json"  # laid out as the aliases are
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            entry = json.loads(kept.read_text(encoding="utf-8"))
            if entry["said"] == said.hexdigest() and isinstance(entry["digest"], str):
                return entry["digest"]
        digest = _content_digest(files)
        if any(time.time_ns() - info.st_ctime_ns < _RACY_NS for _, _, info in files):
            return digest  # written just now: a write within the file system's clock tick would look the same
        with contextlib.suppress(OSError):  # a cache: a store that cannot keep it reads the files again
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps({"said": said.hexdigest(), "digest": digest}), encoding="utf-8")
            os.replace(partial, kept)
        return digest


@dataclass
class Slot:
    """One key's place in the store, held under its lock: what it holds (None when nothing readable), and
    whether an entry was there that could not be read."""

    path: Path
    stored: dict[str, Any] | None
    unreadable: bool
    durations: dict[str, float] | None = None  # each test's time in the stored run (what relative timeouts use)
    run: str = ""  # the run that writes its entry

    def put(self, result: Mapping[str, Any], durations: Mapping[str, float]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.partial")
        entry = {"layout": LAYOUT, "result": dict(result), "durations": dict(durations), "run": self.run}
        partial.write_text(json.dumps(entry), encoding="utf-8")
        os.replace(partial, self.path)


Found = tuple[dict[str, Any], dict[str, float] | None, list[str] | None]  # a verdict read: result, durations, shapes


@dataclass
class Pack:
    """One file of a problem's samples' verdicts, by alias: ``held`` as read, ``records`` what the samples were
    found under this time (from it or from the files), written back (``ResultStore.write_pack``) where any came
    from the files."""

    path: Path
    held: dict[str, Any]
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    from_files: bool = False


def _found(record: dict[str, Any]) -> Found | None:
    """A pack's record as a verdict read, where its fields are what the files would have given."""
    result, durations, shapes = record.get("result"), record.get("durations"), record.get("shapes")
    if not isinstance(result, dict) or not (durations is None or isinstance(durations, dict)) or \
            _shapes(shapes) != shapes:
        return None
    return result, durations, shapes


def _shapes(value: Any) -> list[str] | None:
    """A completion's shapes as kept (a list of names), else None."""
    return value if isinstance(value, list) and all(isinstance(shape, str) for shape in value) else None


class ResultStore:
    """Under ``<cache>/results``. ``run`` names the run (all its processes) in the entries it writes. ``fresh``
    evaluates again what earlier runs stored, and reads what this run stored: within a run a module is still
    judged once (a problem's reference, run for its test times and again as a sample, gives one set of times,
    so that its samples' time limits are the same on a rerun)."""

    def __init__(self, folder: Path, context: Mapping[str, Any], fresh: bool = False, run: str | None = None) -> None:
        self.folder, self.context, self.fresh, self.run = folder, dict(context), fresh, run or uuid.uuid4().hex
        self._root = os.fspath(folder)
        self._problems: dict[Path, str] = {}  # each problem's digest, read once
        self._digests = ProblemDigests(folder / "problems")
        self._bases: dict[tuple, str] = {}  # the shared part of a problem's keys, by problem, environment, variant

    def key(self, problem: Problem, environment: str, module: str, variant: Mapping[str, Any] = {}) -> str:
        """``variant``: what else a sample was run with (its tests' own time limits)."""
        return self._key(problem, environment, {"module": module}, variant)

    def alias(self, problem: Problem, environment: str, completion: str, variant: Mapping[str, Any] = {}) -> str:
        """The key under which a completion's text names the entry its candidate module was judged under."""
        return self._key(problem, environment, {"completion": completion}, variant)

    def _key(self, problem: Problem, environment: str, text: Mapping[str, str], variant: Mapping[str, Any]) -> str:
        """The digest of what the sample shares with its problem's others (taken once per problem and variant:
        a variant holds every test's time limit), then of its own text."""
        try:
            shared = (problem.manifest, environment, tuple(sorted(variant.items())))
            base = self._bases.get(shared)
        except TypeError:  # a variant of values that do not hash: not kept
            shared, base = None, None
        if base is None:
            if problem.manifest not in self._problems:
                self._problems[problem.manifest] = self._digests(problem)
            fields = {"engine": engine_digest(), "environment": environment,
                      "problem": self._problems[problem.manifest], "variant": dict(variant), **self.context}
            base = hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()
            if shared is not None:
                self._bases[shared] = base
        digest = hashlib.sha256(base.encode())
        for name, value in sorted(text.items()):
            digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(value.encode("utf-8")).digest())
        return digest.hexdigest()

    def through_alias(self, alias: str, pack: Pack | None = None) -> Found | None:
        """(result, durations, the completion's shapes where the alias holds them) of the entry the alias names,
        where both read (under ``fresh``, this run's only): from the ``pack`` where it holds the alias, else from
        the files (and then noted in the pack, to be written)."""
        if pack is not None:
            record = pack.held.get(alias)
            found = _found(record) if isinstance(record, dict) and (not self.fresh or record.get("run") == self.run) \
                else None
            if found is not None:
                pack.records[alias] = record
                return found
        try:
            named = _load(self._file(alias, "aliases"))
            key = named["key"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        stored, durations, run = self._read(self._file(key)) if isinstance(key, str) else (None, None, None)
        if stored is None:
            return None
        shapes = _shapes(named.get("shapes"))
        if pack is not None:
            pack.records[alias] = {"result": stored, "durations": durations, "shapes": shapes, "run": run}
            pack.from_files = True
        return stored, durations, shapes

    def pack(self, problem: Problem, environment: str, completions: Sequence[tuple[int, str]]) -> Pack:
        """The pack of these samples (index, completion) of the problem, as last written (empty where there is
        none, or it does not read)."""
        named = hashlib.sha256(json.dumps(
            {"engine": engine_digest(), "environment": environment, "manifest": str(problem.manifest),
             "completions": [[index, hashlib.sha256(text.encode("utf-8")).hexdigest()] for index, text in completions],
             **self.context}, sort_keys=True).encode("utf-8")).hexdigest()
        path = self._file(named, "packs")
        try:
            entry = _load(path)
            held = entry["aliases"] if entry.get("layout") == LAYOUT and isinstance(entry["aliases"], dict) else {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            held = {}
        return Pack(Path(path), held)

    def write_pack(self, pack: Pack) -> None:
        """The records the samples were found under, in place of the pack's file, where any was read from the
        files (a pack that answered them all is already what it would be)."""
        if not pack.from_files:
            return
        with contextlib.suppress(OSError):  # a copy: a store that cannot keep it reads the files again
            pack.path.parent.mkdir(parents=True, exist_ok=True)
            partial = pack.path.with_name(f"{pack.path.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps({"layout": LAYOUT, "aliases": pack.records}), encoding="utf-8")
            os.replace(partial, pack.path)

    def put_alias(self, alias: str, key: str, shapes: list[str]) -> None:
        """The alias names the entry, and keeps the completion's shapes (``postprocess``): a rerun that finds
        the verdict through it puts no candidate together."""
        path = self._path(alias, "aliases")
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps({"key": key, "shapes": shapes}), encoding="utf-8")
            os.replace(partial, path)

    def _path(self, key: str, under: str = ".") -> Path:
        """An entry's file (``under="aliases"``: an alias's)."""
        return Path(self._file(key, under))

    def _file(self, key: str, under: str = ".") -> str:
        """``_path`` as a string: a rerun reads thousands, and a ``Path`` costs more to make than to open."""
        return f"{self._root}/{under}/{key[:2]}/{key}.json"

    @contextlib.contextmanager
    def slot(self, key: str) -> Iterator[Slot]:
        """The key's entry. One that reads is read without the lock (entries are written whole, with a rename);
        otherwise the lock is held while the caller evaluates and puts, so that a module is run once."""
        path = self._path(key)
        stored, durations, _ = self._read(str(path))
        if stored is not None:
            yield Slot(path, stored, False, durations, self.run)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            stored, durations, unreadable = None, None, False
            if path.exists():
                stored, durations, _ = self._read(str(path))
                unreadable = stored is None and not self.fresh
            yield Slot(path, stored, unreadable, durations, self.run)

    def _read(self, path: str) -> tuple[dict[str, Any] | None, dict[str, float] | None, str | None]:
        """(result, durations, the run that wrote it) of an entry, or Nones where there is none, it cannot be
        read, or it is an earlier run's under ``fresh``."""
        try:
            entry = _load(path)
            if entry.get("layout") != LAYOUT or not isinstance(entry.get("result"), dict):
                raise ValueError(f"layout {entry.get('layout')!r}")
        except (OSError, ValueError, AttributeError):
            return None, None, None
        if self.fresh and entry.get("run") != self.run:
            return None, None, None
        return entry["result"], entry.get("durations"), entry.get("run")


class ProblemTimes:
    """What a sample of each problem took when it was run (its tests and its decoy check) and what starting its
    zygotes took, by problem id: what the scheduler (``scheduling``) expects of the problem in a later run. One
    small file beside the entries, merged by the controller at the end of each run; an estimate, so a problem
    changed since keeps its times."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "times.json"

    def read(self) -> dict[str, dict[str, float]]:
        """{problem id: {"sample": seconds, "start": seconds}}; what does not read is left out."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(name): {kind: float(value) for kind, value in times.items()
                            if kind in ("sample", "start") and isinstance(value, (int, float))
                            and not isinstance(value, bool) and value >= 0}
                for name, times in data.items() if isinstance(times, dict)}

    def record(self, times: Mapping[str, Mapping[str, float]]) -> None:
        """Each problem's times this run, in place of its earlier ones."""
        if not times:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            merged = self.read() | {name: {kind: round(value, 4) for kind, value in known.items()}
                                    for name, known in times.items()}
            partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps(merged, sort_keys=True), encoding="utf-8")
            os.replace(partial, self.path)
