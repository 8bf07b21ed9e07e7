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
