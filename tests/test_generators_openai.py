"""openai: with the real client against a real HTTP server on 127.0.0.1 that answers in OpenAI's wire format."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest

from conftest import SHIPPED
from loopback import LoopbackServer, prompt_of
from generators.model import ModelGenerator, Settings
from generators.openai_api import OpenAIBackend
from pytest_repoexec.generation import GenerationError, read_completions
from pytest_repoexec.postprocess import STOP_SEQUENCES
from pytest_repoexec.problem import load_problem
from pytest_repoexec.prompts import build_prompt



@pytest.fixture
def server():
    loopback = LoopbackServer(lambda body: f"```python\n{prompt_of(body).splitlines()[-1]}\n    return 1\n```")
    yield loopback
    loopback.close()


@pytest.fixture(scope="module")
def problems():
    return [load_problem(SHIPPED / name / "problem.toml") for name in
            ("textkit/slugify", "textkit/roman_encode", "ledger/add_months", "ledger/month_periods")]


def generator(
    server, tmp_path, api="chat", retries=2, timeout=5.0, concurrency=8, key="test-key", **settings
) -> ModelGenerator:
    client = openai.OpenAI(api_key=key, base_url=server.url, max_retries=retries, timeout=timeout)
    backend = OpenAIBackend(client, "test-model", api, concurrency)
    return ModelGenerator(backend, Settings(cache=tmp_path / "completions", **settings))


def test_chat_sends_each_prompt_once_with_the_papers_sampling(server, tmp_path, problems):
    completions = generator(server, tmp_path, style="instruct1").generate(problems[:2], 3)
    assert set(completions) == {p.id for p in problems[:2]}
    assert all(len(texts) == 3 for texts in completions.values())
    bodies = {body["messages"][0]["content"]: body for body in server.posts()}
    for problem in problems[:2]:
        body = bodies[build_prompt(problem, "instruct1").text]
        assert body["messages"] == [{"role": "user", "content": build_prompt(problem, "instruct1").text}]
        assert (body["model"], body["n"], body["temperature"], body["top_p"], body["max_tokens"]) == (
            "test-model", 3, 0.2, 0.95, 512
        )
        assert "stop" not in body  # a chat answer is a whole function, with its own markup
    assert [path for path, _ in server.requests].count("/v1/models") == 1  # the server is checked once


def test_cached_completions_are_not_paid_twice_and_more_samples_ask_only_for_the_rest(server, tmp_path, problems):
    first = generator(server, tmp_path).generate(problems[:2], 2)
    assert len(server.posts()) == 2
    again = generator(server, tmp_path).generate(problems[:2], 2)
    assert again == first and len(server.posts()) == 2
    more = generator(server, tmp_path).generate(problems[:2], 5)
    assert [body["n"] for body in server.posts()[2:]] == [3, 3]
    assert all(more[p][:2] == first[p] and len(more[p]) == 5 for p in first)
    other_prompt = generator(server, tmp_path, level="small").generate(problems[:1], 2)
    assert len(server.posts()) == 5 and other_prompt  # a different prompt is a different key


def test_a_server_that_ignores_n_is_asked_again_for_the_rest(server, tmp_path, problems):
    server.one_choice = True
    made = generator(server, tmp_path, concurrency=1)
    completions = made.generate(problems[:2], 3)
    assert all(len(texts) == 3 for texts in completions.values())
    assert [body["n"] for body in server.posts()] == [3, 2, 1, 3, 2, 1]
    assert made.backend.tokens == 6  # each answer's usage counted


def test_completions_endpoint_continues_the_base_prompt_until_a_stop_sequence(server, tmp_path, problems):
    generator(server, tmp_path, api="completions", level="medium").generate(problems[:1], None)
    (body,) = server.posts()
    assert body["prompt"] == build_prompt(problems[0], "base", "medium").text
    assert body["stop"] == list(STOP_SEQUENCES)
    assert body["n"] == 10  # the paper's number of samples when --repoexec-n is not given


def test_requests_run_at_most_concurrency_at_a_time(server, tmp_path, problems):
    server.failures = [0.3] * len(problems)
    generator(server, tmp_path, concurrency=2).generate(problems, 1)
    assert server.most_in_flight == 2


def test_rate_limit_is_retried_until_success(server, tmp_path, problems):
    server.failures = [429, 429]
    completions = generator(server, tmp_path, retries=2).generate(problems[:1], 2)
    assert len(completions[problems[0].id]) == 2
    assert len(server.posts()) == 3


def test_server_errors_are_retried_then_fail_clearly(server, tmp_path, problems):
    server.failures = [500] * 3
    with pytest.raises(GenerationError, match=r"failed: HTTP 500: .*scripted 500"):
        generator(server, tmp_path, retries=2).generate(problems[:1], 1)
    assert len(server.posts()) == 3


def test_a_request_past_its_timeout_fails_clearly(server, tmp_path, problems):
    server.failures = [2.0]
    started = time.monotonic()
    with pytest.raises(GenerationError, match="timed out"):
        generator(server, tmp_path, retries=0, timeout=0.3).generate(problems[:1], 1)
    assert time.monotonic() - started < 1.5


def test_a_refused_key_fails_before_any_completion_is_asked(server, tmp_path, problems):
    with pytest.raises(GenerationError, match="refused the key in OPENAI_API_KEY: .*invalid key"):
        generator(server, tmp_path, key="wrong").generate(problems, 1)
    assert server.posts() == []


def test_an_interrupted_run_resumes_with_what_it_had(server, tmp_path, problems):
    server.failures = [0.01, 500]  # the second prompt fails for good (no retries), after the first answered
    with pytest.raises(GenerationError):
        generator(server, tmp_path, retries=0, concurrency=1).generate(problems[:2], 2)
    completions = generator(server, tmp_path, retries=0).generate(problems[:2], 2)
    assert len(server.posts()) == 3  # only the failed prompt was asked again
    assert all(len(texts) == 2 for texts in completions.values())


def test_a_missing_key_or_server_is_a_usage_error_before_anything_runs(pytester, mini, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = pytester.runpytest(str(mini), "--repoexec-model=openai:test-model", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--repoexec-model=openai:test-model: set OPENAI_API_KEY*"])

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_port
    closed.server_close()
    result = pytester.runpytest(
        str(mini), "--repoexec-model=openai:test-model", f"--repoexec-base-url=http://127.0.0.1:{port}/v1",
        f"--repoexec-cache={pytester.path / 'cache'}", "-p", "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cannot reach http://127.0.0.1:*set --repoexec-base-url or OPENAI_BASE_URL*"])


def test_a_whole_run_against_the_server(pytester, mini, run_repoexec, monkeypatch):
    """One problem answered right (in a chat answer's fence), the other wrong; an ini alias names the model."""

    def answer(body: dict) -> str:
        prompt = prompt_of(body)
        assert "The provided code snippet includes necessary dependencies" in prompt
        if "`scaled`" in prompt:
            return "Here it is:\n```python\ndef scaled(value):\n    return clamp(value * SCALE, 0, 100)\n```"
        return "```python\ndef swap(pair):\n    return pair\n```"

    loopback = LoopbackServer(answer)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    pytester.makeini("[pytest]\nrepoexec_aliases =\n    loopback = openai:test-model\n")
    saved = pytester.path / "saved.jsonl"
    try:
        result, report = run_repoexec(
            str(mini), "--repoexec-model=loopback", f"--repoexec-base-url={loopback.url}", "--repoexec-n=2",
            "--repoexec-prompt=instruct2", "--repoexec-context=small", f"--repoexec-save-completions={saved}",
        )
    finally:
        loopback.close()
    result.assert_outcomes(passed=2, failed=2)
    assert report["metrics"]["pass@1"] == 0.5
    assert {(s["problem"], s["passed"], s["error_type"]) for s in report["samples"]} == {
        ("mini/scaled", True, None), ("mini/swap", False, "AssertionError")
    }
    assert {body["model"] for body in loopback.posts()} == {"test-model"}
    saved_completions = read_completions(saved)
    assert sorted(saved_completions) == ["mini/scaled", "mini/swap"]
    assert all(len(texts) == 2 for texts in saved_completions.values())
