"""``agent:<generator>``: the RRR loop (retrieve, repository tools, reflect) of RepoClassBench's agent around any
model generator (``openai:MODEL``, ``hf:...``, an alias).

Per problem and sample: the model gets the definition to write (signature and docstring) and the repository's
code that best matches it (``get_related_snippets``, once), and answers with an attempt, calling static tools
over the repository (``agent_tools.py``) before it when it likes, at most ``--repoexec-agent-tools`` calls an
attempt. The run's own judge (``pytest_repoexec_judge``: the same evaluation, sandbox, limits and result store
as every sample) is the oracle; a failing attempt's test and error go back to the model, which reflects and
tries again, at most ``--repoexec-agent-calls`` judged attempts in all. The last attempt is the sample's
completion, so the item's verdict is the final answer's (read back from the result store). Every attempt, tool
call and oracle call goes into the JSON report's ``agent`` section.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import pytest

from pytest_repoexec import progress
from pytest_repoexec.debugging import failing_test
from pytest_repoexec.environment import Environments
from pytest_repoexec.evaluation import Evaluation
from pytest_repoexec.generation import GenerationError, GeneratorRegistry, write_completions
from pytest_repoexec.problem import Problem
from pytest_repoexec.prompts import header
from pytest_repoexec.results import SampleResult

from . import engine_disabled
from .agent_chat import PROTOCOLS, Chat, Reply, ToolCall, ToolsRefused
from .agent_tools import Toolbox, describe_tools
from .model import ModelGenerator
from .repository import repository

SHORT_RESULT = 300  # characters of a tool's answer kept in the report

_SYSTEM = """\
You write code inside an existing Python repository. Your answer replaces the definition of `{entry_point}` in \
module `{module}`; only that definition is kept, so anything it needs that the module does not import must be \
imported inside it. You can read the repository with tools: {how}
When you are ready, answer with the whole definition of `{name}` in one ```python block. Tests judge each answer; \
a failing one comes back with the test and its error, and you may try again: at most {calls} answers are judged, \
and you may call at most {tools} tools before each."""
_HOW = {
    "tools": "call them when you need a class's members, a signature, a body, related code, or imports for the "
             "names your attempt lacks.",
    "text": "to call some, answer with lines of the form\nCALL tool_name(argument, ...)\nand nothing else "
            "(arguments are Python literals); their results come back in the next message. The tools:\n{tools}",
}
_TASK = "Write `{entry_point}` of module `{module}`:\n\n{header}\n\nCode of the repository related to the task:\n\n{snippets}"
_FEEDBACK = """\
The tests judged attempt {number}: it failed ({error}; {passed} of {total} tests passed). {left}
The test it failed first:
{test}
The error:
{log}
Find what you need with the tools, reflect on what went wrong, then answer with the corrected definition of \
`{name}`."""
_ANSWER_NOW = "The tool budget of this attempt is spent: answer with the definition now."
_SPENT = f"refused: {_ANSWER_NOW}"


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if engine_disabled(pluginmanager):
        return
    group = parser.getgroup("repoexec")
    group.addoption("--repoexec-agent-calls", type=int, default=5, metavar="N",
                    help="agent: attempts judged by the tests (oracle calls) per sample, the last one scored (default 5)")
    group.addoption("--repoexec-agent-tools", type=int, default=8, metavar="N",
                    help="agent: tool calls before each attempt (default 8)")
    group.addoption("--repoexec-agent-protocol", choices=PROTOCOLS, default="auto",
                    help="agent: tools (function calling), text (CALL lines), or auto (default: function calling "
                         "where the backend is an OpenAI chat endpoint that accepts it, else text)")


@dataclass
class ToolUse:
    attempt: int  # the attempt it came before (1 for the first); 0: the loop's own call, up front
    tool: str
    arguments: dict[str, Any]
    result: str  # its beginning
    by: str = "model"  # or "agent": get_related_snippets, run once up front
    refused: bool = False  # past the tool budget, or a call that could not be read: not run


@dataclass
class Attempt:
    number: int
    completion: str
    passed: bool
    error_type: str | None
    tests_passed: int
    tests_total: int
    failed_test: str | None
    tool_budget_spent: bool  # the model still called tools when it had to answer: this is what it gave


@dataclass
class Transcript:
    problem: str
    sample: int
    protocol: str = ""
    attempts: list[Attempt] = field(default_factory=list)
    tool_calls: list[ToolUse] = field(default_factory=list)
    oracle_calls: int = 0
    model_requests: int = 0


class Conversation:
    """One sample's messages. Its protocol is fixed by its first answer: function calling unless the server
    refuses it (under ``auto``, every later conversation then speaks text from the start)."""

    def __init__(self, chat: Chat, sample: int, system: str, task: str, transcript: Transcript) -> None:
        self.chat, self.sample, self.system, self.task, self.transcript = chat, sample, system, task, transcript
        self.messages: list[dict[str, Any]] = []

    def ask(self, final: bool) -> Reply:
        if not self.messages:
            self._start("tools" if self.chat.tools else "text")
        self.transcript.model_requests += 1
        try:
            return self.chat.ask(self.messages, self.transcript.protocol, self.sample, final)
        except ToolsRefused as refusal:
            self.chat.refused(str(refusal))
            self._start("text")
            self.transcript.model_requests += 1
            return self.chat.ask(self.messages, "text", self.sample, final)

    def _start(self, protocol: str) -> None:
        self.transcript.protocol = protocol
        how = _HOW[protocol].format(tools=describe_tools())
        self.messages = [{"role": "system", "content": self.system.format(how=how)},
                         {"role": "user", "content": self.task}]

    def answered(self, reply: Reply, results: Sequence[str]) -> None:
        """The model's message and, for its tool calls, their results."""
        self.messages.append(reply.message)
        if self.transcript.protocol == "tools":
            self.messages += [{"role": "tool", "tool_call_id": call.id, "content": result}
                              for call, result in zip(reply.calls, results)]
        elif results:
            self.tell("\n\n".join(f"Result of {_shown(call)}:\n{result}" for call, result in zip(reply.calls, results)))

    def tell(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})


class AgentGenerator:
    """The loop around an inner model generator; also a plugin, for the report's section and the summary."""

    def __init__(self, inner: ModelGenerator, chat: Chat, config: pytest.Config, calls: int, tools: int) -> None:
        self.inner, self.chat, self.config, self.calls, self.tools = inner, chat, config, calls, tools
        self.transcripts: list[Transcript] = []
        workers = config.getoption("numprocesses", None)
        self.workers = workers if isinstance(workers, int) and workers > 0 else 1

    def count(self, problem: Problem, limit: int | None) -> int:
        return self.inner.count(problem, limit)

    def generate(self, problems: Sequence[Problem], limit: int | None) -> dict[str, list[str]]:
        environments = Environments(self.inner.settings.cache.parent)  # the engine's cache, built before generation
        toolboxes = {}
        for problem in problems:
            env = environments.get(problem.project)
            toolboxes[problem.id] = Toolbox(repository(env.import_root), problem.module, problem.entry_point)
        jobs = [(problem, sample) for problem in problems for sample in range(self.count(problem, limit))]
        shown = self.inner.settings.progress and bool(jobs)
        with progress.bar(len(jobs), "agent", "sample", shown) as bar, ThreadPoolExecutor(self.workers) as pool:
            def run(job: tuple[Problem, int]) -> tuple[str, Transcript]:
                answer = self.solve(job[0], job[1], toolboxes[job[0].id])
                bar.update()
                return answer

            finished = list(pool.map(run, jobs))
        self.transcripts += [transcript for _, transcript in finished]
        completions: dict[str, list[str]] = {problem.id: [] for problem in problems}
        for (problem, _), (answer, _) in zip(jobs, finished):
            completions[problem.id].append(answer)
        if self.inner.settings.save_to is not None:
            write_completions(self.inner.settings.save_to, completions)
        return completions

    def solve(self, problem: Problem, sample: int, toolbox: Toolbox) -> tuple[str, Transcript]:
        """One sample's loop: its final answer and what happened on the way."""
        transcript = Transcript(problem.id, sample)
        query = f"{problem.entry_point}\n{header(problem)}"
        snippets = toolbox.get_related_snippets(query)
        transcript.tool_calls.append(ToolUse(0, "get_related_snippets", {"query": query}, snippets[:SHORT_RESULT],
                                             by="agent"))
        name = problem.entry_point.rpartition(".")[2]
        system = _SYSTEM.format(entry_point=problem.entry_point, module=problem.module, name=name, calls=self.calls,
                                tools=self.tools, how="{how}")
        task = _TASK.format(entry_point=problem.entry_point, module=problem.module, header=header(problem),
                            snippets=snippets)
        conversation = Conversation(self.chat, sample, system, task, transcript)
        answer = ""
        for number in range(1, self.calls + 1):
            answer, spent = self._attempt(conversation, toolbox, transcript, number, answer)
            evaluation = self._judge(problem, sample, answer)
            transcript.oracle_calls += 1
            result = evaluation.result
            transcript.attempts.append(Attempt(number, answer, result.passed, result.error_type and str(result.error_type),
                                               result.tests_passed, result.tests_total, result.failed_test, spent))
            if result.passed or number == self.calls:
                break
            conversation.tell(_feedback(problem, result, number, self.calls - number, name))
        return answer, transcript

    def _attempt(self, conversation: Conversation, toolbox: Toolbox, transcript: Transcript, number: int,
                 last: str) -> tuple[str, bool]:
        """The model's next answer, after its tool calls (at most the budget): (answer, whether the model still
        called tools when it had to answer)."""
        used = 0
        while True:
            final = used >= self.tools
            reply = conversation.ask(final)
            if not reply.calls:
                conversation.answered(reply, [])
                return reply.content, False
            results = []
            for call in reply.calls:  # each counts, a call that cannot be read too: no request is free
                if used >= self.tools:
                    result = _SPENT
                else:
                    used += 1
                    result = f"error: {call.error}" if call.error else toolbox.call(call.name, call.arguments, last)
                results.append(result)
                transcript.tool_calls.append(ToolUse(number, call.name, call.arguments, result[:SHORT_RESULT],
                                                     refused=result is _SPENT or call.error is not None))
            conversation.answered(reply, results)
            if final:
                return reply.content, True
            if used >= self.tools:
                conversation.tell(_ANSWER_NOW)

    def _judge(self, problem: Problem, sample: int, completion: str) -> Evaluation:
        evaluation = self.config.hook.pytest_repoexec_judge(problem=problem, sample=sample, completion=completion)
        if evaluation is None:
            raise GenerationError("agent: needs a run that can judge its attempts (a scoring run)")
        return evaluation

    @pytest.hookimpl(optionalhook=True)
    def pytest_repoexec_report_sections(self) -> dict[str, Any]:
        transcripts = sorted(self.transcripts, key=lambda t: (t.problem, t.sample))
        return {"agent": {
            "oracle_calls": self.calls, "tool_calls": self.tools, "protocol": self.chat.option,
            "totals": _totals(transcripts), "samples": [asdict(transcript) for transcript in transcripts],
        }}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.transcripts:
            totals = _totals(self.transcripts)
            terminalreporter.write_line(
                f"agent: {totals['samples']} samples, {totals['attempts']} attempts, {totals['oracle_calls']} oracle "
                f"calls, {totals['tool_calls']} tool calls ({totals['refused']} refused), "
                f"{totals['model_requests']} model requests; protocol: {', '.join(totals['protocols'])}")


def _totals(transcripts: Sequence[Transcript]) -> dict[str, Any]:
    return {
        "samples": len(transcripts),
        "attempts": sum(len(t.attempts) for t in transcripts),
        "oracle_calls": sum(t.oracle_calls for t in transcripts),
        "tool_calls": sum(use.by == "model" for t in transcripts for use in t.tool_calls),
        "refused": sum(use.refused for t in transcripts for use in t.tool_calls),
        "model_requests": sum(t.model_requests for t in transcripts),
        "passed_first_attempt": sum(bool(t.attempts) and t.attempts[0].passed for t in transcripts),
        "passed_final_attempt": sum(bool(t.attempts) and t.attempts[-1].passed for t in transcripts),
        "protocols": sorted({t.protocol for t in transcripts}),
    }


def _feedback(problem: Problem, result: SampleResult, number: int, left: int, name: str) -> str:
    return _FEEDBACK.format(number=number, error=result.error_type, passed=result.tests_passed,
                            total=result.tests_total, test=failing_test(problem, result).strip("\n"),
                            log=(result.error_log or result.error_type or "the tests failed").strip("\n"),
                            left=f"{left} more attempt{'s' * (left != 1)} will be judged.", name=name)


def _shown(call: ToolCall) -> str:
    return f"{call.name}({', '.join(f'{key}={value!r}' for key, value in call.arguments.items())})"


def _make(registry: GeneratorRegistry, argument: str | None, config: pytest.Config) -> AgentGenerator:
    if not argument or argument.partition(":")[0] == "agent":
        raise GenerationError("name the model the agent runs: agent:GENERATOR, e.g. agent:openai:MODEL")
    calls, tools = config.getoption("repoexec_agent_calls"), config.getoption("repoexec_agent_tools")
    if calls < 1 or tools < 0:
        raise GenerationError("--repoexec-agent-calls must be at least 1 and --repoexec-agent-tools at least 0")
    inner = registry.create(argument, config)
    if not isinstance(inner, ModelGenerator):
        raise GenerationError(f"{argument} is not a model (the agent needs openai:, hf:, vllm: or an alias)")
    agent = AgentGenerator(inner, Chat(inner, config.getoption("repoexec_agent_protocol")), config, calls, tools)
    config.pluginmanager.register(agent, "repoexec-agent-transcripts")
    return agent


@pytest.hookimpl(optionalhook=True)
def pytest_repoexec_add_generators(registry: GeneratorRegistry) -> None:
    registry.add("agent", functools.partial(_make, registry),
                 "the RRR agent around a model: agent:GENERATOR (e.g. agent:openai:MODEL); tests as its oracle")
