"""``repoexec serve PATH...``: the judge as an HTTP service (aiohttp), for trainers on other processes or hosts.

``POST /score`` takes ``{"samples": [{"problem", "completion"}...], "request_id"?, "timeout"?, "tr"?}`` and answers
``{"request_id", "verdicts": [...], "replayed"}`` (``"tr": false``: no share of tests passed is asked for, and a
failing sample stops at its first failing test); ``POST /get_reward`` is OpenRLHF's remote reward protocol (TR
measured only where the service's shape is TR);
``GET /health`` says how it stands. Every sample goes through a ``ProblemSet`` (``api``): the plugin's verdicts.

What a trainer's client needs of it: a bounded queue that answers 504 with ``Retry-After`` at once when full
(verl's client retries only 504); a request id whose verdicts, once computed, are appended to a journal on disk
before they are answered, so that a retry (after a time-out, a lost connection, or the service killed and
started again) gets them back and never runs them twice; a time limit per request, past which it answers 504
and goes on judging, for the retry; on SIGTERM, no new request, and the ones under way finished and answered.
Its input is hostile: anything that is not what it expects is a 4xx naming the field; a problem is only ever
looked up by id among the set's, never as a path.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from .api import ProblemSet, UnknownProblem, Verdict
from .rewards import NoReward, openrlhf_answer, openrlhf_samples

RETRY_AFTER = 1  # seconds a client told the queue is full waits
MAX_BODY = 256 << 20  # bytes of a request's body, whatever --max-batch and --max-completion-bytes allow


class BadRequest(web.HTTPException):
    """A 4xx whose JSON body names the field that is wrong."""

    def __init__(self, field: str, message: str, status: int = 400) -> None:
        self.status_code = status
        super().__init__(text=json.dumps({"error": f"{field}: {message}", "field": field}),
                         content_type="application/json")


class Journal:
    """Each request's verdicts by request id, appended (and flushed to disk) before they are answered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.entries[entry["request_id"]] = entry
                except (ValueError, KeyError, TypeError):
                    continue  # the last line of a service killed while writing it: its request runs again
        self._file = open(path, "a", encoding="utf-8")

    def put(self, request_id: str, digest: str, verdicts: list[dict[str, Any]]) -> None:
        entry = {"request_id": request_id, "digest": digest, "verdicts": verdicts}
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.entries[request_id] = entry

    def close(self) -> None:
        self._file.close()


