"""``vllm:MODEL``: completions from vLLM on this machine's GPUs, every prompt of the run with all its samples
in one ``generate`` call, vLLM doing the batching.

vLLM's entry points sit behind ``VLLMEngine``, so that the backend can be checked against a stand-in where
vLLM cannot be installed; the engine is only started when some completion is not in the cache.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import pytest

from pytest_repoexec.generation import GenerationError, GeneratorRegistry
from pytest_repoexec.prompts import Prompt, chat_text

from .hf import load_tokenizer
from . import engine_disabled
from .model import ModelGenerator, Sampling, Settings, local_model, require


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if engine_disabled(pluginmanager):
        return
    parser.getgroup("repoexec").addoption("--repoexec-tensor-parallel-size", type=int, default=1, metavar="N",
                                          help="GPUs one vllm: model spans (default 1)")


class VLLMEngine(Protocol):
    def generate(self, prompts: list[str], n: int, sampling: Sampling) -> list[list[str]]:
        """``n`` completions of each prompt, in the prompts' order, each ending before a stop sequence."""


class VLLM:
    """The real engine: ``vllm.LLM`` and its ``SamplingParams``."""

    def __init__(self, model: str, tensor_parallel_size: int = 1, dtype: str = "auto") -> None:
        from vllm import LLM

        self.llm = LLM(model=model, tensor_parallel_size=tensor_parallel_size, dtype=dtype)

    def generate(self, prompts: list[str], n: int, sampling: Sampling) -> list[list[str]]:
        from vllm import SamplingParams

        params = SamplingParams(
            n=n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
        )
        return [[output.text for output in result.outputs] for result in self.llm.generate(prompts, params)]


class VLLMBackend:
    continues = True  # as with hf: a base prompt is continued, an instruction's answer is prefilled
    tokens = None  # one batched call, which draws vLLM's own bar with its rates

    def __init__(self, model: str, engine: Callable[[], VLLMEngine], dtype: str = "auto") -> None:
        self.model_name, self._start_engine = model, engine
        self.identity = {"backend": "vllm", "model": model, "dtype": dtype}

    @functools.cached_property
    def engine(self) -> VLLMEngine:
        return self._start_engine()

    @functools.cached_property
    def tokenizer(self) -> Any:
        return load_tokenizer(self.model_name)

    def render(self, prompt: Prompt) -> str:
        return chat_text(prompt, self.tokenizer if prompt.instruction is not None else None)

    def complete(self, rendered: Sequence[str], n: int, sampling: Sampling) -> Iterator[tuple[int, list[str]]]:
        yield from enumerate(self.engine.generate(list(rendered), n, sampling))


def vllm_backend(model: str, tensor_parallel_size: int, dtype: str) -> VLLMBackend:
    """The backend of ``vllm:MODEL`` (a session's and ``repoexec build``'s): vLLM and a GPU, or why not."""
    instead = f"; use hf:{model} (transformers, CPU or GPU) or openai:MODEL (a server) instead"
    require("vllm", extra="vllm", hint=instead)
    import torch

    if not torch.cuda.is_available():
        raise GenerationError(f"vLLM needs a GPU and none is visible{instead}")
    engine = functools.partial(VLLM, model, tensor_parallel_size, dtype)
    return VLLMBackend(model, engine, dtype)


def _make(argument: str | None, config: pytest.Config) -> ModelGenerator:
    backend = vllm_backend(local_model(argument, config), config.getoption("repoexec_tensor_parallel_size"),
                           config.getoption("repoexec_dtype"))
    return ModelGenerator(backend, Settings.from_config(config))


@pytest.hookimpl(optionalhook=True)
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("vllm", _make, "vLLM on this machine's GPUs: vllm:ORG/NAME, vllm:FOLDER or vllm:ALIAS")
