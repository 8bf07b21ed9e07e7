"""Grader games (issue 23): no game of ``grader_games.CATALOGUE`` passes, and no sample finds a channel.

One whole run judges the catalogue at once, against the shipped problems themselves (``problems/``), from one
replay file: each of the three problems gets its reference first (a control that must pass), then the probe
writers, the attacks, and the probe readers last. It runs with the warm executor, with the process executor,
and with the warm one under ``-n 2``; every sample's outcome (from the JSON report) must be one its game
allows. After the run, nothing named by the run's marker is on the host (the real home folder, ``/tmp``,
``/dev/shm``, the cache) and no process the probes started is left.

The runs go through a subprocess, as the hostile suite's do: a game that got out must not take this test's
process with it.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO, SHIPPED, write_replay
from grader_games import (AFTER_DEFENCES, AFTER_DEFENCES_GAMES, ATTACK, ATTACKS, CALLED_BACK_BASE, CALLED_BACK_GAMES,
                          CATALOGUE, CLASS_GAMES, FAMILIES, ENGINE_LABELS, PASSED, READER, REPOEXEC_GAMES, TR_ORACLE,
                          WRITER, Game, class_game)
from pytest_repoexec.cli import main as cli_main
from pytest_repoexec.problem import load_problem
from test_hostile import REAL_HOME, leftovers, leftovers_after_grace, marked_files

REPOEXEC_DATA = REPO.parent / "shared" / "repoexec"
# in the catalogue's order (slugify, word_frequencies, money_add): the last problem's probe reader runs after the
# other problems' writers
PROBLEMS = {name: load_problem(SHIPPED / name / "problem.toml") for name in dict.fromkeys(g.problem for g in CATALOGUE)}
ORDER = (WRITER, ATTACK, READER)  # within a problem, after its reference: writers first, readers last
# No relative timeouts: an attack's first call may read PID 1's memory, well past ten times a reference's test.
LIMITS = ("--repoexec-timeout-factor=0", "--repoexec-timeout=30", "--repoexec-sample-timeout=90")


def catalogue_replay(path: Path, marker: str) -> tuple[Path, dict[tuple[str, int], Game | None]]:
    """The replay file, and what each sample is: its game, or None for the problem's reference."""
    context = {"marker": repr(marker)}
    completions: dict[str, list[str]] = {}
    layout: dict[tuple[str, int], Game | None] = {}
    for problem_id, problem in PROBLEMS.items():
        games = sorted((game for game in CATALOGUE if game.problem == problem_id), key=lambda g: ORDER.index(g.role))
        completions[problem_id] = [problem.reference] + [game.completion(problem.reference, context) for game in games]
        layout.update({(problem_id, index): game for index, game in enumerate([None, *games])})
    return write_replay(path, completions), layout


def outcome(sample: dict) -> str:
    return PASSED if sample["passed"] else sample["error_type"]


def misjudged(report: dict, layout: dict[tuple[str, int], Game | None]) -> list[str]:
    """Each sample whose outcome its game does not allow, one line each, ready to read in a failure."""
    samples = {(sample["problem"], sample["sample"]): sample for sample in report["samples"]}
    problems = []
    if set(samples) != set(layout):
        problems.append(f"the report's samples differ from the replay's: missing {sorted(set(layout) - set(samples))}")
    for key, game in sorted(layout.items(), key=lambda item: item[0]):
        sample = samples.get(key)
        if sample is None:
            continue
        allowed = game.expected if game else (PASSED,)
        # judged apart, a game that would be Tampered beside the tests has nothing to tamper with: any failure
        caught = game is not None and sample.get("judge") == "apart" and "Tampered" in allowed and not sample["passed"]
        if outcome(sample) not in allowed and not caught:
            label = f"{game.family}: {game.name}" if game else "the reference"
            log = " ".join((sample.get("error_log") or "").split())[:240]
            problems.append(f"{label} ({key[0]}[{key[1]}]) got {outcome(sample).upper() if sample['passed'] else outcome(sample)}"
                            f", allowed {' or '.join(allowed)} ({sample['tests_passed']}/{sample['tests_total']} "
                            f"tests passed): {log}")
    return problems


