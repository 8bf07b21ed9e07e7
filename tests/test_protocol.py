"""The inner protocol: typed records as JSON lines, streamed as tests report, so a crash keeps what ran."""

import ast
import json
import sys
from pathlib import Path

import pytest

from conftest import write_replay
from pytest_repoexec.environment import Environments
from pytest_repoexec.executor import Watched, _read_results
from pytest_repoexec.problem import load_problem
from pytest_repoexec.results import SampleResult
from pytest_repoexec.runtime import repoexec_protocol as protocol
from pytest_repoexec.runtime.repoexec_protocol import (
    SCHEMA_VERSION, Collected, CollectError, ErrorType, Finish, ProtocolError, Report, RoundOutcome,
    SchemaMismatch, Start, decode, encode, error_type_of, read,
)

SWAP_OK = "def swap(pair):\n    return (pair[1], pair[0])\n"
EXIT_IN_THIRD_TEST = (  # test_low, the third test, calls scaled(-1)
    "def scaled(value):\n    import os\n    if value == -1:\n        os._exit(3)\n"
    "    return clamp(value * SCALE, 0, 100)\n"
)

RECORDS = [
    Start(),
    CollectError("t.py", "ImportError", "ImportError: no module x", "E   ImportError: no module x"),
    Collected(collected=3, deselected=1, token="secret"),
    Report("t.py::test_a", "call", "failed", 0.25, "AssertionError", "assert 1 == 2", "longrepr\nwith lines"),
    Report("t.py::test_b[1-x]", "setup", "skipped", 0.0, None, "not today", None),
    RoundOutcome(round=2, nodeid="t.py::test_a", outcome="passed"),
    Finish(exitstatus=1, unstable=[["test_a", 3]], captures=[{"test": "test_a", "site": 3, "occurrences": []}],
           coverage={"files": {"m.py": {"executed_lines": [1, 2]}}}, token="secret"),
]
TOKEN = "t0ken"


def _stream(*records) -> str:
    return "".join(encode(record) for record in records)


def _phases(nodeid: str, *whens: str) -> list[Report]:
    return [Report(nodeid, when, "passed", 0.5) for when in whens or ("setup", "call", "teardown")]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _run(stream: str, returncode: int = 0, stopped: ErrorType | None = None, marks: dict[str, float] | None = None):
    """The engine's reading of a stream that came through the pipe from a process that ended so."""
    return _read_results(Watched(stream.encode(), "", returncode, stopped, marks or {}), TOKEN, confined=True,
                         duration=1.0)


def test_every_record_round_trips_through_one_json_line():
    for record in RECORDS:
        line = encode(record)
        assert line.endswith("\n") and line.count("\n") == 1
        assert decode(line) == record
    assert list(read(_lines(_stream(*RECORDS)))) == RECORDS


def test_error_types_compare_and_serialise_as_their_strings():
    assert ErrorType.EARLY_EXIT == "EarlyExit" and f"{ErrorType.TIMEOUT}" == str(ErrorType.TIMEOUT) == "Timeout"
    assert json.dumps({ErrorType.SKIPPED: ErrorType.ERROR}) == '{"Skipped": "Error"}'
    assert {"TestCountMismatch": 1}[ErrorType.TEST_COUNT_MISMATCH] == 1
    assert error_type_of("EmptyCompletion") is ErrorType.EMPTY_COMPLETION
    assert error_type_of("AssertionError") == "AssertionError" and error_type_of(None) is None
    result = SampleResult("p/q", "p", 0, False, 2, 4, ErrorType.EARLY_EXIT, None)
    assert type(result.to_dict()["error_type"]) is str
    assert SampleResult.from_dict(result.to_dict()).error_type is ErrorType.EARLY_EXIT


