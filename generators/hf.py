"""``hf:MODEL``: completions from a transformers model on this machine (GPU when there is one, else CPU).

Prompts go in batches (left-padded), each asking for all its samples at once (``num_return_sequences``);
generation of a sample stops at the first stop sequence, which is cut off the text.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_repoexec.generation import GenerationError, GeneratorRegistry
from pytest_repoexec.postprocess import cut_at_stop
from pytest_repoexec.prompts import Prompt, chat_text

from . import engine_disabled
from .model import ModelGenerator, Sampling, Settings, local_model, require


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if engine_disabled(pluginmanager):
        return
    parser.getgroup("repoexec").addoption("--repoexec-batch-size", type=int, default=8, metavar="N",
                                          help="prompts per generate call of hf: (default 8)")


def pretrained(model: str) -> tuple[str, dict[str, str]]:
    """What ``from_pretrained`` takes for ``model``: a folder or a hub id as it is; for a GGUF file, its folder
    and ``gguf_file`` (transformers dequantizes the weights to the dtype asked, float32 by default)."""
    if model.endswith(".gguf") and Path(model).is_file():
        path = Path(model)
        return str(path.parent), {"gguf_file": path.name}
    return model, {}


def load_tokenizer(model: str) -> Any:
    """The model's tokenizer, set up for batches of prompts: left padding, and a pad token."""
    from transformers import AutoTokenizer

    where, options = pretrained(model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, **options)
    except (OSError, ValueError) as exc:
        raise GenerationError(f"cannot load the tokenizer of {model}: {exc}") from None
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


class TransformersBackend:
    continues = True  # a base prompt is continued, an instruction's answer is prefilled with the code

    def __init__(self, model: str, dtype: str = "auto", batch_size: int = 8) -> None:
        self.model_name, self.dtype, self.batch_size = model, dtype, batch_size
        self.identity = {"backend": "hf", "model": model, "dtype": dtype}
        self.tokens = 0

    @functools.cached_property
    def tokenizer(self) -> Any:
        return load_tokenizer(self.model_name)

    @functools.cached_property
    def model(self) -> Any:
        import torch
        from transformers import AutoModelForCausalLM

        where, options = pretrained(self.model_name)
        dtype = "float32" if options and self.dtype == "auto" else self.dtype  # GGUF: no dtype of its own to keep
        try:
            model = AutoModelForCausalLM.from_pretrained(where, dtype=dtype, **options)
        except (OSError, ValueError, ImportError) as exc:  # ImportError: a GGUF file without the gguf package
            raise GenerationError(f"cannot load {self.model_name}: {exc}") from None
        return model.to("cuda" if torch.cuda.is_available() else "cpu").eval()

    def render(self, prompt: Prompt) -> str:
        return chat_text(prompt, self.tokenizer)

    def complete(self, rendered: Sequence[str], n: int, sampling: Sampling) -> Iterator[tuple[int, list[str]]]:
        for start in range(0, len(rendered), self.batch_size):
            batch = rendered[start : start + self.batch_size]
            yield from enumerate(self._generate(batch, n, sampling), start)

    def _generate(self, batch: Sequence[str], n: int, sampling: Sampling) -> list[list[str]]:
        import torch

        tokenizer = self.tokenizer
        bos = tokenizer.bos_token
        encoded = [  # a chat template writes its own BOS
            tokenizer(text, add_special_tokens=not (bos and text.startswith(bos)))["input_ids"] for text in batch
        ]
        inputs = tokenizer.pad({"input_ids": encoded}, return_tensors="pt").to(self.model.device)
        sample = sampling.temperature > 0  # temperature 0 is greedy: one answer, given n times
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                do_sample=sample,
                temperature=sampling.temperature if sample else None,
                top_p=sampling.top_p if sample else None,
                num_return_sequences=n if sample else 1,
                max_new_tokens=sampling.max_tokens,
                stop_strings=list(sampling.stop) or None,
                tokenizer=tokenizer,
                pad_token_id=tokenizer.pad_token_id,
            )
        written = output[:, inputs["input_ids"].shape[1] :]
        self.tokens += int((written != tokenizer.pad_token_id).sum())
        texts = tokenizer.batch_decode(written, skip_special_tokens=True)
        texts = [cut_at_stop(text, sampling.stop) for text in texts]
        per_prompt = len(texts) // len(batch)
        return [(texts[i * per_prompt : (i + 1) * per_prompt] * n)[:n] for i in range(len(batch))]


def transformers_backend(model: str, dtype: str, batch_size: int) -> TransformersBackend:
    """The backend of ``hf:MODEL`` (a session's and ``repoexec build``'s); the model loads on first use."""
    require("torch", "transformers", *(["gguf", "accelerate"] if model.endswith(".gguf") else []), extra="hf")
    return TransformersBackend(model, dtype, batch_size)


def _make(argument: str | None, config: pytest.Config) -> ModelGenerator:
    model = local_model(argument, config)
    dtype, batch_size = config.getoption("repoexec_dtype"), config.getoption("repoexec_batch_size")
    if batch_size < 1:
        raise GenerationError(f"--repoexec-batch-size must be at least 1, got {batch_size}")
    return ModelGenerator(transformers_backend(model, dtype, batch_size), Settings.from_config(config))


@pytest.hookimpl(optionalhook=True)
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("hf", _make, "a transformers model: hf:ORG/NAME, hf:FOLDER, hf:FILE.gguf or hf:ALIAS (CPU or GPU)")
