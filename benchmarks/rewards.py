"""Rewards for training loops: real completions through the API, the service and the Ray pool, against a pytest
run of the same samples on the same cores.

    python benchmarks/rewards.py [--data ../shared/repoexec] [--projects pyMonet,pytutils,docstring_parser]
                                 [--workers 2] [--mutants 3] [--concurrency 1,8,64] [--ray]

The workload is ``throughput.py``'s (each imported problem whose reference is expected to pass: the reference,
its ``pass`` body, up to ``--mutants`` mutants, the first two again). After an untimed pytest session that
builds the environments, each run judges the whole workload afresh (``--repoexec-fresh``: every distinct
module evaluated) with ``--workers`` judging processes:
``pytest``: ``pytest -n WORKERS`` with the workload as a replay file; ``api batch``: one ``score_batch`` call;
``api no TR``: the same with ``tr=False``, as a pass reward asks (failing samples stop at their first failing test;
its verdicts must be pytest's but for tests passed);
``api C``: the samples streamed through ``ascore`` with C at once; ``service C``: ``repoexec serve`` on
loopback, one sample a request, C requests at once (aiohttp); ``ray``: a ``RayPool`` on a one-node local
cluster of WORKERS CPUs (``--ray``). Each run's time counts from its start (a pytest session, opening the
problem set, starting the service) to its last verdict. It prints samples/s, each against pytest's, the p50
and p95 latency of a sample (submitted to judged), and every sample whose verdict (passed, tests passed, error
type) is not pytest's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_repoexec.api import ProblemSet, Verdict, settings_for
from pytest_repoexec.collection import ProblemLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from throughput import session, workload  # noqa: E402  (the same workload, the same pytest session)


def verdict_of(entry: dict, tr: bool = True) -> tuple:
    """What a run's verdict must share with pytest's: all of it, but tests passed where no TR was asked for."""
    return entry["passed"], entry["tests_passed"] if tr else None, entry["error_type"]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def api_batch(out: Path, samples: list[tuple[str, str]], workers: int,
              tr: bool = True) -> tuple[float, list[Verdict], list[float]]:
    began = time.perf_counter()
    with ProblemSet([out], settings_for(workers=workers, fresh=True)) as problems:
        submitted = time.perf_counter()
        futures = problems.submit_batch(samples, tr=tr)
        finished: list[float] = [0.0] * len(futures)
        for index, future in enumerate(futures):
            future.add_done_callback(lambda _, index=index: finished.__setitem__(index, time.perf_counter()))
        verdicts = [future.result() for future in futures]
        took = time.perf_counter() - began
    return took, verdicts, [end - submitted for end in finished]


def api_stream(out: Path, samples: list[tuple[str, str]], workers: int,
               concurrency: int) -> tuple[float, list[Verdict], list[float]]:
    async def stream(problems: ProblemSet) -> tuple[list[Verdict], list[float]]:
        limit = asyncio.Semaphore(concurrency)
        latencies: list[float] = [0.0] * len(samples)

        async def one(index: int, problem_id: str, completion: str) -> Verdict:
            async with limit:
                began = time.perf_counter()
                verdict = await problems.ascore(problem_id, completion, index)
                latencies[index] = time.perf_counter() - began
                return verdict

        verdicts = await asyncio.gather(*(one(index, *sample) for index, sample in enumerate(samples)))
        return list(verdicts), latencies

    began = time.perf_counter()
    with ProblemSet([out], settings_for(workers=workers, fresh=True)) as problems:
        verdicts, latencies = asyncio.run(stream(problems))
        took = time.perf_counter() - began
    return took, verdicts, latencies


def service(out: Path, samples: list[tuple[str, str]], workers: int, concurrency: int,
            scratch: Path) -> tuple[float, list[Verdict], list[float]]:
    import aiohttp

    began = time.perf_counter()
    served = subprocess.Popen([sys.executable, "-m", "pytest_repoexec.cli", "serve", str(out), "--port", "0",
                               "-n", str(workers), "--repoexec-fresh", "--queue", str(len(samples)),
                               "--journal", str(scratch / f"journal-{concurrency}.jsonl")],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    url = served.stdout.readline().split(" on ")[1].split()[0]

    async def load() -> tuple[list[Verdict], list[float]]:
        limit = asyncio.Semaphore(concurrency)
        latencies: list[float] = [0.0] * len(samples)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=3600)) as client:
            async def one(index: int, problem_id: str, completion: str) -> Verdict:
                async with limit:
                    sent = time.perf_counter()
                    async with client.post(f"{url}/score", json={"samples": [
                            {"problem": problem_id, "completion": completion}]}) as answer:
                        body = await answer.json()
                    latencies[index] = time.perf_counter() - sent
                    return Verdict.from_dict(body["verdicts"][0])
            verdicts = await asyncio.gather(*(one(index, *sample) for index, sample in enumerate(samples)))
        return list(verdicts), latencies

    try:
        verdicts, latencies = asyncio.run(load())
        took = time.perf_counter() - began
    finally:
        served.send_signal(signal.SIGTERM)
        served.wait(timeout=120)
    return took, verdicts, latencies


def ray_pool(out: Path, samples: list[tuple[str, str]], workers: int) -> tuple[float, list[Verdict], list[float]]:
    import ray
    from ray.cluster_utils import Cluster

    from pytest_repoexec.raypool import RayPool

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": workers, "object_store_memory": 100 << 20})
    ray.init(address=cluster.address)
    try:
        began = time.perf_counter()
        pool = RayPool([out], fresh=True)
        try:
            submitted = time.perf_counter()
            verdicts = pool.score_batch(samples)
            took = time.perf_counter() - began
        finally:
            pool.close()
        return took, verdicts, [time.perf_counter() - submitted]  # the batch's latency: Ray answers it whole
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "repoexec")
    parser.add_argument("--projects", default="pyMonet,pytutils,docstring_parser")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--mutants", type=int, default=3)
    parser.add_argument("--concurrency", default="1,8,64", help="samples in flight, for the API and the service")
    parser.add_argument("--ray", action="store_true", help="also through a Ray pool (the rl extra)")
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="repoexec-rewards-") as folder:
        scratch = Path(folder)
        out, replay = scratch / "imported", scratch / "workload.jsonl"
        subprocess.run([sys.executable, "-m", "pytest_repoexec.cli", "import", str(args.data), "--out", str(out),
                        "--projects", args.projects], check=True, stdout=subprocess.DEVNULL)
        problems = []
        for problem in ProblemLoader().under([out]):
            if problem.known_failure:
                shutil.rmtree(problem.manifest.parent)
            else:
                problems.append(problem)
        completions = workload(problems, args.mutants, 2)
        replay.write_text("".join(json.dumps({"problem": pid, "completions": texts}) + "\n"
                                  for pid, texts in completions.items()))
        samples = [(pid, text) for pid, texts in completions.items() for text in texts]
        keys = [(pid, index) for pid, texts in completions.items() for index in range(len(texts))]
        print(f"workload: {len(problems)} problems of {args.projects}, {len(samples)} samples, "
              f"{args.workers} workers")
        session(out, replay, str(args.workers), scratch / "setup.json", "--repoexec-n=1")  # builds environments
        took = session(out, replay, str(args.workers), scratch / "pytest.json", "--repoexec-fresh")
        report = json.loads((scratch / "pytest.json").read_text())
        by_pytest = {(entry["problem"], entry["sample"]): entry for entry in report["samples"]}
        print(f"{'run':12} {'samples/s':>9} {'x pytest':>8} {'p50 s':>7} {'p95 s':>7}  verdicts not pytest's")
        print(f"{'pytest':12} {len(by_pytest) / took:9.2f} {1.0:8.2f} {'-':>7} {'-':>7}  "
              f"({len(by_pytest)} samples in {took:.1f} s)")
        runs = {"api batch": lambda: api_batch(out, samples, args.workers),
                "api no TR": lambda: api_batch(out, samples, args.workers, tr=False)}  # a pass reward's
        for level in levels:
            runs[f"api {level}"] = lambda level=level: api_stream(out, samples, args.workers, level)
        for level in levels:
            runs[f"service {level}"] = lambda level=level: service(out, samples, args.workers, level, scratch)
        if args.ray:
            runs["ray"] = lambda: ray_pool(out, samples, args.workers)
        for name, run in runs.items():
            seconds, verdicts, latencies = run()
            tr = name != "api no TR"
            expected = {key: verdict_of(entry, tr) for key, entry in by_pytest.items()}
            differ = [f"{key[0]}[{key[1]}]: {verdict_of(verdict.to_dict(), tr)} vs {expected.get(key)}"
                      for key, verdict in zip(keys, verdicts) if verdict_of(verdict.to_dict(), tr) != expected.get(key)]
            rate = len(verdicts) / seconds
            print(f"{name:12} {rate:9.2f} {rate / (len(by_pytest) / took):8.2f} "
                  f"{statistics.median(latencies):7.2f} {percentile(latencies, 0.95):7.2f}  {len(differ)}", flush=True)
            for line in differ:
                print(f"    {line}")


if __name__ == "__main__":
    main()
