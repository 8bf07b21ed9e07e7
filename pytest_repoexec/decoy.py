"""The decoy check: a verdict of "passed" that does not depend on how a cheat works.

Every check inside the tests' interpreter can be read, timed around or switched off by the code it watches. So a
sample that passes is run once more, in a run that looks the same from the inside (the same paths, arguments,
environment, file sizes and mounts), against a decoy of its tests: one constant of each expected value in the
test module (``assert f(x) == <expected>``) and one value of each expected-output pickle changed, in place and
of the same kind (a letter for a letter, a digit for a digit), so that no honest candidate can produce it. The
reference fails the decoy's tests that this makes impossible (its "sensitive" tests, measured once per problem
and environment); an honest candidate fails them too. A candidate that passes one of them did not compute its
answer: it read the expected value (an oracle), made a value equal to anything, or forged the verdict, and it
is marked ``Tampered``. Which values were changed is drawn at random when the decoy is made, and kept in the
engine's cache, out of every sample's reach.

A problem none of whose tests compares with an expected value that can be changed (tests that only check that
no exception is raised), or one judged by its project's own suite, has no decoy: its samples say so.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import pickletools
import random
import secrets
import shutil
import struct
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from . import testmodule
from .environment import ProjectEnv
from .executor import Executor, RunOptions, SampleRun
from .problem import Problem
from .runtime.repoexec_protocol import ErrorType
from .store import problem_digest

LAYOUT = 1  # of a decoy on disk; a decoy of another layout is made again
HELD = "held"  # a passing sample's state once it failed every test the decoy made impossible
CAUGHT = "caught"  # the state of a sample that passed a test the decoy made impossible: it is Tampered


@dataclass(frozen=True)
class Decoy:
    tests: str | None  # the decoy's test module (None: the problem's own, unchanged)
    expected: Path | None  # the decoy's expected-output folder (None: the problem's own)
    sensitive: frozenset[str]  # the tests the reference fails against the decoy (by a failed assertion)
    unavailable: str | None  # why the problem has no decoy check

    def options(self, options: RunOptions) -> RunOptions:
        """The sample's run options, with the decoy's files in place of the problem's."""
        return dataclasses.replace(options, tests_source=self.tests, expected=self.expected)


