"""The built project in the engine's format: ``project.toml``, and a folder per problem whose tests are either
node ids of the project's own suite (``suite``), run in place in the sample's tree, so the folder has no test
module of its own, or a model's tests in the problem's own test module."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import tomli_w

from ..problem import PROBLEM_MANIFEST, PROJECT_MANIFEST
from .functions import Function
from .sources import Source


def project_manifest(source: Source, import_root: str, requirements: list[str]) -> dict[str, Any]:
    """A PyPI release stays a pin (installed too, for its own dependencies); a folder is the copy in ``repo/``."""
    manifest: dict[str, Any] = {"import_root": import_root, "requirements": requirements}
    manifest["source"] = {"pypi": source.location} if source.kind == "pypi" else {"path": "repo"}
    return manifest


def write_project(folder: Path, manifest: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PROJECT_MANIFEST).write_text(tomli_w.dumps(manifest), encoding="utf-8")


def problem_names(functions: list[Function]) -> dict[Function, str]:
    """A folder name per function: the module's last part and the qualified name (``core_Account_add``), with
    the whole module path where two would meet."""
    def short(function: Function) -> str:
        return f"{function.module.rpartition('.')[2]}_{function.qualname.replace('.', '_')}"

    counts: dict[str, int] = {}
    for function in functions:
        counts[short(function)] = counts.get(short(function), 0) + 1
    names = {}
    for function in functions:
        name = short(function) if counts[short(function)] == 1 else (
            f"{function.module.replace('.', '_')}_{function.qualname.replace('.', '_')}")
        names[function] = re.sub(r"^_+", "", name)
    return names


def problem_manifest(function: Function, context: str, test_count: int, suite: list[str] | None = None
                     ) -> dict[str, Any]:
    """The manifest of a problem judged by ``suite`` (node ids), or by a test module of its own without it."""
    return {
        "module": function.module,
        "entry_point": function.qualname,
        "test_count": test_count,
        **({"suite": suite} if suite is not None else {}),
        "reference": function.reference,
        "prompt": {"context": {"full": context}},
    }


def write_problem(project: Path, name: str, manifest: dict[str, Any], tests: str | None = None) -> Path:
    """The problem's folder, its manifest and, for a problem with a test module of its own, ``test_<name>.py``
    (written again, with the manifest, whenever the tests change)."""
    folder = project / name
    folder.mkdir(exist_ok=True)
    (folder / PROBLEM_MANIFEST).write_text(tomli_w.dumps(manifest, multiline_strings=True), encoding="utf-8")
    if tests is not None:
        tests_path(project, name).write_text(tests, encoding="utf-8")
    return folder


def tests_path(project: Path, name: str) -> Path:
    return project / name / f"test_{name}.py"
