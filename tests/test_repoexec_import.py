"""`repoexec import`: the published RepoExec data into our format, and bad data reported without damage."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO
from pytest_repoexec.cli import main
from pytest_repoexec.problem import find_manifests, load_problem

DATA = REPO.parent / "shared" / "repoexec"
ROOT = DATA / "data_with_test_case"
pytestmark = pytest.mark.skipif(not ROOT.is_dir(), reason="platform: ../shared/repoexec is not beside the checkout")

# Three projects, every submission: pure-Python releases whose references all pass (see the README's table).
CI_PROJECTS = ("python-string-utils", "pyMonet", "pytutils")


def _small_copy(tmp_path: Path, project: str, lines: int) -> Path:
    """A data folder with the first ``lines`` problems of one project and their pickles."""
    source = ROOT / f"test-apps+{project}"
    target = tmp_path / "data" / f"test-apps+{project}"
    target.mkdir(parents=True)
    rows = (source / "pass_data.jsonl").read_text().splitlines()[:lines]
    (target / "pass_data.jsonl").write_text("\n".join(rows) + "\n")
    shutil.copytree(source / "test_output", target / "test_output")
    return tmp_path / "data"


def test_import_converts_paths_pickles_and_timeouts(tmp_path):
    out = tmp_path / "out"
    assert main(["import", str(DATA), "--out", str(out), "--projects", "pypara"]) == 0
    problems = [load_problem(m) for m in find_manifests([out])]
    published = (ROOT / "test-apps+pypara" / "pass_data.jsonl").read_text().splitlines()
    assert len(problems) == len(published)
    first = json.loads(published[0])
    problem = next(p for p in problems if p.number == first["problem_ids"])
    assert problem.module == first["module"] and problem.entry_point == first["entry_point"]
    assert problem.test_count == len(first["test_list"])
    test = problem.tests.read_text()
    assert "/output/" not in test and "timeout_decorator" not in test
    assert 'import os\nsys.path.insert(1, "/input/test-apps/pypara")' in test  # kept: the engine mounts it there
    project = (out / "pypara" / "project.toml").read_text()
    assert 'mount = "/input/test-apps/pypara"' in project and 'workdir = "/package"' in project
    pickled = [p for p in problems if any(p.expected.iterdir())]
    assert pickled
    for p in pickled:
        for name in (f.name for f in p.expected.iterdir()):
            assert f'os.environ["REPOEXEC_EXPECTED"], "{name}"' in p.tests.read_text()
    assert problem.reference.strip() == first["focal_function"].strip()
    assert first["entry_point"] not in [line.split("(")[0].removeprefix("def ") for line in
                                        problem.context_full.splitlines() if line.startswith("def ")]
    report = json.loads((out / "import-report.json").read_text())
    assert report["pypara"]["imported"] == len(published) and report["pypara"]["errors"] == []
    assert (out / "pypara" / "project.toml").read_text().count('pypi = "pypara==0.0.26"') == 1


def test_dependencies_follow_the_papers_rule(tmp_path):
    out = tmp_path / "out"
    main(["import", str(DATA), "--out", str(out), "--projects", "python-string-utils"])
    reverse = load_problem(next(out.glob("python-string-utils/*_reverse/problem.toml")))
    # the context imports InvalidInputError and is_string (among others); the body uses exactly those two
    assert reverse.dependencies == ("InvalidInputError", "is_string")


def test_bad_data_is_named_and_the_rest_is_imported(tmp_path):
    data = _small_copy(tmp_path, "pyMonet", 3)
    project = data / "test-apps+pyMonet"
    rows = (project / "pass_data.jsonl").read_text().splitlines()
    broken_pickle = next(
        (project / "test_output" / row["module"].replace(".", "+") / row["entry_point"])
        for row in map(json.loads, rows) if "/output/" in row["test"]
    )
    victim = sorted(broken_pickle.iterdir())[0]
    victim.write_bytes(b"not a pickle at all")
    (project / "pass_data.jsonl").write_text("\n".join([rows[0], "{not json", *rows[1:]]) + "\n")
    partial = data / "test-apps+pytutils"
    partial.mkdir()  # a project folder whose pass_data.jsonl is missing

    out = tmp_path / "out"
    assert main(["import", str(data), "--out", str(out)]) == 1
    report = json.loads((out / "import-report.json").read_text())
    errors = "\n".join(report["pyMonet"]["errors"])
    assert "pass_data.jsonl line 2: cannot read the problem" in errors
    assert f"expected output {victim} is not a pickle" in errors
    assert "project pyMonet, problem" in errors
    assert report["pyMonet"]["imported"] == 2
    assert "pass_data.jsonl is missing" in report["pytutils"]["errors"][0]
    written = sorted(p.parent.name for p in (out / "pyMonet").glob("*/problem.toml"))
    assert len(written) == 2 and not list(out.glob(".importing-*"))  # nothing half-written is left


def test_a_missing_data_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["import", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    assert f"{tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["import", str(tmp_path / "empty"), "--out", str(tmp_path / "out")]) == 2
    assert f"{tmp_path / 'empty'}: no full_context subset found" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_hugging_face_form_from_a_local_parquet_copy(tmp_path):
    """A fixture in the shape of Fsoft-AIC/RepoExec (three subsets), written here from two published rows."""
    import pyarrow
    import pyarrow.parquet as parquet

    rows = [json.loads(line) for line in (ROOT / "test-apps+pyMonet" / "pass_data.jsonl").read_text().splitlines()[:2]]
    copy = tmp_path / "hf" / "data"
    copy.mkdir(parents=True)
    for subset in ("full_context", "medium_context", "small_context"):
        records = []
        for row in rows:
            signature_and_doc = row["focal_function"][: row["focal_function"].index('"""', row["focal_function"].index('"""') + 3) + 3]
            context = f"# {subset} of problem {row['problem_ids']}\nimport os\n\n"
            records.append({
                "id": str(row["problem_ids"]), "project": row["project"], "module": row["module"],
                "entry_point": row["entry_point"], "prompt": context + signature_and_doc,
                "target_function_prompt": signature_and_doc, "solution": row["focal_function"], "check": row["test"],
            })
        parquet.write_table(pyarrow.Table.from_pylist(records), copy / f"{subset}-00000-of-00001.parquet")
    out = tmp_path / "out"
    assert main(["import", str(tmp_path / "hf"), "--out", str(out), "--outputs", str(DATA)]) == 0
    problems = sorted((load_problem(m) for m in find_manifests([out])), key=lambda p: p.number)
    assert [p.number for p in problems] == sorted(r["problem_ids"] for r in rows)
    first = problems[0]
    assert first.context("full").startswith("# full_context of problem")
    assert first.context("medium").startswith("# medium_context of problem")
    assert first.context("small").startswith("# small_context of problem")
    assert first.reference.strip() == rows[0]["focal_function"].strip()


def test_three_projects_import_and_their_references_pass(tmp_path, run_repoexec):
    out = tmp_path / "imported"
    assert main(["import", str(DATA), "--out", str(out), "--projects", ",".join(CI_PROJECTS)]) == 0
    # every reference judged (pytutils/168_dedupe cannot be judged apart: it is judged beside its candidate)
    result, report = run_repoexec(str(out), "-n", "2", "--repoexec-judge=apart-or-in-process", subprocess=True)
    expected = sum(len((ROOT / f"test-apps+{p}" / "pass_data.jsonl").read_text().splitlines()) for p in CI_PROJECTS)
    assert len(report["samples"]) + len(report["known_failures"]) == expected
    assert report["metrics"]["pass@1"] == 1.0, report["errors"]
    compress = next(s for s in report["samples"] if s["problem"].startswith("python-string-utils/508_"))
    problem = load_problem(out / compress["problem"] / "problem.toml")
    assert problem.quarantine == ("test_83",)  # a random uuid's compressed length: flaky, quarantined in pins.toml
    assert compress["tests_total"] == problem.test_count - 1
