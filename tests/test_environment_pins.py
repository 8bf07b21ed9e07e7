"""A project's pytest is resolved with its requirements: the newest release its plugins accept, free of their date
cap and never older than the inner plugin runs on (requests' pytest-mock of 2020 under its date cap dragged
pytest 6.2), within project.toml's ``pytest`` pin. Real virtualenvs and real uv installs from the package index."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_repoexec.environment import EnvironmentBuildError, Environments
from pytest_repoexec.problem import Project, Source


def _project(tmp_path: Path, requirements: tuple[str, ...], resolve_before: str | None = None,
             pin: str | None = None) -> Project:
    source = tmp_path / "src"
    source.mkdir()
    (source / "tiny.py").write_text("def one():\n    return 1\n")
    return Project("tiny-pins", tmp_path / "project.toml", Source("path", str(source)), requirements=requirements,
                   resolve_before=resolve_before, pytest=pin)


def _versions(env) -> list[str]:
    return subprocess.run([str(env.python), "-c", "import pytest, pytest_timeout, pytest_mock; "
                           "print(pytest.__version__, hasattr(pytest, 'StashKey'), pytest.__file__, "
                           "pytest_mock.__file__)"], capture_output=True, text=True, check=True).stdout.split()


def test_an_old_plugins_pytest_is_the_newest_it_accepts_not_the_one_of_its_date(tmp_path: Path,
                                                                              repoexec_cache: Path) -> None:
    env = Environments(repoexec_cache).get(_project(tmp_path, ("pytest-mock",), resolve_before="2020-06-01"))
    version, stash, where, plugin = _versions(env)
    newest = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "pytest"], capture_output=True,
                            text=True, check=True).stdout.split()[1].strip("()")
    assert (version, stash) == (newest, "True")  # pytest-mock 3.1 of that date accepts every pytest since 5
    assert "site-packages" in where and "site-packages" in plugin  # the project's, of the runner's resolution


def test_a_pin_in_project_toml_narrows_the_projects_pytest(tmp_path: Path, repoexec_cache: Path) -> None:
    env = Environments(repoexec_cache).get(_project(tmp_path, ("pytest-mock",), pin="<8"))
    assert _versions(env)[0] == "7.4.4"  # the newest release below 8


def test_a_requirement_the_runner_cannot_live_with_is_refused_by_name(tmp_path: Path, repoexec_cache: Path) -> None:
    with pytest.raises(EnvironmentBuildError) as refused:
        Environments(repoexec_cache).get(_project(tmp_path, ("pytest<7",)))
    message = str(refused.value)
    assert "project tiny-pins" in message and "pytest>=7.2" in message and "pytest<7" in message
    assert "the inner plugin needs pytest 7.2 or later" in message
