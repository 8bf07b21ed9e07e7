"""The admission gate and the assertion fixer on planted problems: each defect caught with its reason."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

import pytest

CORE = '''\
import os
import time
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


def mirror(point):
    """The point mirrored in the diagonal."""
    return Point(point.y, point.x)


def grade(score):
    """A letter for a score out of 100."""
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 70:
        return "C"
    if score >= 60:
        return "D"
    return "F"


def tidy(path):
    """Remove a file if it is there, and say whether it was."""
    if os.path.exists(path):
        os.remove(path)
        return True
    return False


def bounds(points):
    """The lowest and highest point, and how many there are."""
    low = Point(min(p.x for p in points), min(p.y for p in points))
    high = Point(max(p.x for p in points), max(p.y for p in points))
    return {"low": low, "high": high, "count": len(points)}


def stamp(events):
    """Each event with the time it was stamped at."""
    return [(event, time.time()) for event in events]


def _checked(value):
    """The value, or ValueError when it is negative."""
    if value < 0:
        raise ValueError(value)
    return value


def total(values):
    """The sum of the values, each checked."""
    return sum(_checked(value) for value in values)
'''

TESTS = {
    "flaky": '''\
        import random

        from .core import Point, mirror


        def test_mirror():
            assert mirror(Point(1, 2)) == Point(2, 1)


        def test_random_point():
            assert mirror(Point(random.random(), 1)).y < 1
        ''',
    "uncovered": '''\
        from .core import grade


        def test_top():
            assert grade(95) == "A"
        ''',
    "idle": '''\
        from .core import Point, mirror


        def test_mirror():
            assert mirror(Point(1, 2)) == Point(2, 1)


        def test_nothing():
            assert 1
        ''',
    "deleter": '''\
        from .core import tidy


        def test_removes(tmp_path):
            target = tmp_path / "old.txt"
            target.write_text("x")
            assert tidy(str(target)) is True
            assert not target.exists()


        def test_missing(tmp_path):
            assert tidy(str(tmp_path / "none")) is False
        ''',
    "fixme": '''\
        from .core import Point, bounds

        POINTS = [Point(1, 5), Point(3, 2)]


        def test_count():
            assert bounds(POINTS)["count"] == 5


        def test_low():
            result = bounds(POINTS)
            assert result["high"] == Point(3, 5)
            assert result["low"] == Point(9, 9)


        def test_high_object():
            assert bounds(POINTS) == {"low": None}


        def test_empty():
            assert bounds([]) == {}
        ''',
    "clock": '''\
        from .core import stamp


        def test_stamp():
            stamped = stamp(["a", "b"])
            assert stamped == [("a", stamped[0][1]), ("b", stamped[1][1])]
        ''',
    "clock_captured": '''\
        from .core import stamp


        def test_stamp():
            stamped = stamp(["a", "b"])
            assert stamped == [("a", stamped[0][1]), ("b", stamped[1][1])]
        ''',
    "alternating": '''\
        from .core import Point, mirror

        ROUNDS = []


        def test_mirror():
            ROUNDS.append(1)
            assert mirror(Point(len(ROUNDS) % 2, 0)).y == 1
        ''',
    "indirect": '''\
        from .core import total


        def test_total():
            assert total([1, 2]) == 3
        ''',
    "unrelated": '''\
        from .core import Point, mirror, total


        def test_total():
            assert total([1, 2]) == 3


        def test_mirror():
            assert mirror(Point(1, 2)) == Point(2, 1)
        ''',
}
REMOVE_LINE = CORE[: CORE.index("os.remove(")].count("\n") + 1  # the finding's line in the focal module
ENTRY_POINTS = {"flaky": "mirror", "uncovered": "grade", "idle": "mirror", "deleter": "tidy", "fixme": "bounds",
                "clock": "stamp", "clock_captured": "stamp", "alternating": "mirror", "indirect": "_checked",
                "unrelated": "_checked"}
PROGRAM_TESTS = {"clock", "alternating", "indirect", "unrelated"}  # a program's own tests, as Exec-CSN's


def write_planted(root: Path) -> Path:
    project = root / "planted"
    (project / "repo" / "planted").mkdir(parents=True)
    (project / "repo" / "planted" / "__init__.py").write_text("")
    (project / "repo" / "planted" / "core.py").write_text(CORE)
    (project / "project.toml").write_text('[source]\npath = "repo"\n')
    for name, tests in TESTS.items():
        folder = project / name
        folder.mkdir()
        tests = textwrap.dedent(tests)
        (folder / f"test_{name}.py").write_text(tests)
        entry = ENTRY_POINTS[name]
        start = CORE.index(f"def {entry}(")
        end = CORE.find("\n\n\ndef ", start)
        reference = CORE[start:] if end < 0 else CORE[start : end + 1]
        count = tests.count("\ndef test_")
        (folder / "problem.toml").write_text(
            f'module = "planted.core"\nentry_point = "{entry}"\ntest_count = {count}\n'
            + ("program_tests = true\n" if name in PROGRAM_TESTS else "") +
            f"reference = '''\n{reference}'''\n\n[prompt.context]\nfull = '''\nimport os\n'''\n"
        )
    return project


@pytest.fixture
def planted(pytester: pytest.Pytester) -> Path:
    return write_planted(pytester.path)


def gate(run_repoexec, *paths: Path, options: tuple[str, ...] = ()):
    result, report = run_repoexec(*map(str, paths), "--repoexec-validate", "--repoexec-mutants=2", *options)
    return result, {problem["problem"]: problem for problem in report["problems"]}


def test_each_planted_defect_is_caught_with_its_reason(planted, run_repoexec):
    result, problems = gate(run_repoexec, *(planted / name for name in ("flaky", "uncovered", "idle", "deleter")))
    result.assert_outcomes(failed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    flaky = problems["planted/flaky"]
    assert flaky["flaky"] == ["test_random_point"]
    assert [r for r in flaky["reasons"] if "flaky" in r] == [
        'flaky over 10 runs: test_random_point (to leave them out of scoring, add quarantine = ["test_random_point"]'
        " to problem.toml)"
    ]

    uncovered = problems["planted/uncovered"]
    assert uncovered["line_coverage"] == pytest.approx(100 * 2 / 9)  # the first test and return of nine lines
    assert uncovered["branch_coverage"] == pytest.approx(100 * 1 / 8)
    assert uncovered["reasons"] == ["coverage of grade: 22.2%, under --repoexec-min-coverage=40"]

    idle = problems["planted/idle"]
    assert idle["reasons"] == ["test sanity: test_nothing (line 8) never calls mirror"]

    deleter = problems["planted/deleter"]
    # the file it removes is in the candidate's process's view, not the judge's: its samples would get no verdict
    assert deleter["reasons"] == [f"unsafe: reference:{REMOVE_LINE}: delete-files: os.remove",
                                  "not judged apart from its candidate: the reference's outcomes differ under the judge "
                                  "(1 tests: test_removes passed in-process, failed apart) "
                                  "(--repoexec-judge=apart-or-in-process judges it beside its candidate)"]
    assert deleter["line_coverage"] == 100.0

    result.stdout.fnmatch_lines([
        "*repoexec: admission gate*",
        "problem*verdict*line%*branch%*mutants killed%*flaky*reasons",
        f"planted/deleter*REJECTED*100.0*unsafe: reference:{REMOVE_LINE}: delete-files: os.remove*",
        "0 of 4 problems admitted",
    ])


def test_quarantine_and_allow_in_the_manifest_admit_the_problems(planted, run_repoexec):
    manifest = planted / "flaky" / "problem.toml"
    manifest.write_text(manifest.read_text().replace("test_count = 2\n", 'test_count = 2\nquarantine = ["test_random_point"]\n'))
    manifest = planted / "deleter" / "problem.toml"
    manifest.write_text(manifest.read_text().replace("test_count = 2\n", 'test_count = 2\nallow = ["delete-files"]\n'))
    # the deleter's samples are judged beside their candidate (above): the run says it may be
    result, problems = gate(run_repoexec, planted / "flaky", planted / "deleter",
                            options=("--repoexec-judge=apart-or-in-process",))
    result.assert_outcomes(passed=2)
    assert problems["planted/flaky"]["quarantined"] == ["test_random_point"]
    assert problems["planted/deleter"]["findings"] == [f"reference:{REMOVE_LINE}: delete-files: os.remove"]

    result, report = run_repoexec(str(planted / "flaky"))  # the engine leaves the quarantined test out
    result.assert_outcomes(passed=1)
    (sample,) = report["samples"]
    assert (sample["tests_passed"], sample["tests_total"]) == (1, 1)


def test_tests_that_survive_a_pass_body_fail_the_gate(planted, run_repoexec):
    (planted / "idle" / "test_idle.py").write_text(
        "from .core import Point, mirror\n\n\ndef test_mirror():\n    assert mirror(Point(1, 2)) != 0\n"
    )
    manifest = planted / "idle" / "problem.toml"
    manifest.write_text(manifest.read_text().replace("test_count = 2", "test_count = 1"))
    result, problems = gate(run_repoexec, planted / "idle", options=("--repoexec-min-mutation=50",))
    reasons = problems["planted/idle"]["reasons"]
    assert reasons[0] == "the tests pass when mirror's body is `pass`"
    assert reasons[1].startswith("mutation score 0%, under --repoexec-min-mutation=50 (surviving: ")
    assert problems["planted/idle"]["mutation_score"] == 0.0


def test_a_programs_own_tests_are_judged_by_their_outcomes_and_may_reach_the_function_through_other_code(
        planted, run_repoexec):
    folders = ("clock", "clock_captured", "alternating", "indirect", "unrelated")
    result, problems = gate(run_repoexec, *(planted / name for name in folders))
    # values that hold the time, compared with themselves: the outcome holds, so a program's test is fit; the same
    # test with values a fixer captured is not (a captured time would fail the next run)
    assert problems["planted/clock"]["reasons"] == [] and problems["planted/clock"]["flaky"] == []
    assert problems["planted/clock_captured"]["flaky"] == ["test_stamp"]
    assert problems["planted/alternating"]["reasons"] == [  # an outcome that changes is flaky whoever wrote the test
        'flaky over 10 runs: test_mirror (to leave them out of scoring, add quarantine = ["test_mirror"] to '
        "problem.toml)"]
    # reaching _checked only through total() is a check of it when the `pass` body fails the test; a test that
    # does not reach it is named
    assert problems["planted/indirect"]["reasons"] == []
    assert problems["planted/indirect"]["line_coverage"] == pytest.approx(100 * 2 / 3)
    assert problems["planted/unrelated"]["reasons"] == [
        "test sanity: test_mirror (line 8) never calls _checked, and passes when its body is `pass`"]
    result.assert_outcomes(passed=2, failed=3)


def test_the_fixer_refuses_a_programs_own_tests(planted):
    from pytest_repoexec.fixer import FixError, fix_assertions
    from pytest_repoexec.problem import load_problem

    with pytest.raises(FixError, match=r"a program's own \(program_tests\)"):
        fix_assertions(load_problem(planted / "clock" / "problem.toml"), None, None)


def test_the_fixer_rewrites_wrong_expected_values_and_the_gate_then_passes(planted, run_repoexec, monkeypatch):
    folder = planted / "fixme"
    result, report = run_repoexec(str(folder), "--repoexec-fix-assertions", "--repoexec-mutants=2")
    result.assert_outcomes(passed=1)
    tests = (folder / "test_fixme.py").read_text()
    assert 'assert bounds(POINTS)["count"] == 2\n' in tests  # a literal: the repr round-trips
    assert 'assert result["high"] == Point(3, 5)\n' in tests  # a passing assertion is left alone
    assert 'assert result["low"] == _repoexec_expected("test_low_1.pkl")\n' in tests  # a dataclass: pickled
    assert 'assert bounds(POINTS) == _repoexec_expected("test_high_object_0.pkl")' in tests
    assert "def test_empty" not in tests  # ValueError, not AssertionError: left out
    assert "test_count = 3\n" in (folder / "problem.toml").read_text()
    monkeypatch.syspath_prepend(planted / "repo")  # the pickle holds a planted.core.Point
    with (folder / "expected" / "test_low_1.pkl").open("rb") as handle:
        assert repr(pickle.load(handle)) == "Point(x=1, y=2)"
    (fix,) = report["fixes"]
    assert fix["removed"] == ["test_empty: ValueError: min() arg is an empty sequence"]
    assert len(fix["fixed"]) == 3
    assert report["problems"][0]["passed"] and report["problems"][0]["reasons"] == []
    result.stdout.fnmatch_lines(["*assertion fixer: planted/fixme*", "*test_count = 4*", "*test_count = 3*"])

    result, _ = run_repoexec(str(folder), "--repoexec-validate", "--repoexec-mutants=2")
    result.assert_outcomes(passed=1)
    result, report = run_repoexec(str(folder))  # and the engine scores the reference as passing
    assert report["metrics"]["pass@1"] == 1.0


def test_reruns_skip_tests_that_timed_out_and_do_not_call_them_flaky(planted, repoexec_cache):
    from pytest_repoexec.environment import Environments
    from pytest_repoexec.executor import RunOptions, SubprocessExecutor, module_file
    from pytest_repoexec.gate import flaky_tests
    from pytest_repoexec.problem import load_problem

    tests = planted / "uncovered" / "test_uncovered.py"
    tests.write_text(tests.read_text() + "\n\ndef test_slow():\n    import time\n    time.sleep(30)\n    assert grade(1)\n")
    manifest = planted / "uncovered" / "problem.toml"
    manifest.write_text(manifest.read_text().replace("test_count = 1", "test_count = 2"))
    problem = load_problem(planted / "uncovered" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    module = module_file(env.import_root, problem.module).read_text()
    run = SubprocessExecutor(test_timeout=0.5, sample_timeout=60).run(env, problem, module, RunOptions(reruns=3))
    assert {test.name: test.error_type for test in run.tests} == {"test_top": None, "test_slow": "Timeout"}
    assert list(run.rerun_outcomes) == [{"test_top": "passed"}, {"test_top": "passed"}]
    assert flaky_tests(run) == []


def test_the_gate_refuses_a_model(planted, run_repoexec):
    result, _ = run_repoexec(str(planted / "idle"), "--repoexec-validate", "--repoexec-model=replay:x.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--repoexec-validate and --repoexec-model=replay:x.jsonl cannot be used together*"])
