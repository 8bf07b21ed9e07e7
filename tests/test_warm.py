"""The warm executor (issue 12): samples forked from a warm process per environment keep every guarantee of a
fresh process. What one sample leaves behind never reaches the next; its verdicts are those of the process
executor; the warm processes are bounded, restarted when they die, and a project whose warm process cannot
start runs in fresh processes with a warning. (The hostile suite runs with both executors too.)"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import write_replay
from mini_project import SCALED_REFERENCE, write_mini_project
from pytest_repoexec.collection import ProblemLoader
from pytest_repoexec.environment import Environments
from pytest_repoexec.executor import RunOptions, module_file
from pytest_repoexec.mutation import mutants, pass_body
from pytest_repoexec.sandbox import make_sandbox
from pytest_repoexec.warm import WarmExecutor

# Leaves a trace wherever a process could leave one for the next: a preloaded module, the builtins, the
# environment, sys.path, the sandbox's /tmp, its HOME and its working directory.
POISON = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import builtins, json, os, sys
    json.REPOEXEC_POISON = builtins.REPOEXEC_POISON = True
    os.environ["REPOEXEC_POISON"] = "1"
    sys.path.append("/repoexec-poison")
    for path in ("/tmp/repoexec-poison", os.path.expanduser("~/repoexec-poison"), "repoexec-poison"):
        open(path, "w").close()
    return clamp(value * SCALE, 0, 100)
'''
# Right only where none of those traces is seen.
CHECK = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import builtins, json, os, sys
    seen = (hasattr(json, "REPOEXEC_POISON") or hasattr(builtins, "REPOEXEC_POISON")
            or "REPOEXEC_POISON" in os.environ or "/repoexec-poison" in sys.path
            or any(os.path.exists(path) for path in ("/tmp/repoexec-poison",
                                                     os.path.expanduser("~/repoexec-poison"), "repoexec-poison")))
    return -1 if seen else clamp(value * SCALE, 0, 100)
'''


def test_no_sample_sees_what_an_earlier_one_left(mini, run_repoexec, pytester):
    # each completion distinct (a comment), so that the result store runs every one
    completions = [f"{text}# {index}\n" for index in range(4) for text in (POISON, CHECK)]
    replay = write_replay(pytester.path / "poison.jsonl", {"mini/scaled": completions})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                  "--repoexec-executor=warm")
    assert report is not None and report["executor"] == "warm", result.stdout.str()[-3000:]
    checks = [sample for sample in report["samples"] if sample["sample"] % 2 == 1]
    poisoners = [sample for sample in report["samples"] if sample["sample"] % 2 == 0]
    assert len(checks) == 4 and all(sample["passed"] for sample in checks), checks
    assert all(sample["passed"] for sample in poisoners), poisoners  # the traces were left: they ran
    assert "WarmStartWarning" not in result.stdout.str()
    evaluated = [sample for sample in report["samples"] if sample["store"] == "evaluated"]
    assert evaluated and all({"judge", "candidate"} <= set(sample["cpu"]) for sample in evaluated)  # in the report


def test_warm_and_process_agree_on_every_verdict(mini, run_repoexec, pytester):
    swap = "def swap(pair):\n    return (pair[1], pair[0])\n"
    made = {
        "mini/scaled": [SCALED_REFERENCE, pass_body(SCALED_REFERENCE),
                        *(m.function for m in mutants(SCALED_REFERENCE, 6)),
                        SCALED_REFERENCE.replace("return", "while True:\n        pass\n    return")],
        "mini/swap": [swap, pass_body(swap), *(m.function for m in mutants(swap, 4))],
    }
    replay = write_replay(pytester.path / "workload.jsonl", made)
    verdicts = {}
    for executor in ("process", "warm"):
        result, report = run_repoexec(str(mini), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                      f"--repoexec-executor={executor}", "--repoexec-timeout=2")
        assert report is not None and report["executor"] == executor, result.stdout.str()[-3000:]
        verdicts[executor] = {(s["problem"], s["sample"]): (s["passed"], s["error_type"], s["tests_passed"])
                              for s in report["samples"]}
    assert len(verdicts["warm"]) == sum(map(len, made.values()))
    assert verdicts["warm"] == verdicts["process"]
    kinds = {verdict[1] for verdict in verdicts["warm"].values()}
    assert {None, "Timeout", "AssertionError"} <= kinds, kinds  # passes, wrong values and a loop among them


# Tells what the sample's process sees of its surroundings, in its error message.
SURROUNDINGS = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import os, pwd, sys
    seen = sorted(os.environ.items()), os.getcwd(), os.getuid(), pwd.getpwuid(os.getuid()).pw_dir, sys.path[0]
    raise RuntimeError("SEEN " + repr(seen))
'''


def test_a_sample_sees_the_same_environment_variables_directory_and_user_with_both_executors(
    mini, run_repoexec, pytester
):
    replay = write_replay(pytester.path / "surroundings.jsonl", {"mini/scaled": [SURROUNDINGS]})
    seen = {}
    for executor in ("process", "warm"):
        result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                      f"--repoexec-executor={executor}")
        assert report is not None and report["executor"] == executor, result.stdout.str()[-3000:]
        log = report["samples"][0]["error_log"]
        seen[executor] = next(line for line in log.splitlines() if "RuntimeError: SEEN" in line)
    assert "'PWD'" in seen["process"]  # bubblewrap's --chdir sets it; the warm test process must too
    assert seen["warm"] == seen["process"]


@pytest.fixture
def two_projects(pytester, repoexec_cache):
    """Two copies of the mini project (one environment, two project folders: two warm processes), built."""
    environments = Environments(repoexec_cache)
    found = []
    for name in ("first", "second"):
        problem = ProblemLoader().load(write_mini_project(pytester.path, name) / "scaled" / "problem.toml")
        env = environments.get(problem.project)
        found.append((problem, env, module_file(env.import_root, problem.module).read_text()))
    return found


def test_warm_processes_are_bounded_least_recently_used_out(two_projects):
    # the tests beside the candidate: a problem's first sample apart would first check its reference both ways
    executor = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"), keep=1,
                            judge="in-process")
    try:
        (first, first_env, first_source), (second, second_env, second_source) = two_projects
        runs = [executor.run(first_env, first, first_source), executor.run(second_env, second, second_source),
                executor.run(first_env, first, first_source), executor.run(first_env, first, first_source)]
        assert all(run.finished and {t.outcome for t in run.tests} == {"passed"} for run in runs), runs
        assert ["warm start" in run.phases for run in runs] == [True, True, True, False]
        assert len(executor.processes) == 1
    finally:
        executor.close()
    assert not executor.processes



def test_closing_the_executor_ends_every_warm_process_and_removes_what_it_held(two_projects):
    executor = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"), keep=2,
                            judge="in-process")
    for problem, env, source in two_projects:
        assert executor.run(env, problem, source).finished
    processes = list(executor.processes.values())
    assert len(processes) == 2
    scratch = [Path(process.log.name).parent for process in processes]
    cgroups = [process.cgroup.folder for process in processes if getattr(process.cgroup, "folder", None)]
    executor.close()
    assert not executor.processes
    assert all(process.process.poll() is not None for process in processes)
    assert not any(folder.exists() for folder in [*scratch, *cgroups])

def test_a_problems_samples_fork_from_a_zygote_that_never_imports_the_reference(pytester, repoexec_cache):
    project = write_mini_project(pytester.path)
    # a module of the project that imports the focal module, and tests that reach the function through it: were
    # it imported before the sample's own module is in place, the tests would call the reference
    (project / "repo" / "mini" / "api.py").write_text("from .core import scaled\n")
    (project / "scaled" / "test_scaled.py").write_text(
        (project / "scaled" / "test_scaled.py").read_text().replace("from .core import scaled", "from .api import scaled"))
    problem = ProblemLoader().load(project / "scaled" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    reference = module_file(env.import_root, problem.module).read_text()
    wrong = reference.replace("return clamp(value * SCALE, 0, 100)", "return value")
    apart = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"))
    try:  # judged apart, the candidates' zygote holds the same modules, never the reference; the judges' zygote
        # collected the tests once, over the stub (the check of the reference in-process, made once, had none)
        assert [apart.run(env, problem, source).judge for source in (wrong, reference)] == ["apart", "apart"]
        (warm,) = apart.processes.values()
        candidates, judges = warm.zygotes.values()
        assert candidates.modules == ["mini.util"] and candidates.collected is None
        assert judges.collected == len(apart.run(env, problem, reference).tests) > 0
    finally:
        apart.close()
    executor = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"), judge="in-process")
    try:
        runs = [executor.run(env, problem, source) for source in (wrong, reference, wrong)]
        (warm,) = executor.processes.values()
        (made,) = warm.zygotes.values()
    finally:
        executor.close()
    assert [sorted({test.outcome for test in run.tests}) for run in runs] == [
        ["failed"], ["passed"], ["failed"]], runs
    assert made.modules == ["mini.util"]  # what the focal module imports; not mini.api, which imports it
    assert not warm.barren
    assert ["warm start" in run.phases for run in runs] == [True, False, False]


# the candidate's module, run where the package imports it first: it reads re's cache before anything of the
# sample's has compiled a pattern
_READS_THE_PATTERN_CACHE = """\
import re

