"""Problems judged by the project's own test suite (``suite = [node ids]`` in problem.toml): the tests run in
place in the sample's tree, with the project's conftest files and configuration (less its addopts), the
package importable whatever its layout; with both executors and through the admission gate."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import write_replay

CORE = '''\
from .units import FACTOR


def scale(values, by=1):
    """Each value times FACTOR and ``by``; a negative value is an error."""
    if any(value < 0 for value in values):
        raise ValueError("negative value")
    return [value * FACTOR * by for value in values]


def unrelated():
    return "unrelated"
'''

CONFTEST = '''\
import pytest


@pytest.fixture
def numbers():
    return [1, 2, 3]
'''

TESTS = '''\
import pytest

from shop.core import scale, unrelated


def test_scale(numbers):
    assert scale(numbers) == [10, 20, 30]


@pytest.mark.parametrize("by", [1, 2])
def test_by(numbers, by):
    assert scale(numbers, by) == [10 * by, 20 * by, 30 * by]


class TestErrors:
    def test_negative(self):
        with pytest.raises(ValueError):
            scale([-1])


def test_unrelated():
    assert unrelated() == "unrelated"
'''

SUITE = ["tests/test_core.py::test_scale", "tests/test_core.py::test_by[1]", "tests/test_core.py::test_by[2]",
         "tests/test_core.py::TestErrors::test_negative"]
REFERENCE = CORE.split("\n\n\ndef unrelated")[0].split("\n\n\n", 1)[1] + "\n"


def write_project(root: Path) -> Path:
    """A src-layout project whose suite needs its conftest fixture and whose configuration adds an option
    that names a plugin its environment does not have."""
    project = root / "shop"
    source = project / "repo"
    (source / "src" / "shop").mkdir(parents=True)
    (source / "src" / "shop" / "__init__.py").write_text("")
    (source / "src" / "shop" / "units.py").write_text("FACTOR = 10\n")
    (source / "src" / "shop" / "core.py").write_text(CORE)
    (source / "tests").mkdir()
    (source / "tests" / "conftest.py").write_text(CONFTEST)
    (source / "tests" / "test_core.py").write_text(TESTS)
    (source / "pytest.ini").write_text("[pytest]\naddopts = --cov=shop --strict-markers\n")
    (project / "project.toml").write_text('import_root = "src"\n\n[source]\npath = "repo"\n')
    problem = project / "scale"
    problem.mkdir()
    (problem / "problem.toml").write_text(
        f'module = "shop.core"\nentry_point = "scale"\ntest_count = {len(SUITE)}\n'
        f"suite = {SUITE!r}\n".replace("'", '"')
        + f"reference = '''\n{REFERENCE}'''\n\n[prompt.context]\nfull = '''\nfrom .units import FACTOR\n'''\n"
    )
    return project


WRONG = "def scale(values, by=1):\n    return [value * FACTOR for value in values]\n"  # ignores by, accepts -1


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_the_suite_judges_in_place_with_its_conftest(run_repoexec, pytester, executor):
    project = write_project(pytester.path)
    replay = write_replay(pytester.path / "replay.jsonl", {"shop/scale": [REFERENCE, WRONG]})
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}",
                                  f"--repoexec-executor={executor}", "--repoexec-fresh")
    assert report is not None, result.stdout.str()[-3000:]
    right, wrong = report["samples"]
    assert (right["passed"], right["tests_passed"], right["tests_total"]) == (True, 4, 4), result.stdout.str()[-3000:]
    assert (wrong["passed"], wrong["tests_passed"], wrong["error_type"]) == (False, 2, "AssertionError")
    assert wrong["failed_test"] in ("test_by[2]", "test_negative")


def test_the_gate_admits_a_suite_problem_and_its_mutants_are_caught(run_repoexec, pytester):
    project = write_project(pytester.path)
    result, report = run_repoexec(str(project), "--repoexec-validate", "--repoexec-reruns=3")
    assert report is not None, result.stdout.str()[-3000:]
    (entry,) = report["problems"]
    assert entry["passed"], entry["reasons"]
    assert entry["line_coverage"] == 100.0 and entry["mutation_score"] > 0


@pytest.mark.parametrize("field, message", [
    ('suite = ["tests/test_core.py::test_scale"]\ntests = "x.py"\n', "suite: a problem is judged by its own test "
                                                                       "module (tests) or by the project's suite"),
    ('suite = ["/abs/test_core.py::test_scale"]\n', "not a test's node id relative to the source root"),
    ('suite = ["tests/test_core.py"]\n', "not a test's node id relative to the source root"),
    ('suite = ["tests/t.py::a", "tests/t.py::a"]\n', "suite: names a test twice"),
    ('suite = ["tests/test_core.py::test_scale"]\nprogram_tests = true\n',
     "program_tests: a problem judged by the project's suite has no test module"),
])
def test_a_malformed_suite_names_the_field(run_repoexec, pytester, field, message):
    project = write_project(pytester.path)
    manifest = project / "scale" / "problem.toml"
    lines = [line for line in manifest.read_text().splitlines(keepends=True) if not line.startswith("suite =")]
    count = field.count("::")
    manifest.write_text(textwrap.dedent(field)  # at the top: fields, not keys of the context's table
                        + "".join(lines).replace(f"test_count = {len(SUITE)}", f"test_count = {max(count, 1)}"))
    result, _ = run_repoexec(str(project))
    assert message in result.stdout.str()
    assert "problem.toml" in result.stdout.str()
