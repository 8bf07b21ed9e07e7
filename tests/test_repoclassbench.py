"""``repoexec import --format repoclassbench``: bad input reported by task id with nothing half-written (a
benchmark made here, with real tarballs), and the real data of ``../shared/repoclassbench``: litestar, which keeps
its names, and requests, whose classes the benchmark renamed, imported with the benchmark's spellings and
classes equal to its ground truth; one litestar task run end to end, its reference passing and its emptied class
failing."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import write_replay
from pytest_repoexec.cli import main
from pytest_repoexec.importer.repoclassbench import emptied, import_benchmark, task_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHARED = Path(__file__).resolve().parents[2] / "shared" / "repoclassbench"
needs_data = pytest.mark.skipif(not (SHARED / "python_data.json").is_file(),
                                reason=f"platform: the RepoClassBench data is not at {SHARED}")

SHAPES = '''class ShapeBase:
    def area(self):
        raise NotImplementedError


class Square(ShapeBase):
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side * self.side
'''
TESTS = '''from shapes.core import SqUaRe


def test_area():
    assert SqUaRe(3).area() == 9
'''


def _tarball(path: Path, top: str, files: dict[str, str], truncate: bool = False) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime = len(data), 1_700_000_000
            archive.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()
    path.write_bytes(data[:len(data) // 2] if truncate else data)


def _record(task_id: str, name: str, commit: str, file: str, directives: list[str], truth: str) -> dict:
    instance = task_id[:-len(name) - 1]
    return {"task_id": task_id, "class_name": name, "file": f"/x/{instance}/{file}",
            "detailed_description": f"{name}, at length.", "sketchy_description": f"{name}.",
            "repo_metadata": {"commit_id": commit, "setup_details": {
                "repo": "org/shapes", "instance_id": instance, "base_commit": commit, "version": "1.0"}},
            "evaluation_metadata": {"test_directives": directives}, "ground_truth_class_body": truth}


def test_bad_input_is_reported_by_task_and_nothing_is_half_written(tmp_path: Path) -> None:
    good, truncated, missing = "a" * 40, "b" * 40, "c" * 40
    (tmp_path / "bench" / "sources").mkdir(parents=True)
    tree = {"shapes/__init__.py": "", "shapes/core.py": SHAPES, "tests/test_core.py": TESTS}
    _tarball(tmp_path / "bench" / "sources" / f"shapes-{good[:12]}.tar.gz", f"shapes-{good[:12]}", tree)
    _tarball(tmp_path / "bench" / "sources" / f"shapes-{truncated[:12]}.tar.gz", f"shapes-{truncated[:12]}", tree,
             truncate=True)
    renamed = SHAPES.split("\n\n\n")[1].replace("Square(", "SqUaRe(")
    tasks = [_record("org__shapes-1_SqUaRe", "SqUaRe", good, "shapes/core.py", ["tests/test_core.py::test_area"],
                   renamed),
             _record("org__shapes-1_Circle", "Circle", good, "shapes/core.py", ["tests/test_core.py::test_area"], ""),
             _record("org__shapes-1_ShapeBase", "ShapeBase", good, "shapes/core.py",
                   ["tests/test_core.py::test_volume"], SHAPES.split("\n\n\n")[0]),
             _record("org__shapes-2_Square", "Square", truncated, "shapes/core.py", ["tests/test_core.py::test_area"],
                   ""),
             _record("org__shapes-3_Square", "Square", missing, "shapes/core.py", ["tests/test_core.py::test_area"], "")]
    (tmp_path / "bench" / "python_data.json").write_text(json.dumps(tasks))
    out = tmp_path / "out"
    assert main(["import", "--format", "repoclassbench", str(tmp_path / "bench"), "--out", str(out)]) == 1
    rows = {row["task_id"]: row for state in json.loads((out / "import-report.json").read_text())["projects"].values()
            for row in state["tasks"]}
    assert rows["org__shapes-1_SqUaRe"]["imported"] and rows["org__shapes-1_SqUaRe"]["class_matches"]
    assert "class 'Circle' not found in shapes/core.py" in rows["org__shapes-1_Circle"]["error"]
    assert "test_volume names no test of the tree" in rows["org__shapes-1_ShapeBase"]["error"]
    assert "cannot be unpacked" in rows["org__shapes-2_Square"]["error"]
    assert "no source tree" in rows["org__shapes-3_Square"]["error"]
    project = out / f"shapes-{good[:12]}"
    assert sorted(path.name for path in project.iterdir()) == ["SqUaRe", "project.toml", "repo"]
    assert "class SqUaRe(ShapeBase)" in (project / "repo" / "shapes" / "core.py").read_text()
    assert not (out / f"shapes-{truncated[:12]}").exists() and not list(out.glob(".*importing*"))
    assert "test_area" in (project / "SqUaRe" / "problem.toml").read_text()


def test_only_xdists_group_suffix_is_cut_from_a_directive() -> None:
    directives = ["t.py::test_a[x]@redis", "t.py::test_b@examples", "t.py::test_c[mailto:user@example.org]",
                  "t.py::test_d[@unittest.skip]"]
    task = task_of(_record("org__shapes-1_Square", "Square", "a" * 40, "shapes/core.py", directives, ""))
    assert task.directives == ("t.py::test_a[x]", "t.py::test_b", *directives[2:])


def test_emptied_leaves_every_method_a_pass_body() -> None:
    assert emptied(SHAPES.split("\n\n\n")[1]) == (
        "class Square(ShapeBase):\n    def __init__(self, side):\n        pass\n\n    def area(self):\n        pass\n")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    if not (SHARED / "python_data.json").is_file():
        pytest.skip(f"platform: the RepoClassBench data is not at {SHARED}")
    out = tmp_path_factory.mktemp("rcb")
    states = import_benchmark(SHARED, out, {"litestar-1fb981da4b61", "requests-0192aac24123"})
    return out, {state.name: state for state in states}


@needs_data
def test_litestar_keeps_its_names_and_its_classes_equal_the_ground_truth(imported: tuple[Path, dict]) -> None:
    out, states = imported
    litestar = states["litestar-1fb981da4b61"]
    assert len(litestar.tasks) == 41 and all(task.imported for task in litestar.tasks)
    assert litestar.renamed == {} and sum(bool(task.code_matches) for task in litestar.tasks) == 41
    manifest = (out / "litestar-1fb981da4b61" / "TestClient" / "problem.toml").read_text()
    assert "@sqlalchemy_examples" not in manifest  # xdist's group suffix is not part of a node id


@needs_data
def test_requests_gets_the_benchmarks_spellings_by_binding(imported: tuple[Path, dict]) -> None:
    out, states = imported
    requests = states["requests-0192aac24123"]
    assert all(task.imported and task.matches for task in requests.tasks)
    assert requests.renamed["Session"] == "SESsiON" and requests.renamed["merge_setting"] == "mErGE_sEtTiNG"
    repo = out / "requests-0192aac24123" / "repo"
    sessions = (repo / "requests" / "sessions.py").read_text()
    assert "class SESsiON(SessiONREDIReCTmiXIn):" in sessions and "def mErGE_sEtTiNG(" in sessions
    assert "from .sessions import SESsiON" in (repo / "requests" / "__init__.py").read_text() or \
        "SESsiON" in (repo / "requests" / "api.py").read_text()


@needs_data
def test_litestar_is_set_up_for_the_runner_and_keeps_its_known_failures(imported: tuple[Path, dict]) -> None:
    out, _ = imported
    project = out / "litestar-1fb981da4b61"
    assert "'repoexec_pytest_compat']" in (project / "repo" / "conftest.py").read_text()
    assert "PytestRemovedIn9Warning" in (project / "repo" / "repoexec_pytest_compat.py").read_text()
    manifest = (project / "FileSystemAdapter" / "problem.toml").read_text()
    assert 'known_failure = "test_file_adapter_info_handles_permission_exception' in manifest
    assert "processes = 1024" in manifest and "timeout = 60" in manifest


@needs_data
def test_litestars_reference_passes_and_its_emptied_class_fails(imported: tuple[Path, dict], run_repoexec,
                                                                 pytester: pytest.Pytester) -> None:
    """One real task end to end (its environment built from the import's requirements, the engine's pytest over
    the plugins' pins): our own reference and emptied class, so unconfined."""
    out, _ = imported
    problem = out / "litestar-1fb981da4b61" / "Headers"
    result, report = run_repoexec(str(problem), "--repoexec-sandbox=none", subprocess=True)
    assert report is not None and [s["passed"] for s in report["samples"]] == [True], result.stdout.str()[-3000:]
    reference = tomllib.loads((problem / "problem.toml").read_text())["reference"]
    replay = write_replay(pytester.path / "emptied.jsonl", {"litestar-1fb981da4b61/Headers": [emptied(reference)]})
    result, report = run_repoexec(str(problem), "--repoexec-sandbox=none", f"--repoexec-model=replay:{replay}",
                                  subprocess=True)
    assert report is not None and [s["passed"] for s in report["samples"]] == [False], result.stdout.str()[-3000:]
