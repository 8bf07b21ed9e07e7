"""The inner plugin on every pytest a shipped or imported project may get, 7.2 up to 9.2: a project whose
requirements pin pytest runs its samples under that pytest (resolved with its requirements, in its virtualenv,
found before the runtime's), and each one's verdicts are those of the engine's own pytest: the right candidate
passes, a wrong one fails on its assertion, with the warm and the process executor. Real virtualenvs and real
installs from the package index."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_replay

WRONG = "def scaled(value):\n    return value\n"
RIGHT = "def scaled(value):\n    return clamp(value * SCALE, 0, 100)\n"
VERSIONS = ("7.2.2", "7.4.4", "8.0.2", "8.4.2", "9.0.3", "9.2.0")


@pytest.mark.parametrize("executor", ["warm", "process"])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_inner_plugin_judges_alike_on_each_pytest(mini, run_repoexec, pytester, repoexec_cache, version, executor):
    (mini / "project.toml").write_text(f'requirements = ["pytest=={version}"]\n\n[source]\npath = "repo"\n')
    replay = write_replay(pytester.path / "range.jsonl", {"mini/scaled": [RIGHT, WRONG]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-n=2",
                                  f"--repoexec-executor={executor}", "--repoexec-fresh", subprocess=True)
    output = result.stdout.str()
    assert report is not None, output[-3000:]
    outcomes = [(s["sample"], s["passed"], s["error_type"], s["tests_passed"]) for s in report["samples"]]
    assert outcomes == [(0, True, None, 4), (1, False, "AssertionError", 0)], output[-3000:]
    installed = list(Path(repoexec_cache, "venvs").glob(f"mini-*/lib/python*/site-packages/pytest-{version}.dist-info"))
    assert installed, f"no virtualenv of the run holds pytest {version}"
