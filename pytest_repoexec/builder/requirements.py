"""What a project's own tests need installed, read from what it declares, where that is easy to find.

Read: the test extras (named test, tests or testing) of pyproject.toml, setup.cfg or an sdist's PKG-INFO, and
the requirement files requirements-test*.txt, requirements-dev.txt, requirements/test*.txt. The engine's
runtime brings pytest, pytest-timeout and coverage to every environment, so those are left out: a second copy
in the virtualenv would shadow the runtime's. setup.py is code and is not run; ``--requirements`` adds the rest.
"""

from __future__ import annotations

import configparser
import email.parser
import sys
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEST_EXTRAS = ("test", "tests", "testing")
RUNTIME_PROVIDED = {"pytest", "pytest-timeout", "coverage", "pytest-cov"}
_FILES = ("requirements-test*.txt", "requirements_test*.txt", "requirements-dev.txt", "requirements_dev.txt",
          "requirements/test*.txt", "test-requirements.txt", "tests/requirements.txt")


def extras_for_tests(root: Path) -> list[str]:
    """The extras named like tests that the project declares (an sdist's PKG-INFO, pyproject, setup.cfg)."""
    declared = set(_pyproject(root).get("project", {}).get("optional-dependencies", {}))
    declared |= set(_setup_cfg_extras(root))
    if (root / "PKG-INFO").is_file():
        metadata = email.parser.Parser().parsestr((root / "PKG-INFO").read_text(encoding="utf-8", errors="replace"))
        declared |= set(metadata.get_all("Provides-Extra") or [])
    return sorted(name for name in declared if name.lower() in TEST_EXTRAS)


def declared_dependencies(root: Path) -> list[str]:
    """A folder's own dependencies and its test extras' requirements (pyproject.toml, setup.cfg): what a
    PyPI pin would bring by installing the release with its extras."""
    project = _pyproject(root).get("project", {})
    found = list(project.get("dependencies", []))
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extra.lower() in TEST_EXTRAS:
            found += requirements
    config = _setup_cfg(root)
    if config.has_option("options", "install_requires"):
        found += config.get("options", "install_requires").splitlines()
    for extra, requirements in _setup_cfg_extras(root).items():
        if extra.lower() in TEST_EXTRAS:
            found += requirements
    return keep_installable(found)


def requirement_files(root: Path) -> list[str]:
    """The requirements listed in the project's test and development requirement files."""
    lines: list[str] = []
    for pattern in _FILES:
        for path in sorted(root.glob(pattern)):
            lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return keep_installable(lines)


def keep_installable(lines: list[str]) -> list[str]:
    """Plain requirement strings, without comments, options (-r, -e, --index-url), URLs or the runtime's own."""
    kept: dict[str, None] = {}
    for line in lines:
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.url or requirement.name.lower().replace("_", "-") in RUNTIME_PROVIDED:
            continue
        kept[str(requirement)] = None
    return list(kept)


def _pyproject(root: Path) -> dict:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _setup_cfg(root: Path) -> configparser.ConfigParser:
    config = configparser.ConfigParser(interpolation=None)
    try:
        config.read(root / "setup.cfg", encoding="utf-8")
    except configparser.Error:
        return configparser.ConfigParser()
    return config


def _setup_cfg_extras(root: Path) -> dict[str, list[str]]:
    config = _setup_cfg(root)
    if not config.has_section("options.extras_require"):
        return {}
    return {extra: value.splitlines() for extra, value in config.items("options.extras_require")}
