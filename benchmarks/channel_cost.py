"""What one call across a split sample's channel costs: the judge's CPU and the candidate's process's, per call.

    python benchmarks/channel_cost.py [--calls 5000]

A real ``repoexec_serve`` (the candidate's process, no sandbox) serves a small module; the judge's ``Channel``, in
this process, calls it ``--calls`` times after a warm-up, in five ways: a function answering a boolean, one
raising a builtin exception (what a failing sample's calls mostly do), a generator's handle stepped once a call
(``next``), the same generator iterated (``for``: its items come in batches made ahead, so "a call" is an item
there), and a function that the candidate's process makes and answers, then called once (``made``: pyMonet's
``memoize(lambda x: x ** 2, eq)(x)``, two round trips a "call", the test's pure lambda sent as its code). Prints
each way's judge CPU, the candidate's process's CPU (its whole life, start-up included, over every call it served)
and the wall time, in microseconds a call. Issue 42's figures for the crossing come from here.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "pytest_repoexec" / "runtime"
sys.path.insert(0, str(RUNTIME))

import repoexec_judge  # noqa: E402 (the runtime, as a judge imports it)

MODULE = '''
def is_slug(text, separator="-"):
    return isinstance(text, str) and text.islower()

def refuse(value):
    raise ValueError(f"not a slug: {value!r}")

def adder(key):
    def added(value):
        return key(value) + 1
    return added

def count():
    number = 0
    while True:
        yield number
        number += 1
'''
WARM_UP = 200


def measure(way: str, calls: int, folder: Path) -> tuple[float, float, float]:
    """(judge µs, candidate µs, wall µs) a call."""
    ours, theirs = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-m", "repoexec_serve", f"--repoexec-results-fd={theirs.fileno()}",
         "--repoexec-module=bench_module", f"--repoexec-path={folder}", f"--repoexec-project-root={folder}"],
        pass_fds=(theirs.fileno(),), env={**os.environ, "PYTHONPATH": str(RUNTIME)},
    )
    theirs.close()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    channel = repoexec_judge.Channel(ours.detach(), [str(folder)], lambda why: None)
    channel.limit = 5.0  # as a test's limit sets it: the candidate's process arms its alarm for each call
    counter = channel.call(("function", "bench_module", "count"), (), {}) if way in ("generator", "iterated") else None
    counter = iter(counter) if way == "iterated" else counter  # iter() marks it iterated: read ahead

    def one() -> None:
        if way == "plain":
            channel.call(("function", "bench_module", "is_slug"), ("a-slug",), {})
        elif way == "raising":
            try:
                channel.call(("function", "bench_module", "refuse"), ("A Slug",), {})
            except ValueError:
                pass
        elif way == "made":
            channel.call(("function", "bench_module", "adder"), (lambda x: x * 2,), {})(3)
        else:
            next(counter)

    for _ in range(WARM_UP):
        one()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        one()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    channel.sock.close()
    process.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    candidate = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    served = calls + WARM_UP + (way in ("generator", "iterated"))
    return cpu / calls * 1e6, candidate / served * 1e6, wall / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repoexec-channel-") as scratch:
        folder = Path(scratch)
        (folder / "bench_module.py").write_text(MODULE)
        sys.path.insert(0, str(folder))
        print(f"{args.calls} calls each, after {WARM_UP} to warm up; microseconds a call")
        print(f"{'way':<10} {'judge CPU':>10} {'candidate CPU':>14} {'wall':>8}")
        for way in ("plain", "raising", "generator", "iterated", "made"):
            judge, candidate, wall = measure(way, args.calls, folder)
            print(f"{way:<10} {judge:>10.0f} {candidate:>14.0f} {wall:>8.0f}")


if __name__ == "__main__":
    main()
