"""``openai:MODEL``: completions from an OpenAI-compatible server (OpenAI itself, vLLM's or TGI's server, ...)
through the official client, one request per prompt asking for every sample, several requests at a time.

The client retries 429 and 5xx answers and timeouts itself, with exponential backoff that honours the
server's Retry-After; what still fails stops generation, keeping what was already cached.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import pytest

from pytest_repoexec.generation import GenerationError, GeneratorRegistry
from pytest_repoexec.prompts import Prompt, chat_messages

from . import engine_disabled
from .model import ModelGenerator, Sampling, Settings, aliased, require

KEY_VARIABLE = "OPENAI_API_KEY"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if engine_disabled(pluginmanager):
        return
    group = parser.getgroup("repoexec")
    group.addoption("--repoexec-base-url", default=None, metavar="URL",
                    help="server of openai: (default: OPENAI_BASE_URL, else OpenAI's)")
    group.addoption("--repoexec-api", choices=("chat", "completions"), default="chat",
                    help="endpoint of openai: chat (default) or completions (the prompt is continued)")
    group.addoption("--repoexec-concurrency", type=int, default=8, metavar="N",
                    help="requests of openai: under way at once (default 8)")
    group.addoption("--repoexec-request-timeout", type=float, default=600.0, metavar="SECONDS",
                    help="limit of one openai: request (default 600)")
    group.addoption("--repoexec-retries", type=int, default=5, metavar="N",
                    help="retries of an openai: request on 429, 5xx or timeout, with backoff (default 5)")


class OpenAIBackend:
    def __init__(self, client: Any, model: str, api: str = "chat", concurrency: int = 8) -> None:
        self.client, self.model, self.api, self.concurrency = client, model, api, concurrency
        self.identity = {"backend": "openai", "base_url": str(client.base_url), "api": api, "model": model}
        self.continues = api == "completions"
        self.tokens: int | None = 0
        self._checked = False

    def render(self, prompt: Prompt) -> Any:
        return prompt.text if self.continues else chat_messages(prompt)

    def complete(self, rendered: Sequence[Any], n: int, sampling: Sampling) -> Iterator[tuple[int, list[str]]]:
        self._check_server()
        failure: Exception | None = None
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = {pool.submit(self._request, request, n, sampling): i for i, request in enumerate(rendered)}
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                try:
                    texts, tokens = future.result()
                except Exception as exc:  # the client's errors, reported once the others are in
                    failure = failure or exc
                    for pending in futures:
                        pending.cancel()
                    continue
                if self.tokens is not None:
                    self.tokens = None if tokens is None else self.tokens + tokens  # a server without usage: no rate
                yield futures[future], texts  # finished requests are kept even when another one failed
        if failure is not None:
            raise GenerationError(f"a request to {self.client.base_url} failed: {_describe(failure)}")

    def _request(self, request: Any, n: int, sampling: Sampling) -> tuple[list[str], int | None]:
        """The request's ``n`` completions, and the tokens written for them where the server says. A server that
        gives fewer choices than ``n`` asks (llama.cpp's Python server ignores ``n``: one each) is asked again
        for the rest."""
        texts: list[str] = []
        tokens: int | None = 0
        while len(texts) < n:
            more, written = self._ask(request, n - len(texts), sampling)
            if not more:
                raise GenerationError(f"{self.client.base_url} answered a request with no completion")
            texts += more[: n - len(texts)]
            tokens = None if tokens is None or written is None else tokens + written
        return texts, tokens

    def _ask(self, request: Any, n: int, sampling: Sampling) -> tuple[list[str], int | None]:
        options: dict[str, Any] = {
            "model": self.model, "n": n, "temperature": sampling.temperature, "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.stop:
            options["stop"] = list(sampling.stop)
        if self.continues:
            answer = self.client.completions.create(prompt=request, **options)
            texts = [choice.text for choice in sorted(answer.choices, key=lambda c: c.index)]
        else:
            answer = self.client.chat.completions.create(messages=request, **options)
            texts = [choice.message.content or "" for choice in sorted(answer.choices, key=lambda c: c.index)]
        return texts, answer.usage.completion_tokens if answer.usage else None

    def _check_server(self) -> None:
        """Fail with a clear message before the first batch when the server is out of reach or refuses the key.

        Listing models is cheap; a server without that endpoint is not held against it.
        """
        if self._checked:
            return
        import openai

        server = self.client.base_url
        try:
            self.client.with_options(max_retries=0, timeout=30.0).models.list()
        except openai.AuthenticationError as exc:
            raise GenerationError(f"{server} refused the key in {KEY_VARIABLE}: {exc.message}") from None
        except openai.APIConnectionError as exc:
            raise GenerationError(
                f"cannot reach {server} ({_describe(exc)}); set --repoexec-base-url or OPENAI_BASE_URL"
            ) from None
        except openai.APIStatusError:
            pass
        self._checked = True


def _describe(exc: Exception) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timed out (see --repoexec-request-timeout)"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {exc.__cause__ or exc}"
    return f"{type(exc).__name__}: {exc}"


def openai_backend(model: str, base_url: str | None, api: str, concurrency: int, request_timeout: float,
                   retries: int) -> OpenAIBackend:
    """The backend of ``openai:MODEL``, the key from the environment (a session's and ``repoexec build``'s)."""
    require("openai", extra="openai")
    import openai

    key = os.environ.get(KEY_VARIABLE)
    if not key:
        raise GenerationError(f"set {KEY_VARIABLE} (any value for a local server that checks none, e.g. EMPTY)")
    client = openai.OpenAI(api_key=key, base_url=base_url,  # None: OPENAI_BASE_URL, else OpenAI's
                           max_retries=retries, timeout=request_timeout)
    return OpenAIBackend(client, model, api, concurrency)


def _make(argument: str | None, config: pytest.Config) -> ModelGenerator:
    concurrency, retries = config.getoption("repoexec_concurrency"), config.getoption("repoexec_retries")
    if concurrency < 1 or retries < 0:
        raise GenerationError("--repoexec-concurrency must be at least 1 and --repoexec-retries at least 0")
    backend = openai_backend(aliased(argument, config), config.getoption("repoexec_base_url"),
                             config.getoption("repoexec_api"), concurrency,
                             config.getoption("repoexec_request_timeout"), retries)
    return ModelGenerator(backend, Settings.from_config(config))


@pytest.hookimpl(optionalhook=True)
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("openai", _make, "an OpenAI-compatible server: openai:MODEL (OPENAI_API_KEY, OPENAI_BASE_URL)")
