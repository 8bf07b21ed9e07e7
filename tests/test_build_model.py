"""``repoexec build --tests=model``: tests asked of a model (an OpenAI-compatible server on loopback, scripted
here), sifted, fixed against the reference, topped up by coverage-enhancement rounds, through the gate; and the
pieces it is made of: the stand-alone generator, the paper's prompts, the harvest of an answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generators.model import Sampling
from generators.standalone import ModelOptions, ask, model_generator
from build_repo import write_build_repo
from loopback import LoopbackServer, prompt_of
from pytest_repoexec.builder import BuildError
from pytest_repoexec.builder.functions import Function
from pytest_repoexec.builder.harvest import extend, harvest, new_module
from pytest_repoexec.builder.modeltests import NO_TEST, ModelTestSettings
from pytest_repoexec.builder.pipeline import BuildOptions, build
from pytest_repoexec.builder.testprompts import coverage_prompt, initial_prompt
from pytest_repoexec.cli import main
from pytest_repoexec.generation import GenerationError
from pytest_repoexec.postprocess import STOP_SEQUENCES
from pytest_repoexec.prompts import Prompt

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

OPS = '''\
"""Small arithmetic."""


def add(a, b):
    """The sum of a and b."""
    result = a + b
    return result


def sign(x):
    """1 for a positive number, -1 for a negative one, 0 for zero."""
    if x > 0:
        return 1
    if x < 0:
        return -1
    zero = 0
    return zero


def halve(x):
    """Half of x."""
    half = x / 2
    return half
'''

ADD_TESTS = '''\
Here are some tests:
```python
import random

def test_add_good():
    assert add(1, 2) == 3

def test_add_broken(:
    assert add(1

def test_add_nothing():
    assert 1 + 1 == 2

def test_add_random():
    assert add(random.random(), 1) >= 1

def test_add_wrong():
    assert add(2, 2) == 5

def test_add_none():
    assert add(None, 1) == 1

assert add(-1, 1) == 0
```
'''
SIGN_TESTS = "```python\nassert sign(5) == 1\n```"
SIGN_MORE = '''\
```python
def test_sign_negative():
    assert sign(-3) == -1

def test_sign_zero():
    assert sign(0) == 0
```
'''
ADD = Function("calc/ops.py", "calc.ops", "add", 'def add(a, b):\n    """The sum."""\n    return a + b\n', (3, 3))


def scripted(body: dict) -> str:
    """The model: good, broken, not calling, flaky, wrong and failing tests for add; one test for sign, two more
    when asked for coverage; nothing usable for halve."""
    prompt = prompt_of(body)
    if prompt.startswith("Here are some Python unit test functions") and "def sign(x):" in prompt:
        return SIGN_MORE
    if 'correctness of "add" function' in prompt:
        return ADD_TESTS
    if 'correctness of "sign" function' in prompt:
        return SIGN_TESTS
    return "I would rather not write tests for this one."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    loopback = LoopbackServer(scripted)
    yield loopback
    loopback.close()


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "calc").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "0.1"\n')
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text(OPS)
    return root


def _model(server: LoopbackServer, cache: Path, rounds: int = 2) -> ModelTestSettings:
    return ModelTestSettings("openai:test-model", ModelOptions(cache=cache, base_url=server.url), samples=2,
                             coverage_rounds=rounds)


def test_model_tests_are_sifted_fixed_topped_up_for_coverage_and_admitted(
        calc: Path, tmp_path: Path, repoexec_cache: Path, server: LoopbackServer) -> None:
    out = tmp_path / "calc"
    options = BuildOptions(str(calc), out, repoexec_cache, tests="model", model=_model(server, repoexec_cache),
                           gate_options=("--repoexec-mutants=2",))
    report = build(options, say=lambda line: None)

    add = report.generated["calc.ops:add"]
    assert add["kept"] == ["test_add_1", "test_add_good", "test_add_wrong"]
    dropped = {entry["test"]: entry["reason"] for entry in add["dropped"]}
    assert dropped["test_add_broken"].startswith("does not parse")
    assert dropped["test_add_nothing"] == "never calls the function"
    assert dropped["test_add_none"].startswith("fails with the reference: TypeError")
    assert dropped["test_add_random"] == "flaky over the gate's reruns"
    assert [line for line in add["fixed"] if line.startswith("test_add_wrong ")][0].endswith(": 5 -> 4")
    assert add["rounds"] == []  # its coverage was met at once
    tests = (out / "ops_add" / "test_ops_add.py").read_text()
    assert "assert add(2, 2) == 4" in tests and "def test_add_random" not in tests and "def test_add_1():" in tests
    assert tomllib.loads((out / "ops_add" / "problem.toml").read_text())["test_count"] == 3

    sign = report.generated["calc.ops:sign"]
    [first] = sign["rounds"]
    assert first["round"] == 1 and first["added"] == ["test_sign_negative", "test_sign_zero"]
    assert first["line_coverage"] == pytest.approx(100 * 2 / 6)  # sign(5) runs 2 of the 6 lines of its body
    assert sign["kept"] == ["test_sign_1", "test_sign_negative", "test_sign_zero"]
    asked = [prompt_of(body) for body in server.posts()]
    assert sum(prompt.startswith("Here are some Python unit test functions") for prompt in asked) == 1

    assert ("calc.ops:halve", NO_TEST) in report.skipped and "ops_halve" not in {p["name"] for p in report.problems}
    verdicts = {p["name"]: (p["verdict"], p["tests_from"], p["line_coverage"]) for p in report.problems}
    assert verdicts == {"ops_add": ("admitted", "model", 100.0), "ops_sign": ("admitted", "model", 100.0)}
    document = json.loads((out / "build-report.json").read_text())
    assert document["generated"]["calc.ops:sign"]["line_coverage"] == 100.0
    scored = subprocess.run([sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider",
                             f"--repoexec-cache={repoexec_cache}"], capture_output=True, text=True, cwd=tmp_path)
    assert scored.returncode == 0 and "2 passed" in scored.stdout, scored.stdout[-2000:]


def test_with_a_suite_the_model_writes_tests_only_for_the_functions_it_does_not_run(
        tmp_path: Path, repoexec_cache: Path, server: LoopbackServer) -> None:
    report_test = ('def test_report():\n    account = Account("a")\n    account.add(1)\n'
                   '    assert account.report() == "1"\n')
    server.answer = lambda body: report_test if '"Account.report" function' in prompt_of(body) else "no idea"
    repo = write_build_repo(tmp_path / "src")
    options = BuildOptions(str(repo), tmp_path / "tally", repoexec_cache, model=_model(server, repoexec_cache),
                           gate=False)
    report = build(options, say=lambda line: None)
    asked = sorted(prompt_of(body).split('correctness of "')[1].split('"')[0] for body in server.posts())
    assert asked == ["Account.report", "doubled", "prepared"]  # the suite runs the others (doubled's test fails)
    sources = {p["function"]: p["tests_from"] for p in report.problems}
    assert sources["tally.core:Account.report"] == "model" and sources["tally.core:total"] == "suite"
    [fixed] = report.generated["tally.core:Account.report"]["fixed"]
    assert fixed.startswith("test_report line ") and fixed.endswith(": \"1\" -> '100'")  # the reference's cents
    assert {function: reason for function, reason in report.skipped if reason == NO_TEST} == {
        "tally.core:doubled": NO_TEST, "tally.core:prepared": NO_TEST}


def test_a_model_with_nothing_usable_stops_the_build_at_generating_tests(
        calc: Path, tmp_path: Path, repoexec_cache: Path, server: LoopbackServer,
        capsys: pytest.CaptureFixture) -> None:
    server.answer = lambda body: "```python\ndef test_nothing():\n    assert True\n```"
    out = tmp_path / "calc"
    with pytest.raises(BuildError, match=r"project calc: generating tests: openai:test-model gave no usable test "
                                         r"for any of the 3 functions \(3 never calls the function\)"):
        build(BuildOptions(str(calc), out, repoexec_cache, model=_model(server, repoexec_cache)), say=lambda _: None)
    assert not out.exists() and not list(tmp_path.glob(".calc.building-*"))

    status = main(["build", str(calc), "--out", str(out), "--cache", str(repoexec_cache), "--tests=model",
                   "--model=openai:test-model", f"--base-url={server.url}", "--temperature=0",
                   "--tests-per-function=1"])
    assert status == 1 and "generating tests" in capsys.readouterr().err
    assert {body["temperature"] for body in server.posts()} == {0.2, 0.0} and server.posts()[-1]["n"] == 1
    assert main(["build", str(calc), "--out", str(out), "--model=openai:m", "--top-p=0"]) == 2
    assert main(["build", str(calc), "--out", str(out), "--cache", str(repoexec_cache), "--tests=model"]) == 1
    assert "tests from a model need --model=NAME" in capsys.readouterr().err


def test_the_stand_alone_generator_resolves_names_and_asks_with_or_without_stops(
        tmp_path: Path, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    options = ModelOptions(cache=tmp_path, base_url=server.url, api="completions",
                           aliases={"mine": "openai:real-model"})
    assert model_generator("openai:mine", options).backend.model == "real-model"
    generator = model_generator("mine", options)
    assert generator.backend.model == "real-model" and generator.settings.cache == tmp_path / "completions"
    server.answer = lambda body: " add(1, 1) == 2"
    prompts = {"p": Prompt(None, "assert")}
    assert ask(generator, prompts, 2) == {"p": [" add(1, 1) == 2"] * 2}
    assert ask(generator, prompts, 1, whole=True) == {"p": [" add(1, 1) == 2"]}
    first, second = server.posts()
    assert first["stop"] == list(STOP_SEQUENCES) and "stop" not in second  # whole: a module of tests, uncut
    assert ask(generator, prompts, 2) == {"p": [" add(1, 1) == 2"] * 2} and len(server.posts()) == 2  # cached

    with pytest.raises(GenerationError, match="expected BACKEND:MODEL"):
        model_generator("nothing-known", options)
    with pytest.raises(GenerationError, match="temperature >= 0"):
        ModelOptions(cache=tmp_path, sampling=Sampling(temperature=-1))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(GenerationError, match="set OPENAI_API_KEY"):
        model_generator("openai:m", options)


def test_the_papers_prompts_carry_the_context_the_function_and_the_tests() -> None:
    first = initial_prompt(ADD, "import math")
    assert first.instruction is None
    assert first.text == ('import math\n\n\ndef add(a, b):\n    """The sum."""\n    return a + b\n'
                          '# test to check the correctness of "add" function\nassert')
    wordings = [coverage_prompt(ADD, "import math", "def test_a():\n    assert add(1, 1) == 2\n", n).text
                for n in (1, 2, 3, 4)]
    assert wordings[0].startswith("Here are some Python unit test functions and the focal function that they test:"
                                  "\n# Test functions:\ndef test_a():\n    assert add(1, 1) == 2\n# Focal function:\n"
                                  "import math\n\n\ndef add(a, b):")
    assert "cover corner cases missed by the original" in wordings[1]
    assert wordings[2].startswith("Here is a focal function under test:\nimport math")
    assert wordings[3] == wordings[0]  # the wordings take turns


def test_harvest_keeps_sound_new_tests_and_says_why_it_drops_the_rest() -> None:
    continued = ' add(1, 1) == 2\nassert add(\n    2, 2\n) == 4\nassert add(1, 1) == 2\nassert 1 == 1\nprint("x")\n'
    found = harvest([continued], ADD, continued=True)
    assert found.tests == {"test_add_1": "def test_add_1():\n    assert add(1, 1) == 2",
                           "test_add_2": "def test_add_2():\n    assert add(\n        2, 2\n    ) == 4"}
    assert found.dropped == [("test_add_4", "never calls the function")]  # the repeated assertion is no new test

    answer = ("```python\nimport os\nimport numpy\nfrom . import helpers\n\n@pytest.mark.parametrize('a', [1])\n"
              "def test_p(a):\n    assert add(a, 0) == a\n\nclass TestAdd:\n    def test_x(self):\n"
              "        assert add(1, 1) == 2\n\ndef test_add_1():\n    assert add(3, 3) == 6\n```")
    module = extend(new_module(ADD, ["from __future__ import annotations", "import math"], "m"), found)
    more = harvest([answer, answer], ADD, continued=False, existing=module)
    assert more.imports == ["import os"]  # the standard library's only: another import could fail them all
    assert list(more.tests) == ["test_add_3"]  # renamed: test_add_1 is taken
    assert more.dropped == [("test_p", "decorated (parametrized or marked): not kept"),
                            ("TestAdd", "a test class: only test functions and assertions are kept")]
    extended = extend(module, more)
    assert extended.startswith('"""Tests of calc.ops.add, written by m, kept by repoexec build."""\n\nimport pytest\n'
                               "import math\nfrom calc.ops import *  # noqa: F403\nfrom calc.ops import add\n"
                               "import os\n")
    assert "from __future__" not in extended and extended.endswith("def test_add_3():\n    assert add(3, 3) == 6\n")
