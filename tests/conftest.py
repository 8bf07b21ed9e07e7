import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_project import write_mini_project

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "problems"
PLATFORM = "platform: "  # the only reason a test of this suite may skip: the machine lacks something it cannot get


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A skip for any other reason (a missing package the README's command installs) fails the test."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and isinstance(report.longrepr, tuple):
        reason = report.longrepr[2].removeprefix("Skipped: ")
        if not reason.startswith(PLATFORM):
            report.outcome = "failed"
            report.longrepr = f"skipped for a reason that is not the platform's: {reason}"
    return report


@pytest.fixture(scope="session")
def repoexec_cache() -> Iterator[Path]:
    """One cache for the whole test session, so that each project's virtualenv is built once. Not under pytest's
    own temporary folder: a sample sees the folders on the way to the cache's binds, and where the engine is root,
    its user is named root, whose pytest would then find /tmp/pytest-of-root made by root in its /tmp."""
    folder = Path(tempfile.mkdtemp(prefix="repoexec-test-cache-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def mini(pytester: pytest.Pytester) -> Path:
    return write_mini_project(pytester.path)


@pytest.fixture
def run_repoexec(pytester: pytest.Pytester, repoexec_cache: Path):
    """Run a whole pytest session with the plugin, in a subprocess; return (outcome, JSON report)."""

    def run(*args: str, subprocess: bool = False) -> tuple[pytest.RunResult, dict | None]:
        report = pytester.path / "report.json"
        report.unlink(missing_ok=True)
        options = [*args, f"--repoexec-cache={repoexec_cache}", f"--repoexec-report={report}", "-p", "no:cacheprovider"]
        runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
        result = runner(*options)
        return result, json.loads(report.read_text()) if report.exists() else None

    return run


def write_replay(path: Path, completions: dict[str, list[str]]) -> Path:
    path.write_text("".join(json.dumps({"problem": p, "completions": c}) + "\n" for p, c in completions.items()))
    return path
