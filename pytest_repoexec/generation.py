"""Generators and where they come from: the contract, the registry filled through hooks, and the files
that carry completions (``replay:`` files and ``--repoexec-save-completions``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from .problem import Problem

Completions = dict[str, list[str]]  # problem id -> completions, in sample order
ReplayData = list[list[str]] | Completions


class GenerationError(Exception):
    """A generator that cannot produce what the run needs; reported before any sample runs."""


class Generator(Protocol):
    """Makes the completions of a run. The engine asks ``count`` of every collected problem while collecting
    (the items are its samples), then calls ``generate`` once, on the controller, with the problems that the
    run selected (``-k``, ``-m``, ``--deselect``, ``--lf``...), so that a model is asked only about those.

    A generator whose completions cost nothing to give (saved ones) may say so with ``saved = True``: the engine
    then checks the sandbox after generating, and not at all where every verdict is in the result store (a
    rerun); otherwise before, so that a run that cannot start costs no generation."""

    def count(self, problem: Problem, limit: int | None) -> int:
        """How many completions ``generate`` will give for ``problem``, at most ``limit`` when it is set.
        Called before any completion exists: it must not ask a model."""

    def generate(self, problems: Sequence[Problem], limit: int | None) -> Mapping[str, Sequence[str]]:
        """``count(problem, limit)`` completions of every problem, by problem id."""


GeneratorFactory = Callable[[str | None, pytest.Config], Generator]


@dataclass(frozen=True)
class GeneratorEntry:
    name: str
    factory: GeneratorFactory
    help: str


class GeneratorRegistry:
    """What ``--repoexec-model`` may name: ``NAME`` or ``NAME:ARGUMENT``."""

    def __init__(self) -> None:
        self._entries: dict[str, GeneratorEntry] = {}

    def add(self, name: str, factory: GeneratorFactory, help: str = "") -> None:
        if name in self._entries:
            raise ValueError(f"generator {name!r} is registered twice")
        self._entries[name] = GeneratorEntry(name, factory, help)

    def entries(self) -> list[GeneratorEntry]:
        return sorted(self._entries.values(), key=lambda entry: entry.name)

    @classmethod
    def from_hooks(cls, config: pytest.Config) -> GeneratorRegistry:
        """Every generator that the loaded plugins and conftest files add."""
        registry = cls()
        config.hook.pytest_repoexec_add_generators(registry=registry)
        return registry

    def create(self, spec: str, config: pytest.Config) -> Generator:
        name, _, argument = spec.partition(":")
        entry = self._entries.get(name)
        if entry is None:
            known = "\n".join(f"  {e.name:12} {e.help}" for e in self.entries())
            raise pytest.UsageError(f"--repoexec-model={spec}: unknown generator {name!r}; available:\n{known}")
        try:
            return entry.factory(argument or None, config)
        except GenerationError as exc:
            raise pytest.UsageError(f"--repoexec-model={spec}: {exc}") from None


def write_completions(path: Path, completions: Mapping[str, list[str]]) -> None:
    """Save completions as JSONL (``{"problem": id, "completions": [...]}``), whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    with partial.open("w", encoding="utf-8") as handle:
        for problem, texts in completions.items():
            handle.write(json.dumps({"problem": problem, "completions": list(texts)}) + "\n")
    os.replace(partial, path)


def read_completions(path: Path) -> ReplayData:
    """Read a RepoExec ``generations.json`` (a list of lists, in set order) or our JSONL, checking its shape."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GenerationError(f"cannot read {path}: {exc.strerror or exc}") from None
    if text.lstrip().startswith("["):
        return _nested_lists(path, text)
    completions: Completions = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise GenerationError(f"{where}: not JSON ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("problem"), str):
            raise GenerationError(f'{where}: expected {{"problem": id, "completions": [...]}}')
        _check_texts(record.get("completions"), f"{where} (problem {record['problem']})")
        if record["problem"] in completions:
            raise GenerationError(f"{where}: problem {record['problem']} appears twice")
        completions[record["problem"]] = record["completions"]
    return completions


def _nested_lists(path: Path, text: str) -> list[list[str]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise GenerationError(f"{path}: not JSON ({exc})") from None
    for index, texts in enumerate(data):
        _check_texts(texts, f"{path} entry {index}")
    return data


def _check_texts(texts: object, where: str) -> None:
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise GenerationError(f"{where}: completions must be a list of strings, got {str(texts)[:80]}")
