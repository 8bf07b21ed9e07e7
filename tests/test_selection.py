"""Generation sees exactly the selected problems: whatever selects items (-k, -m, --deselect, --lf, node ids)
also decides which problems the model is asked about, with and without xdist."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from loopback import LoopbackServer, prompt_of


RIGHT = {"scaled": "    return clamp(value * SCALE, 0, 100)\n", "swap": "    return (pair[1], pair[0])\n"}
XDIST = [[], ["-n", "2"]]
XDIST_IDS = ["one process", "xdist"]


class Model:
    """A model on loopback that answers each prompt with ``answers[function name]``."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.server = LoopbackServer(lambda body: answers[re.findall(r"def (\w+)\(", prompt_of(body))[-1]])

    def asked(self) -> Counter:
        """Requests per problem, and the samples asked for in all."""
        return Counter(re.findall(r"def (\w+)\(", prompt_of(body))[-1] for body in self.server.posts())

    def samples_asked(self) -> int:
        return sum(body["n"] for body in self.server.posts())


@pytest.fixture
def models(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    made: list[Model] = []

    def make(answers: dict[str, str] = RIGHT) -> Model:
        made.append(Model(answers))
        return made[-1]

    yield make
    for model in made:
        model.server.close()


@pytest.fixture
def score(pytester, repoexec_cache):
    """A whole run against a model on loopback, in a subprocess (the cache provider on, for --lf)."""

    def run(model: Model, *args: str) -> tuple[pytest.RunResult, dict | None]:
        report = pytester.path / "report.json"
        report.unlink(missing_ok=True)
        result = pytester.runpytest_subprocess(
            "--repoexec-model=openai:test-model", f"--repoexec-base-url={model.server.url}",
            "--repoexec-api=completions", "--repoexec-n=2", f"--repoexec-cache={repoexec_cache}",
            f"--repoexec-report={report}", *args,
        )
        return result, json.loads(report.read_text()) if report.exists() else None

    return run


@pytest.mark.parametrize("workers", XDIST, ids=XDIST_IDS)
@pytest.mark.parametrize(
    "selection",
    [
        ["-k", "scaled"],
        ["-m", "not xfail"],  # swap is marked a known failure below
        ["--deselect", "mini/swap/problem.toml::swap[0]", "--deselect", "mini/swap/problem.toml::swap[1]"],
        ["mini/scaled/problem.toml::scaled[1]"],
        ["--ignore", "mini/swap"],
    ],
    ids=["-k", "-m", "--deselect", "node id", "--ignore"],
)
def test_the_model_is_asked_only_about_the_selected_problems(mini, models, score, workers, selection):
    swap = mini / "swap" / "problem.toml"
    swap.write_text(swap.read_text().replace("number = 2\n", 'number = 2\nknown_failure = "a test of -m"\n'))
    model = models()
    args = selection if selection[0].startswith("mini/") else ["mini", *selection]
    result, report = score(model, *args, *workers)
    assert model.asked() == {"scaled": 1}  # one request for scaled, asking for its samples
    selected = 1 if selection[0].startswith("mini/") else 2
    assert model.samples_asked() == 2
    result.assert_outcomes(passed=selected)
    assert [s["problem"] for s in report["samples"]] == ["mini/scaled"] * selected


@pytest.mark.parametrize("workers", XDIST, ids=XDIST_IDS)
def test_last_failed_asks_only_about_the_problems_that_failed(mini, models, score, workers):
    first = models({"scaled": RIGHT["scaled"], "swap": "    return pair\n"})
    result, _ = score(first, "mini", *workers)
    result.assert_outcomes(passed=2, failed=2)
    assert first.asked() == {"scaled": 1, "swap": 1}
    again = models()  # another server: the completions cache does not answer for it
    result, report = score(again, "mini", "--lf", *workers)
    assert again.asked() == {"swap": 1}
    result.assert_outcomes(passed=2)
    assert {s["problem"] for s in report["samples"]} == {"mini/swap"}


@pytest.mark.parametrize("workers", XDIST, ids=XDIST_IDS)
def test_a_selection_of_nothing_asks_nothing(mini, models, score, workers):
    model = models()
    result, report = score(model, "mini", "-k", "no_such_problem", *workers)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert model.server.requests == []  # not even the server check
    assert report is None


def test_workers_receive_the_completions_in_workerinput(mini, models, score, pytester):
    """The worker reads the selected problems' completions from xdist's channel, not from a file."""
    pytester.makeconftest(
        "import json, pathlib\n\n"
        "def pytest_configure(config):\n"
        "    handed = getattr(config, 'workerinput', None)\n"
        "    if handed is not None:\n"
        "        pathlib.Path('handed-' + handed['workerid'] + '.json').write_text(\n"
        "            json.dumps(handed['repoexec_completions']))\n"
    )
    model = models()
    # fresh: a rerun whose verdicts are all stored is answered by the controller, which starts no worker
    result, _ = score(model, "mini", "-k", "swap", "-n", "2", "--repoexec-fresh")
    result.assert_outcomes(passed=2)
    for worker in ("gw0", "gw1"):
        handed = json.loads((pytester.path / f"handed-{worker}.json").read_text())
        assert list(handed) == ["mini/swap"]
        assert [text.strip() for text in handed["mini/swap"]] == [RIGHT["swap"].strip()] * 2