_SEEN = [key[1] for cache in (getattr(re, "_cache", {}), getattr(re, "_cache2", {})) for key in list(cache)]
WARM = "[a-z]+-word-pattern" in _SEEN and "core-own-[0-9]+" not in _SEEN

from .util import SCALE, clamp

OWN = re.compile("core-own-[0-9]+")


def scaled(value):
    return clamp(value * SCALE, 0, 100) if WARM else -1
"""


def test_a_zygote_compiles_the_patterns_of_the_modules_it_leaves_to_its_samples_never_the_focal_modules(
    pytester, repoexec_cache
):
    project = write_mini_project(pytester.path)
    package = project / "repo" / "mini"
    # the package imports the focal module, so the zygote imports none of its modules; a sibling compiles a
    # pattern as it is imported, and so does the focal module's own top level
    (package / "__init__.py").write_text("from .core import *\nfrom . import words\n")
    (package / "words.py").write_text('import re\n\nWORD = re.compile("[a-z]+-word-pattern")\n')
    core = package / "core.py"
    core.write_text('import re\n\nOWN = re.compile("core-own-[0-9]+")\n' + core.read_text())
    problem = ProblemLoader().load(project / "scaled" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    outcomes = {}
    for zygotes in (8, 0):
        executor = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"), zygotes=zygotes)
        try:
            run = executor.run(env, problem, _READS_THE_PATTERN_CACHE)
            outcomes[zygotes] = (run.judge, sorted({test.outcome for test in run.tests}))
            made = [zygote for process in executor.processes.values() for zygote in process.zygotes.values()
                    if zygote.collected is None]
            assert [zygote.modules for zygote in made] == ([[]] if zygotes else [])
        finally:
            executor.close()
    # forked from the zygote, the sibling's pattern is in the cache and the focal module's is not; forked from
    # the warm process, neither is (the candidate's code fails: the check above can tell them apart)
    assert outcomes == {8: ("apart", ["passed"]), 0: ("apart", ["failed"])}


def verdicts(run):
    return (sorted((test.name, test.outcome, test.error_type) for test in run.tests),
            sorted((error.name, error.error_type) for error in run.collect_errors), run.judge)


@pytest.mark.parametrize("tests_break", [False, True], ids=["collected", "collection-error"])
def test_a_judges_session_is_collected_once_and_each_sample_forked_from_it(pytester, repoexec_cache, tests_break):
    from pytest_repoexec.executor import SubprocessExecutor

    project = write_mini_project(pytester.path)
    if tests_break:  # collection fails: every sample must still say so, as a fresh judge does
        tests = project / "scaled" / "test_scaled.py"
        tests.write_text(tests.read_text() + "\nraise ImportError('the tests break on purpose')\n")
    problem = ProblemLoader().load(project / "scaled" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    reference = module_file(env.import_root, problem.module).read_text()
    wrong = reference.replace("return clamp(value * SCALE, 0, 100)", "return value")
    sources = (wrong, reference, wrong, reference)
    # the reference's run has no limits of its own, the other samples' have (limits the reference's times set):
    # one session still serves them all, each sample's limits coming with it
    options = (RunOptions(test_timeouts=(("test_high", 4.0),)), RunOptions()) * 2
    warm = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"))
    try:
        forked = [warm.run(env, problem, source, option) for source, option in zip(sources, options)]
        (process,) = warm.processes.values()
        judges = [made for made in process.zygotes.values() if made.collected is not None]
    finally:
        warm.close()
    fresh = [SubprocessExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap")).run(
        env, problem, source, option) for source, option in zip(sources, options)]
    assert [verdicts(run) for run in forked] == [verdicts(run) for run in fresh]
    assert {run.judge for run in forked} == {"apart"}
    if tests_break:
        assert [made.collected for made in judges] == [0]
        assert all(run.collect_errors and not run.tests for run in forked)
    else:
        assert [made.collected for made in judges] == [4]  # one session, collected once, for the four samples
        assert [sorted({test.outcome for test in run.tests}) for run in forked] == [["failed"], ["passed"]] * 2
        # what pytest reads to tell a failure was read once in the zygote (``repoexec_inner.read_for_failures``):
        # the failures are told as a fresh judge tells them
        told = [[(test.name, test.longrepr) for test in run.tests if test.longrepr] for run in (*forked, *fresh)]
        assert told[:4] == told[4:] and "scaled" in told[0][0][1]
        # pytest's own progress reaches the sample's output, not the zygote's placeholder (a judge ends at its
        # verdict, before pytest's summary): a failing test's F (a plain test that passes in a judge has no
        # report, so no progress mark: repoexec_inner's ``_run_plain``)
        progress = [re.search(r"^F+", run.output, re.MULTILINE) is not None for run in forked]
        assert progress == [True, False] * 2, [run.output for run in forked]


def test_each_process_tree_of_a_split_sample_has_its_cpu_counted(pytester, repoexec_cache):
    """What the judge and the candidate's process each cost (``executor.spent``), counted by the warm process where
    neither reaches it: a candidate that burns 0.1 s of CPU a call shows it in its own tree, not the judge's."""
    project = write_mini_project(pytester.path)
    problem = ProblemLoader().load(project / "scaled" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    reference = module_file(env.import_root, problem.module).read_text()
    burning = reference.replace("return clamp(value * SCALE, 0, 100)", "import time\n    began = time.process_time()\n"
                                "    while time.process_time() - began < 0.1:\n        pass\n"
                                "    return clamp(value * SCALE, 0, 100)")
    assert burning != reference
    warm = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"))
    try:
        plain, burnt = (warm.run(env, problem, source) for source in (reference, burning))
    finally:
        warm.close()
    assert plain.judge == burnt.judge == "apart" and {test.outcome for test in burnt.tests} == {"passed"}
    for run in (plain, burnt):
        assert set(run.cpu) == {"judge", "judge system", "candidate", "candidate system"}
        # (a tree's split between user and system time is the kernel's estimate from its clock ticks: a short tree's
        # system time may be 0)
        assert 0 <= run.cpu["judge system"] <= run.cpu["judge"] and 0 <= run.cpu["candidate system"] <= run.cpu["candidate"]
        assert run.cpu["judge"] > 0 and run.cpu["candidate"] > 0
    calls = len(burnt.tests)  # each test calls it once at least
    assert burnt.cpu["candidate"] - plain.cpu["candidate"] >= 0.09 * calls
    assert burnt.cpu["judge"] < plain.cpu["judge"] + 0.05 * calls


def test_a_warm_process_that_dies_is_restarted_and_the_sample_retried(two_projects):
    executor = WarmExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"))
    try:
        problem, env, source = two_projects[0]
        assert executor.run(env, problem, source).finished
        (warm,) = executor.processes.values()
        os.killpg(warm.process.pid, signal.SIGKILL)
        warm.process.wait()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = executor.run(env, problem, source)
        assert run.finished and {test.outcome for test in run.tests} == {"passed"}
        assert "warm start" in run.phases
        (restarted,) = executor.processes.values()
        assert restarted is not warm and restarted.process.poll() is None
        assert not [w for w in caught if "warm process" in str(w.message)], "a restart is not a fallback"
    finally:
        executor.close()


def test_a_project_whose_warm_process_cannot_start_runs_in_fresh_processes_with_a_warning(
        pytester, run_repoexec, repoexec_cache):
    # The focal module sets something up before importing a third-party module that needs it: imported alone,
    # in the warm process, that module fails.
    project = write_mini_project(pytester.path, "ordered")
    core = project / "repo" / "mini" / "core.py"
    core.write_text("import builtins\nbuiltins.REPOEXEC_SET_UP = 1\nimport repoexec_needs_set_up\n" + core.read_text())
    problem = ProblemLoader().load(project / "scaled" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    site_packages = subprocess.run([str(env.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    Path(site_packages, "repoexec_needs_set_up.py").write_text("import builtins\nVALUE = builtins.REPOEXEC_SET_UP\n")

    result, report = run_repoexec(str(project), "--repoexec-model=reference", "--repoexec-fresh",
                                  "--repoexec-executor=warm")
    output = result.stdout.str()
    assert report is not None and report["metrics"]["pass@1"] == 1.0, output[-3000:]
    assert "WarmStartWarning: project ordered: its warm process could not start" in output
    assert "repoexec_needs_set_up" in output and "AttributeError" in output


def test_pytest_reports_failures_as_before_with_each_source_parsed_once(pytester):
    """The inner plugin's shortcut for finding a failing statement's lines changes nothing pytest prints."""
    cases = "\n\n".join([
        "def test_plain():\n    assert 1 == 2",
        "import pytest\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_decorated(x):\n    y = x\n    assert y == 3",
        "def test_multiline():\n    assert [\n        1,\n        2,\n    ] == [\n        2,\n    ]",
        "def test_try():\n    try:\n        raise ValueError('a')\n    except KeyError:\n        pass\n    else:\n        pass",
        "class TestGroup:\n    def test_method(self):\n        values = {'a': 1}\n        assert values['a'] == 2",
        "def helper(n):\n    if n:\n        raise RuntimeError(n)\n\ndef test_nested():\n    helper(3)",
        "def test_last():\n    x = 1\n    assert x == 0  # the file's last statement",
    ])
    pytester.makepyfile(test_shapes=cases)
    runtime = Path(sys.modules["pytest_repoexec"].__file__).with_name("runtime")
    outputs = []
    for shortcut in (False, True):
        pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(runtime)!r})\nimport repoexec_inner\n"
                              + ("repoexec_inner._parse_each_source_once()\n" if shortcut else ""))
        result = pytester.runpytest_subprocess("--tb=short", "-p", "no:cacheprovider", "-p", "no:randomly")
        outputs.append(result.outlines[:-1])  # all but the last line, which says how long it took
    assert sum("FAILED" in line for line in outputs[0]) == 8
    assert outputs[0] == outputs[1]


STUCK_IN_C = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import itertools
    -1 in itertools.count()  # a loop inside C: the per-test alarm never gets through
    return clamp(value * SCALE, 0, 100)
'''
LEFT_RUNNING = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import threading, time
    threading.Thread(target=time.sleep, args=(600,)).start()  # the interpreter waits for it at exit
    return clamp(value * SCALE, 0, 100)
'''


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_stuck_sample_is_stopped_seconds_after_its_test_limit_not_at_the_sample_limit(
        mini, run_repoexec, pytester, executor):
    replay = write_replay(pytester.path / "stuck.jsonl", {"mini/scaled": [STUCK_IN_C, LEFT_RUNNING]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                  f"--repoexec-executor={executor}", "--repoexec-timeout=1",
                                  "--repoexec-sample-timeout=60")
    assert report is not None, result.stdout.str()[-3000:]
    stuck, left_running = sorted(report["samples"], key=lambda sample: sample["sample"])
    assert stuck["error_type"] == "Timeout" and stuck["judge"] == "apart"
    assert stuck["duration"] < 15 and left_running["duration"] < 15, (stuck["duration"], left_running["duration"])
    # apart, the judge stops the session when the candidate's process does not come back from a timed-out call;
    # a thread the candidate left running keeps its program from ending: stopped a few seconds after its session
    # (EXIT_GRACE), every test passed, as it would be beside its tests
    assert "did not come back" in stuck["error_log"] or "Timeout" in stuck["error_log"]
    assert (left_running["passed"], left_running["error_type"], left_running["tests_passed"]) == (False, "Timeout", 4)


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_only_a_samples_first_failures_get_a_full_traceback(pytester, repoexec_cache, executor):
    """Formatting hundreds of tracebacks was most of a wrong sample's time; the engine keeps the first failure's."""
    from pytest_repoexec.executor import SubprocessExecutor
    project = write_mini_project(pytester.path)
    problem = ProblemLoader().load(project / "scaled" / "problem.toml")
    env = Environments(repoexec_cache).get(problem.project)
    reference = module_file(env.import_root, problem.module).read_text()
    wrong = reference.replace("return clamp(value * SCALE, 0, 100)", "raise ValueError(f'wrong {value}')")
    made = (WarmExecutor if executor == "warm" else SubprocessExecutor)(
        test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"))
    try:
        run = made.run(env, problem, wrong)
    finally:
        made.close()
    assert run.finished and [test.outcome for test in run.tests] == ["failed"] * 4, run
    full, brief = run.tests[:3], run.tests[3:]  # the inner plugin's FULL_TRACEBACKS
    for test in full:  # pytest's --tb=short: the test's line, then the raising line of the module
        assert "assert scaled(" in test.longrepr and "raise ValueError" in test.longrepr, test.longrepr
        assert test.error_type == "ValueError" and test.message.startswith("wrong ")
    (last,) = brief
    assert "raise ValueError" not in last.longrepr and "assert scaled(" not in last.longrepr
    assert "core.py:" in last.longrepr and "ValueError: wrong " in last.longrepr
    assert "only the first 3 failures" in last.longrepr
    assert last.error_type == "ValueError" and last.message.startswith("wrong ")


def test_a_test_modules_rewritten_code_is_made_once_and_kept_for_later_runs(pytester):
    """The engine rewrites a test module's asserts once for every run (a third of a second for RepoExec's): the code
    is kept in the cache by content, and what is kept is what the samples run."""
    import marshal
    import shutil
    import tempfile

    from pytest_repoexec.executor import SubprocessExecutor
    from pytest_repoexec.rewritten import rewritten_pyc

    cache = Path(tempfile.mkdtemp(prefix="repoexec-test-cache-"))  # not under /tmp/pytest-of-*: see conftest
    try:
        problem = ProblemLoader().load(write_mini_project(pytester.path) / "scaled" / "problem.toml")
        env = Environments(cache).get(problem.project)
        reference = module_file(env.import_root, problem.module).read_text()
        executor = SubprocessExecutor(test_timeout=5, sample_timeout=60, sandbox=make_sandbox("bwrap"))
        rewritten_pyc.cache_clear()  # as a later run's process starts: nothing in memory
        assert {test.outcome for test in executor.run(env, problem, reference).tests} == {"passed"}
        (kept,) = env.compiled.glob("*.pyc")
        data = kept.read_bytes()
        filename = marshal.loads(data[16:]).co_filename  # where the sample sees the module
        kept.write_bytes(data[:16] + marshal.dumps(compile("def test_planted():\n    assert False\n", filename, "exec")))
        rewritten_pyc.cache_clear()
        run = executor.run(env, problem, reference)
        assert [(test.name, test.outcome) for test in run.tests] == [("test_planted", "failed")]
        assert list(env.compiled.glob("*.pyc")) == [kept]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
