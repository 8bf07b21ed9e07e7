"""``repoexec export verl`` and ``repoexec export trl``: a problem set's prompts, each with its problem id, as
the trainers read their datasets, so that their reward functions (``rewards``) can name the problem.

verl reads Parquet rows of ``data_source``, ``prompt`` (chat messages), ``ability``, ``reward_model``
(``{"style": "rule", "ground_truth": id}``) and ``extra_info``; TRL reads any ``datasets`` file with a
``prompt`` column and hands the other columns (``problem_id``) to its reward functions. A problem whose
reference cannot pass here (``known_failure``) is left out: no completion of it can be rewarded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..problem import Problem
from ..prompts import build_prompt
from .depit import set_problems

DATA_SOURCE = "pytest-repoexec"


def trainer_problems(folder: Path) -> tuple[list[Problem], list[str], list[str]]:
    """The problems to export, the known failures left out, and the manifests that would not load (errors)."""
    problems, errors = set_problems(folder)
    known = [f"{problem.manifest}: known_failure: {problem.known_failure}" for problem in problems
             if problem.known_failure]
    return [problem for problem in problems if not problem.known_failure], known, errors


def verl_rows(problems: list[Problem], style: str, level: str, split: str) -> list[dict[str, Any]]:
    return [{
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "user", "content": build_prompt(problem, style, level).text}],
        "ability": "code",
        "reward_model": {"style": "rule", "ground_truth": problem.id},
        "extra_info": {"split": split, "index": index, "problem_id": problem.id, "prompt_style": style,
                       "context_level": level},
    } for index, problem in enumerate(problems)]


def trl_rows(problems: list[Problem], style: str, level: str) -> list[dict[str, Any]]:
    return [{"prompt": build_prompt(problem, style, level).text, "problem_id": problem.id} for problem in problems]


def write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