def test_the_catalogue_covers_the_five_families_after_the_check_and_the_probes():
    families = Counter(game.family for game in ATTACKS)
    assert set(families) == set(FAMILIES) | set(AFTER_DEFENCES) and min(families.values()) >= 2, families
    assert {game.problem for game in REPOEXEC_GAMES} >= {"python-string-utils/reverse", "python-string-utils/roman_encode",
                                                       "python-string-utils/words_count"}
    assert len(ATTACKS) >= 40
    assert sum(game.after_check for game in ATTACKS) >= 8
    assert {game.problem for game in ATTACKS} == set(PROBLEMS)
    assert all(PASSED not in game.expected for game in ATTACKS), "an attack may never pass"
    probes = [game for game in CATALOGUE if game.role != ATTACK]
    assert {game.role for game in probes} == {WRITER, READER}
    assert all(game.expected[0] == PASSED for game in probes)
    assert all(game.expected == (PASSED,) for game in probes if game.role == READER)


@pytest.mark.parametrize("game", [game for game in CATALOGUE if game.role == ATTACK], ids=lambda game: game.name)
def test_every_attack_starts_from_a_candidate_that_is_a_whole_function(game):
    problem = PROBLEMS[game.problem]
    text = game.completion(problem.reference, {"marker": repr("rx0000000000000")})
    compile(text, game.name, "exec")
    assert text.startswith(problem.reference.strip("\n").partition("\n")[0] + "\n")


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("workers", "executor"), [(0, "warm"), (0, "process"), (2, "warm")],
                         ids=["warm", "process", "xdist-warm"])
def test_no_grader_game_passes_and_no_sample_finds_a_channel(run_repoexec, pytester, repoexec_cache, workers, executor):
    marker = "rx" + uuid.uuid4().hex[:13]
    replay, layout = catalogue_replay(pytester.path / "games.jsonl", marker)
    xdist = ["-n", str(workers)] if workers else []
    try:
        result, report = run_repoexec(*(str(SHIPPED / problem) for problem in PROBLEMS), f"--repoexec-model=replay:{replay}",
                                      f"--repoexec-executor={executor}", *LIMITS, *xdist, subprocess=True)
        assert report is not None, "no report; the run's output ends:\n" + "\n".join(result.outlines[-30:])
        assert (report.get("sandbox") or {}).get("kind") == "bwrap" and report.get("executor") == executor
        problems = misjudged(report, layout)
        for folder, recursive in ((REAL_HOME, False), (Path("/tmp"), False), (Path("/dev/shm"), False),
                                  (repoexec_cache, True)):
            problems += [f"a sample left {path} on the host" for path in marked_files(folder, marker, recursive)]
        problems += [f"process {pid} outlived the run: {what}" for pid, what in leftovers_after_grace(marker)]
        assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
    finally:
        for pid, _ in leftovers(marker):
            os.kill(pid, signal.SIGKILL)
        for folder in (REAL_HOME, Path("/tmp"), Path("/dev/shm")):
            for path in marked_files(folder, marker, recursive=False):
                path.unlink(missing_ok=True)


# What honest code does all the time, which reaches the tests' frames and files through the standard library's
# reporting: logging finds its caller's frame, a warning from the caller's line and a formatted stack read the
# tests' source. None of it may make an honest candidate Tampered.
REPORTING = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    import logging, traceback, warnings
    logging.getLogger("mini").warning("scaling %s", value)
    warnings.warn("scaling", UserWarning, stacklevel=2)
    traceback.format_stack()
    return clamp(value * SCALE, 0, 100)
