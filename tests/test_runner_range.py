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


LONG = "a value of more than a hundred characters, " * 3
LONG_TESTS = f'''\
import pytest

from .core import scaled


@pytest.mark.parametrize("label", [{LONG!r}])
def test_labelled(label):
    assert scaled(3) == 30
'''


@pytest.mark.parametrize("version", ["9.1.1", "9.2.0"])
def test_a_long_parameter_keeps_the_id_an_older_pytest_gave_it(mini, run_repoexec, pytester, version):
    # pytest 9.2 names a string parameter of over 100 characters argname+index; the directives of a benchmark, and
    # the names its problems give, are the full ids that older pytests made: the engine asks 9.2 for them
    (mini / "project.toml").write_text(f'requirements = ["pytest=={version}"]\n\n[source]\npath = "repo"\n')
    problem = mini / "labelled"
    problem.mkdir()
    (problem / "test_labelled.py").write_text(LONG_TESTS)
    (problem / "problem.toml").write_text((mini / "scaled" / "problem.toml").read_text()
                                          .replace("test_count = 4", "test_count = 1").replace("number = 1", "number = 3"))
    replay = write_replay(pytester.path / "long.jsonl", {"mini/labelled": [WRONG]})
    result, report = run_repoexec(str(problem), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                  subprocess=True)
    assert report is not None, result.stdout.str()[-3000:]
    assert [s["failed_test"] for s in report["samples"]] == [f"test_labelled[{LONG}]"], result.stdout.str()[-3000:]
