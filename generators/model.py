"""What the model generators share: prompt and sampling options, the cache of completions, the aliases of the
paper's models, and ``ModelGenerator``, which turns problems into prompts and asks a backend only for the
completions that the cache does not hold yet.

A backend (``openai``, ``hf``, ``vllm``) only renders a prompt into what its model takes and samples
completions for a batch of them.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from pytest_repoexec.completion_cache import CompletionCache, cache_key
from pytest_repoexec import progress
from pytest_repoexec.environment import default_cache_dir
from pytest_repoexec.generation import GenerationError, Generator, GeneratorRegistry, write_completions
from pytest_repoexec.postprocess import STOP_SEQUENCES
from pytest_repoexec.problem import CONTEXT_LEVELS, Problem
from pytest_repoexec.prompts import PROMPT_STYLES, Prompt, build_prompt

from . import engine_disabled

DEFAULT_SAMPLES = 10  # the paper's, as are the sampling defaults below
BACKENDS = ("hf", "openai", "vllm")
DEFAULT_ALIASES = {
    "codellama": "vllm:codellama/CodeLlama-13b-Python-hf",
    "codellama-34b": "vllm:codellama/CodeLlama-34b-Python-hf",
    "starcoder2": "vllm:bigcode/starcoder2-15b",
    "wizardcoder": "vllm:WizardLM/WizardCoder-Python-13B-V1.0",
    "deepseek-coder": "vllm:deepseek-ai/deepseek-coder-6.7b-base",
}
aliases_key = pytest.StashKey[dict[str, str]]()


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if engine_disabled(pluginmanager):
        return
    group = parser.getgroup("repoexec")
    group.addoption("--repoexec-prompt", choices=PROMPT_STYLES, default="base",
                    help="prompt of model generators: base (default), instruct1 or instruct2 (the paper's)")
    group.addoption("--repoexec-context", choices=CONTEXT_LEVELS, default="full",
                    help="dependency context in the prompt: full (default), medium or small")
    group.addoption("--repoexec-temperature", type=float, default=0.2, metavar="T",
                    help="sampling temperature of model generators (default 0.2)")
    group.addoption("--repoexec-top-p", type=float, default=0.95, metavar="P",
                    help="nucleus sampling of model generators (default 0.95)")
    group.addoption("--repoexec-max-tokens", type=int, default=512, metavar="N",
                    help="most tokens a model writes for one completion (default 512)")
    group.addoption("--repoexec-dtype", default="auto", metavar="DTYPE",
                    help="weights' dtype for hf: and vllm: (auto, float16, bfloat16, float32)")
    group.addoption("--repoexec-save-completions", default=None, metavar="PATH",
                    help="write the run's completions as JSONL, for replay:PATH")
    parser.addini("repoexec_aliases", type="linelist", default=[],
                  help="model aliases, one a line: NAME = BACKEND:MODEL (BACKEND: hf, openai or vllm)")


@dataclass(frozen=True)
class Sampling:
    temperature: float = 0.2
    top_p: float = 0.95
    max_tokens: int = 512
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Settings:
    cache: Path
    style: str = "base"
    level: str = "full"
    sampling: Sampling = Sampling()
    save_to: Path | None = None
    progress: bool = False  # draw a bar of the requests (see pytest_repoexec.progress)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Settings:
        sampling = Sampling(
            config.getoption("repoexec_temperature"),
            config.getoption("repoexec_top_p"),
            config.getoption("repoexec_max_tokens"),
        )
        if sampling.temperature < 0 or not 0 < sampling.top_p <= 1 or sampling.max_tokens < 1:
            raise GenerationError(
                "sampling needs --repoexec-temperature >= 0, 0 < --repoexec-top-p <= 1, --repoexec-max-tokens >= 1"
            )
        cache = config.getoption("repoexec_cache")
        save_to = config.getoption("repoexec_save_completions")
        return cls(
            cache=(Path(cache).resolve() if cache else default_cache_dir()) / "completions",
            style=config.getoption("repoexec_prompt"),
            level=config.getoption("repoexec_context"),
            sampling=sampling,
            save_to=Path(save_to) if save_to else None,
            progress=progress.wanted(config),
        )


class Backend(Protocol):
    identity: Mapping[str, Any]  # what decides the answers besides prompt and sampling: backend, model, endpoint
    continues: bool  # whether answers continue the prompt's code, and so end at the stop sequences
    tokens: int | None  # tokens the model has written so far, where the backend learns it (for the rate shown)

    def render(self, prompt: Prompt) -> Any:
        """The prompt as the model takes it (JSON-serialisable: it is part of the cache key)."""

    def complete(self, rendered: Sequence[Any], n: int, sampling: Sampling) -> Iterator[tuple[int, list[str]]]:
        """``n`` completions of each rendered prompt, as (index in ``rendered``, completions) when ready."""


@dataclass(frozen=True)
class Timing:
    """One call of the backend: its prompts, those it answered (the rest came from the cache), how long it took
    and the tokens the model wrote, where the backend counts them."""

    what: str  # "generation", "debugging answers"
    prompts: int
    answered: int
    seconds: float
    tokens: int | None

    def describe(self) -> str:
        """``generation: 24 prompts, 24 answered by the model in 2m10s, 35 tokens/s``"""
        cached = self.prompts - self.answered
        text = f"{self.what}: {self.prompts} prompts"
        if not self.answered:
            return text + ", every answer from the cache"
        text += f", {self.answered} answered by the model in {progress.duration(self.seconds)}"
        if self.tokens is not None:
            text += f", {self.tokens} tokens at {self.tokens / max(self.seconds, 1e-6):.1f} tokens/s"
        return text + (f" ({cached} from the cache)" if cached else "")


class ModelGenerator:
    """Prompts for every problem, completions from the cache, the missing ones from the backend."""

    def __init__(self, backend: Backend, settings: Settings) -> None:
        self.backend = backend
        self.settings = settings
        self.cache = CompletionCache(settings.cache)
        self.timings: list[Timing] = []  # each call of the backend, for the summary

    def count(self, problem: Problem, limit: int | None) -> int:
        return DEFAULT_SAMPLES if limit is None else limit

    def generate(self, problems: Sequence[Problem], limit: int | None) -> dict[str, list[str]]:
        n = DEFAULT_SAMPLES if limit is None else limit
        prompts = {problem.id: build_prompt(problem, self.settings.style, self.settings.level) for problem in problems}
        completions = self.complete(prompts, n, self.settings.sampling)
        if self.settings.save_to is not None:
            write_completions(self.settings.save_to, completions)
        return completions

    def revise(self, prompts: Mapping[str, Prompt]) -> dict[str, str]:
        """One greedy answer to each debugging prompt, as the paper's debugging rounds ask."""
        greedy = dataclasses.replace(self.settings.sampling, temperature=0.0, top_p=1.0)
        return {name: texts[0] for name, texts in self.complete(prompts, 1, greedy, "debugging answers").items()}

    def complete(
        self, prompts: Mapping[str, Prompt], n: int, sampling: Sampling, what: str = "generation", cut: bool = True
    ) -> dict[str, list[str]]:
        """``n`` completions of each prompt: what the cache holds, and the rest from the backend. ``cut``: a
        backend that continues the prompt stops at the end of a function's body (the paper's stop sequences);
        without it the answer may be a whole module (tests)."""
        sampling = dataclasses.replace(sampling, stop=STOP_SEQUENCES if self.backend.continues and cut else ())
        keys: dict[str, str] = {}
        requests: dict[str, Any] = {}  # one per distinct prompt
        for name, prompt in prompts.items():
            rendered = self.backend.render(prompt)
            key = cache_key({**self.backend.identity, "prompt": rendered, **dataclasses.asdict(sampling)})
            keys[name], requests[key] = key, rendered
        stored = {key: self.cache.get(key) for key in requests}
        missing: dict[int, list[str]] = defaultdict(list)  # how many more samples -> the prompts that need them
        for key, texts in stored.items():
            if len(texts) < n:
                missing[n - len(texts)].append(key)
        asked = sum(map(len, missing.values()))
        began, tokens = time.monotonic(), self.backend.tokens
        answered = 0
        try:
            with progress.bar(asked, what, "request", self.settings.progress and asked > 0) as shown:
                for count, group in missing.items():
                    for index, texts in self.backend.complete([requests[key] for key in group], count, sampling):
                        stored[group[index]] = self.cache.add(group[index], texts)
                        answered += 1
                        if tokens is not None and self.backend.tokens is not None:
                            rate = (self.backend.tokens - tokens) / max(time.monotonic() - began, 1e-6)
                            shown.set_postfix_str(f"{rate:.0f} tokens/s", refresh=False)
                        shown.update()
        finally:
            written = None if tokens is None or self.backend.tokens is None else self.backend.tokens - tokens
            self.timings.append(Timing(what, len(requests), answered, time.monotonic() - began, written))
        short = [name for name, key in keys.items() if len(stored[key]) < n]
        if short:
            raise GenerationError(f"the model gave fewer than {n} completions for {', '.join(short)}")
        return {name: stored[key][:n] for name, key in keys.items()}