'''


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_an_honest_candidate_that_logs_warns_and_formats_its_stack_passes(mini, run_repoexec, pytester, executor):
    replay = write_replay(pytester.path / "reporting.jsonl", {"mini/scaled": [REPORTING]})
    result, report = run_repoexec(str(mini / "scaled"), f"--repoexec-model=replay:{replay}", "--repoexec-fresh",
                                  f"--repoexec-executor={executor}")
    assert report is not None, result.stdout.str()[-3000:]
    (sample,) = report["samples"]
    assert sample["passed"] and sample["judge"] == "apart", sample["error_log"]


# --- games written after the in-process defences, on RepoExec's python-string-utils (issue 33) ------------------

def _after_defences_replay(path: Path, folders: dict[str, Path]) -> tuple[Path, dict[tuple[str, int], Game | str]]:
    """Per problem: its reference, the wrong base alone (``return answer``), then each game on that base."""
    context = {"marker": repr("rx0")}
    completions: dict[str, list[str]] = {}
    layout: dict[tuple[str, int], Game | str] = {}
    for game in AFTER_DEFENCES_GAMES:
        if game.problem not in folders:
            continue
        problem = load_problem(folders[game.problem] / "problem.toml")
        if problem.id not in completions:
            base = Game("wrong base", game.family, game.problem, (), "return answer", "")
            completions[problem.id] = [problem.reference, base.completion(problem.reference, context)]
            layout[(problem.id, 0)], layout[(problem.id, 1)] = "reference", "wrong base"
        layout[(problem.id, len(completions[problem.id]))] = game
        completions[problem.id].append(game.completion(problem.reference, context))
    return write_replay(path, completions), layout


@pytest.mark.timeout(900)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_games_after_the_defences_fail_apart_on_repoexec_and_raise_no_tr(run_repoexec, pytester, executor):
    imported = pytester.path / "imported"
    assert cli_main(["import", str(REPOEXEC_DATA), "--out", str(imported), "--projects", "python-string-utils"]) == 0
    folders = {name: next(imported.glob(f"python-string-utils/*_{name.rpartition('/')[2]}"))
               for name in {game.problem for game in REPOEXEC_GAMES}}
    folders.update({name: SHIPPED / name for name in {g.problem for g in AFTER_DEFENCES_GAMES if g.family == TR_ORACLE}})
    replay, layout = _after_defences_replay(pytester.path / "after.jsonl", folders)
    result, report = run_repoexec(*map(str, folders.values()), f"--repoexec-model=replay:{replay}",
                                  f"--repoexec-executor={executor}", *LIMITS, subprocess=True)
    assert report is not None, "no report; the run's output ends:\n" + "\n".join(result.outlines[-30:])
    samples = {(s["problem"], s["sample"]): s for s in report["samples"]}
    assert set(samples) == set(layout)
    assert all(samples[key]["passed"] for key, what in layout.items() if what == "reference")
    base = {key[0]: samples[key]["tests_passed"] for key, what in layout.items() if what == "wrong base"}
    games = {key: what for key, what in layout.items() if isinstance(what, Game)}
    assert len(games) >= 20 and {key[0] for key in games} >= {s for s in base if s.startswith("python-string-utils")}
    passed = [f"{what.family}: {what.name} on {key[0]}" for key, what in games.items() if samples[key]["passed"]]
    assert passed == [], "games passed:\n" + "\n".join(passed)
    # no check at all runs on a failing sample: an oracle on some tests would raise its TR; apart it has none
    raised = [f"{what.name} on {key[0]}: {samples[key]['tests_passed']} tests passed, the wrong base {base[key[0]]}"
              for key, what in games.items() if samples[key]["tests_passed"] > base[key[0]]]
    assert raised == []
    assert {samples[key]["judge"] for key in games} == {"apart"}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_call_bound_by_the_candidate_never_runs_in_the_judge(run_repoexec, pytester, executor):
    """pyMonet's ``cond`` returns a function its tests call: an answer pickled as ``partial(cProfile.run, code)``,
    as the ``run`` of a scheduler whose queue holds that call, or as xmlrpc's method proxy holding ``cProfile.run``
    and the code, is refused, so the code never runs in the judge; each game fails, with no more tests passed
    than its wrong base."""
    imported = pytester.path / "imported"
    assert cli_main(["import", str(REPOEXEC_DATA), "--out", str(imported), "--projects", "pyMonet"]) == 0
    folder = next(imported.glob("pyMonet/*_cond"))
    problem = load_problem(folder / "problem.toml")
    replay = write_replay(pytester.path / "called.jsonl",
                          {problem.id: [problem.reference, CALLED_BACK_BASE, *CALLED_BACK_GAMES.values()]})
    result, report = run_repoexec(str(folder), f"--repoexec-model=replay:{replay}", f"--repoexec-executor={executor}",
                                  *LIMITS, subprocess=True)
    assert report is not None, "no report; the run's output ends:\n" + "\n".join(result.outlines[-30:])
    reference, base, *games = sorted(report["samples"], key=lambda sample: sample["sample"])
    assert reference["passed"] and {sample["judge"] for sample in report["samples"]} == {"apart"}
    assert not base["passed"] and len(games) == len(CALLED_BACK_GAMES)
    for name, game in zip(CALLED_BACK_GAMES, games):
        assert not game["passed"] and game["error_type"] not in ENGINE_LABELS, (name, game["error_log"][-800:])
        assert game["tests_passed"] <= base["tests_passed"], name
        assert "WireError" in game["error_log"], (name, game["error_log"][-800:])


RCB_DATA = REPO.parent / "shared" / "repoclassbench"
RCB_GAMED = ("requests-0192aac24123/SESsiON", "requests-0192aac24123/rEQueSt", "pydicom-a8be738418de/PeRSoNnAmE")


def _class_games_replay(path: Path, problems: dict[str, object]) -> tuple[Path, dict[tuple[str, int], object]]:
    """Each class problem's reference, then each class game's wrong base and the game: the replay, and what each
    sample is ("reference", or (game, "base" or "game"))."""
    completions, layout = {}, {}
    for problem_id, problem in problems.items():
        samples = [("reference", problem.reference)] + [
            ((game, part), class_game(problem.reference, game, base=part == "base"))
            for game in CLASS_GAMES for part in ("base", "game")]
        completions[problem_id] = [text for _, text in samples]
        layout.update({(problem_id, index): what for index, (what, _) in enumerate(samples)})
    return write_replay(path, completions), layout


def _no_class_game_passes(report: dict, layout: dict, problems: dict) -> None:
    """No game passes or ends with an engine's label (its failure is its own); none passes more tests than its wrong base, but where the
    reference defines __eq__ and the game gives the instance an __eq__ of its own: the tests that compare an
    instance with a value then ask the class's own comparison, which is the class's to answer (the threat model
    says so)."""
    samples = {(s["problem"], s["sample"]): s for s in report["samples"]}
    assert set(samples) == set(layout)
    assert all(samples[key]["passed"] for key, what in layout.items() if what == "reference"), \
        [samples[key]["error_log"] for key, what in layout.items() if what == "reference"]
    base = {(key[0], what[0].name): samples[key] for key, what in layout.items() if what[1:] == ("base",)}
    assert not any(sample["passed"] for sample in base.values())
    wrong = [f"{game.name} on {key[0]}: {outcome(samples[key])}, {samples[key]['tests_passed']} tests passed (its "
             f"wrong base {base[key[0], game.name]['tests_passed']})"
             for key, (game, part) in ((key, what) for key, what in layout.items() if what != "reference")
             if part == "game" and (outcome(samples[key]) in (PASSED, *ENGINE_LABELS)
                                    or samples[key]["tests_passed"] > base[key[0], game.name]["tests_passed"]
                                    and not (game.name == "instance_equals_anything"
                                             and "def __eq__" in problems[key[0]].reference))]
    assert wrong == []
    assert {samples[key]["judge"] for key in layout} == {"apart"}


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_class_games_fail_apart_on_a_class_problem(run_repoexec, pytester, executor):
    """The class under test's own games (answers equal to anything, an instance whose __eq__ says yes, a str
    subclass, its own Timeout), on the test suite's class problem: none passes, none raises TR or names a label."""
    from test_class_problems import write_project

    project = write_project(pytester.path)
    problems = {"zoo/pen": load_problem(project / "pen" / "problem.toml")}
    replay, layout = _class_games_replay(pytester.path / "games.jsonl", problems)
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}", f"--repoexec-executor={executor}",
                                  "--repoexec-fresh")
    assert report is not None, result.stdout.str()[-3000:]
    _no_class_game_passes(report, layout, problems)


@pytest.mark.timeout(1500)
def test_class_games_fail_apart_on_repoclassbench(run_repoexec, pytester):
    """The same games on three RepoClassBench classes judged by their projects' own suites (requests' Session and
    Request, pydicom's PersonName)."""
    imported = pytester.path / "rcb"
    cli_main(["import", "--format", "repoclassbench", str(RCB_DATA), "--out", str(imported),
              "--projects", "requests-0192aac24123,pydicom-a8be738418de"])
    problems = {name: load_problem(imported / name / "problem.toml") for name in RCB_GAMED}
    replay, layout = _class_games_replay(pytester.path / "games.jsonl", problems)
    result, report = run_repoexec(*(str(imported / name) for name in RCB_GAMED), f"--repoexec-model=replay:{replay}",
                                  "--repoexec-fresh", "--repoexec-sample-timeout=600", subprocess=True)
    assert report is not None, "no report; the run's output ends:\n" + "\n".join(result.outlines[-30:])
    _no_class_game_passes(report, layout, problems)
