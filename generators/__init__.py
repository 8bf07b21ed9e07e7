"""Completion backends. Each module is a pytest plugin (an entry point in pyproject.toml) that registers its
generators through ``pytest_repoexec_add_generators`` and may add options of its own."""
