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
from pytest_repoexec.importer.repoclassbench import emptied, import_benchmark, import_state, nearest_release, \
    read_tasks, task_of
from pytest_repoexec.importer.repoclassbench_names import adopt_text_spellings, derive
from pytest_repoexec.paraphrase.index import Index

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


CAPTURE = '''class FDCapture:
    """Capture a file descriptor; snap() produces text."""

    def snap(self):
        self._assert_state("snap", ("started",))  # see snap
        return self.read()
'''


def test_strings_and_comments_of_a_task_class_follow_its_ground_truth_word_by_word() -> None:
    """The benchmark renamed some words of strings and comments and kept others: the ground truth says which."""
    truth = CAPTURE.replace("FDCapture", "FDCAPTURe").replace("def snap", "def SNAp").replace('"snap"', '"SNAp"')
    source = CAPTURE.replace("FDCapture", "FDCAPTURe").replace("def snap", "def SNAp")
    adopted = adopt_text_spellings(source, "FDCAPTURe", truth, {"snap": "SNAp", "FDCapture": "FDCAPTURe"})
    assert adopted == truth  # "snap" in the call renamed, snap() in the docstring and the comment kept
    assert adopt_text_spellings(source, "Other", truth, {"snap": "SNAp"}) == source


def _tree(root: Path, files: dict[str, str]) -> Index:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return Index(root, ".")


def test_renames_read_back_follow_reads_of_no_static_type_locals_and_cycles(tmp_path: Path) -> None:
    """What the benchmark renamed by name, renamed where nothing else holds the name: a method read on a parameter
    of no known type, a local the ground truth renames, a string annotation, ``cls()`` in a classmethod, a name
    imported under ``TYPE_CHECKING`` across an import cycle, an ``X as X`` re-export; ``mocker.patch`` (a plugin's
    fixture) and ``dict.get`` stay as written."""
    index = _tree(tmp_path, {
        "pkg/__init__.py": "from pkg.source import Source as Source\n",
        "pkg/source.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.frame import Frame\n\n\n"
                         "class Source:\n    def getstatement(self, frame: Frame) -> \"Source\":\n        return self\n\n"
                         "    def get(self):\n        return 1\n\n    def patch(self):\n        return 2\n\n"
                         "    @classmethod\n    def make(cls):\n        made = cls()\n        made.getstatement(None)\n"
                         "        return made\n",
        "pkg/frame.py": "from pkg.source import Source\n\n\nclass Frame:\n    def read(self, source, options: dict):\n"
                        "        getstatement = source.getstatement(self)\n        options.get(1)\n"
                        "        return getstatement\n",
        "tests/test_it.py": "def test_it(mocker, source):\n    mocker.patch(\"x\")\n    source.patch()\n"
                            "    setattr(source, \"getstatement\", \"getstatement of Source\")\n"})
    truths = ["class FRAMe:\n    def read(self, source, options: dict):\n        GEtstAteMENT = source.GEtstAteMENT(self)\n"
              "        options.get(1)\n        return GEtstAteMENT\n",
              "class sOUrCe:\n    def get_(self, frame: FRAMe) -> \"sOUrCe\":\n        return self.gET() or self.pATcH()\n"]
    derived = derive(index, {"FRAMe": "Frame", "sOUrCe": "Source"}, truths)
    assert derived.names == {"Frame": "FRAMe", "Source": "sOUrCe", "getstatement": "GEtstAteMENT", "get": "gET",
                             "patch": "pATcH"}
    assert derived.loose == {"getstatement"} and derived.local == {"getstatement"}
    derived.renames(index).rewrite_files()
    source, frame = (tmp_path / "pkg" / "source.py").read_text(), (tmp_path / "pkg" / "frame.py").read_text()
    assert "def GEtstAteMENT(self, frame: FRAMe) -> \"sOUrCe\":" in source
    assert "made = cls()\n        made.GEtstAteMENT(None)" in source
    assert "GEtstAteMENT = source.GEtstAteMENT(self)\n        options.get(1)\n        return GEtstAteMENT" in frame
    assert (tmp_path / "pkg" / "__init__.py").read_text() == "from pkg.source import sOUrCe as sOUrCe\n"
    test = (tmp_path / "tests" / "test_it.py").read_text()
    assert 'mocker.patch("x")' in test and 'source.patch()' in test
    assert 'setattr(source, "GEtstAteMENT", "getstatement of Source")' in test  # a string that is the name follows


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
def test_pytests_state_gets_the_benchmarks_names_where_binding_alone_misses_them(tmp_path: Path) -> None:
    """pytest 7.2, whose classes the benchmark renamed: reads on objects of no static type, strings that name a
    renamed definition, and the task classes' docstrings spelled as the ground truths spell them."""
    state, = import_benchmark(SHARED, tmp_path, {"pytest-7421f3bb94df"})
    assert sum(bool(task.matches) for task in state.tasks) >= 13 and all(task.imported for task in state.tasks)
    src = tmp_path / "pytest-7421f3bb94df" / "repo" / "src" / "_pytest"
    assert "self.parser.pRocesSOPtION(option)" in (src / "config" / "argparsing.py").read_text()
    assert '"repReNtRy"' in (src / "reports.py").read_text()
    assert 'self._aSsERT_StAte("SNAp", ("started", "suspended"))' in (src / "capture.py").read_text()
    project = tomllib.loads((tmp_path / "pytest-7421f3bb94df" / "project.toml").read_text())
    assert project["runner"] == "project"  # its tests import the runner: its own pytest runs them
    assert not any("known_failure" in (folder / "problem.toml").read_text()
                   for folder in (tmp_path / "pytest-7421f3bb94df").iterdir() if (folder / "problem.toml").is_file())
    test_capture = (tmp_path / "pytest-7421f3bb94df" / "repo" / "testing" / "test_capture.py").read_text()
    assert '"<FDCAPTURe 1 oldfd={} _state=' in test_capture  # a repr's string takes the renamed class's name
    assert "version = '7.3.0.dev0'" in (src / "_version.py").read_text()