def test_a_last_line_cut_off_mid_write_is_left_out():
    stream = _stream(Start(), Collected(4, 0, TOKEN), Report("t.py::test_a", "setup", "passed", 0.1))
    whole = _lines(stream)
    assert list(read(whole[:-1] + [whole[-1][:17]])) == [Start(), Collected(4, 0, TOKEN)]
    assert list(read(whole[:-1] + [whole[-1].rstrip("\n")])) == RECORDS[:1] + [  # complete but for its newline
        Collected(4, 0, TOKEN), Report("t.py::test_a", "setup", "passed", 0.1)]
    assert list(read([])) == []


def test_a_bad_line_before_the_last_is_an_error_after_the_records_before_it():
    lines = _lines(_stream(Start(), Collected(4, 0, TOKEN))) + ['{"kind": "report", "nodeid": "x"}\n', encode(Start())]
    records = read(lines)
    assert [next(records), next(records)] == [Start(), Collected(4, 0, TOKEN)]
    with pytest.raises(ProtocolError, match=r"a Report record with fields \['nodeid'\]; expected"):
        next(records)
    with pytest.raises(ProtocolError, match="not a JSON line"):
        list(read([encode(Start()), "garbage\n", encode(Start())]))


def test_a_stream_of_another_schema_says_which_versions_differ():
    expected = f"the inner plugin wrote schema 99; this engine reads schema {SCHEMA_VERSION}"
    with pytest.raises(SchemaMismatch, match=expected):
        list(read([json.dumps({"kind": "start", "schema": 99}) + "\n", "anything: it is not read\n"]))
    old = json.dumps({"finished": True, "exitstatus": 0, "tests": []})  # the JSON file written before streams
    with pytest.raises(SchemaMismatch, match=r"no schema version \(an older inner plugin\)"):
        list(read([old]))


def test_the_protocol_module_runs_under_any_python_from_3_8_with_the_standard_library_only():
    source = Path(protocol.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 8))
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}


def test_the_reader_keeps_what_ran_before_the_process_died():
    stream = _stream(
        Start(), Collected(3, 1, TOKEN),
        *_phases("t.py::test_a"), *_phases("t.py::test_b", "setup", "call"), *_phases("t.py::test_c", "setup"),
    )
    run = _run(stream, returncode=3)
    assert not run.finished and (run.collected, run.deselected) == (3, 1)
    assert [(t.name, t.outcome, t.error_type) for t in run.tests] == [
        ("test_a", "passed", None),
        ("test_b", "error", ErrorType.EARLY_EXIT),  # its call passed, its teardown never reported
        ("test_c", "failed", ErrorType.EARLY_EXIT),
    ]
    assert run.tests[0].duration == 1.5
    killed = _run(stream, returncode=137, stopped=ErrorType.TIMEOUT)
    assert {t.error_type for t in killed.tests[1:]} == {ErrorType.TIMEOUT}
    assert _run(stream, returncode=128 + 24).stopped == ErrorType.CPU_LIMIT  # died of SIGXCPU inside bubblewrap


def test_a_sample_stopped_in_its_tests_spent_that_time_in_its_tests_not_its_exit():
    """The phases of a sample: a session that finished has an exit; one stopped at its limit (no ``Finish``
    record) was running its tests until then."""
    stream = _stream(Start(), Collected(1, 0, TOKEN), *_phases("t.py::test_a", "setup"))
    marks = {"started": 0.25, "collected": 0.5}
    stopped = _run(stream, returncode=137, stopped=ErrorType.TIMEOUT, marks=marks | {"exited": 120.5})
    assert stopped.phases == {"start-up": 0.25, "collection": 0.25, "tests": 120.0, "exit": 0.0}
    finished = _run(stream, marks=marks | {"finished": 2.5, "exited": 2.75})
    assert finished.phases == {"start-up": 0.25, "collection": 0.25, "tests": 2.0, "exit": 0.25}


