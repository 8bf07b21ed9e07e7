"""Progress of the long steps that are not pytest items: environment builds, generation, debugging rounds.

On a terminal, drawn with tqdm on stderr, each bar cleared when its step ends. Where no terminal watches (stderr
a file or a pipe: CI, Slurm, nohup), a plain line instead, at most one every ``REPOEXEC_PROGRESS_SECONDS``
(30 by default) while the step lasts, and one when it ends, so that a log shows that a long step is alive and
how far it got. Neither under ``-q`` nor on an xdist worker (its stderr is not the user's).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

import pytest
from tqdm import tqdm

INTERVAL_VARIABLE = "REPOEXEC_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 30.0


def wanted(config: pytest.Config) -> bool:
    """Whether this process may show progress: not quiet, and not an xdist worker (its stderr is not the user's)."""
    return config.get_verbosity() >= 0 and not hasattr(config, "workerinput")


def interval() -> float:
    """Seconds between two progress lines where stderr is not a terminal."""
    text = os.environ.get(INTERVAL_VARIABLE, "")
    if not text:
        return DEFAULT_INTERVAL
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise pytest.UsageError(f"{INTERVAL_VARIABLE}={text!r}: expected a number of seconds above 0")
    return seconds


def bar(total: int, description: str, unit: str, shown: bool) -> Any:
    """A bar of ``total`` steps on a terminal; where stderr is not one, ``Lines``; nothing when not ``shown``."""
    if shown and not _is_terminal(sys.stderr):
        return Lines(total, description, unit, interval())
    return tqdm(total=total, desc=description, unit=unit, leave=False, dynamic_ncols=True,
                disable=None if shown else True)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Lines:
    """What tqdm's bar is to a terminal (``update``, ``set_postfix_str``, a context), as lines on stderr:
    ``repoexec: generation: 12/48 requests, 35 tokens/s (1m30s)``, at most one per ``every`` seconds, written by
    a timer (so that a step that advances rarely, one environment build, still shows it is alive), and a last
    one when the step ends."""

    def __init__(self, total: int, description: str, unit: str, every: float, stream: TextIO | None = None) -> None:
        self.total, self.description, self.unit, self.every = total, description, unit, every
        self.stream = stream or sys.stderr
        self.n = 0
        self.postfix = ""
        self.began = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._tick, name=f"repoexec-progress-{description}", daemon=True)

    def __enter__(self) -> Lines:
        if self.total:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        with self._lock:
            self.postfix = s

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        if self._timer.is_alive():
            self._timer.join()
        if self.total:
            self._write(done=True)

    def line(self, done: bool = False) -> str:
        with self._lock:
            n, postfix = self.n, self.postfix
        units = self.unit if self.total == 1 else f"{self.unit}s"
        text = f"repoexec: {self.description}: {n}/{self.total} {units}"
        if postfix:
            text += f", {postfix}"
        elapsed = duration(time.monotonic() - self.began)
        return text + (f" in {elapsed}, done" if done else f" ({elapsed})")

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._write()

    def _write(self, done: bool = False) -> None:
        try:
            self.stream.write(self.line(done) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stream at the end of the session: nothing to tell it
            pass
