"""``--repoexec-html=PATH``: a scoring run as one self-contained HTML page, made from the same document as the
JSON report (``document``), so that the page never shows what the JSON does not hold;
and ``repoexec compare --html PATH``: the leaderboard as such a page.

The page needs no network and no script: styles are inline, the plots are inline SVG (``plots``), and each
problem's samples fold open with ``<details>``. The layout lives in a Jinja template
(``templates/report.html.j2``); this module only shapes the data for it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import jinja2

from . import plots
from .document import metrics_rows, percent
from .leaderboard import DIFFERENCE_HEADER, Leaderboard, board_tables

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("pytest_repoexec", "templates"),
    autoescape=jinja2.select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,  # a name the template uses and the data lacks is an error, not a blank
)
_SETTINGS = (  # what a reader asks first about a run, in this order: (label, option)
    ("generator", "repoexec_model"), ("prompt", "repoexec_prompt"), ("context", "repoexec_context"),
    ("samples per problem", "repoexec_n"), ("temperature", "repoexec_temperature"), ("top-p", "repoexec_top_p"),
    ("max tokens", "repoexec_max_tokens"), ("debugging rounds", "repoexec_debug_rounds"),
    ("executor", "repoexec_executor"), ("test timeout (s)", "repoexec_timeout"),
)


def render_html(document: dict[str, Any]) -> str:
    samples = document["samples"]
    by_problem: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for sample in samples:
        by_problem[sample["problem"]].append(sample)
    rounds = (document.get("debugging") or {}).get("rounds") or []
    charts = [("pass@k by project", plots.pass_at_k_by_project(document["projects"]))]
    if document["errors"]:
        charts.append(("failed samples by error type", plots.failures_by_error(document["errors"])))
    points = [(_mean([s["dir"] for s in group]), sum(s["passed"] for s in group) / len(group))
              for group in by_problem.values() if any(s["dir"] is not None for s in group)]
    if points:
        charts.append(("DIR against pass, one point per problem", plots.dir_against_pass(points)))
    if rounds:
        charts.append(("pass@1 and DIR per debugging round", plots.rounds(rounds)))
    settings = document["settings"]
    transcripts = {(t["problem"], t["sample"]): t for t in (document.get("agent") or {}).get("samples", [])}
    return _TEMPLATES.get_template("report.html.j2").render(
        title=f"repoexec: {document['model']}",
        settings=[(label, settings.get(option)) for label, option in _SETTINGS if settings.get(option) is not None]
        + [("engine", f"pytest-repoexec {document['engine']['version']} ({document['engine']['code']})"),
           *((f"sandbox: {name}", value) for name, value in document["sandbox"].items())],
        options=sorted(settings.items()),
        table=metrics_rows(document),
        charts=charts,
        rounds=rounds,
        store=document["store"],
        problems=[_problem(name, group, transcripts) for name, group in sorted(by_problem.items())],
        known_failures=len({s["problem"] for s in document["known_failures"]}),
        not_run=document["not_run"],
        percent=percent,
    )


def _problem(name: str, samples: list[dict[str, Any]], transcripts: dict[tuple[str, int], Any]) -> dict[str, Any]:
    """A problem's section: its samples, each with its diff's lines and, from an agent run, its transcript."""
    return {
        "name": name,
        "anchor": "p-" + "".join(c if c.isalnum() else "-" for c in name),
        "passed": sum(s["passed"] for s in samples),
        "samples": [sample | {"diff_lines": _diff_lines(sample.get("diff")),
                              "transcript": _steps(transcripts.get((name, sample["sample"])))} for sample in samples],
    }


def _steps(transcript: dict[str, Any] | None) -> dict[str, Any] | None:
    """An agent's transcript in its order: the tool calls made before each attempt, then the attempt."""
    if transcript is None:
        return None
    steps: list[dict[str, Any]] = [{"call": call} for call in transcript["tool_calls"] if call["attempt"] == 0]
    for attempt in transcript["attempts"]:
        steps += [{"call": call} for call in transcript["tool_calls"] if call["attempt"] == attempt["number"]]
        steps.append({"attempt": attempt})
    return {"steps": steps, "oracle_calls": transcript["oracle_calls"], "protocol": transcript["protocol"],
            "tool_calls": len(transcript["tool_calls"]), "attempts": len(transcript["attempts"])}


def _diff_lines(diff: str | None) -> list[tuple[str, str]]:
    """(kind, line) for each line of a unified diff: kind is the CSS class that colours it."""
    kinds = {"+": "added", "-": "removed", "@": "hunk"}
    return [("file" if line.startswith(("+++", "---")) else kinds.get(line[:1], "same"), line)
            for line in (diff or "").splitlines()]


def _mean(values: list[float | None]) -> float:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else 0.0


def render_compare_html(board: Leaderboard) -> str:
    """The leaderboard with the same cells as its text form, and a plot of each run's intervals."""
    runs = [(row.run.path.name, {k: (i.estimate, i.low, i.high) for k, i in row.intervals.items()})
            for row in board.rows]
    return _TEMPLATES.get_template("compare.html.j2").render(
        title=f"repoexec compare: {len(board.rows)} runs",
        tables=board_tables(board),
        difference_header=DIFFERENCE_HEADER,
        charts=[(f"pass@k of each run on the {board.problems} common problems, with its "
                 f"{board.confidence:.0%} interval", plots.leaderboard(runs))],
        runs=[row.run for row in board.rows],
    )