# these tests are of the import: its references pass and its emptied classes fail wherever they are judged, and
# several cannot be judged apart (pytest's own classes; litestar's Headers unconfined; pvlib's Array)
FALLBACK = "--repoexec-judge=apart-or-in-process"


@needs_data
def test_pytests_own_suite_runs_under_its_own_pytest_in_the_sandbox(tmp_path: Path, run_repoexec,
                                                                   pytester: pytest.Pytester) -> None:
    """FDCAPTURe, a class of the runner itself: its tests import ``_pytest``, so the tree's renamed pytest 7.2 runs
    them (fresh processes, the warm one refused with the reason), the engine's plugin reporting inside it; the
    reference passes and the emptied class fails."""
    import_benchmark(SHARED, tmp_path, {"pytest-7421f3bb94df"})
    problem = tmp_path / "pytest-7421f3bb94df" / "FDCAPTURe"
    result, report = run_repoexec(str(problem), FALLBACK, subprocess=True)
    assert report is not None and [(s["passed"], s["tests_passed"]) for s in report["samples"]] == [(True, 6)], \
        result.stdout.str()[-3000:]
    result.stdout.fnmatch_lines(["*OwnRunnerWarning: project pytest-7421f3bb94df runs its samples under its own pytest*"
                                 "integrity check are off*",
                                 "*WarmStartWarning: *this project runs its own pytest*"])
    reference = tomllib.loads((problem / "problem.toml").read_text())["reference"]
    replay = write_replay(pytester.path / "emptied.jsonl", {"pytest-7421f3bb94df/FDCAPTURe": [emptied(reference)]})
    result, report = run_repoexec(str(problem), FALLBACK, f"--repoexec-model=replay:{replay}", subprocess=True)
    assert report is not None and [s["passed"] for s in report["samples"]] == [False], result.stdout.str()[-3000:]
    assert report["samples"][0]["error_type"] != "Tampered"  # the runner's own code is not judged as a cheat


