"""``repoexec serve`` as a trainer's client meets it, over loopback: load, retries by request id, a kill and a
restart, overload, a time limit, SIGTERM, OpenRLHF's protocol, and hostile input."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp
import pytest

from conftest import SHIPPED
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem

PROBLEMS = [load_problem(manifest) for manifest in find_manifests([SHIPPED])]


class Served:
    """A ``repoexec serve`` process in its own session, on a port the system chose."""

    def __init__(self, cache: Path, journal: Path, *options: str) -> None:
        command = [sys.executable, "-m", "pytest_repoexec.cli", "serve", str(SHIPPED), "--port", "0",
                   f"--repoexec-cache={cache}", "--journal", str(journal), *options]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        line = self.process.stdout.readline()
        assert " on http://" in line, line + self.process.stdout.read()
        self.url = line.split(" on ")[1].split()[0]

    def stop(self, signum: int = signal.SIGTERM) -> str:
        self.process.send_signal(signum)
        output, _ = self.process.communicate(timeout=120)
        return output

    def kill_all(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # its judging processes too
        except ProcessLookupError:
            pass


@pytest.fixture
def serve(repoexec_cache, tmp_path):
    started = []

    def start(*options: str, journal: Path = tmp_path / "requests.jsonl") -> Served:
        started.append(Served(repoexec_cache, journal, *options))
        return started[-1]

    yield start
    for served in started:
        served.kill_all()


def samples_pool() -> list[tuple[str, str, bool]]:
    """(problem, completion, whether it passes): each shipped problem's reference and its `pass` body."""
    return [entry for problem in PROBLEMS for entry in ((problem.id, problem.reference, True),
                                                        (problem.id, pass_body(problem.reference), False))]


async def post(session: aiohttp.ClientSession, url: str, body: dict) -> tuple[int, dict, dict]:
    async with session.post(url, json=body) as answer:
        return answer.status, await answer.json(content_type=None), dict(answer.headers)


async def load(url: str, requests: list[dict], concurrency: int, retry: bool = False) -> dict[str, tuple[int, dict]]:
    """Each request's last answer by id; with ``retry``, a lost connection or a 504 is sent again (as verl's
    and OpenRLHF's clients do), until a verdict comes."""
    answers: dict[str, tuple[int, dict]] = {}
    limit = asyncio.Semaphore(concurrency)

    async def one(session: aiohttp.ClientSession, body: dict) -> None:
        async with limit:
            for _ in range(600 if retry else 1):
                try:
                    status, answer, headers = await post(session, f"{url}/score", body)
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    if not retry:
                        raise
                    await asyncio.sleep(0.2)
                    continue
                answers[body["request_id"]] = (status, answer)
                if status != 504 or not retry:
                    return
                await asyncio.sleep(float(headers.get("Retry-After", 1)))

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        await asyncio.gather(*(one(session, body) for body in requests))
    return answers


def health(url: str) -> dict:
    async def get() -> dict:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/health") as answer:
            return await answer.json()
    return asyncio.run(get())


def test_two_thousand_requests_at_64_each_get_their_verdict_once_and_retries_get_the_stored_one(serve):
    served = serve("-n", "2", "--queue", "4096")
    pool = samples_pool()
    requests = [{"request_id": f"load-{index}", "samples": [{"problem": pool[index % len(pool)][0],
                                                            "completion": pool[index % len(pool)][1]}]}
                for index in range(2000)]
    began = time.monotonic()
    answers = asyncio.run(load(served.url, requests, 64))
    took = time.monotonic() - began
    assert len(answers) == 2000 and {status for status, _ in answers.values()} == {200}
    for index in range(2000):
        verdicts = answers[f"load-{index}"][1]["verdicts"]
        assert len(verdicts) == 1 and verdicts[0]["passed"] is pool[index % len(pool)][2], verdicts
    judged = health(served.url)["samples_judged"]
    assert judged == 2000
    again = asyncio.run(load(served.url, requests, 64))  # the same ids: the stored verdicts, nothing run
    assert all(again[key][1]["replayed"] and again[key][1]["verdicts"] == answers[key][1]["verdicts"]
               for key in answers)
    after = health(served.url)
    assert after["samples_judged"] == judged and after["replayed"] == 2000
    assert took < 600, took


