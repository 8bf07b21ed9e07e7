"""Readers for the two published forms of RepoExec: the data folder with ``pass_data.jsonl`` files and pickled
outputs, and the Hugging Face dataset (a local copy: Parquet, JSON/JSONL, or a ``save_to_disk`` folder)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import syntax

CONTEXT_SUBSETS = {"full": "full_context", "medium": "medium_context", "small": "small_context"}


class SourceError(Exception):
    """Something in the data that cannot be imported; the message names project, problem and file."""


@dataclass
class Record:
    """One problem as published, before conversion."""

    folder: str  # the data's project folder name: "python-string-utils", "black+src"
    number: int
    module: str
    entry_point: str
    reference: str  # the focal function
    context: str  # the full dependency context: the full-context prompt without the target function
    test: str  # the whole test module, with the original harness's paths
    outputs: Path | None  # the folder that holds the problem's pickled outputs, when the data has one
    contexts: dict[str, str] = field(default_factory=dict)  # published medium/small prompts, when available
    where: str = ""  # file (and line) the record comes from, for messages


@dataclass
class Problems:
    records: list[Record]
    errors: list[str]  # records that could not be read, each named


def data_root(source: Path) -> Path:
    """The folder holding ``test-apps+*`` folders: SRC itself or its ``data_with_test_case``."""
    for candidate in (source / "data_with_test_case", source):
        if candidate.is_dir() and any(candidate.glob("test-apps+*")):
            return candidate
    raise SourceError(f"{source}: no RepoExec data here (expected test-apps+<project> folders)")


def read_data_folder(source: Path) -> dict[str, Problems]:
    """Every project of a RepoExec data folder, by project folder name."""
    root = data_root(source)
    projects = {}
    for folder in sorted(root.glob("test-apps+*")):
        name = folder.name.removeprefix("test-apps+")
        projects[name] = _read_pass_data(folder, name)
    return projects


def _read_pass_data(folder: Path, name: str) -> Problems:
    data = folder / "pass_data.jsonl"
    if not data.is_file():
        return Problems([], [f"project {name}: {data} is missing"])
    records, errors = [], []
    for line_number, line in enumerate(data.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{data} line {line_number}"
        try:
            row = json.loads(line)
            module = row["module"]
            records.append(Record(
                folder=name,
                number=int(row["problem_ids"]),
                module=module,
                entry_point=row["entry_point"],
                reference=row["focal_function"],
                context=_without_function(row["code"], row["focal_function"], row["entry_point"]),
                test=row["test"],
                outputs=folder / "test_output" / module.replace(".", "+") / row["entry_point"],
                where=where,
            ))
        except (ValueError, KeyError, TypeError, LookupError) as exc:
            errors.append(f"project {name}: {where}: cannot read the problem ({type(exc).__name__}: {exc})")
    return Problems(records, errors)


def read_hugging_face(source: Path, outputs: Path | None) -> dict[str, Problems]:
    """The three context subsets of ``Fsoft-AIC/RepoExec`` from a local copy, joined by problem id.

    The Hugging Face form carries no pickles; ``outputs`` (a RepoExec data folder) supplies them.
    """
    subsets = {level: _load_subset(source, subset) for level, subset in CONTEXT_SUBSETS.items()}
    if subsets["full"] is None:
        raise SourceError(f"{source}: no full_context subset found (Parquet, JSON/JSONL or a save_to_disk folder)")
    outputs_root = data_root(outputs) if outputs else None
    by_level = {level: {str(row["id"]): row for row in rows or []} for level, rows in subsets.items()}
    projects: dict[str, Problems] = {}
    for index, row in enumerate(subsets["full"]):
        where = f"{source} full_context row {index}"
        try:
            name = row["project"].removeprefix("test-apps/").replace("/", "+")
            module, entry_point = row["module"], row["entry_point"]
            problem_id = str(row["id"])
            record = Record(
                folder=name,
                number=int(problem_id),
                module=module,
                entry_point=entry_point,
                reference=_whole_function(row["solution"], row["target_function_prompt"], entry_point),
                context=_context_of(row),
                test=row["check"],
                outputs=(outputs_root / f"test-apps+{name}" / "test_output" / module.replace(".", "+") / entry_point)
                if outputs_root else None,
                contexts={
                    level: _context_of(by_level[level][problem_id])
                    for level in ("medium", "small") if problem_id in by_level[level]
                },
                where=where,
            )
        except (KeyError, TypeError, ValueError) as exc:
            projects.setdefault("(unknown)", Problems([], [])).errors.append(
                f"{where}: cannot read the problem ({type(exc).__name__}: {exc})"
            )
            continue
        projects.setdefault(name, Problems([], [])).records.append(record)
    return projects


def _without_function(code: str, reference: str, name: str) -> str:
    """The prompt's context: everything but the target function (the prompt ends with it, as published;
    its text is searched first, since some published contexts have lines that do not parse)."""
    at = code.rfind(reference.strip())
    if at < 0:
        definition = syntax.find_definition(code, name)
        data = code.encode("utf-8")
        return (data[: definition.start_byte] + data[definition.end_byte :]).decode("utf-8").rstrip() + "\n"
    return code[:at].rstrip() + "\n"


def _whole_function(solution: str, target_prompt: str, name: str) -> str:
    """The reference as a whole function, whether the dataset stores it whole or as the body alone."""
    return solution if syntax.find_function(solution, name) else target_prompt.rstrip("\n") + "\n" + solution


def _context_of(row: dict) -> str:
    """A subset's dependency context: its prompt without the target function's signature and docstring."""
    prompt, target = row["prompt"], row["target_function_prompt"]
    return prompt[: prompt.rfind(target)] if target in prompt else prompt


def _load_subset(source: Path, subset: str) -> list[dict] | None:
    for path in sorted(source.rglob(f"{subset}*")):
        rows = _load_rows(path)
        if rows is not None:
            return rows
    return None


def _load_rows(path: Path) -> list[dict] | None:
    if path.is_dir() and (path / "dataset_info.json").exists():
        import datasets  # optional: only for save_to_disk folders

        return list(datasets.load_from_disk(str(path)))
    if path.suffix == ".parquet":
        import pyarrow.parquet  # optional: only for Parquet files

        return pyarrow.parquet.read_table(path).to_pylist()
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, list) else data.get("rows") or data.get("data")
    return None
