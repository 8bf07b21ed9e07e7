"""Modules that run inside a project's virtualenv, copied there as top-level modules (see environment.py)."""
