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
from .settings import Mode, Settings, add_options


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    settings = Settings.from_config(config)
    session = ScoringSession if settings.mode is Mode.SCORE else GateSession
    config.pluginmanager.register(session(config, settings), "repoexec-session")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    return True if is_problem_data(collection_path) else None