def require(*packages: str, extra: str, hint: str = "") -> None:
    """Fail before generation, naming what to install, when a backend's packages are missing."""
    for package in packages:
        if importlib.util.find_spec(package) is None:
            raise GenerationError(f"{package} is not installed: pip install 'pytest-repoexec[{extra}]'{hint}")


# Aliases: names of models (the paper's by default) that stand for BACKEND:MODEL, overridable in the ini file.


def pytest_configure(config: pytest.Config) -> None:
    if engine_disabled(config.pluginmanager):
        return
    aliases = dict(DEFAULT_ALIASES)
    for line in config.getini("repoexec_aliases"):
        name, equals, target = (part.strip() for part in line.partition("="))
        backend, colon, model = target.partition(":")
        if not (equals and colon and model) or backend not in BACKENDS or not re.fullmatch(r"[\w.-]+", name):
            raise pytest.UsageError(
                f"repoexec_aliases: {line!r}: expected NAME = BACKEND:MODEL, BACKEND one of {', '.join(BACKENDS)}"
            )
        aliases[name] = target
    config.stash[aliases_key] = aliases
    config.pluginmanager.register(_AliasGenerators(aliases), "repoexec-model-aliases")


class _AliasGenerators:
    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases

    @pytest.hookimpl(trylast=True, optionalhook=True)  # after every generator, so that an alias cannot take a generator's name
    def pytest_repoexec_add_generators(self, registry: GeneratorRegistry) -> None:
        for name, target in self.aliases.items():
            try:
                registry.add(name, functools.partial(_create_alias, registry, name, target), f"alias of {target}")
            except ValueError:
                raise pytest.UsageError(f"repoexec_aliases: {name} is already the name of a generator") from None


