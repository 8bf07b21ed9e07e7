"""The pytest plugin's entry point: the engine's hooks and options, and one session object for the run's mode.

The mode is decided once, from the settings (``settings.py``), and only its session object is registered,
as pytest-xdist registers its ``DSession`` only in distribution mode: ``ScoringSession`` (``scoring.py``) or
``GateSession`` (``admission.py``, for the gate and the fixer). Each owns its collector (``report.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import hookspecs
from .admission import GateSession
from .collection import is_problem_data
from .scoring import ScoringSession
from .settings import DEFAULT_MODEL, Mode, Settings, add_options


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config):
    """With ``-n`` and no ``--dist``, a run of problems is distributed by problem (xdist's ``loadscope``: a
    problem's samples are one scope, whose items keep their node ids), so that each problem's zygote is made on
    one worker, instead of xdist's default, which deals the first quarter of the items out one by one."""
    if getattr(config.option, "dist", None) == "no" and getattr(config.option, "numprocesses", None) \
            and _runs_problems(config):
        config.option.dist = "loadscope"
    return (yield)


def _runs_problems(config: pytest.Config) -> bool:
    if config.getoption("repoexec_model") != DEFAULT_MODEL:
        return True
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0])
        if path.is_dir() and any(next(path.glob(pattern), None) for pattern in
                                 ("problem.toml", "project.toml", "*/problem.toml", "*/project.toml")):
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    settings = Settings.from_config(config)
    session = ScoringSession if settings.mode is Mode.SCORE else GateSession
    config.pluginmanager.register(session(config, settings), "repoexec-session")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if is_problem_data(collection_path) else None