class Decoys:
    """The decoys of a run's problems, made once per (problem, environment) under ``folder`` and kept there."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._known: dict[tuple[str, str], Decoy] = {}

    def of(self, problem: Problem, env: ProjectEnv, executor: Executor, reference_module: str) -> Decoy:
        key = (problem.id, env.python.parent.parent.name)
        if key not in self._known:
            self._known[key] = self._load_or_make(problem, env, executor, reference_module)
        return self._known[key]

    def check(self, problem: Problem, env: ProjectEnv, executor: Executor, module: str, reference_module: str,
              options: RunOptions) -> tuple[str, str | None]:
        """(the sample's decoy state, why it is Tampered or None) for a sample that passed."""
        decoy = self.of(problem, env, executor, reference_module)
        if decoy.unavailable:
            return f"unavailable: {decoy.unavailable}", None
        if module == reference_module:  # the reference itself: its run against the decoy is what measured it
            return HELD, None
        why = caught(executor.run(env, problem, module, decoy.options(options)), decoy.sensitive)
        return (HELD if why is None else CAUGHT), why

    def _load_or_make(self, problem: Problem, env: ProjectEnv, executor: Executor, reference_module: str) -> Decoy:
        place = self.folder / f"{env.python.parent.parent.name}-{problem_digest(problem)[:32]}"
        self.folder.mkdir(parents=True, exist_ok=True)
        with FileLock(str(place) + ".lock"):
            decoy = _read(place)
            if decoy is None:
                decoy = _make(problem, env, executor, reference_module, place)
        return decoy


def caught(run: SampleRun, sensitive: frozenset[str]) -> str | None:
    """Why a sample's run against the decoy shows a cheat, or None: it passed a test whose expected value no
    honest candidate can produce, or its stream could not be believed."""
    if run.tampered:
        return f"the decoy check: the run against the decoy could not be believed: {run.tampered}"
    guarded = next((test for test in (*run.collect_errors, *run.tests) if test.error_type == ErrorType.TAMPERED), None)
    if guarded is not None:
        return f"the decoy check: in the run against the decoy, {guarded.message}"
    passed = sorted(test.name for test in run.tests if test.outcome == "passed" and test.name in sensitive)
    if passed:
        return (f"the decoy check: {len(passed)} of {len(sensitive)} tests whose expected values were made "
                f"impossible passed against the decoy ({', '.join(passed[:5])}{', ...' if len(passed) > 5 else ''}): "
                "the candidate matched whatever the tests expected instead of computing it")
    return None


# --- making a decoy ---------------------------------------------------------------------------------------

def _read(place: Path) -> Decoy | None:
    try:
        data = json.loads((place / "decoy.json").read_text(encoding="utf-8"))
        if data.get("layout") != LAYOUT:
            return None
        tests = (place / "tests.py").read_text(encoding="utf-8") if data["tests"] else None
        expected = place / "expected" if data["expected"] else None
        return Decoy(tests, expected, frozenset(data["sensitive"]), data["unavailable"])
    except (OSError, ValueError, KeyError):
        return None


def _make(problem: Problem, env: ProjectEnv, executor: Executor, reference_module: str, place: Path) -> Decoy:
    """Change the problem's expected values, then run the reference against them to learn which tests the
    changes make impossible; written whole, or not at all."""
    rng = random.Random(secrets.randbits(64))
    shutil.rmtree(place, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=place.name + ".", dir=place.parent))
    try:
        tests, sensitive, unavailable = None, frozenset(), None
        if problem.tests is None:
            unavailable = "the problem is judged by its project's own tests, which the engine does not rewrite"
        else:
            expected = staging / "expected" if problem.expected.is_dir() else None
            changed = _change_pickles(problem.expected, expected, rng) if expected else 0
            source = problem.tests.read_text(encoding="utf-8")
            literals = Literals(source, problem.function_name, rng)

            def measure(choice: dict[testmodule.Span, str | None]) -> Measured:
                decoy = Decoy(literals.source(choice), expected, frozenset(), None)
                return _sensitive(executor.run(env, problem, reference_module, decoy.options(RunOptions())))

            if not changed and not literals.sites:
                unavailable = "no expected value in its tests (a literal compared with ==, or a pickle) could be changed"
            else:
                choice, (sensitive, unavailable) = literals.settle(measure)
                tests = literals.source(choice)
                (staging / "tests.py").write_text(tests, encoding="utf-8")
        (staging / "decoy.json").write_text(json.dumps({
            "layout": LAYOUT, "tests": tests is not None, "expected": (staging / "expected").is_dir(),
            "sensitive": sorted(sensitive), "unavailable": unavailable,
        }), encoding="utf-8")
        os.replace(staging, place)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    decoy = _read(place)
    assert decoy is not None
    return decoy


def _change_pickles(original: Path, copy: Path, rng: random.Random) -> int:
    """The expected folder copied, each pickle in it with one value changed; how many were."""
    shutil.copytree(original, copy)
    changed = 0
    for path in sorted(copy.rglob("*")):
        data = change_pickle(path.read_bytes(), rng) if path.is_file() else None
        if data is not None:
            path.write_bytes(data)
            changed += 1
    return changed


