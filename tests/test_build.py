"""``repoexec build`` on a repository written here: which functions are picked and why the others are not,
their dependency context and DIR dependencies, the suite mapped to functions by node id (failing tests and
set-up-only runs left out), and a failed build leaving nothing in place."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from build_repo import write_build_repo
from pytest_repoexec import syntax
from pytest_repoexec.builder import BuildError
from pytest_repoexec.builder.context import Modules, full_context
from pytest_repoexec.builder.functions import Options, pick
from pytest_repoexec.builder.pipeline import BuildOptions, build
from pytest_repoexec.builder.requirements import declared_dependencies, requirement_files, extras_for_tests
from pytest_repoexec.builder.sources import Source, copy_tree, parse_source
from pytest_repoexec.builder.suite import SuiteRun, SuiteSettings, suite_for
from pytest_repoexec.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PICKED = {"tally.core:total", "tally.core:describe", "tally.core:headline", "tally.core:doubled",
          "tally.core:prepared", "tally.core:Account.add", "tally.core:Account.balance", "tally.core:Account.report",
          "tally.units:to_cents", "tally.fmt.text:shout"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_build_repo(tmp_path / "src")


def _by_label(repo: Path, options: Options = Options()) -> tuple[dict, dict]:
    picked = pick(repo, ".", options)
    return {f"{f.module}:{f.qualname}": f for f in picked.functions}, dict(picked.skipped)


def test_picks_documented_public_functions_and_says_why_it_leaves_the_rest(repo: Path) -> None:
    functions, skipped = _by_label(repo)
    assert set(functions) == PICKED
    assert skipped["tally.core:undocumented"] == "no docstring"
    assert skipped["tally.core:tiny"] == "trivial"
    assert skipped["tally.core:Account.name"] == "trivial"  # a property that returns an attribute
    assert skipped["tally.core:Account.__init__"] == "private"
    assert skipped["tally.units:_private_helper"] == "private"
    assert skipped["setup:configure"] == "in a setup or conftest file"
    assert skipped["docs.conf:setup"] == "in docs or examples"
    assert skipped["tests.test_core:TestAccount.test_add"] == "in a test file"
    assert skipped["tests.conftest:account"] == "in a test file"
    add = functions["tally.core:Account.add"]
    assert add.reference.startswith("def add(self, amount):\n") and add.path == "tally/core.py"

    functions, skipped = _by_label(repo, Options(private=True, min_lines=3))
    assert "tally.units:_private_helper" not in functions and skipped["tally.units:_private_helper"].startswith(
        "body under 3")
    assert skipped["tally.core:total"] == "body under 3 lines"
    functions, skipped = _by_label(repo, Options(private=True, max_lines=1))
    assert not functions and skipped["tally.core:describe"] == "body over 1 lines"


def test_context_holds_imports_then_what_the_body_uses_and_dependencies_are_exactly_those(repo: Path) -> None:
    functions, _ = _by_label(repo)
    modules = Modules(repo)
    describe = full_context(modules, functions["tally.core:describe"])
    assert describe.startswith("import math\nimport os\nfrom .units import FACTOR, to_cents\nfrom .fmt import shout\n")
    assert "FACTOR = 100" in describe and "def to_cents(amount):" in describe  # cross-file, with bodies
    assert describe.index("FACTOR = 100") < describe.index("def to_cents") < describe.index('SEPARATOR = ", "')
    assert "def total(amounts):" in describe and "UNUSED" not in describe and "def describe" not in describe
    assert syntax.dependencies(describe, functions["tally.core:describe"].reference, "describe") == [
        "math", "FACTOR", "to_cents", "SEPARATOR", "total"]  # `os` and `shout` are imported, not used

    headline = full_context(modules, functions["tally.core:headline"])  # shout: re-exported by tally/fmt
    assert 'def shout(text):\n    """The text in capitals' in headline
    assert syntax.dependencies(headline, functions["tally.core:headline"].reference, "headline") == [
        "shout", "total"]

    add = full_context(modules, functions["tally.core:Account.add"])
    assert "class Account:" in add and "def __init__(self, owner):" in add and "def balance(self):" in add
    assert "def add(" not in add and "def report(" not in add  # itself, and a method it does not reach
    assert syntax.dependencies(add, functions["tally.core:Account.add"].reference, "Account.add") == ["to_cents"]
    medium = syntax.strip_bodies(add, keep_docstrings=True)
    assert "self.entries = []" not in medium and '"""The balance in cents."""' in medium

    to_cents = full_context(modules, functions["tally.units:to_cents"])
    assert to_cents == "FACTOR = 100\n"


