"""A project's requirements never replace the engine's test runner: the runtime reaches a virtualenv after its
site-packages, so an old plugin's pytest (requests' pytest-mock of 2020 under its date cap drags pytest 6.2)
would be what the inner runner imports. Real virtualenvs and real uv installs from the package index."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_repoexec.environment import EnvironmentBuildError, Environments
from pytest_repoexec.problem import Project, Source


def _project(tmp_path: Path, requirements: tuple[str, ...], resolve_before: str | None = None) -> Project:
    source = tmp_path / "src"
    source.mkdir()
    (source / "tiny.py").write_text("def one():\n    return 1\n")
    return Project("tiny-pins", tmp_path / "project.toml", Source("path", str(source)), requirements=requirements,
                   resolve_before=resolve_before)


def test_an_old_plugins_pytest_does_not_shadow_the_runtimes(tmp_path: Path, repoexec_cache: Path) -> None:
    env = Environments(repoexec_cache).get(_project(tmp_path, ("pytest-mock",), resolve_before="2020-06-01"))
    probe = subprocess.run([str(env.python), "-c", "import pytest, pytest_mock, pytest_timeout; "
                            "print(pytest.__version__, hasattr(pytest, 'StashKey'), pytest_mock.__file__)"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert probe[:2] == [pytest.__version__, "True"]
    assert "site-packages" in probe[2]  # the plugin itself is the project's, of its date


def test_a_requirement_the_runner_cannot_live_with_is_refused_by_name(tmp_path: Path, repoexec_cache: Path) -> None:
    with pytest.raises(EnvironmentBuildError) as refused:
        Environments(repoexec_cache).get(_project(tmp_path, ("pluggy<1",)))
    message = str(refused.value)
    assert "project tiny-pins" in message and f"pytest=={pytest.__version__}" in message and "pluggy<1" in message
