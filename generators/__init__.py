"""Completion backends. Each module registers its generators through ``pytest_repoexec_add_generators``."""

BUILTIN_MODULES = ("generators.reference", "generators.replay")
