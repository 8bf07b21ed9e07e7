"""Progress bars of the long steps (environment builds, generation, debugging rounds): drawn on a terminal,
never under -q or where the output is not a terminal. Whole sessions in a pseudo-terminal, against a model
served on loopback."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios

import pytest

from loopback import LoopbackServer, prompt_of

WRONG = "    return 0\n"
RIGHT = {"scaled": "    return clamp(value * SCALE, 0, 100)\n", "swap": "    return (pair[1], pair[0])\n"}


def answer(body: dict) -> str:
    """Wrong at first; right when the debugging prompt asks again."""
    prompt = prompt_of(body)
    name = re.findall(r"def (\w+)\(", prompt)[-1]
    return RIGHT[name] if "# Here is the current solution." in prompt else WRONG


@pytest.fixture
def server():
    served = LoopbackServer(answer)
    served.failures = [0.3] * 8  # each answer takes long enough for the bars to be redrawn with their rate
    yield served
    served.close()


def session(mini, cache, server, *options: str, terminal: bool) -> str:
    """A whole run, its stdout and stderr on a pseudo-terminal (or a pipe); all it wrote."""
    command = [sys.executable, "-m", "pytest", str(mini), "-p", "no:cacheprovider", f"--repoexec-cache={cache}",
               "--repoexec-model=openai:test-model", f"--repoexec-base-url={server.url}", "--repoexec-api=completions",
               "--repoexec-concurrency=1", "--repoexec-n=1", "--repoexec-debug-rounds=1", *options]
    environment = {**os.environ, "OPENAI_API_KEY": "test-key"}
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=mini, timeout=300)
        return done.stdout + done.stderr
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # rows, columns: a real size
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=environment, cwd=mini)
    os.close(follower)
    written = bytearray()
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every process holding the terminal is gone
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    process.wait(timeout=60)
    return written.decode("utf-8", "replace")


def test_a_terminal_shows_each_long_step(mini, tmp_path, server):
    shown = session(mini, tmp_path / "cache", server, terminal=True)
    assert "repoexec: debugging round 1: 2 failing samples go back to the model" in shown  # the run really ran
    assert re.search(r"environments: +0%\|.*\| 0/1 ", shown)  # the mini project's one virtualenv
    assert re.search(r"environments: .*\| 0/1 .*\bmini\b", shown)  # named while it builds
    assert re.search(r"generation: .*\| [12]/2 .*request", shown)  # the two problems' requests
    assert re.search(r"generation: .*\d+ tokens/s", shown)  # the server reports its usage
    assert re.search(r"debugging answers: .*\| [12]/2 ", shown)
    assert re.search(r"debugging round 1: .*\| [0-2]/2 .*sample", shown)  # the answers being judged


@pytest.mark.parametrize("terminal, options", [(True, ["-q"]), (False, [])], ids=["-q", "not a terminal"])
def test_no_bar_when_quiet_or_not_on_a_terminal(mini, tmp_path, server, terminal, options):
    shown = session(mini, tmp_path / "cache", server, *options, terminal=terminal)
    assert "2 failed" in shown  # the run ran: its two samples failed before the rounds
    assert "repoexec: debugging round 1: 2 failing samples go back to the model" in shown or "-q" in options
    assert not re.search(r"\d+%\|", shown)  # no bar of any kind


def test_a_log_gets_progress_lines_and_the_summary_the_generation_rate(mini, tmp_path, server):
    """stderr in a file (CI, Slurm, nohup): a line per step at least at its end, and lines while it lasts."""
    log = tmp_path / "stderr.log"
    command = [sys.executable, "-m", "pytest", str(mini), "-p", "no:cacheprovider", f"--repoexec-cache={tmp_path / 'c'}",
               "--repoexec-model=openai:test-model", f"--repoexec-base-url={server.url}", "--repoexec-api=completions",
               "--repoexec-concurrency=1", "--repoexec-n=1", "--repoexec-debug-rounds=1"]
    environment = {**os.environ, "OPENAI_API_KEY": "test-key", "REPOEXEC_PROGRESS_SECONDS": "0.1"}
    with log.open("w") as stderr:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=environment, cwd=mini,
                              timeout=300)
    lines = log.read_text().splitlines()
    assert "2 failed" in done.stdout, done.stdout[-2000:]
    assert not any(re.search(r"\d+%\|", line) for line in lines)  # no bar
    assert re.search(r"^repoexec: environments: 1/1 project in \d+s, done$", "\n".join(lines), re.MULTILINE)
    generation = [line for line in lines if line.startswith("repoexec: generation: ")]
    assert generation[-1].startswith("repoexec: generation: 2/2 requests, ") and generation[-1].endswith(", done")
    assert any(re.fullmatch(r"repoexec: generation: [01]/2 requests(, \d+ tokens/s)? \(\d+s\)", line)
               for line in generation), generation  # while it lasted (each answer takes 0.3 s, a line is due at 0.1 s)
    assert any(line.startswith("repoexec: debugging round 1: 2/2 samples in ") for line in lines), lines
    summary = re.search(r"^generation: 2 prompts, 2 answered by the model in \d+s, 2 tokens at [\d.]+ tokens/s$",
                        done.stdout, re.MULTILINE)
    assert summary, done.stdout[-2000:]
    assert re.search(r"^debugging answers: 2 prompts, 2 answered by the model", done.stdout, re.MULTILINE)


def test_lines_come_at_most_once_per_interval_and_once_at_the_end():
    import io
    import time

    from pytest_repoexec.progress import Lines

    stream = io.StringIO()
    with Lines(3, "environments", "project", 0.2, stream) as shown:
        shown.set_postfix_str("ledger, textkit")
        time.sleep(0.5)  # nothing advances: the timer still tells
        shown.update(3)
    lines = stream.getvalue().splitlines()
    assert 2 <= len(lines) <= 4, lines  # 0.5 s at one line per 0.2 s, then the last
    assert lines[0] == "repoexec: environments: 0/3 projects, ledger, textkit (0s)"
    assert re.fullmatch(r"repoexec: environments: 3/3 projects, ledger, textkit in [01]s, done", lines[-1])


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_interval_names_the_variable(monkeypatch, value):
    from pytest_repoexec.progress import interval

    monkeypatch.setenv("REPOEXEC_PROGRESS_SECONDS", value)
    with pytest.raises(pytest.UsageError, match="REPOEXEC_PROGRESS_SECONDS"):
        interval()
