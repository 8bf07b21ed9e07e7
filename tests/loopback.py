"""A real HTTP server on 127.0.0.1 that answers in OpenAI's wire format, for the openai: backend's tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """Answers ``/v1/models``, ``/v1/chat/completions`` and ``/v1/completions``.

    ``answer(body)`` writes each choice's text, or for a chat request the assistant's message as a dict
    (``content``, ``tool_calls``). ``failures`` is a queue of what the next requests get instead: an HTTP status
    (an error body, with a 1 ms Retry-After) or a delay in seconds before answering. ``refuse_tools``: a request
    that offers ``tools`` gets 400, as from a server without function calling. ``one_choice``: one choice
    whatever ``n`` asks. Only the key ``test-key`` is accepted. Usage: one token per choice.
    """

    def __init__(self, answer: Callable[[dict], str | dict]) -> None:
        self.answer = answer
        self.failures: list[int | float] = []
        self.refuse_tools = False
        self.one_choice = False  # answer one choice whatever ``n`` asks, as llama.cpp's Python server does
        self.requests: list[tuple[str, dict]] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def posts(self) -> list[dict]:
        return [body for path, body in self.requests if path != "/v1/models"]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        loopback = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                loopback.requests.append((self.path, {}))
                if self.headers["Authorization"] != "Bearer test-key":
                    self._send(401, {"error": {"message": "invalid key", "type": "auth", "code": None}})
                    return
                self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model", "created": 0,
                                                             "owned_by": "test"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with loopback.lock:
                    loopback.requests.append((self.path, body))
                    if loopback.refuse_tools and "tools" in body:
                        failure: int | float | None = 400
                    else:
                        failure = loopback.failures.pop(0) if loopback.failures else None
                    loopback.in_flight += 1
                    loopback.most_in_flight = max(loopback.most_in_flight, loopback.in_flight)
                if isinstance(failure, int):
                    error = {"message": f"scripted {failure}", "type": "test", "code": None}
                    status, payload = failure, {"error": error}
                else:
                    time.sleep(failure or 0.05)
                    status, payload = 200, self._completion(body)
                # A request stops counting before its answer is written: once the client reads it, it may send
                # the next one while this thread has not yet returned.
                with loopback.lock:
                    loopback.in_flight -= 1
                self._send(status, payload)

            def _completion(self, body: dict) -> dict:
                texts = [loopback.answer(body) for _ in range(1 if loopback.one_choice else body.get("n", 1))]
                usage = {"prompt_tokens": 1, "completion_tokens": len(texts), "total_tokens": 1 + len(texts)}
                if self.path == "/v1/completions":
                    choices = [{"index": i, "text": t, "finish_reason": "stop", "logprobs": None}
                               for i, t in enumerate(texts)]
                    return {"id": "cmpl-1", "object": "text_completion", "created": 0, "model": body["model"],
                            "choices": choices, "usage": usage}
                messages = [{"role": "assistant", "content": t} if isinstance(t, str) else
                            {"role": "assistant", "content": None, **t} for t in texts]
                choices = [{"index": i, "message": m, "finish_reason": "tool_calls" if m.get("tool_calls") else "stop"}
                           for i, m in enumerate(messages)]
                return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": choices, "usage": usage}

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("retry-after-ms", "1")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                    pass

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def prompt_of(body: dict) -> str:
    return body["prompt"] if "prompt" in body else body["messages"][-1]["content"]