def test_a_build_maps_suite_tests_by_node_id(repo: Path, tmp_path: Path, repoexec_cache: Path) -> None:
    out = tmp_path / "built" / "tally"
    report = build(BuildOptions(str(repo), out, repoexec_cache, gate=False), say=lambda line: None)
    written = {problem["name"]: problem for problem in report.problems}
    assert set(written) == {"core_total", "core_describe", "core_headline", "core_Account_add",
                            "core_Account_balance", "units_to_cents", "text_shout"}
    total = tomllib.loads((out / "core_total" / "problem.toml").read_text())
    assert total["suite"] == [  # test_total_wrong runs total but fails with the reference: dropped
        "tests/test_core.py::test_describe[amounts0-100 (1)]",
        "tests/test_core.py::test_describe[amounts1-100, 200 (3)]",
        "tests/test_core.py::test_headline",
        "tests/test_core.py::test_total",
    ]
    assert total["test_count"] == 4 and total["module"] == "tally.core" and total["entry_point"] == "total"
    assert not list((out / "core_total").glob("test_*.py"))
    add = tomllib.loads((out / "core_Account_add" / "problem.toml").read_text())
    assert add["suite"] == ["tests/test_core.py::TestAccount::test_add",
                            "tests/test_core.py::TestAccount::test_balance"]
    assert "def balance(self):" in add["prompt"]["context"]["full"]
    skipped = dict(report.skipped)
    assert skipped["tally.core:doubled"] == "no passing test runs its body"  # its only test fails
    assert skipped["tally.core:prepared"] == "no passing test runs its body"  # run by a fixture's set-up only
    assert {"tests/test_core.py::test_doubled", "tests/test_core.py::test_total_wrong"} == set(
        report.suite["not_passed"])
    project = tomllib.loads((out / "project.toml").read_text())
    assert project["source"] == {"path": "repo"} and (out / "repo" / "tests" / "conftest.py").is_file()
    assert (out / "build-report.json").is_file() and not list(out.parent.glob(".tally.*"))


def test_a_failed_build_leaves_nothing_in_place(repo: Path, tmp_path: Path, repoexec_cache: Path) -> None:
    out = tmp_path / "built" / "tally"
    build(BuildOptions(str(repo), out, repoexec_cache, gate=False), say=lambda line: None)
    before = sorted(path.name for path in out.iterdir())
    (repo / "tests" / "conftest.py").write_text("import tally.missing_module\n")  # the suite cannot be collected
    with pytest.raises(BuildError, match=r"(?s)project tally: collecting the test suite: .*No module named 'tally"):
        build(BuildOptions(str(repo), out, repoexec_cache, gate=False), say=lambda line: None)
    assert sorted(path.name for path in out.iterdir()) == before  # the earlier build is untouched
    assert [path.name for path in out.parent.iterdir()] == ["tally"]  # and no staging folder is left

    with pytest.raises(BuildError, match=r"project elsewhere: source: .*nowhere is not a folder"):
        build(BuildOptions(str(tmp_path / "nowhere"), tmp_path / "elsewhere", repoexec_cache), say=print)
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match=r"project taken: output: .* is not an earlier build"):
        build(BuildOptions(str(repo), tmp_path / "taken", repoexec_cache), say=print)
    assert (tmp_path / "taken" / "notes.txt").read_text() == "mine"


