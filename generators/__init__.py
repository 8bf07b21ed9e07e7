"""Completion backends. Each module is a pytest plugin (an entry point in pyproject.toml) that registers its
generators through ``pytest_repoexec_add_generators`` and may add options of its own. ``-p no:repoexec-NAME``
leaves one out; ``-p no:repoexec`` disables the engine, and with it every generator's options."""

import pytest


def engine_disabled(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether ``-p no:repoexec`` blocked the engine: a generator then adds nothing to the session."""
    return pluginmanager.is_blocked("repoexec")
