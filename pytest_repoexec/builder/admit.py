"""The built problems through the engine's admission gate, as a user would run it: ``pytest DIR
--repoexec-validate`` (or ``--repoexec-fix-assertions`` first, for a model's tests) in a subprocess, its JSON
report read back. Admitted problems stay; the others move to
``DIR/rejected/<problem>``, with the gate's reasons in ``rejected.toml`` beside their manifest, where
``pytest DIR`` does not collect them (``rejected/conftest.py``)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from . import BuildError

REJECTED = "rejected"
_IGNORE_ALL = ('"""Problems the admission gate rejected (see each rejected.toml): kept for reading, never '
               'collected."""\n\ncollect_ignore_glob = ["*"]\n')


@dataclass
class GateOutcome:
    verdicts: dict[str, dict[str, Any]]  # problem folder name -> the gate's entry (passed, reasons, figures)
    fixes: dict[str, dict[str, Any]] = field(default_factory=dict)  # the fixer's: fixed, removed, diff

    @property
    def admitted(self) -> list[str]:
        return sorted(name for name, entry in self.verdicts.items() if entry.get("passed"))


def run_gate(project: Path, cache: Path, sandbox: str, workers: int, options: list[str], timeout: float,
             problems: list[str] | None = None, fix: bool = False) -> GateOutcome:
    """The gate's verdict on every problem of ``project`` (or on ``problems``, after the assertion fixer with
    ``fix``); a problem the gate could not check is rejected with the reason it gives."""
    step = "assertion fixer" if fix else "admission gate"
    with tempfile.TemporaryDirectory(prefix="repoexec-gate-") as scratch:
        report = Path(scratch, "gate.json")
        targets = [str(project / name) for name in problems] if problems is not None else [str(project)]
        command = [sys.executable, "-m", "pytest", *targets,
                   "--repoexec-fix-assertions" if fix else "--repoexec-validate", f"--repoexec-report={report}",
                   f"--repoexec-cache={cache}", f"--repoexec-sandbox={sandbox}", "-p", "no:cacheprovider", "-q",
                   "--color=no", *(["-n", str(workers)] if workers > 1 else []), *options]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=project.parent)
        except subprocess.TimeoutExpired:
            raise BuildError(project.name, step, f"it ran past {timeout:g} s (--gate-timeout)") from None
        if not report.is_file():
            tail = (done.stdout + done.stderr).strip()[-3000:]
            raise BuildError(project.name, step, f"pytest wrote no report (exit status {done.returncode}):\n{tail}")
        document = json.loads(report.read_text(encoding="utf-8"))
    verdicts = {entry["problem"].split("/", 1)[1]: entry for entry in document.get("problems", [])}
    for entry in document.get("not_checked", []):
        name = entry["item"].split("::")[0].rstrip("/").split("/")[-2]  # .../<problem>/problem.toml
        verdicts.setdefault(name, {"passed": False, "reasons": [f"not checked: {entry['reason'].strip()}"]})
    return GateOutcome(verdicts, {entry["problem"].split("/", 1)[1]: entry for entry in document.get("fixes", [])})


def set_rejected_aside(project: Path, outcome: GateOutcome, written: list[str]) -> list[str]:
    """Move every written problem the gate did not admit to ``rejected/``; the names moved."""
    moved = []
    for name in written:
        entry = outcome.verdicts.get(name, {"passed": False, "reasons": ["the gate gave no verdict"]})
        if entry.get("passed"):
            continue
        target = project / REJECTED / name
        target.parent.mkdir(exist_ok=True)
        (target.parent / "conftest.py").write_text(_IGNORE_ALL, encoding="utf-8")
        shutil.move(project / name, target)
        (target / "rejected.toml").write_text(tomli_w.dumps({"reasons": list(entry.get("reasons", []))}),
                                              encoding="utf-8")
        moved.append(name)
    return moved


def add_gate_arguments(parser: argparse.ArgumentParser, sandboxed: str) -> None:
    """The options of a command that ends in the admission gate (``build``, ``paraphrase``): the cache, the
    sandbox (of ``sandboxed``), the gate's workers and options, or no gate."""
    parser.add_argument("--cache", type=Path, default=None, help="the engine's cache (default: REPOEXEC_CACHE or "
                                                                 "the user cache folder)")
    parser.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap",
                        help=f"run {sandboxed} in bubblewrap (default) or unconfined")
    parser.add_argument("-n", "--workers", type=int, default=1, help="xdist workers for the gate (%(default)s)")
    parser.add_argument("--no-gate", action="store_true", help="write the problems without the admission gate")
    parser.add_argument("--gate-option", action="append", default=[], metavar="OPTION",
                        help="an option for the gate's pytest run, e.g. --gate-option=--repoexec-mutants=5")
