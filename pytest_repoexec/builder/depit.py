"""``repoexec export depit``: the problems of a set as dependency-aware instruction-tuning records (the paper's
DepIT), one JSON line a problem, so a model can be fine-tuned on a user's own repository.

The instruction is the paper's second InstructPrompt (the dependency context, then the request to write the
function from its signature and docstring); the response is the reference, the whole function. The paper
publishes no record layout, so the fields are ours: ``id``, ``instruction``, ``response``, and, for tools
that want them, ``context_level``, ``entry_point``, ``dependencies``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..problem import ManifestError, Problem, find_manifests, load_problem, set_order
from ..prompts import build_prompt
from .admit import REJECTED


def set_problems(folder: Path) -> tuple[list[Problem], list[str]]:
    """The problems under ``folder`` in the set's order (rejected problems left out), and the manifests that
    would not load, with their error: what every export writes records of."""
    problems: list[Problem] = []
    errors = []
    for manifest in find_manifests([folder]):
        if REJECTED in manifest.relative_to(folder.resolve()).parts[:-1]:
            continue
        try:
            problems.append(load_problem(manifest))
        except ManifestError as exc:
            errors.append(str(exc))
    return set_order(problems), errors


def depit_records(folder: Path, level: str = "full") -> tuple[list[dict[str, Any]], list[str]]:
    """A record per problem under ``folder`` (rejected problems left out), and the manifests that would not
    load, with their error."""
    problems, errors = set_problems(folder)
    records = []
    for problem in problems:
        prompt = build_prompt(problem, "instruct2", level)
        records.append({
            "id": problem.id,
            "instruction": prompt.instruction,
            "response": problem.reference.strip("\n") + "\n",
            "context_level": level,
            "entry_point": problem.entry_point,
            "dependencies": list(problem.dependencies),
        })
    return records, errors


def write_jsonl(records: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
