"""The HTML pages (issue 15): a real run of the shipped set, with debugging rounds from a model on loopback,
rendered to one page that headless Chromium opens with the network off, every plot drawn with its marks; and the
leaderboard of two runs as a page."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from conftest import SHIPPED, write_replay
from loopback import LoopbackServer, prompt_of
from pytest_repoexec.cli import main
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem

PROBLEMS = sorted((load_problem(manifest) for manifest in find_manifests([SHIPPED])), key=lambda p: p.id)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def browser(*arguments: str) -> subprocess.CompletedProcess:
    """Headless Chromium with no network at all (its own network namespace, made by bubblewrap)."""
    assert CHROMIUM, "chromium is missing: `repoexec setup --tests` installs it (Debian's package)"
    command = ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", CHROMIUM, "--headless",
               "--no-sandbox", "--disable-gpu", "--no-first-run", "--enable-logging=stderr", "--v=0", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]


class Page(HTMLParser):
    """What the loaded page holds: each chart's marks, the problem sections."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: list[list[str]] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "figure" and values.get("class") == "chart":
            self.charts.append([])
        elif (values.get("id") or "").startswith("mark-") and self.charts:
            self.charts[-1].append(values["id"] or "")
        elif tag == "section" and values.get("class") == "problem":
            self.problems.append(values.get("id") or "")


@pytest.fixture
def model(monkeypatch):
    """Writes the reference for half the problems and a `pass` body for the others; asked to debug, the reference."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    by_name = {p.function_name: p for p in PROBLEMS}
    assert len(by_name) == len(PROBLEMS)  # a prompt's target names its problem

    def answer(body: dict) -> str:
        prompt = prompt_of(body)
        problem = by_name[re.findall(r"def (\w+)\(", prompt)[-1]]
        if "# Here is the current solution." in prompt or PROBLEMS.index(problem) % 2 == 0:
            return problem.reference
        return pass_body(problem.reference)

    server = LoopbackServer(answer)
    yield server
    server.close()


def test_the_page_opens_offline_with_its_plots_and_every_problem(run_repoexec, pytester, model, tmp_path):
    page = pytester.path / "report.html"
    result, report = run_repoexec(
        str(SHIPPED), "--repoexec-model=openai:test-model", f"--repoexec-base-url={model.url}",
        "--repoexec-api=completions", "--repoexec-n=1", "--repoexec-debug-rounds=1", f"--repoexec-html={page}",
        subprocess=True,
    )
    assert report is not None and page.is_file(), result.stdout.str()[-3000:]
    assert f"report: {page}" in result.stdout.str()
    assert report["metrics"]["pass@1"] == 0.5
    assert [r["pass@1"] for r in report["debugging"]["rounds"]] == [0.5, 1.0]

    canary = tmp_path / "canary.html"  # the console check itself must see an error where there is one
    canary.write_text("<script>console.error('repoexec canary')</script>")
    assert any("repoexec canary" in line for line in console_errors(browser("--dump-dom", canary.as_uri()).stderr))

    loaded = browser("--dump-dom", "--virtual-time-budget=2000", page.as_uri())
    assert loaded.returncode == 0 and not console_errors(loaded.stderr), loaded.stderr[-3000:]
    dom = Page()
    dom.feed(loaded.stdout)
    projects = sorted({p.project.name for p in PROBLEMS})
    assert len(dom.charts) == 4  # pass@k by project, failures by error type, DIR against pass, rounds
    by_project, by_error, dir_pass, rounds = dom.charts
    assert by_project == [f"mark-projects-pass@1-{index}" for index in range(len(projects))]
    assert by_error == [f"mark-errors-{index}" for index in range(len(report["errors"]))] and by_error
    assert dir_pass == ["mark-dir-0"]
    assert rounds == ["mark-rounds-pass@1-0", "mark-rounds-DIR-0"]
    assert len(dom.problems) == len(PROBLEMS)
    for problem in PROBLEMS:
        assert problem.id in loaded.stdout
    assert loaded.stdout.count('class="removed"') >= len(PROBLEMS) // 2  # the pass bodies, as diffs

    screenshot = tmp_path / "report.png"  # kept out of the repository
    shot = browser(f"--screenshot={screenshot}", "--window-size=1200,2400", page.as_uri())
    assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-3000:]
    colours = Image.open(screenshot).convert("RGB").getcolors(1 << 24)
    assert any(_near(colour, (0x3B, 0x6E, 0xA8)) for _, colour in colours)  # the pass@1 bars were painted


def _near(colour: tuple[int, int, int], wanted: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 3 for a, b in zip(colour, wanted))


def test_a_gate_run_refuses_an_html_page(mini, run_repoexec, pytester):
    result, _ = run_repoexec(str(mini), "--repoexec-validate", f"--repoexec-html={pytester.path / 'x.html'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--repoexec-validate and --repoexec-html=* cannot be used together*"])
    assert not Path(pytester.path / "x.html").exists()


def test_the_leaderboard_page_opens_offline_with_its_intervals(run_repoexec, pytester, tmp_path, capsys):
    """`repoexec compare --html`: the same cells as the text table, and each run's interval drawn."""
    ids = [problem.id for problem in PROBLEMS]
    runs = {"better.json": set(), "worse.json": set(ids[::2])}  # worse fails half the problems
    for name, wrong in runs.items():
        replay = write_replay(pytester.path / f"{name}.jsonl", {p.id: [pass_body(p.reference) if p.id in wrong
                                                                        else p.reference] for p in PROBLEMS})
        result, report = run_repoexec(str(SHIPPED), f"--repoexec-model=replay:{replay}")
        assert report is not None, result.stdout.str()[-3000:]
        shutil.copy(pytester.path / "report.json", tmp_path / name)
    capsys.readouterr()

    page = tmp_path / "leaderboard.html"
    assert main(["compare", str(tmp_path / "worse.json"), str(tmp_path / "better.json"), "--html", str(page)]) == 0
    text = capsys.readouterr().out
    assert f"page: {page}" in text

    loaded = browser("--dump-dom", "--virtual-time-budget=2000", page.as_uri())
    assert loaded.returncode == 0 and not console_errors(loaded.stderr), loaded.stderr[-3000:]
    dom = Page()
    dom.feed(loaded.stdout)
    assert dom.charts == [["mark-leaderboard-pass@1-0"]]  # one series: the runs have one sample a problem
    assert loaded.stdout.index("<td>better.json</td>") < loaded.stdout.index("<td>worse.json</td>")  # best first
    difference = re.search(r"better\.json +worse\.json +pass@1 +(\+50\.00 \[[^]]+\]) +yes", text)
    assert difference, text  # the text table says the difference excludes zero...
    assert f">{difference.group(1)}<" in loaded.stdout and 'class="passed">yes<' in loaded.stdout  # ...so does the page
    assert "2 runs on the 24 problems they share" in loaded.stdout