class Literals:
    """The test module's expected literals and the changes drawn for them. A change can leave a test honest
    candidates pass (it named a file, not a value: ``_expected("out.pkl")``), or turn its failure into
    another error: ``settle`` keeps, per test, the first of (a change, no change where a pickle does the work,
    another change) that the reference fails on an assertion."""

    ROUNDS = 3

    def __init__(self, source: str, function_name: str, rng: random.Random) -> None:
        self.text, self.rng = source, rng
        data = source.encode("utf-8")
        self.sites = {site.expected: (site.test, data[site.expected.start:site.expected.end].decode("utf-8"))
                      for site in testmodule.assertion_sites(source, function_name) if site.expected is not None}

    def draw(self, numbers_first: bool = True) -> dict[testmodule.Span, str | None]:
        return {span: _change_expression(text, self.rng, numbers_first) for span, (_, text) in self.sites.items()}

    def source(self, choice: dict[testmodule.Span, str | None]) -> str:
        return testmodule.replace_spans(self.text, {span: text for span, text in choice.items() if text is not None})

    def settle(self, measure: Callable[[dict[testmodule.Span, str | None]], Measured]
               ) -> tuple[dict[testmodule.Span, str | None], Measured]:
        """The changes to keep, and what the reference did against them."""
        choice = self.draw()
        for number in range(self.ROUNDS):
            measured = measure(choice)
            settled = {name.partition("[")[0] for name in measured[0]}
            open_tests = {test for test, _ in self.sites.values()} - settled
            if not open_tests or number == self.ROUNDS - 1:
                return choice, measured
            retry = self.draw(numbers_first=False) if number else dict.fromkeys(self.sites)  # none, then any
            choice = {span: retry[span] if self.sites[span][0] in open_tests else text
                      for span, text in choice.items()}
        raise AssertionError("unreachable")


Measured = tuple[frozenset[str], str | None]  # (the sensitive tests, why there are none) of one reference run


def _sensitive(run: SampleRun) -> Measured:
    """The tests the reference fails against the decoy on an assertion: what an honest candidate fails too."""
    if run.tampered or run.collect_errors or not run.finished:
        what = run.tampered or (run.collect_errors[0].message if run.collect_errors else f"exit {run.returncode}")
        return frozenset(), f"the reference's run against the decoy did not complete ({what})"
    sensitive = frozenset(test.name for test in run.tests
                          if test.outcome == "failed" and test.error_type == "AssertionError")
    if not sensitive:
        return sensitive, "the reference passes every test of the decoy: no test compares with a changed value"
    return sensitive, None


def _change_expression(text: str, rng: random.Random, numbers_first: bool = True) -> str | None:
    """The expression's text with one of its constants changed, or None where none can be. It is parsed in
    brackets, as it stands in its assertion (it may span lines)."""
    wrapped = f"({text})".encode("utf-8")
    try:
        tree = ast.parse(wrapped, mode="eval")
    except SyntaxError:
        return None
    starts = [0]
    for line in wrapped.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    constants = [node for node in ast.walk(tree) if isinstance(node, ast.Constant)
                 and type(node.value) in (str, bytes, int, float, complex, bool)]
    rng.shuffle(constants)
    if numbers_first:  # a number, or a string of one ("3.35"), changes a value and rarely breaks a constructor
        constants.sort(key=lambda node: not _numeric(node.value))
    for node in constants:
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        new = change_constant(wrapped[start:end].decode("utf-8"), node.value, rng)
        if new is not None:
            return (wrapped[1:start] + new.encode("utf-8") + wrapped[end:-1]).decode("utf-8")
    return None


def _numeric(value: object) -> bool:
    if isinstance(value, (int, float, complex)) and not isinstance(value, bool):
        return True
    return isinstance(value, str) and any(c.isdigit() for c in value) and all(c in "0123456789.-+eE_" for c in value)