def test_a_service_killed_mid_load_and_started_again_answers_every_retry_once(serve, tmp_path):
    journal = tmp_path / "kill.jsonl"
    served = serve("-n", "2", journal=journal)
    pool = samples_pool()
    requests = [{"request_id": f"kill-{index}", "samples": [{"problem": problem, "completion": completion}]}
                for index, (problem, completion, _) in enumerate(pool)]

    async def killed_then_restarted() -> dict[str, tuple[int, dict]]:
        running = asyncio.ensure_future(load(served.url, requests, 16, retry=True))
        while not journal.exists() or journal.read_text().count("\n") < 8:  # some verdicts answered, some not
            await asyncio.sleep(0.05)
        served.process.kill()  # SIGKILL: nothing of it runs after
        served.process.wait()
        os.killpg(served.process.pid, signal.SIGKILL)
        again = await asyncio.to_thread(serve, "-n", "2", "--port", served.url.rsplit(":", 1)[1], journal=journal)
        assert again.url == served.url
        return await running

    answers = asyncio.run(killed_then_restarted())
    assert len(answers) == len(requests) and {status for status, _ in answers.values()} == {200}
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    ids = [line["request_id"] for line in lines]
    assert len(ids) == len(set(ids)) == len(requests)  # each request's verdicts kept once: none counted twice
    for (problem, completion, passes), body in zip(pool, requests):
        assert answers[body["request_id"]][1]["verdicts"][0]["passed"] is passes


def test_overload_is_answered_504_at_once_with_retry_after(serve):
    served = serve("-n", "1", "--queue", "2")
    problem = PROBLEMS[0]
    slow = f"{problem.signature}\n    import time\n    time.sleep(0.5)\n    return None\n"

    async def burst() -> list[tuple[int, dict, dict, float]]:
        async with aiohttp.ClientSession() as session:
            async def one(index: int) -> tuple[int, dict, dict, float]:
                began = time.monotonic()
                status, body, headers = await post(session, f"{served.url}/score", {
                    "request_id": f"burst-{index}", "samples": [{"problem": problem.id,
                                                                 "completion": slow + f"    # {index}\n"}]})
                return status, body, headers, time.monotonic() - began
            return await asyncio.gather(*(one(index) for index in range(12)))

    answers = asyncio.run(burst())
    refused = [answer for answer in answers if answer[0] == 504]
    assert len(refused) >= 8 and all(status in (200, 504) for status, *_ in answers)
    assert all(headers["Retry-After"] == "1" and "queue is full" in body["error"] and seconds < 2.0
               for _, body, headers, seconds in refused)
    assert "verdicts" not in refused[0][1]