@needs_data
def test_litestar_is_set_up_for_the_runner_and_keeps_its_known_failures(imported: tuple[Path, dict]) -> None:
    out, _ = imported
    project = out / "litestar-1fb981da4b61"
    assert "'repoexec_pytest_compat']" in (project / "repo" / "conftest.py").read_text()
    assert "PytestRemovedIn9Warning" in (project / "repo" / "repoexec_pytest_compat.py").read_text()
    compat = (project / "repo" / "repoexec_pytest_compat.py").read_text()
    assert "def _ids_as_pytest_7():" in compat and "_repoexec_nose_style_methods" in compat
    assert "Redis server" in tomllib.loads((project / "Request" / "problem.toml").read_text())["known_failure"]
    manifest = (project / "FileSystemAdapter" / "problem.toml").read_text()
    assert "known_failure" not in manifest  # chmod 000 holds for the sample user
    assert "processes = 1024" in manifest and "timeout = 60" in manifest


@needs_data
def test_litestars_reference_passes_and_its_emptied_class_fails(imported: tuple[Path, dict], run_repoexec,
                                                                 pytester: pytest.Pytester) -> None:
    """One real task end to end (its environment built from the import's requirements, the engine's pytest over
    the plugins' pins): our own reference and emptied class, so unconfined."""
    out, _ = imported
    problem = out / "litestar-1fb981da4b61" / "Headers"
    result, report = run_repoexec(str(problem), FALLBACK, "--repoexec-sandbox=none", subprocess=True)
    assert report is not None and [s["passed"] for s in report["samples"]] == [True], result.stdout.str()[-3000:]
    reference = tomllib.loads((problem / "problem.toml").read_text())["reference"]
    replay = write_replay(pytester.path / "emptied.jsonl", {"litestar-1fb981da4b61/Headers": [emptied(reference)]})
    result, report = run_repoexec(str(problem), FALLBACK, "--repoexec-sandbox=none",
                                  f"--repoexec-model=replay:{replay}",
                                  subprocess=True)
    assert report is not None and [s["passed"] for s in report["samples"]] == [False], result.stdout.str()[-3000:]