def test_a_stream_that_does_not_prove_itself_is_tampered_with():
    whole = _stream(Start(), Collected(1, 0, TOKEN), *_phases("t.py::test_a"), Finish(0, [], [], None, TOKEN))
    run = _run(whole)
    assert run.finished and run.tampered is None
    forged = {
        "a line that is not a record": whole.replace('{"kind": "finish"', 'written by the candidate\n{"kind": "finish"'),
        "without the run's token": whole.replace(TOKEN, "guessed"),
        "after the session's end": whole + encode(Report("t.py::test_a", "call", "passed", 0.1)),
        "before collection ended": _stream(Start(), *_phases("t.py::test_a"), Collected(1, 0, TOKEN),
                                           Finish(0, [], [], None, TOKEN)),
        "its process with 1": whole,  # a Finish that says 0 from a process that ended with 1
    }
    for why, stream in forged.items():
        run = _run(stream, returncode=1 if why == "its process with 1" else 0)
        assert not run.finished and why in run.tampered, why
    assert [(t.name, t.outcome) for t in _run(forged["a line that is not a record"]).tests] == [("test_a", "passed")]


def test_a_sample_that_dies_in_its_third_test_keeps_the_two_that_passed(mini, run_repoexec, pytester):
    replay = write_replay(pytester.path / "exit.jsonl", {"mini/scaled": [EXIT_IN_THIRD_TEST], "mini/swap": [SWAP_OK]})
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}")
    result.assert_outcomes(passed=1, failed=1)
    scaled = next(s for s in report["samples"] if s["problem"] == "mini/scaled")
    assert (scaled["passed"], scaled["error_type"]) == (False, "EarlyExit")
    assert (scaled["tests_passed"], scaled["tests_total"]) == (2, 4)
    # judged apart, the candidate's process ended: the judge says so for the test it was in
    assert scaled["failed_test"] == "test_low" and "the candidate's process ended" in scaled["error_log"]
    assert report["metrics"]["TR"] == pytest.approx((2 / 4 + 2 / 2) / 2)
    assert report["metrics"]["pass@1"] == 0.5  # swap passes, scaled does not
    assert report["errors"] == {"EarlyExit": 1}
    result.stdout.fnmatch_lines([
        "*mini/scaled sample 0 failed: EarlyExit (2/4 tests passed)*",
        "*FAILED test_low: EarlyExit the candidate's process ended*",
    ])


def test_a_sample_killed_at_its_wall_clock_limit_keeps_the_tests_that_passed(mini, run_repoexec, pytester):
    hang = ("def scaled(value):\n    while value == -1:\n        pass\n"
            "    return clamp(value * SCALE, 0, 100)\n")
    replay = write_replay(pytester.path / "hang.jsonl", {"mini/scaled": [hang], "mini/swap": [SWAP_OK]})
    result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", "--repoexec-timeout=60",
                                  "--repoexec-sample-timeout=3", "--repoexec-timeout-factor=0")
    scaled = next(s for s in report["samples"] if s["problem"] == "mini/scaled")
    assert (scaled["passed"], scaled["error_type"], scaled["tests_passed"]) == (False, "Timeout", 2)


def test_a_runtime_of_another_schema_fails_the_items_naming_the_folders_to_delete(mini, pytester, tmp_path):
    cache = tmp_path / "cache"
    env = Environments(cache).get(load_problem(mini / "scaled" / "problem.toml").project)
    copied = env.runtime / "repoexec_protocol.py"
    copied.write_text(copied.read_text().replace(f"SCHEMA_VERSION = {SCHEMA_VERSION}\n", "SCHEMA_VERSION = 99\n"))
    result = pytester.runpytest(str(mini), f"--repoexec-cache={cache}", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    assert "INTERNALERROR" not in result.stdout.str() and "Traceback" not in result.stdout.str()
    result.stdout.fnmatch_lines([
        f"*project mini: the inner plugin wrote schema 99; this engine reads schema {SCHEMA_VERSION}: the cached "
        f"inner runtime is stale; delete {env.runtime} and {env.python.parent.parent} (they are rebuilt*",
    ])
