"""vllm: the backend's contract, against a stand-in behind the VLLMEngine interface (vLLM needs a GPU and
cannot be installed here), and the error that says so where it is missing."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import SHIPPED
from generators.model import ModelGenerator, Sampling, Settings
from generators.vllm_backend import VLLMBackend
from pytest_repoexec.postprocess import STOP_SEQUENCES
from pytest_repoexec.problem import load_problem
from pytest_repoexec.prompts import build_prompt


class StandInEngine:
    """Answers each prompt with numbered bodies, and records every call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], int, Sampling]] = []

    def generate(self, prompts: list[str], n: int, sampling: Sampling) -> list[list[str]]:
        self.calls.append((prompts, n, sampling))
        return [[f"\n    return {len(self.calls)}, {i}, {j}" for j in range(n)] for i in range(len(prompts))]


def refuse_to_start():
    raise AssertionError("the engine was started although every completion was cached")


@pytest.fixture(scope="module")
def problems():
    return [load_problem(SHIPPED / name / "problem.toml") for name in ("textkit/slugify", "ledger/add_months")]


def test_every_prompt_and_sample_goes_in_one_call_with_the_papers_sampling(problems, tmp_path):
    engine = StandInEngine()
    completions = ModelGenerator(VLLMBackend("org/model", lambda: engine), Settings(cache=tmp_path)).generate(
        problems, None
    )
    ((prompts, n, sampling),) = engine.calls
    assert prompts == [build_prompt(problem).text for problem in problems]
    assert (n, sampling) == (10, Sampling(temperature=0.2, top_p=0.95, max_tokens=512, stop=STOP_SEQUENCES))
    assert completions == {
        problem.id: [f"\n    return 1, {i}, {j}" for j in range(10)] for i, problem in enumerate(problems)
    }


def test_the_engine_starts_only_for_completions_not_in_the_cache(problems, tmp_path):
    settings = Settings(cache=tmp_path)
    first = ModelGenerator(VLLMBackend("org/model", StandInEngine), settings).generate(problems, 3)
    assert ModelGenerator(VLLMBackend("org/model", refuse_to_start), settings).generate(problems, 3) == first
    engine = StandInEngine()
    ModelGenerator(VLLMBackend("org/other-model", lambda: engine), settings).generate(problems, 3)
    assert len(engine.calls) == 1  # another model is another key


def test_instruct_prompts_are_put_in_the_models_chat_template(problems, tmp_path):
    from tiny_model import tiny_tokenizer

    folder = tmp_path / "model"
    tiny_tokenizer().save_pretrained(folder)
    engine = StandInEngine()
    settings = Settings(cache=tmp_path / "cache", style="instruct1", level="small")
    ModelGenerator(VLLMBackend(str(folder), lambda: engine), settings).generate(problems[:1], 1)
    prompt = build_prompt(problems[0], "instruct1", "small")
    assert engine.calls[0][0] == [f"<|user|>\n{prompt.instruction}\n<|assistant|>{prompt.response}"]


def test_without_vllm_the_error_suggests_hf_and_openai(pytester, mini):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("platform: vLLM is installed here, and this test is of its absence")
    result = pytester.runpytest(str(mini), "--repoexec-model=codellama", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*--repoexec-model=vllm:codellama/CodeLlama-13b-Python-hf: vllm is not installed:*"
        "use hf:codellama/CodeLlama-13b-Python-hf (transformers, CPU or GPU) or openai:MODEL (a server) instead"
    ])