def _create_alias(
    registry: GeneratorRegistry, name: str, target: str, argument: str | None, config: pytest.Config
) -> Generator:
    if argument is not None:
        raise GenerationError(f"the alias {name} stands for {target} and takes no argument")
    return registry.create(target, config)


def describe_aliases(config: pytest.Config) -> str:
    return "".join(f"\n  {name} = {target}" for name, target in sorted(config.stash[aliases_key].items()))


def aliased(argument: str | None, config: pytest.Config) -> str:
    """The model named by a generator's argument: an alias's model, or the argument itself."""
    if not argument:
        raise GenerationError(f"name the model, as BACKEND:MODEL; aliases:{describe_aliases(config)}")
    target = config.stash[aliases_key].get(argument)
    return target.partition(":")[2] if target else argument


def local_model(argument: str | None, config: pytest.Config) -> str:
    """The model a local backend loads: an alias's, a folder, a GGUF file, or a Hugging Face id (``org/name``)."""
    model = aliased(argument, config)
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser().resolve())
    if model.endswith(".gguf"):
        if not Path(model).expanduser().is_file():
            raise GenerationError(f"{model}: no such GGUF file")
        return str(Path(model).expanduser().resolve())
    if re.fullmatch(r"[\w.-]+/[\w.-]+", model) and not model.startswith("."):
        return model
    raise GenerationError(
        f"{model!r} is neither a model folder, a GGUF file, a Hugging Face id (org/name) nor an alias; aliases:"
        f"{describe_aliases(config)}"
    )
