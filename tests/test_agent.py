"""agent:<generator>: whole runs against a model scripted on loopback, judged by the engine as any sample."""

from __future__ import annotations

import json
import re

import pytest

from agent_project import RIGHT, WRONG, write_agent_project
from loopback import LoopbackServer


def call(identifier: str, tool: str, **arguments: str) -> dict:
    return {"id": identifier, "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}


class Script:
    """Answers chat requests in order from a list; keeps every request's messages."""

    def __init__(self, answers: list) -> None:
        self.answers = answers
        self.server = LoopbackServer(self.answer)

    def answer(self, body: dict) -> str | dict:
        return self.answers.pop(0) if isinstance(self.answers, list) else self.answers(body)

    def chats(self) -> list[dict]:
        return [body for body in self.server.posts() if "messages" in body]


@pytest.fixture
def shapes(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    return write_agent_project(pytester.path)


@pytest.fixture
def scripts():
    made: list[Script] = []
    yield lambda answers: made.append(Script(answers)) or made[-1]
    for script in made:
        script.server.close()


def run_agent(run_repoexec, project, script: Script, *options: str):
    return run_repoexec(str(project), "--repoexec-model=agent:openai:test-model",
                        f"--repoexec-base-url={script.server.url}", "--repoexec-n=1", *options, subprocess=True)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_loop_fails_looks_up_and_passes_with_function_calling(shapes, scripts, run_repoexec, workers):
    script = scripts([WRONG, {"tool_calls": [call("c1", "get_class_info", name="Rect"), call("c2", "get_imports")]},
                      RIGHT])
    page = shapes.parent / "agent.html"
    result, report = run_agent(run_repoexec, shapes, script, *workers, f"--repoexec-html={page}")
    result.assert_outcomes(passed=1)
    assert report["metrics"]["pass@1"] == 1.0  # the final answer is the one scored
    (sample,) = report["samples"]
    assert sample["store"] == "read"  # the item read back the verdict the agent's oracle got: the same judge

    first, second, third = script.chats()
    assert {tool["function"]["name"] for tool in first["tools"]} == {
        "get_class_info", "get_signature", "get_method_body", "get_relevant_code", "get_imports"}
    task = first["messages"][1]["content"]
    assert "def to_square(value, unit):" in task  # related snippets, up front
    assert "from .units import to_square" not in json.dumps(first)  # the reference's body stays hidden
    feedback = second["messages"][-1]
    assert feedback["role"] == "user" and "NameError" in feedback["content"]
    assert "def test_metres():" in feedback["content"]  # the test it failed first
    answers = {message["tool_call_id"]: message["content"] for message in third["messages"] if message["role"] == "tool"}
    assert "inherited from Shape (module shapes.base):" in answers["c1"]
    assert "def describe(self, precision: int = 2) -> str:" in answers["c1"]
    assert answers["c2"] == "from shapes.units import to_square"

    agent = report["agent"]
    (transcript,) = agent["samples"]
    assert transcript["protocol"] == "tools" and transcript["oracle_calls"] == 2
    assert [(a["number"], a["passed"], a["error_type"]) for a in transcript["attempts"]] == [
        (1, False, "NameError"), (2, True, None)]
    assert [(use["attempt"], use["tool"], use["by"], use["arguments"]) for use in transcript["tool_calls"]] == [
        (0, "get_related_snippets", "agent", {"query": transcript["tool_calls"][0]["arguments"]["query"]}),
        (2, "get_class_info", "model", {"name": "Rect"}), (2, "get_imports", "model", {})]
    assert transcript["tool_calls"][2]["result"] == "from shapes.units import to_square"
    assert agent["totals"] | {"protocols": None} == {
        "samples": 1, "attempts": 2, "oracle_calls": 2, "tool_calls": 2, "refused": 0, "model_requests": 3,
        "passed_first_attempt": 0, "passed_final_attempt": 1, "protocols": None}
    result.stdout.fnmatch_lines(["agent: 1 samples, 2 attempts, 2 oracle calls, 2 tool calls (0 refused), "
                                 "3 model requests; protocol: tools"])

    html = page.read_text()  # the HTML page shows the same transcript, in the loop's order
    assert "agent: 2 attempts, 3 tool calls, 2 oracle calls (tools)" in html
    steps = [re.sub(r"<pre>.*", "", item, flags=re.S).strip()
             for item in re.findall(r'<li class="(?:tool-call|attempt [a-z]+)">(.*?)</li>', html, re.S)]
    assert [step.split("(")[0].split(":")[0] for step in steps] == [
        "get_related_snippets", "attempt 1", "get_class_info", "get_imports", "attempt 2"]
    assert "attempt 1: NameError" in steps[1] and steps[4].startswith("attempt 2: passed")
    assert steps[2] == 'get_class_info({"name": "Rect"})'


def test_a_model_that_only_calls_tools_is_stopped_by_both_budgets(shapes, scripts, run_repoexec):
    script = scripts(lambda body: {"tool_calls": [call("a", "get_relevant_code", query="area"),
                                                  {**call("b", "get_class_info"), "function": {
                                                      "name": "get_class_info", "arguments": "Shape"}}]})
    result, report = run_agent(run_repoexec, shapes, script, "--repoexec-agent-calls=2", "--repoexec-agent-tools=3")
    result.assert_outcomes(failed=1)
    (transcript,) = report["agent"]["samples"]
    assert transcript["oracle_calls"] == 2 and transcript["model_requests"] == 6  # 3 a attempt: 2 + 1 calls, then none
    assert [(a["tool_budget_spent"], a["error_type"]) for a in transcript["attempts"]] == [
        (True, "EmptyCompletion"), (True, "EmptyCompletion")]
    uses = [(use["attempt"], use["refused"], use["result"][:6]) for use in transcript["tool_calls"]
            if use["by"] == "model"]  # a call that cannot be read spends the budget as any other
    assert uses == [(n, refused, result) for n in (1, 2) for refused, result in [
        (False, "# shap"), (True, "error:"), (False, "# shap"), (True, "refuse"), (True, "refuse"), (True, "refuse")]]
    bodies = script.chats()
    assert [body.get("tool_choice") for body in bodies] == [None, None, "none"] * 2  # the last ask forbids tools
    assert report["samples"][0]["error_type"] == "EmptyCompletion"


def test_a_server_without_function_calling_gets_the_text_protocol(shapes, scripts, run_repoexec):
    script = scripts([WRONG, 'Let me look.\nCALL get_class_info("Rect")\nCALL get_imports()', RIGHT])
    script.server.refuse_tools = True
    result, report = run_agent(run_repoexec, shapes, script)
    result.assert_outcomes(passed=1)
    refused, *bodies = script.chats()
    assert "tools" in refused and not any("tools" in body for body in bodies)
    assert "CALL tool_name(argument, ...)" in bodies[0]["messages"][0]["content"]
    results = bodies[2]["messages"][-1]["content"]
    assert results.startswith("Result of get_class_info(name='Rect'):\nclass Rect(Shape)")
    assert "Result of get_imports():\nfrom shapes.units import to_square" in results
    (transcript,) = report["agent"]["samples"]
    assert transcript["protocol"] == "text" and [a["passed"] for a in transcript["attempts"]] == [False, True]
    assert report["metrics"]["pass@1"] == 1.0


@pytest.mark.parametrize("options, message", [
    (["--repoexec-model=agent"], "*agent: name the model the agent runs: agent:GENERATOR*"),
    (["--repoexec-model=agent:reference"], "*reference is not a model (the agent needs openai:, hf:, vllm: or an alias)*"),
    (["--repoexec-model=agent:openai:m", "--repoexec-agent-calls=0"], "*--repoexec-agent-calls must be at least 1*"),
    (["--repoexec-model=agent:openai:m", "--repoexec-api=completions", "--repoexec-agent-protocol=tools"],
     "*--repoexec-agent-protocol=tools needs openai: with --repoexec-api=chat*"),
], ids=["no model", "not a model", "no oracle call", "tools without chat"])
def test_what_the_agent_refuses(shapes, run_repoexec, options, message):
    result, _ = run_repoexec(str(shapes), *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
