"""Where a build's code comes from: a folder, a local git checkout (its working tree), or a PyPI release.

A folder or checkout is copied into the project as ``repo/`` (``source.path = "repo"``), so the built set
carries its code; a PyPI release stays a pin (``source.pypi``), materialised by the engine's own cache, so the
functions are picked from exactly the tree that the engine will run.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from . import BuildError

PYPI_PREFIX = "pypi:"
# Neither copied nor looked into: version control, caches, virtualenvs, build outputs.
_SKIPPED = (".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", ".mypy_cache",
            ".pytest_cache", "*.pyc", "*.egg-info", "build", "dist", "node_modules")


@dataclass(frozen=True)
class Source:
    """A parsed SOURCE argument: a folder (a plain one or a git checkout) or a pinned PyPI release."""

    kind: str  # "folder", "git" or "pypi"
    location: str  # the folder's absolute path, or "name==version"


def parse_source(text: str, project: str) -> Source:
    """The SOURCE argument checked: a missing folder or a release that is not pinned is a ``BuildError``."""
    if text.startswith(PYPI_PREFIX):
        pin = text[len(PYPI_PREFIX):]
        try:
            requirement = Requirement(pin)
        except InvalidRequirement as exc:
            raise BuildError(project, "source", f"{pin!r} is not a requirement: {exc}") from None
        specifiers = list(requirement.specifier)
        if len(specifiers) != 1 or specifiers[0].operator != "==" or requirement.extras or requirement.url:
            raise BuildError(project, "source", f"pin one release, as in pypi:NAME==VERSION (got {pin!r})")
        return Source("pypi", pin)
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise BuildError(project, "source", f"{text} is not a folder (nor pypi:NAME==VERSION)")
    return Source("git" if (folder / ".git").exists() else "folder", str(folder.resolve()))


def copy_tree(source: Source, target: Path, project: str) -> None:
    """Copy a folder, or a checkout's working tree (tracked files and untracked ones git does not ignore)."""
    root = Path(source.location)
    if source.kind == "folder":
        shutil.copytree(root, target, ignore=shutil.ignore_patterns(*_SKIPPED), symlinks=True)
        return
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, text=True,
    )
    if listed.returncode != 0:
        raise BuildError(project, "source", f"git ls-files in {root} failed: {listed.stderr.strip()}")
    target.mkdir(parents=True)
    for name in filter(None, listed.stdout.split("\0")):
        path = root / name
        if not path.is_file() or path.is_symlink():  # deleted in the working tree, a submodule, or a link
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target / name)
