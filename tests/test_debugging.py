"""Multi-round debugging (--repoexec-debug-rounds): whole runs against a model served on loopback."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from loopback import LoopbackServer, prompt_of
from mini_project import SCALED_TESTS
from pytest_repoexec.problem import load_problem
from pytest_repoexec.prompts import debug_prompt, header


FIRST = {"scaled": "    return value * SCALE\n", "swap": "    return pair\n"}  # both wrong
FIXES = {"scaled": ["    return clamp(value * SCALE, 0, 100)\n"],  # right in round 1
         "swap": ["    return tuple(pair)\n", "    return (pair[1], pair[0])\n"]}  # wrong once more, then right


class Model:
    """Answers first prompts wrongly and debugging prompts from FIXES, in order; keeps what it was asked."""

    def __init__(self) -> None:
        self.debug_prompts: dict[str, list[str]] = {"scaled": [], "swap": []}
        self.server = LoopbackServer(self.answer)

    def answer(self, body: dict) -> str:
        prompt = prompt_of(body)
        name = re.findall(r"def (\w+)\(", prompt)[-1]  # the prompt ends with the target's header
        if "# Here is the current solution." not in prompt:
            return FIRST[name]
        asked = self.debug_prompts[name]
        asked.append(prompt)
        return FIXES[name][min(len(asked), len(FIXES[name])) - 1]


@pytest.fixture
def model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    served = Model()
    yield served
    served.server.close()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_failing_samples_are_debugged_round_by_round(mini, run_repoexec, model, workers):
    result, report = run_repoexec(
        str(mini), "--repoexec-model=openai:test-model", f"--repoexec-base-url={model.server.url}",
        "--repoexec-api=completions", "--repoexec-n=1", "--repoexec-debug-rounds=3", *workers, subprocess=True,
    )
    result.assert_outcomes(failed=2)  # the items judge the first generation; the rounds come after
    rounds = report["debugging"]["rounds"]
    assert [(r["round"], r["revised"], r["fixed"], r["pass@1"]) for r in rounds] == [
        (0, 0, 0, 0.0), (1, 2, 1, 0.5), (2, 1, 1, 1.0), (3, 0, 0, 1.0)
    ]
    assert rounds[-1]["DIR"] == 1.0  # scaled's fix uses clamp and SCALE, as the reference does
    assert report["metrics"]["pass@1"] == 0.0  # the main metrics stay those of the first generation
    revisions = Counter((r["problem"], r["round"], r["passed"]) for r in report["debugging"]["revisions"])
    assert revisions == {("mini/scaled", 1, True): 1, ("mini/swap", 1, False): 1, ("mini/swap", 2, True): 1}
    result.stdout.fnmatch_lines([
        "*debugging round 1: 2 failing samples go back to the model*",
        "debugging rounds (greedy, one answer a round)",
        "round  revised  fixed  pass@1     DIR",
        "    0        0      0    0.00   *",
        "    1        2      1   50.00  100.00",
        "    2        1      1  100.00  100.00",
    ])
    debug_bodies = [body for body in model.server.posts() if "# Here is the current solution." in body["prompt"]]
    assert all((body["temperature"], body["top_p"], body["n"]) == (0.0, 1.0, 1) for body in debug_bodies)

    (scaled_prompt,) = model.debug_prompts["scaled"]
    test_high = SCALED_TESTS[SCALED_TESTS.index("def test_high"):SCALED_TESTS.index("def test_low")].strip()
    assert f"# When executing the below test case.\n{test_high}\n" in scaled_prompt  # the first that fails
    assert "def scaled(value):\n" in scaled_prompt.split("# Here is the current solution.")[1]
    error_log = scaled_prompt.split("please correct them.\n")[1].split("# Please provide")[0]
    assert "assert 500 == 100" in error_log and "test_low" not in error_log
    second_swap = model.debug_prompts["swap"][1]
    assert "return tuple(pair)" in second_swap  # round 2 shows round 1's answer, not the first one


def test_debugging_needs_a_model(mini, run_repoexec):
    result, _ = run_repoexec(str(mini), "--repoexec-debug-rounds=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--repoexec-debug-rounds needs a model*reference cannot*"])


def test_debug_prompt_follows_the_papers_layout(mini):
    problem = load_problem(mini / "scaled" / "problem.toml")
    text = debug_prompt(problem, "small", "def scaled(value):\n    return 0\n", "def test_x():\n    assert 0\n",
                        "E   assert 0").text
    markers = [
        "# The provided code snippet includes necessary dependencies for implementing the `scaled` function. "
        "Write a Python function `def scaled(value)` to solve the following problem:\n"
        "Scale a value and clamp it to [0, 100].\n# Here is the current solution.\ndef scaled(value):",
        "# When executing the below test case.\ndef test_x():",
        "# The provided python code solution fails the test with the following errors, please correct them.\n"
        "E   assert 0\n# Please provide the modified code for me to review and provide feedback.\n",
    ]
    positions = [text.index(marker) for marker in markers]
    assert positions == sorted(positions)
    assert text.startswith(problem.context("small").strip())
    assert text.endswith(header(problem))