def test_time_limit_sigterm_openrlhf_and_hostile_input(serve, tmp_path):
    journal = tmp_path / "term.jsonl"
    served = serve("-n", "1", "--max-batch", "4", "--max-completion-bytes", "2000", journal=journal)
    problem = PROBLEMS[0]
    url = served.url

    async def talk() -> None:
        async with aiohttp.ClientSession() as session:
            sample = {"problem": problem.id, "completion": problem.reference}
            # hostile input: a 4xx naming the field, never a verdict
            for body, status, field in [
                ({"samples": [{"problem": "../ledger/add_months", "completion": "x"}]}, 404, "samples[0].problem"),
                ({"samples": [{"problem": str(SHIPPED / "textkit"), "completion": "x"}]}, 404, "samples[0].problem"),
                ({"samples": [{"problem": problem.id, "completion": "x" * 3000}]}, 413, "samples[0].completion"),
                ({"samples": [sample] * 5}, 413, "samples"),
                ({"samples": [sample, {"problem": problem.id, "completion": 7}]}, 400, "samples[1].completion"),
                ({"samples": []}, 400, "samples"),
                ({"request_id": 7, "samples": [sample]}, 400, "request_id"),
                ({"samples": [sample], "timeout": -1}, 400, "timeout"),
                ({"samples": [sample], "tr": "no"}, 400, "tr"),
                ([1, 2], 400, "body"),
            ]:
                answer_status, answer, _ = await post(session, f"{url}/score", body)
                assert (answer_status, answer.get("field")) == (status, field), answer
                assert "verdicts" not in answer
            async with session.post(f"{url}/score", data=b"{not json") as answer:
                assert answer.status == 400 and (await answer.json())["field"] == "body"
            async with session.post(f"{url}/score", data=b'{"samples": "' + b"x" * 200_000 + b'"}') as answer:
                assert answer.status == 413 and (await answer.json())["field"] == "body"  # never held whole
            # OpenRLHF: the completion is the query without its prompt; the label names the problem
            prompt = "PROMPT "
            status, answer, _ = await post(session, f"{url}/get_reward", {
                "query": [prompt + problem.reference, prompt + "def nothing(): pass"], "prompts": [prompt, prompt],
                "labels": [problem.id, problem.id]})
            assert status == 200 and answer["rewards"] == answer["scores"] == [1.0, 0.0], answer
            status, answer, _ = await post(session, f"{url}/get_reward", {"query": ["x"], "prompts": ["x"],
                                                                            "labels": ["/etc/passwd"]})
            assert (status, answer["field"]) == (404, "labels[0]")
            # a request past its time limit: 504, still judged; the same id then gets its verdict
            slow = {"problem": problem.id, "completion": f"{problem.signature}\n    import time\n"
                                                         "    time.sleep(0.3)\n    return None\n"}
            status, answer, headers = await post(session, f"{url}/score", {"request_id": "late", "samples": [slow],
                                                                           "timeout": 0.05})
            assert status == 504 and headers["Retry-After"] and "same request_id" in answer["error"]
            status, answer, _ = await post(session, f"{url}/score", {"request_id": "late", "samples": [slow]})
            assert status == 200 and answer["verdicts"][0]["passed"] is False
            status, answer, _ = await post(session, f"{url}/score", {"request_id": "late", "samples": [sample]})
            assert (status, answer["field"]) == (409, "request_id")
            status, answer, _ = await post(session, f"{url}/score", {"request_id": "late", "samples": [slow],
                                                                     "tr": False})
            assert (status, answer["field"]) == (409, "request_id")  # another question under the same id
            # no TR asked for: a failing sample stops at its first failing test, and says TR was not measured
            status, answer, _ = await post(session, f"{url}/score", {"samples": [slow], "tr": False})
            assert status == 200 and answer["verdicts"][0]["passed"] is False and answer["verdicts"][0]["tr"] is None
            assert answer["verdicts"][0]["result"]["tr_measured"] is False
            # SIGTERM while a request is under way: it is answered, journalled, and the service ends
            pending = asyncio.ensure_future(post(session, f"{url}/score", {"request_id": "term", "samples": [
                {"problem": p.id, "completion": p.reference} for p in PROBLEMS[1:5]]}))
            await asyncio.sleep(0.3)
            served.process.send_signal(signal.SIGTERM)
            status, answer, _ = await pending
            assert status == 200 and [verdict["passed"] for verdict in answer["verdicts"]] == [True] * 4

    asyncio.run(talk())
    assert served.process.wait(timeout=60) == 0
    assert "term" in {json.loads(line)["request_id"] for line in journal.read_text().splitlines()}


def test_a_taken_port_or_a_folder_without_problems_is_refused_by_name(repoexec_cache, tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = subprocess.run([sys.executable, "-m", "pytest_repoexec.cli", "serve", str(SHIPPED), "--port",
                                  str(port), "-n", "1", f"--repoexec-cache={repoexec_cache}"],
                                 capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and f"--port {port}: " in refused.stderr
    assert "address already in use" in refused.stderr
    empty = subprocess.run([sys.executable, "-m", "pytest_repoexec.cli", "serve", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 2 and "paths: no problem.toml under" in empty.stderr
