"""pytest-repoexec: evaluate generated functions inside their repositories, the way RepoExec does."""

__version__ = "0.1.0"