def _chat_call(identifier: str, tool: str, **arguments: str) -> dict:
    return {"id": identifier, "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}


@needs_data
def test_the_agent_runs_an_imported_task_end_to_end(imported: tuple[Path, dict], run_repoexec,
                                                    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``agent:`` with a model scripted on loopback on litestar's Headers: its first answer (the emptied class) fails
    the task's directives, which the agent feeds back; it looks up a base class in the imported repository, and its
    second answer (the reference) passes: the benchmark's tests are the agent's oracle."""
    from loopback import LoopbackServer

    out, _ = imported
    problem = out / "litestar-1fb981da4b61" / "Headers"
    manifest = tomllib.loads((problem / "problem.toml").read_text())
    fenced = "```python\n{}```".format
    answers = [fenced(emptied(manifest["reference"])), {"tool_calls": [_chat_call("c1", "get_class_info", name="MultiMixin")]},
               fenced(manifest["reference"])]
    server = LoopbackServer(lambda body: answers.pop(0))
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    try:
        result, report = run_repoexec(str(problem), FALLBACK, "--repoexec-sandbox=none",
                                      "--repoexec-model=agent:openai:test-model",
                                      f"--repoexec-base-url={server.url}", "--repoexec-n=1",
                                      "--repoexec-description=sketchy", subprocess=True)
    finally:
        server.close()
    assert report is not None and report["metrics"]["pass@1"] == 1.0, result.stdout.str()[-3000:]
    (transcript,) = report["agent"]["samples"]
    assert [(a["number"], a["passed"]) for a in transcript["attempts"]] == [(1, False), (2, True)]
    assert transcript["oracle_calls"] == 2 and not answers
    first, second, third = [body for body in server.posts() if "messages" in body]
    task = first["messages"][1]["content"]
    assert manifest["prompt"]["description_sketchy"][:80] in task and "class Headers(" in task
    assert "self._header_list" not in json.dumps(first)  # the reference's body stays hidden
    feedback = second["messages"][-1]["content"]
    assert any(directive.rpartition("::")[2] in feedback for directive in manifest["suite"])  # a directive failed
    (info,) = [m["content"] for m in third["messages"] if m["role"] == "tool"]
    assert "class MultiMixin(" in info and "litestar.datastructures.multi_dicts" in info  # read from the import


PVLIB = "pvlib-python-27a3a07ebc84"  # a state whose tree is not in sources/: from PyPI


@needs_data
def test_a_task_without_a_tree_comes_from_the_pypi_release_whose_class_equals_the_ground_truth(
        tmp_path: Path, run_repoexec, pytester: pytest.Pytester) -> None:
    """pvlib's two tasks, from the release repoclassbench.toml names (0.10.2): the sdist's classes equal the
    ground truth, its tests hold the directives, and both are written as problems on its tree; Array's reference
    passes its 33 directives (the tests' strings spelled as the benchmark renamed them) and its emptied class
    fails them."""
    state, = import_benchmark(SHARED, tmp_path, {PVLIB})
    rows = {task.task.task_id: task for task in state.tasks}
    assert set(rows) == {"pvlib__pvlib-python-1854_pvsYsTem", "pvlib__pvlib-python-1854_Array"}
    for task_id, row in rows.items():
        assert row.error is None, f"{task_id}: {row.error}"
        assert (row.release, row.source) == ("pvlib==0.10.2", "PyPI pvlib==0.10.2 sdist")
        assert row.file_found and row.class_found and row.matches and row.code_matches and row.tests_in_source
    assert state.renamed["PVSystem"] == "pvsYsTem"
    project = tmp_path / PVLIB
    manifest = tomllib.loads((project / "pvsYsTem" / "problem.toml").read_text())
    assert manifest["module"] == "pvlib.pvsystem" and len(manifest["suite"]) == manifest["test_count"] == 60
    assert manifest["reference"].startswith("class pvsYsTem:")
    assert "def test_PVSystem_single_array" in (project / "repo" / "pvlib" / "tests" / "test_pvsystem.py").read_text()
    requirements = tomllib.loads((project / "project.toml").read_text())["requirements"]
    assert "h5py" in requirements and "requests-mock" in requirements  # from the sdist's PKG-INFO
    tests = (project / "repo" / "pvlib" / "tests" / "test_pvsystem.py").read_text()
    assert "mount: fIxEdMOUNt(surface_tilt=30" in tests and "'pvlib.pvsystem.SCalE_vOLtaGe_cUrrENT_pOWEr'" in tests
    problem = project / "Array"
    result, report = run_repoexec(str(problem), FALLBACK, "--repoexec-sandbox=none", subprocess=True)
    assert report is not None and [(s["passed"], s["tests_passed"]) for s in report["samples"]] == [(True, 33)], \
        result.stdout.str()[-3000:]
    reference = tomllib.loads((problem / "problem.toml").read_text())["reference"]
    replay = write_replay(pytester.path / "emptied.jsonl", {f"{PVLIB}/Array": [emptied(reference)]})
    result, report = run_repoexec(str(problem), FALLBACK, "--repoexec-sandbox=none",
                                  f"--repoexec-model=replay:{replay}",
                                  subprocess=True)
    assert report is not None and [s["passed"] for s in report["samples"]] == [False], result.stdout.str()[-3000:]


@needs_data
def test_a_release_whose_class_differs_is_reported_and_nothing_is_written(tmp_path: Path) -> None:
    """The release nearest the benchmark's version (0.9 -> pvlib 0.9.0) is not the commit's: its classes differ
    from the ground truth, each task says so by its id, with the difference, and no project is written."""
    assert nearest_release("pvlib", "0.9") == "pvlib==0.9.0"
    tasks = [task for task in read_tasks(SHARED) if task.project == PVLIB]
    state = import_state(SHARED / "sources", tasks, {"pypi": "pvlib"}, tmp_path)
    for row in state.tasks:
        assert row.release == "pvlib==0.9.0" and row.file_found and row.class_found and row.tests_in_source
        assert row.matches is False and row.difference and not row.imported
        assert row.error and row.error.startswith(row.task.task_id), row.error
    assert not list(tmp_path.iterdir())
