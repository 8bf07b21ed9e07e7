"""The agent's conversation with its model, in one of two protocols.

``tools``: OpenAI-compatible function calling (``tools=[...]`` in the chat request, ``tool_calls`` in the answer),
through the ``openai:`` backend's client. ``text``: any backend; the tools are described in the prompt and the
model calls one with a line ``CALL name(arguments)`` (Python call syntax, literal arguments), the results coming
back as the next user message. The conversation is kept as OpenAI chat messages either way; a backend without
a chat endpoint reads it as one text.

Every answer is cached with the completions, keyed by backend, model, conversation, protocol, sampling and the
sample's number: a rerun replays the same conversations without asking the model.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_repoexec.completion_cache import CompletionCache, cache_key
from pytest_repoexec.generation import GenerationError
from pytest_repoexec.prompts import Prompt

from .agent_tools import TOOLS, openai_tools
from .model import ModelGenerator, Sampling

PROTOCOLS = ("auto", "tools", "text")
_CALL = re.compile(r"^\s*CALL\s+(.+?)\s*$", re.MULTILINE)


class ToolsRefused(Exception):
    """The server answered a request with ``tools`` with a client error: it has no function calling."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None  # the call could not be read (bad JSON, not a call): answered with this


@dataclass(frozen=True)
class Reply:
    message: dict[str, Any]  # the assistant's message, as it goes back into the conversation
    calls: tuple[ToolCall, ...]

    @property
    def content(self) -> str:
        return self.message.get("content") or ""


class Chat:
    """One model behind the agent, shared by every conversation of the run (thread-safe: it holds no
    conversation, only whether the server refused function calling)."""

    def __init__(self, generator: ModelGenerator, protocol: str) -> None:
        backend = generator.backend
        self.backend, self.sampling = backend, dataclasses.replace(generator.settings.sampling, stop=())
        self.cache = CompletionCache(generator.settings.cache)
        self.client = getattr(backend, "client", None) if not backend.continues else None  # an OpenAI chat endpoint
        if protocol == "tools" and self.client is None:
            raise GenerationError("--repoexec-agent-protocol=tools needs openai: with --repoexec-api=chat")
        self.option, self.auto = protocol, protocol == "auto"
        self.tools = protocol != "text" and self.client is not None  # auto: until the server refuses them

    def ask(self, messages: Sequence[dict[str, Any]], protocol: str, sample: int, final: bool) -> Reply:
        """The model's next message. ``final``: no more tool calls are allowed (``tool_choice: none``)."""
        key = cache_key({**self.backend.identity, "agent": protocol, "final": final, "messages": list(messages),
                         "sample": sample, **dataclasses.asdict(self.sampling)})
        stored = self.cache.get(key)
        if stored:
            message = json.loads(stored[0])
        else:
            message = self._tools(messages, final) if protocol == "tools" else {"role": "assistant",
                                                                               "content": self._text(messages)}
            self.cache.add(key, [json.dumps(message)])
        return Reply(message, tool_calls(message) if protocol == "tools" else text_calls(message["content"]))

    def refused(self, reason: str) -> None:
        """The server refused function calling: under ``auto`` every conversation from now on speaks text."""
        if not self.auto:
            raise GenerationError(f"{self.client.base_url} refused function calling ({reason}); use "
                                  "--repoexec-agent-protocol=text or auto")
        self.tools = False

    def _tools(self, messages: Sequence[dict[str, Any]], final: bool) -> dict[str, Any]:
        message = self._request(messages, {"tools": openai_tools(), **({"tool_choice": "none"} if final else {})})
        calls = [{"id": call.id, "type": "function",
                  "function": {"name": call.function.name, "arguments": call.function.arguments}}
                 for call in message.tool_calls or ()]
        return {"role": "assistant", "content": message.content, **({"tool_calls": calls} if calls else {})}

    def _text(self, messages: Sequence[dict[str, Any]]) -> str:
        if self.client is not None:
            return self._request(messages, {}).content or ""
        rendered = self.backend.render(Prompt(flatten(messages), ""))
        return next(iter(self.backend.complete([rendered], 1, self.sampling)))[1][0]

    def _request(self, messages: Sequence[dict[str, Any]], options: dict[str, Any]) -> Any:
        """The answer's message; a client error on a conversation's first request with tools is a refusal of
        function calling, any other failure stops generation."""
        import openai

        sampling = self.sampling
        try:
            answer = self.client.chat.completions.create(
                model=self.backend.model, messages=list(messages), n=1, temperature=sampling.temperature,
                top_p=sampling.top_p, max_tokens=sampling.max_tokens, **options)
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            if "tools" in options and not any(m["role"] == "assistant" for m in messages):
                raise ToolsRefused(exc.message) from None
            raise GenerationError(f"{self.client.base_url} refused a request: {exc.message}") from None
        except openai.OpenAIError as exc:
            raise GenerationError(f"a request to {self.client.base_url} failed: {type(exc).__name__}: {exc}") from None
        return answer.choices[0].message


def tool_calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    """The calls of a function-calling answer; arguments that are not a JSON object make a call in error."""
    calls = []
    for call in message.get("tool_calls") or ():
        name, text = call["function"]["name"], call["function"].get("arguments") or "{}"
        try:
            arguments = json.loads(text)
        except ValueError:
            arguments = None
        if isinstance(arguments, dict):
            calls.append(ToolCall(call["id"], name, arguments))
        else:
            calls.append(ToolCall(call["id"], name, {}, f"the arguments are not a JSON object: {text[:200]}"))
    return tuple(calls)


def text_calls(content: str) -> tuple[ToolCall, ...]:
    """The ``CALL name(arguments)`` lines of a text answer, positional arguments named in the tool's order."""
    calls = []
    for number, expression in enumerate(_CALL.findall(content)):
        identifier = f"call_{number}"
        try:
            call = ast.parse(expression, mode="eval").body
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                raise ValueError("not a call of a tool by its name")
            params = list(TOOLS.get(call.func.id, ("", {}, ()))[1])
            arguments = {params[i] if i < len(params) else f"argument {i + 1}": ast.literal_eval(a)
                         for i, a in enumerate(call.args)}
            arguments |= {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        except (SyntaxError, ValueError) as exc:
            calls.append(ToolCall(identifier, expression.partition("(")[0], {}, f"cannot read the call: {exc}"))
            continue
        calls.append(ToolCall(identifier, call.func.id, arguments))
    return tuple(calls)


def flatten(messages: Sequence[dict[str, Any]]) -> str:
    """A conversation as one text, for a backend that takes a single prompt."""
    return "\n\n".join(f"[{message['role']}]\n{message.get('content') or ''}" for message in messages)