def change_constant(segment: str, value: object, rng: random.Random) -> str | None:
    """A literal's text with one character changed to another of its kind, so that it reads back as a value
    of the same type that differs; None where that cannot be done."""
    if type(value) is bool:
        return {"True": "False", "False": "True"}.get(segment)
    positions = [index for index, char in enumerate(segment) if char.isascii() and char.isalnum()]
    if type(value) in (int, float, complex):
        positions = [index for index in positions if segment[index].isdigit()]
    rng.shuffle(positions)
    for index in positions[:16]:
        new = segment[:index] + _other(segment[index], rng) + segment[index + 1:]
        try:
            again = ast.literal_eval(new)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if type(again) is type(value) and again != value:
            return new
    return None


def _other(char: str, rng: random.Random) -> str:
    """Another character of the same kind: a digit for a digit, a letter of the same case for a letter."""
    pool = "0123456789" if char.isdigit() else "abcdefghijklmnopqrstuvwxyz" if char.islower() else \
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return rng.choice(pool.replace(char, ""))


_STRINGS = {"SHORT_BINUNICODE": 1, "BINUNICODE": 4, "BINUNICODE8": 8}
_BYTES = {"SHORT_BINBYTES": 1, "BINBYTES": 4, "BINBYTES8": 8}
_INTS = {"BININT1", "BININT2", "BININT"}
_BOOLS = {"NEWTRUE": b"\x89", "NEWFALSE": b"\x88"}
_QUIET = {"MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "FRAME"}


def change_pickle(data: bytes, rng: random.Random) -> bytes | None:
    """The pickle with one of its values changed in place (the same opcodes, the same length: a letter of a
    string for another, an integer's low byte, a float's value, a boolean), never a name that an object's
    class is found by; None where it holds no such value or is not a pickle. Nothing is unpickled here."""
    try:
        ops = list(pickletools.genops(data))
    except Exception:  # pickletools raises ValueError and others on what is not a pickle
        return None
    names = set()  # the strings STACK_GLOBAL takes as a module and a class name
    for index, (op, _, _) in enumerate(ops):
        if op.name == "STACK_GLOBAL":
            before = [i for i in range(index - 1, -1, -1) if ops[i][0].name not in _QUIET][:2]
            names.update(before)
    changes: list[Callable[[], bytes | None]] = []
    for index, (op, arg, position) in enumerate(ops):
        if op.name in _STRINGS and index not in names:
            start = position + 1 + _STRINGS[op.name]
            changes.append(lambda start=start, size=len(arg.encode("utf-8", "surrogatepass")):
                           _change_letter(data, start, size, rng))
        elif op.name in _BYTES and arg:
            start = position + 1 + _BYTES[op.name]
            changes.append(lambda start=start, size=len(arg): _change_letter(data, start, size, rng) or
                           _replace(data, start + rng.randrange(size), lambda byte: (byte + rng.randint(1, 255)) % 256))
        elif op.name in _INTS:
            changes.append(lambda position=position:
                           _replace(data, position + 1, lambda byte: (byte + rng.randint(1, 9)) % 256))
        elif op.name == "BINFLOAT":  # a digit of its shortest repr, as a literal would be changed
            text = change_constant(repr(arg), arg, rng)
            if text is not None:
                changes.append(lambda position=position, value=float(text):
                               data[:position + 1] + struct.pack(">d", value) + data[position + 9:])
        elif op.name in _BOOLS:
            changes.append(lambda position=position, name=op.name:
                           data[:position] + _BOOLS[name] + data[position + 1:])
    rng.shuffle(changes)
    for change in changes:
        new = change()
        if new is not None and new != data:
            return new
    return None


def _change_letter(data: bytes, start: int, size: int, rng: random.Random) -> bytes | None:
    positions = [start + offset for offset in range(size) if chr(data[start + offset]).isalnum()
                 and data[start + offset] < 128]
    if not positions:
        return None
    position = rng.choice(positions)
    return data[:position] + _other(chr(data[position]), rng).encode("ascii") + data[position + 1:]


def _replace(data: bytes, position: int, change: Callable[[int], int]) -> bytes:
    return data[:position] + bytes([change(data[position])]) + data[position + 1:]