def test_a_release_that_cannot_be_downloaded_names_project_and_step(
    tmp_path: Path, repoexec_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", (tmp_path / "no-index").as_uri())  # offline: an index that is empty
    monkeypatch.setenv("PIP_NO_INPUT", "1")
    status = main(["build", "pypi:tally==0.1", "--out", str(tmp_path / "tally"), "--cache", str(repoexec_cache)])
    error = capsys.readouterr().err
    assert status == 1 and "repoexec build: project tally: environment: no sdist or wheel of tally==0.1" in error
    assert not (tmp_path / "tally").exists() and list(tmp_path.iterdir()) == []


def test_sources_and_requirements(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="pin one release"):
        parse_source("pypi:tally>=1", "tally")
    assert parse_source("pypi:Some_Name==1.0", "x") == Source("pypi", "Some_Name==1.0")
    assert parse_source(str(repo), "tally").kind == "folder"

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("ignored.txt\n")
    (repo / "ignored.txt").write_text("build output")
    subprocess.run(["git", "-C", str(repo), "add", "tally"], check=True)  # the rest stays untracked
    source = parse_source(str(repo), "tally")
    assert source.kind == "git"
    copy_tree(source, tmp_path / "copy", "tally")
    copied = {path.relative_to(tmp_path / "copy").as_posix() for path in (tmp_path / "copy").rglob("*")
              if path.is_file()}
    assert "tally/core.py" in copied and "tests/conftest.py" in copied  # tracked, and untracked not ignored
    assert "ignored.txt" not in copied and not any(name.startswith(".git/") for name in copied)

    (repo / "pyproject.toml").write_text(
        '[project]\nname = "tally"\nversion = "0.1"\ndependencies = ["attrs>=20"]\n'
        '[project.optional-dependencies]\ntest = ["hypothesis", "pytest>=7"]\ndocs = ["sphinx"]\n')
    (repo / "requirements-dev.txt").write_text("-r requirements.txt\nfreezegun==1.2  # time\npytest-cov\n"
                                               "git+https://example.org/x.git\n")
    assert extras_for_tests(repo) == ["test"]
    assert declared_dependencies(repo) == ["attrs>=20", "hypothesis"]  # pytest comes with the engine's runtime
    assert requirement_files(repo) == ["freezegun==1.2"]


def test_a_suite_past_its_time_stops_the_build(repo: Path, tmp_path: Path, repoexec_cache: Path) -> None:
    (repo / "tests" / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(60)\n")
    options = BuildOptions(str(repo), tmp_path / "tally", repoexec_cache, gate=False, sandbox="none",
                           suite=SuiteSettings(test_timeout=120, timeout=4))
    started = time.monotonic()
    with pytest.raises(BuildError, match=r"project tally: running the test suite: it ran past 4 s"):
        build(options, say=lambda line: None)
    assert time.monotonic() - started < 30 and list(tmp_path.iterdir()) == [repo]


def test_tests_of_keeps_passing_tests_that_run_the_body_those_naming_the_function_first(repo: Path) -> None:
    functions, _ = _by_label(repo)
    total = functions["tally.core:total"]  # body: lines 12-13
    run = SuiteRun(
        outcomes={"t.py::test_total": "passed", "t.py::test_a": "passed", "t.py::test_b": "passed",
                  "t.py::test_total_fails": "failed", "t.py::test_header_only": "passed"},
        durations={"t.py::test_total": 0.5, "t.py::test_a": 0.2, "t.py::test_b": 0.1},
        lines={"tally/core.py": {"t.py::test_total": [12, 13], "t.py::test_a": [13], "t.py::test_b": [12],
                                 "t.py::test_total_fails": [12], "t.py::test_header_only": [10, 11]}},
    )
    assert total.body_lines == (12, 13)
    assert suite_for(total, run, 10) == ["t.py::test_a", "t.py::test_b", "t.py::test_total"]
    assert suite_for(total, run, 2) == ["t.py::test_b", "t.py::test_total"]  # its name, then the fastest


def test_a_built_set_goes_through_the_gate_and_its_references_pass(repo: Path, tmp_path: Path,
                                                                    repoexec_cache: Path) -> None:
    out = tmp_path / "tally"
    options = BuildOptions(str(repo), out, repoexec_cache, gate_options=("--repoexec-mutants=2",))
    report = build(options, say=lambda line: None)
    assert [p["name"] for p in report.admitted] == [p["name"] for p in report.problems] and len(report.problems) == 7
    assert report.figures()["mean_line_coverage"] == 100.0
    document = json.loads((out / "build-report.json").read_text())
    assert document["admitted"] == 7 and document["skipped_by_reason"]["no passing test runs its body"] == 3
    scored = subprocess.run([sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider",
                             f"--repoexec-cache={repoexec_cache}"], capture_output=True, text=True, cwd=tmp_path)
    assert scored.returncode == 0 and "7 passed" in scored.stdout, scored.stdout[-2000:]
