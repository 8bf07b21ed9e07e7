"""The HTML report's plots, drawn with matplotlib as SVG text to put inline in the page.

matplotlib rather than a Vega-Lite library: the page must open without a network, and an inline SVG needs no
script at all (Vega-Lite would need its JavaScript runtime copied into every page), and it draws the same in
every browser. Figures are made with ``matplotlib.figure.Figure`` and its SVG canvas, never ``pyplot``, so
that no global figure state is shared, and text stays text (searchable, small).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib
from matplotlib.artist import Artist
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

_STYLE = {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}
_COLOURS = ("#3b6ea8", "#e0883a", "#5a9e4b", "#b84a4a", "#7d62a8", "#8c6d4f")


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    FigureCanvasSVG(figure).print_svg(buffer)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # inline: without the XML declaration and doctype


def _marks(artists: Sequence[Artist], prefix: str) -> None:
    """Name the artists that draw data ``mark-...`` in the SVG: what a reader (or a test) tells from axes and text."""
    for index, artist in enumerate(artists):
        artist.set_gid(f"mark-{prefix}{index}")


def _styled(draw: Callable[..., str]) -> Callable[..., str]:
    """Draws under the report's style (rc settings apply when artists are made and when the SVG is written)."""

    @functools.wraps(draw)
    def styled(*args: Any, **kwargs: Any) -> str:
        with matplotlib.rc_context(_STYLE):
            return draw(*args, **kwargs)

    return styled


@_styled
def pass_at_k_by_project(projects: Mapping[str, Mapping[str, float | None]]) -> str:
    """Grouped bars: pass@k of each project, one bar per k the run measured."""
    ks = [name for name in ("pass@1", "pass@5", "pass@10") if any(m.get(name) is not None for m in projects.values())]
    names = list(projects)
    figure = Figure(figsize=(max(4.0, 0.9 * len(names) + 1.5), 2.8), layout="constrained")
    axes = figure.add_subplot()
    width = 0.8 / max(len(ks), 1)
    for index, k in enumerate(ks):
        values = [100 * (projects[name].get(k) or 0.0) for name in names]
        bars = axes.bar([i + index * width for i in range(len(names))], values, width, label=k, color=_COLOURS[index])
        _marks(bars, f"projects-{k}-")
    axes.set_xticks([i + width * (len(ks) - 1) / 2 for i in range(len(names))], names, rotation=30, ha="right")
    axes.set_ylim(0, 100)
    axes.set_ylabel("percent")
    axes.legend(frameon=False, ncols=len(ks))
    return _svg(figure)


@_styled
def failures_by_error(errors: Mapping[str, int]) -> str:
    """Horizontal bars: failed samples by error type, the most frequent on top."""
    names = list(errors)[:15][::-1]
    figure = Figure(figsize=(5.5, 0.3 * len(names) + 0.9), layout="constrained")
    axes = figure.add_subplot()
    _marks(axes.barh(names, [errors[name] for name in names], color=_COLOURS[3]), "errors-")
    axes.set_xlabel("failed samples")
    return _svg(figure)


@_styled
def dir_against_pass(points: Sequence[tuple[float, float]]) -> str:
    """One point per problem: the mean DIR of its samples against the share of them that passed."""
    figure = Figure(figsize=(4.5, 3.2), layout="constrained")
    axes = figure.add_subplot()
    _marks([axes.scatter([100 * x for x, _ in points], [100 * y for _, y in points], s=18, alpha=0.6,
                         color=_COLOURS[0])], "dir-")
    axes.set_xlim(-3, 103)
    axes.set_ylim(-3, 103)
    axes.set_xlabel("DIR of the problem's samples (mean, percent)")
    axes.set_ylabel("samples passed (percent)")
    return _svg(figure)


@_styled
def rounds(entries: Sequence[Mapping[str, float | int | None]]) -> str:
    """pass@1 and DIR after each debugging round (round 0: before any)."""
    figure = Figure(figsize=(4.5, 2.8), layout="constrained")
    axes = figure.add_subplot()
    numbers = [entry["round"] for entry in entries]
    for index, name in enumerate(("pass@1", "DIR")):
        values = [100 * (entry[name] or 0.0) for entry in entries]
        _marks(axes.plot(numbers, values, marker="o", label=name, color=_COLOURS[index]), f"rounds-{name}-")
    axes.set_xticks(numbers)
    axes.set_xlabel("debugging round")
    axes.set_ylabel("percent")
    axes.set_ylim(0, 100)
    axes.legend(frameon=False)
    return _svg(figure)


@_styled
def leaderboard(runs: Sequence[tuple[str, Mapping[int, tuple[float, float, float]]]]) -> str:
    """Each run's pass@k as a point with its interval (estimate, low, high), best run on top, one colour per k."""
    figure = Figure(figsize=(6.0, 0.45 * len(runs) + 1.3), layout="constrained")
    axes = figure.add_subplot()
    ks = sorted({k for _, intervals in runs for k in intervals})
    names = [name for name, _ in runs][::-1]
    for index, k in enumerate(ks):
        present = [(row, intervals[k]) for row, (_, intervals) in enumerate(runs[::-1]) if k in intervals]
        offsets = [row + (index - (len(ks) - 1) / 2) * 0.2 for row, _ in present]
        estimates = [100 * estimate for _, (estimate, _, _) in present]
        spans = [[100 * (estimate - low) for _, (estimate, low, _) in present],
                 [100 * (high - estimate) for _, (estimate, _, high) in present]]
        drawn = axes.errorbar(estimates, offsets, xerr=spans, fmt="o", capsize=3, label=f"pass@{k}",
                              color=_COLOURS[index])
        _marks([drawn.lines[0]], f"leaderboard-pass@{k}-")
    axes.set_yticks(range(len(names)), names)
    axes.set_ylim(-0.6, len(names) - 0.4)
    axes.set_xlim(-3, 103)
    axes.set_xlabel("percent, with the interval")
    figure.legend(frameon=False, ncols=len(ks), loc="outside upper right")
    return _svg(figure)
