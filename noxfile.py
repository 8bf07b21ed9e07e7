"""The dependency range, tested: the newest releases of the libraries the plugin runs inside (pytest,
pytest-xdist, pytest-timeout, coverage, pluggy) and the lowest versions ``pyproject.toml`` allows.

``repoclassbench`` (not run by default: some 25 minutes on 2 cores) imports RepoClassBench from
``../shared/repoclassbench`` and runs its references with the newest releases, each project's pytest resolved with
its own requirements; it fails where fewer than 65 pass (``nox -s repoclassbench -- --workers 8``).

Each session runs the tests that exercise those libraries (``FOCUS``: selection, the inner pytest run with its
timeouts, coverage in the admission gate, progress bars, modes), not the whole suite, so that CI can run both
beside it; ``nox -s newest -- -x`` passes more arguments to pytest. The sessions need only the ``openai`` extra
(the tests' models are on loopback), not torch.
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["newest", "lowest"]

STACK = ("pytest", "pytest-xdist", "pytest-timeout", "coverage", "pluggy")
FOCUS = ("tests/test_selection.py", "tests/test_engine.py", "tests/test_gate.py", "tests/test_progress.py",
         "tests/test_modes.py")


def _run_focus(session: nox.Session) -> None:
    session.run("uv", "pip", "list", external=True, silent=False)  # the versions this session tested, in its log
    session.run("python", "-m", "pytest", *FOCUS, "-n", "auto", *session.posargs)


@nox.session
def newest(session: nox.Session) -> None:
    """The newest release of each library of the stack, whatever the rest of the environment allows."""
    session.install("-e", ".[openai]")
    session.install("--upgrade", *STACK)
    _run_focus(session)


@nox.session
def lowest(session: nox.Session) -> None:
    """The lowest version of each direct dependency that ``pyproject.toml`` allows (uv's lowest-direct)."""
    session.install("--resolution", "lowest-direct", "-e", ".[openai]")
    _run_focus(session)


@nox.session
def repoclassbench(session: nox.Session) -> None:
    """RepoClassBench imported, and its references run, with the newest releases of the stack."""
    session.install("-e", ".")
    session.install("--upgrade", *STACK)
    session.run("uv", "pip", "list", external=True, silent=False)
    session.run("repoexec", "setup")
    session.run("python", "benchmarks/repoclassbench_references.py", "--at-least", "65", *session.posargs)
