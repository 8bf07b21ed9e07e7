"""The build report: what was found, what was left out and why, what the gate admitted, and the time each
step took; as a terminal table and as ``build-report.json`` in the built folder."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

REPORT = "build-report.json"


@dataclass
class BuildReport:
    project: str
    source: str
    kind: str = "functions"  # what the problems' entry points are: functions (and methods) or classes
    found: int = 0  # every function and method seen, the left-out ones included
    picked: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (function, reason), every step's
    problems: list[dict[str, Any]] = field(default_factory=list)  # name, function, tests, verdict, reasons, figures
    suite: dict[str, Any] = field(default_factory=dict)  # the suite run: tests, passed, failed, collect errors
    generated: dict[str, dict[str, Any]] = field(default_factory=dict)  # function -> kept, dropped, fixed, rounds
    seconds: dict[str, float] = field(default_factory=dict)  # by step

    @property
    def admitted(self) -> list[dict[str, Any]]:
        return [problem for problem in self.problems if problem.get("verdict") == "admitted"]

    def figures(self) -> dict[str, Any]:
        """The table's row: counts, and the means over admitted problems of the gate's figures."""
        admitted = self.admitted
        line = [p["line_coverage"] for p in admitted if p.get("line_coverage") is not None]
        mutation = [p["mutation_score"] for p in admitted if p.get("mutation_score") is not None]
        return {
            "found": self.found,
            "picked": self.picked,
            "with_tests": len(self.problems),
            "admitted": len(admitted),
            "rejected": sum(p.get("verdict") == "rejected" for p in self.problems),
            "mean_line_coverage": round(mean(line), 2) if line else None,
            "mean_mutation_score": round(mean(mutation), 2) if mutation else None,
            "mean_tests": round(mean(p["tests"] for p in admitted), 2) if admitted else None,
            "seconds": round(sum(self.seconds.values()), 1),
        }

    def document(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "source": self.source,
            "kind": self.kind,
            **self.figures(),
            "skipped_by_reason": dict(Counter(reason for _, reason in self.skipped).most_common()),
            "seconds_by_step": {step: round(value, 2) for step, value in self.seconds.items()},
            "suite": self.suite,
            "generated": self.generated,
            "problems": self.problems,
            "skipped": [{"function": function, "reason": reason} for function, reason in self.skipped],
        }

    def write(self, folder: Path) -> Path:
        path = folder / REPORT
        path.write_text(json.dumps(self.document(), indent=1) + "\n", encoding="utf-8")
        return path

    def table(self) -> list[str]:
        figures = self.figures()
        header = ["project", f"{self.kind} found", "picked", "with tests", "admitted", "rejected", "tests each",
                  "coverage%", "mutation%", "time s"]
        row = [self.project, *(_shown(figures[key]) for key in (
            "found", "picked", "with_tests", "admitted", "rejected", "mean_tests", "mean_line_coverage",
            "mean_mutation_score", "seconds"))]
        widths = [max(len(a), len(b)) for a, b in zip(header, row)]
        lines = ["  ".join(cell.rjust(width) if index else cell.ljust(width)
                           for index, (cell, width) in enumerate(zip(cells, widths))) for cells in (header, row)]
        lines.insert(1, "-" * len(lines[0]))
        reasons = Counter(reason for _, reason in self.skipped).most_common()
        if reasons:
            lines += ["", "left out:"] + [f"  {count:5}  {reason}" for reason, count in reasons]
        for problem in self.problems:
            if problem.get("verdict") == "rejected":
                lines.append(f"rejected {problem['name']}: {'; '.join(problem.get('reasons', []))[:200]}")
        return lines


def _shown(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)
