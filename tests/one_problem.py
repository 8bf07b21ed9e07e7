"""A project of one module and one problem on a function of it, written into a temporary folder: for tests of
what the judge does with a shape of module that no shipped problem has."""

from __future__ import annotations

from pathlib import Path

KEPT_STATE = '''\
SEEN = []


def remember(value):
    """Keep ``value`` in the module's SEEN."""
    SEEN.append(value)
'''
KEPT_STATE_TESTS = ("from . import state\n\n\ndef test_remember():\n    state.remember(3)\n"
                    "    assert state.SEEN == [3]\n")


def write_one_problem(root: Path, module: str, entry_point: str, tests: str) -> Path:
    """Project ``keeper``, whose ``keeper/state.py`` is ``module``, and its problem ``keeper/<entry_point>``: that
    function (with its decorators) as the reference, ``tests`` as its one test module. KEPT_STATE's ``remember``
    cannot be judged apart: its tests read what the function left in its module, which is the candidate's
    process's, not the judge's."""
    package = root / "keeper" / "repo" / "keeper"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "state.py").write_text(module)
    (root / "keeper" / "project.toml").write_text('[source]\npath = "repo"\n')
    problem = root / "keeper" / entry_point
    problem.mkdir()
    (problem / f"test_{entry_point}.py").write_text(tests)
    reference = next(part for part in module.split("\n\n\n") if f"def {entry_point}(" in part)
    (problem / "problem.toml").write_text(
        f'module = "keeper.state"\nentry_point = "{entry_point}"\ntest_count = {tests.count("def test_")}\n'
        f"number = 1\nreference = '''\n{reference}\n'''\n\n[prompt.context]\nfull = '''\nimport functools\n'''\n")
    return root / "keeper"


def one_sample(run_repoexec, project: Path, *options: str) -> tuple[bool, str, int]:
    """A fresh run of ``project``'s one problem with these options: its sample's pass, judge and tests passed."""
    result, report = run_repoexec(str(project), "--repoexec-fresh", *options, subprocess=True)
    assert report is not None, "\n".join(result.outlines[-30:])
    (sample,) = report["samples"]
    return sample["passed"], sample["judge"], sample["tests_passed"]
