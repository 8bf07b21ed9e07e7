"""hf: with a real transformers model: a tiny, randomly initialised GPT-2 built here, so its output is noise."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from generators.hf import TransformersBackend
from generators.model import ModelGenerator, Sampling, Settings
from mini_project import write_mini_project
from pytest_repoexec.candidate import make_candidate
from pytest_repoexec.postprocess import STOP_SEQUENCES, cut_at_stop
from pytest_repoexec.problem import load_problem
from pytest_repoexec.prompts import build_prompt
from tiny_model import write_tiny_model

NOISE = Sampling(temperature=3.0, top_p=1.0, max_tokens=40, stop=STOP_SEQUENCES)  # near-uniform over the tokens
ARGMAX = dataclasses.replace(NOISE, temperature=1.0, top_p=1e-6)  # the nucleus is the likeliest token alone


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """A model this small runs many times faster on one thread than on several."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def backend(model_folder):
    return TransformersBackend(str(model_folder), batch_size=3)


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    """The mini project's problems: short prompts keep the CPU's work small."""
    project = write_mini_project(tmp_path_factory.mktemp("hf"))
    return [load_problem(project / name / "problem.toml") for name in ("scaled", "swap")]


def prompts(backend, problems, styles=("base", "instruct1")):
    """Four different prompts out of two problems."""
    return [backend.render(build_prompt(problem, style)) for problem in problems for style in styles]


def test_batches_of_prompts_give_n_samples_each_within_max_tokens(backend, problems):
    torch.manual_seed(0)
    results = dict(backend.complete(prompts(backend, problems), 4, NOISE))
    assert sorted(results) == [0, 1, 2, 3]  # four prompts in batches of three
    for texts in results.values():
        assert len(texts) == 4
        assert len(set(texts)) > 1  # sampled at a high temperature: the samples differ
        assert all(len(backend.tokenizer(text)["input_ids"]) <= NOISE.max_tokens for text in texts)


def test_top_p_and_temperature_reach_the_model_and_padding_does_not_change_answers(backend, problems):
    batched = dict(backend.complete(prompts(backend, problems), 3, ARGMAX))
    alone = [next(backend.complete([prompt], 3, ARGMAX))[1] for prompt in prompts(backend, problems)]
    assert list(batched.values()) == alone
    assert all(len(set(texts)) == 1 for texts in alone)  # a nucleus of one token leaves no choice
    greedy = dict(backend.complete(prompts(backend, problems), 3, dataclasses.replace(ARGMAX, temperature=0.0)))
    assert greedy == batched  # temperature 0 is greedy decoding, given n times


def test_generation_ends_at_the_stop_sequences(backend, problems):
    def sample(stop):
        torch.manual_seed(7)
        return dict(backend.complete(prompts(backend, problems), 4, dataclasses.replace(NOISE, stop=stop)))

    unstopped, stopped = sample(()), sample(STOP_SEQUENCES)
    assert stopped == {i: [cut_at_stop(text) for text in texts] for i, texts in unstopped.items()}
    assert stopped != unstopped  # some samples did reach a stop sequence
    assert not any(stop in text for texts in stopped.values() for text in texts for stop in STOP_SEQUENCES)


def test_instruct_prompts_use_the_chat_template_with_the_code_prefilled(backend, problems):
    (text,) = prompts(backend, problems[:1], ["instruct2"])
    prompt = build_prompt(problems[0], "instruct2")
    assert text == f"<|user|>\n{prompt.instruction}\n<|assistant|>{prompt.response}"


def test_the_generator_caches_and_post_processing_makes_candidates_of_noise(backend, problems, tmp_path):
    generator = ModelGenerator(backend, Settings(cache=tmp_path, sampling=NOISE))
    torch.manual_seed(0)
    completions = generator.generate(problems, 3)
    assert generator.generate(problems, 3) == completions  # from the cache: a fresh draw would differ
    for problem in problems:
        for completion in completions[problem.id]:
            candidate = make_candidate(problem, completion)
            assert not any(stop in completion for stop in STOP_SEQUENCES)  # the generator always applies them
            assert candidate.error_type == "EmptyCompletion" or candidate.function.startswith(problem.signature)


def test_a_whole_run_with_an_hf_model_folder(model_folder, mini, run_repoexec):
    result, report = run_repoexec(
        str(mini), f"--repoexec-model=hf:{model_folder}", "--repoexec-n=2", "--repoexec-max-tokens=8",
        "--repoexec-batch-size=1", "--repoexec-temperature=1.5",
    )
    assert report is not None and len(report["samples"]) == 4
    assert report["metrics"]["pass@1"] == 0.0  # noise does not pass


def test_revisions_are_greedy_whatever_the_runs_sampling(backend, problems, tmp_path):
    generator = ModelGenerator(backend, Settings(cache=tmp_path, sampling=NOISE))
    named = {problem.id: build_prompt(problem) for problem in problems}
    torch.manual_seed(1)
    first = generator.revise(named)
    greedy = dataclasses.replace(NOISE, temperature=0.0, top_p=1.0)
    expected = dict(backend.complete([backend.render(prompt) for prompt in named.values()], 1, greedy))
    assert first == {name: expected[i][0] for i, name in enumerate(named)}
    torch.manual_seed(2)
    assert ModelGenerator(backend, Settings(cache=tmp_path / "other", sampling=NOISE)).revise(named) == first