class Service:
    def __init__(self, problems: ProblemSet, journal: Journal, queue: int, request_timeout: float,
                 max_batch: int, max_completion: int, shape: str = "pass", unjudged: float | None = None) -> None:
        self.problems, self.journal = problems, journal
        self.queue, self.request_timeout = queue, request_timeout
        self.max_batch, self.max_completion = max_batch, max_completion
        self.shape, self.unjudged = shape, unjudged
        self.pending = 0  # samples admitted and not yet judged
        self.running: dict[str, asyncio.Task] = {}  # requests under way, by id
        self.tasks: set[asyncio.Task] = set()  # every request under way (SIGTERM waits for them)
        self.counters = {"requests": 0, "samples_judged": 0, "replayed": 0, "refused_full": 0, "timed_out": 0}

    def app(self) -> web.Application:
        # a body past what the largest batch needs, and never past MAX_BODY, is refused before it is held
        app = web.Application(client_max_size=min(self.max_batch * (self.max_completion + 1024) + (1 << 16), MAX_BODY))
        app.add_routes([web.post("/score", self.score), web.post("/get_reward", self.get_reward),
                        web.get("/health", self.health)])
        return app

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "problems": len(self.problems.problems), "pending": self.pending,
                                  "queue": self.queue, "workers": self.problems.settings.workers, **self.counters})

    async def score(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        request_id = body.get("request_id")
        if request_id is not None and (not isinstance(request_id, str) or not 0 < len(request_id) <= 200):
            raise BadRequest("request_id", "must be a string of 1 to 200 characters")
        samples = body.get("samples")
        if samples is None and "problem" in body:
            samples = [{"problem": body.get("problem"), "completion": body.get("completion")}]
        pairs = self._checked(samples)
        tr = body.get("tr", True)
        if not isinstance(tr, bool):
            raise BadRequest("tr", "must be true or false (false: the share of tests passed is not asked for, and a "
                                   "failing sample stops at its first failing test)")
        timeout = body.get("timeout", self.request_timeout)
        number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
        if not number or not 0 < timeout <= self.request_timeout:
            raise BadRequest("timeout", f"must be a number of seconds above 0, at most {self.request_timeout}")
        verdicts, replayed = await self._verdicts(request_id, pairs, float(timeout), tr)
        return web.json_response({"request_id": request_id, "verdicts": verdicts, "replayed": replayed})

    async def get_reward(self, request: web.Request) -> web.Response:
        """OpenRLHF's ``--remote_rm_url``: ``{"query", "prompts", "labels"}`` -> ``{"rewards", "scores",
        "extra_logs"}``. A verdict that does not count answers 503 where it is the host's failure, which OpenRLHF
        retries, and 422 naming ``labels`` where no retry can help (a known failure, a problem not judged)."""
        body = await _json_body(request)
        for field in ("query", "prompts", "labels"):
            if not isinstance(body.get(field), list) or not all(isinstance(value, str) for value in body[field]):
                raise BadRequest(field, "must be a list of strings")
        if not len(body["query"]) == len(body["prompts"]) == len(body["labels"]):
            raise BadRequest("labels", "query, prompts and labels must be as long as each other")
        self._check_size("query", len(body["query"]))
        pairs = [self._pair(f"labels[{index}]", problem, f"query[{index}]", completion)
                 for index, (problem, completion) in enumerate(openrlhf_samples(body))]
        verdicts, _ = await self._verdicts(None, pairs, self.request_timeout, self.shape == "tr")
        try:
            return web.json_response(openrlhf_answer([Verdict.from_dict(v) for v in verdicts], self.shape,
                                                     self.unjudged))
        except NoReward as exc:
            if exc.lasting:  # a retry would get the same: the trainer must leave the problem out or state a value
                raise BadRequest("labels", f"not judged, nor will it be: {exc} (or start the service with "
                                 "--unjudged R)", 422) from None
            raise _retry_later(503, f"not judged (the host's failure): {exc}") from None

    def _checked(self, samples: Any) -> list[tuple[str, str]]:
        """``/score``'s samples, each checked (``samples[i].problem``, ``samples[i].completion``)."""
        if not isinstance(samples, list) or not samples:
            raise BadRequest("samples", "must be a non-empty list")
        self._check_size("samples", len(samples))
        for index, sample in enumerate(samples):
            if not isinstance(sample, dict):
                raise BadRequest(f"samples[{index}]", "must be an object with problem and completion")
        return [self._pair(f"samples[{index}].problem", sample.get("problem"),
                           f"samples[{index}].completion", sample.get("completion"))
                for index, sample in enumerate(samples)]

    def _check_size(self, field: str, count: int) -> None:
        if count > min(self.max_batch, self.queue):
            raise BadRequest(field, f"{count} samples, more than this service takes at once "
                                    f"({min(self.max_batch, self.queue)}: --max-batch, --queue)", 413)

    def _pair(self, problem_field: str, problem: Any, completion_field: str, completion: Any) -> tuple[str, str]:
        if not isinstance(problem, str):
            raise BadRequest(problem_field, "must be a problem id (a string)")
        try:
            self.problems.problem(problem)  # looked up by id among the set's, never opened as a path
        except UnknownProblem:
            raise BadRequest(problem_field, f"{problem[:200]!r} names no problem of this service", 404) from None
        if not isinstance(completion, str):
            raise BadRequest(completion_field, "must be a string")
        if len(completion.encode("utf-8", "surrogatepass")) > self.max_completion:
            raise BadRequest(completion_field, f"longer than {self.max_completion} bytes (--max-completion-bytes)", 413)
        return problem, completion

    async def _verdicts(self, request_id: str | None, pairs: list[tuple[str, str]], timeout: float,
                        tr: bool) -> tuple[list[dict[str, Any]], bool]:
        self.counters["requests"] += 1
        asked = pairs if tr else {"samples": pairs, "tr": False}  # a request_id names one question, TR or not
        digest = hashlib.sha256(json.dumps(asked).encode("utf-8")).hexdigest()
        if request_id is not None:
            stored = self.journal.entries.get(request_id)
            if stored is not None:
                if stored["digest"] != digest:
                    raise BadRequest("request_id", "was used before for other samples", 409)
                self.counters["replayed"] += 1
                return stored["verdicts"], True
        task = self.running.get(request_id) if request_id is not None else None
        if task is None:
            if self.pending + len(pairs) > self.queue:
                self.counters["refused_full"] += 1
                raise _retry_later(504, f"the queue is full ({self.pending} samples pending, --queue {self.queue})")
            self.pending += len(pairs)  # admitted now, before another request is read
            task = asyncio.ensure_future(self._judge(request_id, digest, pairs, tr))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            if request_id is not None:
                self.running[request_id] = task
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout), False
        except asyncio.TimeoutError:
            self.counters["timed_out"] += 1
            raise _retry_later(504, f"not judged within {timeout} s; it goes on: send the same request_id again "
                                    "for its verdicts") from None

    async def _judge(self, request_id: str | None, digest: str, pairs: list[tuple[str, str]],
                     tr: bool) -> list[dict[str, Any]]:
        try:
            verdicts = await self.problems.ascore_batch(pairs, tr=tr)
        finally:
            self.pending -= len(pairs)
            self.running.pop(request_id, None)
        self.counters["samples_judged"] += len(pairs)
        answered = [verdict.to_dict() for verdict in verdicts]
        if request_id is not None and all(verdict.result is not None for verdict in verdicts):
            self.journal.put(request_id, digest, answered)  # before it is answered: a retry gets these
        return answered


def _retry_later(status: int, message: str) -> web.HTTPException:
    error = web.HTTPGatewayTimeout if status == 504 else web.HTTPServiceUnavailable
    return error(text=json.dumps({"error": message}), content_type="application/json",
                 headers={"Retry-After": str(RETRY_AFTER)})


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except web.HTTPRequestEntityTooLarge:
        raise BadRequest("body", f"larger than this service takes ({request.app._client_max_size} bytes)", 413) \
            from None
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("body", "is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("body", "must be a JSON object")
    return body


async def serve(service: Service, host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT; then stop taking requests, and answer those under way."""
    runner = web.AppRunner(service.app(), handle_signals=False, shutdown_timeout=service.request_timeout)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1] if runner.addresses else port  # port 0: the one the system chose
    print(f"repoexec serve: {len(service.problems.problems)} problems on http://{host}:{bound} "
          f"({service.problems.settings.workers} workers)", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    began = time.monotonic()
    await site.stop()  # no new connection
    if service.tasks:
        await asyncio.wait(list(service.tasks))  # what is under way is judged, journalled and answered
    await runner.cleanup()
    print(f"repoexec serve: stopped ({time.monotonic() - began:.1f} s to finish what was under way)", flush=True)
