"""Model generators outside a pytest session, for ``repoexec build --model``: the backends, the completions
cache and the sampling of ``--repoexec-model``, made from plain options rather than a pytest config (whose
options and ini aliases exist only inside a session), and asked about prompts other than a problem's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_repoexec.generation import GenerationError
from pytest_repoexec.prompts import Prompt

from .hf import transformers_backend
from .model import BACKENDS, DEFAULT_ALIASES, Backend, ModelGenerator, Sampling, Settings
from .openai_api import openai_backend
from .vllm_backend import vllm_backend


@dataclass(frozen=True)
class ModelOptions:
    """What the ``--repoexec-*`` options give a model generator; each field is the option without the prefix."""

    cache: Path  # the engine's cache: completions are kept under its completions/, as in a session
    sampling: Sampling = Sampling()
    base_url: str | None = None  # openai: (None: OPENAI_BASE_URL, else OpenAI's)
    api: str = "chat"
    concurrency: int = 8
    request_timeout: float = 600.0
    retries: int = 5
    dtype: str = "auto"  # hf: and vllm:
    batch_size: int = 8  # hf:
    tensor_parallel_size: int = 1  # vllm:
    aliases: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_ALIASES))

    def __post_init__(self) -> None:
        sampling = self.sampling
        if sampling.temperature < 0 or not 0 < sampling.top_p <= 1 or sampling.max_tokens < 1:
            raise GenerationError("sampling needs temperature >= 0, 0 < top-p <= 1 and max-tokens >= 1")
        if min(self.concurrency, self.batch_size, self.tensor_parallel_size) < 1 or self.retries < 0:
            raise GenerationError("concurrency, batch size and tensor parallel size must be at least 1, "
                                  "retries at least 0")


def model_generator(name: str, options: ModelOptions) -> ModelGenerator:
    """The generator ``--repoexec-model=NAME`` would make: ``openai:MODEL``, ``hf:MODEL``, ``vllm:MODEL`` or an
    alias of one (the paper's models, or ``options.aliases``); an alias may also stand for a backend's model."""
    backend, _, model = options.aliases.get(name, name).partition(":")
    if backend not in BACKENDS or not model:
        known = ", ".join(sorted(options.aliases))
        raise GenerationError(f"{name!r}: expected BACKEND:MODEL (BACKEND one of {', '.join(BACKENDS)}) or an "
                              f"alias ({known})")
    model = options.aliases.get(model, "").partition(":")[2] or model
    if backend != "openai" and Path(model).expanduser().is_dir():
        model = str(Path(model).expanduser().resolve())
    made = {"openai": _openai, "hf": _transformers, "vllm": _vllm}[backend](model, options)
    return ModelGenerator(made, Settings(cache=options.cache / "completions", sampling=options.sampling))


def ask(generator: ModelGenerator, prompts: Mapping[str, Prompt], n: int, whole: bool = False) -> dict[str, list[str]]:
    """``n`` answers to each prompt, from the generator's cache first. ``whole``: a backend that continues the
    prompt writes past the stop sequences that end a function's body (the answer is a module of tests)."""
    return generator.complete(prompts, n, generator.settings.sampling, "test generation", cut=not whole)


def _openai(model: str, options: ModelOptions) -> Backend:
    return openai_backend(model, options.base_url, options.api, options.concurrency, options.request_timeout,
                          options.retries)


def _transformers(model: str, options: ModelOptions) -> Backend:
    return transformers_backend(model, options.dtype, options.batch_size)


def _vllm(model: str, options: ModelOptions) -> Backend:
    return vllm_backend(model, options.tensor_parallel_size, options.dtype)
