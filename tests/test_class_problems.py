"""Problems whose entry point is a module-level class (RepoClassBench's setting): the candidate replaces the whole
class, the project's own suite judges it in place, DIR counts the repository names its methods use, and the
prompt holds a description of the class in one of two forms (``--repoexec-description``)."""

from __future__ import annotations

import re
import textwrap

import pytest

from conftest import write_replay
from pytest_repoexec.candidate import dependency_share, make_candidate
from pytest_repoexec.mutation import mutants, pass_body
from pytest_repoexec.problem import ManifestError, load_problem
from pytest_repoexec.prompts import build_prompt

PEN = '''\
from .errors import ZooError
from .units import FACTOR, clamp


def unrelated():
    return 1


class Pen:
    """A pen of animals that holds a bounded number of them."""

    kind = "pen"

    def __init__(self, capacity):
        """A pen for at most ``capacity`` animals (1 to 100)."""
        self.capacity = clamp(capacity, 1, 100)
        self.animals = []

    def add(self, name):
        """Put an animal in and return how many there are; a full pen is an error."""
        if len(self.animals) >= self.capacity:
            raise ZooError(f"{self.kind} is full")
        self.animals.append(name)
        return len(self.animals)

    def food(self):
        """The day's food: FACTOR a head."""
        return len(self.animals) * FACTOR
'''
REFERENCE = "class Pen:" + PEN.split("class Pen:", 1)[1]
CONTEXT = '''\
from .errors import ZooError
from .units import FACTOR, clamp

FACTOR = 10


def clamp(value, low, high):
    return max(low, min(value, high))


class ZooError(Exception):
    pass
'''
TESTS = '''\
import pytest

from zoo.errors import ZooError
from zoo.pen import Pen


def test_add(pen):
    assert pen.add("ant") == 1
    assert pen.add("bee") == 2


def test_full(pen):
    pen.add("ant")
    pen.add("bee")
    with pytest.raises(ZooError):
        pen.add("cat")


@pytest.mark.parametrize("capacity, expected", [(0, 1), (500, 100)])
def test_capacity_is_clamped(capacity, expected):
    assert Pen(capacity).capacity == expected


def test_food(pen):
    pen.add("ant")
    assert pen.food() == 10
'''
SUITE = ["tests/test_pen.py::test_add", "tests/test_pen.py::test_full",
         "tests/test_pen.py::test_capacity_is_clamped[0-1]", "tests/test_pen.py::test_capacity_is_clamped[500-100]",
         "tests/test_pen.py::test_food"]
DETAILED = """A pen of animals that holds a bounded number of them.

- `__init__(self, capacity)`: a pen for at most `capacity` animals, clamped to 1..100 with `clamp`.
- `add(self, name)`: put an animal in and return how many there are; raise `ZooError` when full.
- `food(self)`: the day's food, `FACTOR` a head."""
SKETCHY = "A bounded pen of animals: one adds animals until it is full, and asks how much food they need."


def write_project(root, manifest_extra: str = "", prompt_extra: str = "", entry_point: str = "Pen",
                  reference: str = REFERENCE):
    """A src-layout project whose class ``Pen`` uses two other modules of it, with its own suite."""
    project = root / "zoo"
    package = project / "repo" / "src" / "zoo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "units.py").write_text("FACTOR = 10\n\n\ndef clamp(value, low, high):\n"
                                      "    return max(low, min(value, high))\n")
    (package / "errors.py").write_text("class ZooError(Exception):\n    pass\n")
    (package / "pen.py").write_text(PEN)
    tests = project / "repo" / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text("import pytest\n\nfrom zoo.pen import Pen\n\n\n@pytest.fixture\n"
                                       "def pen():\n    return Pen(2)\n")
    (tests / "test_pen.py").write_text(TESTS)
    (project / "project.toml").write_text('import_root = "src"\n\n[source]\npath = "repo"\n')
    problem = project / "pen"
    problem.mkdir()
    (problem / "problem.toml").write_text(
        f'module = "zoo.pen"\nentry_point = "{entry_point}"\ntest_count = {len(SUITE)}\n'
        + f"suite = {SUITE!r}\n".replace("'", '"') + manifest_extra
        + f"reference = '''\n{reference}'''\n\n[prompt]\ndescription_detailed = '''\n{DETAILED}'''\n"
        + f"description_sketchy = '''{SKETCHY}'''\n{prompt_extra}\n[prompt.context]\nfull = '''\n{CONTEXT}'''\n"
    )
    return project


EMPTY = "class Pen: pass\n"
WRONG = REFERENCE.replace("len(self.animals) * FACTOR", "len(self.animals) * 2")  # food is wrong
BROKEN_SIGNATURE = REFERENCE.replace("def add(self, name):", "def add(self):")  # add() takes no name


def test_the_problem_knows_it_is_a_class(pytester):
    problem = load_problem(write_project(pytester.path) / "pen" / "problem.toml")
    assert (problem.kind, problem.noun, problem.function_name) == ("class_definition", "class", "Pen")
    assert problem.signature == "class Pen:"
    assert problem.dependencies == ("ZooError", "FACTOR", "clamp")  # every method's, in context order
    assert dependency_share(problem, make_candidate(problem, WRONG)) == pytest.approx(2 / 3)  # FACTOR unused
    assert dependency_share(problem, make_candidate(problem, REFERENCE)) == 1.0


def test_the_class_is_taken_out_of_an_answer(pytester):
    problem = load_problem(write_project(pytester.path) / "pen" / "problem.toml")
    answer = f"Here it is:\n```python\nfrom .units import clamp\n\n{WRONG}\n\ndef helper():\n    pass\n```\n"
    candidate = make_candidate(problem, answer)
    assert candidate.error_type is None and candidate.function.startswith("class Pen:")
    assert "def helper" not in candidate.function and "* 2" in candidate.function
    continued = make_candidate(problem, "    def food(self):\n        return 0\n")  # continues the header
    assert continued.function == "class Pen:\n    def food(self):\n        return 0\n"
    assert make_candidate(problem, EMPTY).empty and not make_candidate(problem, WRONG).empty
    assert make_candidate(problem, "class Pen(:\n    pass\n").error_type == "SyntaxError"


def test_the_empty_class_and_mutants_of_a_class():
    assert pass_body(REFERENCE) == EMPTY.replace(" pass", "\n    pass")
    found = mutants(REFERENCE, 50)
    assert found and all(mutant.function.startswith("class Pen:") for mutant in found)
    assert {mutant.operator for mutant in found} >= {"arithmetic", "comparison", "statement", "constant"}
    assert not any("A pen of animals" not in mutant.function for mutant in found)  # docstrings stay


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_class_problem_is_judged_by_the_suite(run_repoexec, pytester, executor):
    project = write_project(pytester.path)
    replay = write_replay(pytester.path / "replay.jsonl", {"zoo/pen": [REFERENCE, EMPTY, WRONG, BROKEN_SIGNATURE]})
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}",
                                  f"--repoexec-executor={executor}", "--repoexec-fresh")
    assert report is not None, result.stdout.str()[-3000:]
    right, empty, wrong, broken = report["samples"]
    assert (right["passed"], right["tests_passed"], right["dir"]) == (True, 5, 1.0), result.stdout.str()[-3000:]
    assert (empty["passed"], empty["error_type"], empty["empty"]) == (False, "TypeError", True)  # Pen(2)
    assert (wrong["passed"], wrong["tests_passed"], wrong["error_type"]) == (False, 4, "AssertionError")
    assert wrong["failed_test"] == "test_food"
    assert (broken["passed"], broken["error_type"]) == (False, "TypeError")
    assert (report["judge"]["apart"], report["judge"]["problems_in_process"]) == (4, {}), report["judge"]


def test_the_gate_admits_a_class_problem(run_repoexec, pytester):
    result, report = run_repoexec(str(write_project(pytester.path)), "--repoexec-validate", "--repoexec-reruns=2",
                                  "--repoexec-mutants=6")
    assert report is not None, result.stdout.str()[-3000:]
    (entry,) = report["problems"]
    assert entry["passed"], entry["reasons"]
    assert entry["line_coverage"] == 100.0 and entry["branch_coverage"] == 100.0  # the methods' bodies
    assert entry["mutants"] == 6 and entry["mutation_score"] > 50


def test_the_gate_measures_the_methods_not_the_class_statements(run_repoexec, pytester):
    project = write_project(pytester.path)
    (project / "repo" / "tests" / "test_pen.py").write_text(  # only the constructor runs: add and food do not
        "from zoo.pen import Pen\n\n\ndef test_add():\n    assert Pen(0).capacity == 1\n")
    manifest = project / "pen" / "problem.toml"
    manifest.write_text(manifest.read_text().replace(f"test_count = {len(SUITE)}", "test_count = 1").replace(
        f"suite = {SUITE!r}".replace("'", '"'), 'suite = ["tests/test_pen.py::test_add"]'))
    result, report = run_repoexec(str(project), "--repoexec-validate", "--repoexec-reruns=2", "--repoexec-mutants=0")
    assert report is not None, result.stdout.str()[-3000:]
    (entry,) = report["problems"]
    assert entry["line_coverage"] == pytest.approx(100 * 2 / 7)  # 2 of the methods' 7 statements
    assert any("coverage of Pen" in reason for reason in entry["reasons"])


def test_prompts_hold_the_chosen_description_and_the_context(pytester):
    manifest = write_project(pytester.path) / "pen" / "problem.toml"
    detailed, sketchy = (load_problem(manifest, form) for form in ("detailed", "sketchy"))
    base = build_prompt(detailed, "base", "full")
    assert base.instruction is None and "def clamp(value, low, high):" in base.response
    assert base.response.endswith('\n\nclass Pen:\n    """\n' + textwrap.indent(DETAILED, "    ") + '\n    """')
    assert "self.animals" not in base.response  # no code of the reference
    assert SKETCHY not in base.text
    short = build_prompt(sketchy, "instruct2", "small")
    assert short.instruction.startswith("from .errors import ZooError")
    assert "implementing the `Pen` class. Write a Python class `class Pen` to solve the following problem:\n" \
           + SKETCHY in short.instruction
    assert short.response == f'class Pen:\n    """{SKETCHY}"""' and "`add(self, name)`" not in short.text
    assert "return max(low" not in short.instruction  # the small context has signatures only


GENERATOR = '''\
from pathlib import Path

import pytest

from pytest_repoexec.prompts import build_prompt


class Echo:
    """Writes each prompt it is asked, then answers with the reference."""

    def count(self, problem, limit):
        return 1

    def generate(self, problems, limit):
        for problem in problems:
            Path("prompt.txt").write_text(build_prompt(problem).text)
        return {problem.id: [problem.reference] for problem in problems}


@pytest.hookimpl(optionalhook=True)
def pytest_repoexec_add_generators(registry):
    registry.add("echo", lambda argument, config: Echo(), "the prompts, written down")
'''


@pytest.mark.parametrize("form, text", [(None, "`add(self, name)`"), ("sketchy", SKETCHY)])
def test_the_run_option_picks_the_description(run_repoexec, pytester, form, text):
    project = write_project(pytester.path)
    pytester.makeconftest(GENERATOR)
    options = [f"--repoexec-description={form}"] if form else []
    result, report = run_repoexec(str(project), "--repoexec-model=echo", *options)
    assert report is not None and report["metrics"]["pass@1"] == 1.0, result.stdout.str()[-3000:]
    prompt = (pytester.path / "prompt.txt").read_text()
    assert text in prompt and (SKETCHY in prompt) == (form == "sketchy")


def test_a_module_without_the_class_is_a_clear_error(run_repoexec, pytester):
    project = write_project(pytester.path, entry_point="Cage", reference=REFERENCE.replace("class Pen:", "class Cage:"))
    result, _ = run_repoexec(str(project))
    output = result.stdout.str()
    assert "pen/problem.toml: entry_point: module zoo.pen" in output, output[-3000:]
    assert "no class 'Cage'" in output


FUNCTION = "def unrelated():\n    return 1\n"


@pytest.mark.parametrize("change, field, message", [
    ((f"description_sketchy = '''{SKETCHY}'''", ""), "prompt.description_sketchy",
     "class 'Pen' needs a description in words (prompt.description_detailed and prompt.description_sketchy)"),
    ((f"description_detailed = '''\n{DETAILED}'''", "description_detailed = ' '"), "prompt.description_detailed",
     "class 'Pen' needs a description in words"),
    (('entry_point = "Pen"', 'entry_point = "Cat"'), "reference", "does not define function 'Cat' or class 'Cat'"),
])
def test_bad_class_manifests_name_the_file_and_field(pytester, change, field, message):
    manifest = write_project(pytester.path) / "pen" / "problem.toml"
    manifest.write_text(manifest.read_text().replace(*change))
    with pytest.raises(ManifestError) as raised:
        load_problem(manifest)
    assert str(raised.value).startswith(f"{manifest}: {field}: {message}")


def test_a_function_problem_has_no_description(pytester):
    manifest = write_project(pytester.path, entry_point="unrelated", reference=FUNCTION) / "pen" / "problem.toml"
    with pytest.raises(ManifestError, match=r"prompt.description_detailed: only a class problem has a description "
                                            r"\('unrelated' is a function\)"):
        load_problem(manifest)


BAG = '''\
from typing import Generic, TypeVar

T = TypeVar("T")


class Bag(Generic[T]):
    """Items, counted and compared as a multiset."""

    kind = "bag"

    def __init__(self, *items):
        self.items = list(items)

    def add(self, item):
        self.items.append(item)
        return self

    def __len__(self):
        return len(self.items)

    def __contains__(self, item):
        return item in self.items

    def __eq__(self, other):
        return isinstance(other, Bag) and sorted(self.items) == sorted(other.items)

    def __hash__(self):
        return hash(tuple(sorted(self.items)))

    @classmethod
    def of(cls, items):
        return cls(*items)

    @staticmethod
    def describe():
        return "a bag"


class Sack(Bag):
    kind = "sack"
'''
BAG_TESTS = '''\
import copy
from typing import Generic, TypeVar

import pytest

from store.bag import Bag, Sack

T = TypeVar("T")


def test_methods_and_special_methods():
    bag = Bag(1, 2)
    assert bag.add(3) is bag
    assert len(bag) == 3 and 2 in bag and 7 not in bag and bag.items == [1, 2, 3]
    assert bag == Bag(3, 2, 1) and bag != Bag(1) and bag != [1, 2, 3]
    assert hash(bag) == hash(Bag(1, 2, 3)) and len({bag, Bag(3, 2, 1)}) == 1


def test_class_attributes_and_methods():
    assert Bag.of([1]).items == [1] and Bag.describe() == "a bag" and Bag.kind == "bag"


def test_a_generic_alias_a_subclass_and_a_copy():
    assert Bag[int](4).items == [4]
    sack = Sack(1)
    assert isinstance(sack, Bag) and type(sack) is Sack and sack.kind == "sack"
    copied = copy.copy(sack)
    assert copied == sack and copied is not sack
    sack.items = [9]
    assert sack.items == [9] and copied.items == [1]


class Box(Generic[T]):
    pass


@pytest.mark.parametrize("alias", [Bag[int]])
def test_a_parameter_of_the_class_subscripted(alias):  # typing's alias, as any generic class's
    assert type(alias) is type(Box[int]) and alias.__origin__ is Bag and alias(5).items == [5]
'''


def class_project(at, package_name, module_name, source, tests):
    """A project of one package holding ``module_name``, and its tests in ``tests/test_<module_name>.py``."""
    project = at / package_name
    package = project / "repo" / package_name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / f"{module_name}.py").write_text(source)
    (project / "repo" / "tests").mkdir()
    (project / "repo" / "tests" / f"test_{module_name}.py").write_text(tests)
    (project / "project.toml").write_text('[source]\npath = "repo"\n')
    return project


@pytest.mark.parametrize("executor", ["warm", "process"])
def test_a_class_under_test_is_used_through_its_instances_apart(run_repoexec, pytester, executor):
    """A class problem judged apart: methods, the reference's special methods (a comparison with a value is the
    class's own answer: False here), class and static methods, class attributes, a generic alias, a subclass
    the project derives (made as the candidate's process has it), a copy, an attribute set, a parameter
    subscripted from the class (typing's alias, as beside the reference: pytest names the two kinds of alias
    apart in litestar's suite, whose node was not found before); and a candidate whose instance equals anything
    passes none of the comparisons with values its reference would not make."""
    project = class_project(pytester.path, "store", "bag", BAG, BAG_TESTS)
    suite = [f"tests/test_bag.py::{name}" for name in ("test_methods_and_special_methods",
                                                       "test_class_attributes_and_methods",
                                                       "test_a_generic_alias_a_subclass_and_a_copy",
                                                       "test_a_parameter_of_the_class_subscripted[Bag]")]
    reference = "class Bag(Generic[T]):" + BAG.split("class Bag(Generic[T]):", 1)[1].split("\n\nclass Sack")[0] + "\n"
    (project / "bag").mkdir()
    (project / "bag" / "problem.toml").write_text(
        f'module = "store.bag"\nentry_point = "Bag"\ntest_count = 4\n' + f"suite = {suite!r}\n".replace("'", '"')
        + f"reference = '''\n{reference}'''\n\n[prompt]\ndescription_detailed = '''Items.'''\n"
        + "description_sketchy = '''Items.'''\n\n[prompt.context]\nfull = '''\n'''\n")
    equal = reference.replace("        return isinstance(other, Bag) and sorted(self.items) == sorted(other.items)",
                              "        return True")
    replay = write_replay(pytester.path / "replay.jsonl", {"store/bag": [reference, equal]})
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}",
                                  f"--repoexec-executor={executor}", "--repoexec-fresh")
    assert report is not None, result.stdout.str()[-3000:]
    right, equal_sample = report["samples"]
    assert (right["passed"], right["tests_passed"], right["judge"]) == (True, 4, "apart"), right["error_log"]
    # its __eq__ is asked, as the reference's is: `bag != Bag(1)` fails (and `bag != [1, 2, 3]` would pass)
    assert (equal_sample["passed"], equal_sample["judge"]) == (False, "apart")


POINT = '''\
import dataclasses


@dataclasses.dataclass(frozen=True, order=True)
class Point:
    """A point of the plane, labelled."""

    x: int
    y: int = 0
    label: str = dataclasses.field(default="", compare=False)

    def moved(self, dx):
        return dataclasses.replace(self, x=self.x + dx)
'''
POINT_TESTS = '''\
import dataclasses

from geo.point import Point


def test_a_dataclass_instance():
    point = Point(1, 2, "a")
    assert point == Point(1, 2, "b") and point < Point(2, 0) and hash(point) == hash(Point(1, 2))
    assert dataclasses.is_dataclass(point) and [field.name for field in dataclasses.fields(point)] == ["x", "y", "label"]
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "label": "a"}
    assert dataclasses.replace(point, y=5) == Point(1, 5) and point.moved(2).x == 3
'''


def test_a_dataclass_under_test_is_compared_and_read_as_its_decorator_makes_it_apart(run_repoexec, pytester):
    """The reference's ``dataclass`` decorator makes its comparisons and hash (asked of the candidate's instances,
    as a class's own ``__eq__`` is) and its fields, which ``dataclasses.asdict``, ``fields`` and ``replace`` read
    in the judge; a candidate whose method is wrong fails."""
    reference = "@dataclasses.dataclass(frozen=True, order=True)\nclass Point:" + POINT.split("class Point:", 1)[1]
    _right_passes_and_wrong_fails_apart(run_repoexec, pytester, ("geo", "point", "Point"), POINT, POINT_TESTS,
                                        reference, reference.replace("x=self.x + dx", "x=self.x - dx"))


def _right_passes_and_wrong_fails_apart(run_repoexec, pytester, where, source, tests, reference, wrong):
    """A one-test class problem (``where``: package, module, class) judged with its reference and a wrong class:
    the reference passes apart, the wrong one fails apart."""
    package, module, name = where
    assert wrong != reference
    project = class_project(pytester.path, package, module, source, tests)
    test = re.search(r"^def (test_\w+)", tests, re.M).group(1)
    (project / module).mkdir()
    (project / module / "problem.toml").write_text(
        f'module = "{package}.{module}"\nentry_point = "{name}"\ntest_count = 1\n'
        f'suite = ["tests/test_{module}.py::{test}"]\n'
        f"reference = '''\n{reference}'''\n\n[prompt]\ndescription_detailed = '''{name}.'''\n"
        f"description_sketchy = '''{name}.'''\n\n[prompt.context]\nfull = '''\n'''\n")
    replay = write_replay(pytester.path / "replay.jsonl", {f"{package}/{module}": [reference, wrong]})
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}", "--repoexec-fresh")
    assert report is not None, result.stdout.str()[-3000:]
    right, wrong_sample = report["samples"]
    assert (right["passed"], right["judge"]) == (True, "apart"), right["error_log"]
    assert (wrong_sample["passed"], wrong_sample["judge"]) == (False, "apart")


HEADER = '''\
import abc


class Header(abc.ABC):
    """A response header: its subclasses say its name and how its value is written."""

    NAME = ""

    @abc.abstractmethod
    def value(self):
        """The header's value."""

    def written(self):
        if not self.NAME:
            raise LookupError("a header needs a name")
        return f"{self.NAME}: {self.value()}"
'''
HEADER_TESTS = '''\
import pytest

from web.header import Header


def test_a_subclass_of_the_abstract_class_without_a_name():
    class Nameless(Header):  # a test's subclass (litestar's test of its abstract Header)
        def value(self):
            return "x"

    with pytest.raises(LookupError):
        Nameless().written()
'''


def test_a_tests_subclass_of_an_abstract_class_under_test_is_made_apart(run_repoexec, pytester):
    """A test derives the abstract class under test and defines what is abstract in it; the candidate's process,
    which has only the class under test, makes the instance as a subclass of it with nothing abstract left, so the
    test meets the class's own behaviour (litestar's ``Header``: an abstract class could not be instantiated there).
    A candidate whose method does not check the name fails."""
    reference = "class Header(abc.ABC):" + HEADER.split("class Header(abc.ABC):", 1)[1]
    wrong = reference.replace("        if not self.NAME:\n            raise LookupError(\"a header needs a name\")\n", "")
    _right_passes_and_wrong_fails_apart(run_repoexec, pytester, ("web", "header", "Header"), HEADER, HEADER_TESTS,
                                        reference, wrong)


KEPT = PEN.replace('''    def food(self):''', '''    def enlist(self, keeper):
        """Put this pen on the keeper's list."""
        keeper.pens.append(self)
        return len(keeper.pens)

    def food(self):''')
KEEPER_TESTS = '''\
from zoo.keeper import Keeper
from zoo.pen import Pen


def test_the_keeper_holds_the_pen():
    keeper, pen = Keeper(), Pen(3)
    assert pen.enlist(keeper) == 1
    assert keeper.pens == [pen] and keeper.pens[0] is pen
    keeper.pens[0].add("ant")
    assert pen.animals == ["ant"]
'''


def test_a_project_object_the_candidates_method_changed_may_hold_its_instance(run_repoexec, pytester):
    """An instance of the class under test that a method puts into a project object it was given (litestar's
    scope state keeps its ``Headers``) comes back there as the same remote instance the test holds."""
    project = write_project(pytester.path)
    (project / "repo" / "src" / "zoo" / "pen.py").write_text(KEPT)
    (project / "repo" / "src" / "zoo" / "keeper.py").write_text("class Keeper:\n    def __init__(self):\n"
                                                                 "        self.pens = []\n")
    (project / "repo" / "tests" / "test_keeper.py").write_text(KEEPER_TESTS)
    manifest = project / "pen" / "problem.toml"
    reference = "class Pen:" + KEPT.split("class Pen:", 1)[1]
    text = manifest.read_text().replace(f"test_count = {len(SUITE)}", f"test_count = {len(SUITE) + 1}")
    text = text.replace('"tests/test_pen.py::test_food"]', '"tests/test_pen.py::test_food", '
                                                          '"tests/test_keeper.py::test_the_keeper_holds_the_pen"]')
    manifest.write_text(text.replace(REFERENCE, reference))
    replay = write_replay(pytester.path / "replay.jsonl", {"zoo/pen": [reference]})
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}", "--repoexec-fresh")
    assert report is not None, result.stdout.str()[-3000:]
    (sample,) = report["samples"]
    assert (sample["passed"], sample["tests_passed"]) == (True, 6), (sample["error_log"] or "")[-2000:]
    assert report["judge"]["apart"] == 1, report["judge"]


STORE = '''\
import abc


class Store(abc.ABC):
    """Where values are kept, opened and closed as an async context manager (litestar's stores)."""

    @abc.abstractmethod
    async def get(self, key):
        """The value kept under ``key``."""

    async def __aenter__(self):
        return None

    async def __aexit__(self, *exc_info):
        return None


class MemoryStore(Store):
    """Values kept in a dict."""

    def __init__(self):
        self.values = {}
        self.closed = False

    async def set(self, key, value):
        self.values[key] = value

    async def get(self, key):
        return self.values.get(key)

    async def both(self, first, second):
        return [await self.get(first), await self.get(second)]

    async def __aexit__(self, *exc_info):
        self.closed = True
'''
STORE_TESTS = '''\
import asyncio
import contextlib
import dataclasses
from unittest import mock

from keep.store import MemoryStore, Store


@dataclasses.dataclass
class User:
    name: str


def test_the_store_is_an_async_context_manager_and_keeps_the_tests_object():
    async def run():
        store = MemoryStore()
        assert isinstance(store, Store) and isinstance(store, contextlib.AbstractAsyncContextManager)
        user = User("ann")
        async with store:
            await store.set("ann", user)
            assert await store.get("ann") is user and user.name == "ann"
        assert store.closed
        with mock.patch.object(MemoryStore, "get", return_value="mocked") as get:  # an AsyncMock, as beside it
            assert await store.get("ann") == "mocked" and get.call_count == 1
            assert await store.both("ann", "bob") == ["mocked", "mocked"] and get.call_count == 3
        assert await store.get("ann") is user

    asyncio.run(run())
'''


def test_a_class_under_test_is_its_abstract_bases_and_an_async_context_manager_apart(run_repoexec, pytester):
    """The remote class is a virtual subclass of the reference's abstract bases (litestar checks
    ``isinstance(store, AbstractAsyncContextManager)`` and its annotations' ``Store``), its ``async with`` runs
    the candidate's ``__aenter__`` and ``__aexit__``, an object of the test's kept there comes back as itself, and
    a test's patch of a coroutine method is an ``AsyncMock`` (litestar's ``UploadFile.close``). A candidate whose
    ``__aexit__`` does not close fails."""
    reference = "class MemoryStore(Store):" + STORE.split("class MemoryStore(Store):", 1)[1]
    wrong = reference.replace("        self.closed = True\n", "        return None\n")
    _right_passes_and_wrong_fails_apart(run_repoexec, pytester, ("keep", "store", "MemoryStore"), STORE,
                                        STORE_TESTS, reference, wrong)


CONNECTION = '''\
class ScopeState:
    """What a connection worked out about its request, kept in the request's scope (litestar's ``ScopeState``)."""

    def __init__(self):
        self.url = None

    @classmethod
    def of(cls, scope):
        return scope.setdefault("state", {}).setdefault("connection", cls())


class Connection:
    """A request seen through its scope, which it keeps: what it works out goes into the scope's state."""

    def __init__(self, scope):
        self.scope = scope

    @property
    def url(self):
        state = ScopeState.of(self.scope)
        if state.url is None:
            state.url = "http://" + self.scope["host"] + self.scope["path"]
        return state.url

    @property
    def user(self):
        return self.scope["user"]
'''
CONNECTION_TESTS = '''\
from web.connection import Connection, ScopeState


def test_the_connection_fills_the_state_the_test_holds():
    user = {"name": "ann"}
    scope = {"host": "a.b", "path": "/x", "headers": [(b"k", b"v")], "user": user}
    connection, again = Connection(scope), Connection(scope)  # two graphs kept alike that share their nodes
    state = ScopeState.of(scope)
    assert state.url is None
    assert connection.url == "http://a.b/x"
    assert state.url == "http://a.b/x" and scope["state"]["connection"] is state
    scope["path"], state.url = "/y", None  # the test's changes reach the candidate's copy, node by node
    assert connection.url == "http://a.b/y" and state.url == "http://a.b/y"
    assert connection.scope["state"]["connection"].url == "http://a.b/y"
    assert connection.user is user and again.user is user
'''


def test_an_argument_an_instance_keeps_is_kept_alike_node_by_node_apart(run_repoexec, pytester):
    """An instance under test that keeps the test's dict and later fills an object inside it (litestar's
    ``ASGIConnection`` caching its URL into the scope state the test holds): each call's changes come back into
    the test's own objects, and the test's changes reach the candidate's copy before its next call. A candidate
    whose property does not keep what it worked out fails."""
    reference = "class Connection:" + CONNECTION.split("class Connection:", 1)[1]
    wrong = reference.replace("            state.url = ", "            return ")
    _right_passes_and_wrong_fails_apart(run_repoexec, pytester, ("web", "connection", "Connection"), CONNECTION,
                                        CONNECTION_TESTS, reference, wrong)


SESSIONS = '''\
import dataclasses


def default_namer(path):
    return path.strip("/") or "index"


@dataclasses.dataclass
class Config:
    """An app's settings: a field whose default is a function (litestar's ``OpenAPIConfig.operation_id_creator``)."""

    title: str = "app"
    namer: object = default_namer


class Store:
    def __init__(self):
        self.data = {}


class App:
    """An application the test builds: callable, as an ASGI app is, holding the stores its requests write to."""

    def __init__(self):
        self.config = Config()
        self.stores = {"sessions": Store()}

    def __call__(self, scope):
        return self.config.namer(scope["path"])


class Connection:
    """A request: slots only, as litestar's, holding the test's whole app."""

    __slots__ = ("app", "session_id")

    def __init__(self, app, session_id):
        self.app, self.session_id = app, session_id


class Backend:
    """Sessions kept in the app's store, reached through the request's connection."""

    async def save(self, connection, data):
        connection.app.stores["sessions"].data[connection.session_id] = dict(data)

    def save_now(self, connection, data):
        connection.app.stores["sessions"].data[connection.session_id] = dict(data)

    async def load(self, connection):
        return connection.app.stores["sessions"].data.get(connection.session_id)
'''
SESSIONS_TESTS = '''\
import asyncio

from web.sessions import App, Backend, Connection, default_namer


def test_a_backend_writes_into_the_app_its_connection_holds():
    app = App()
    store, config = app.stores["sessions"], app.config
    backend = Backend()

    async def save(session_id, data):
        await backend.save(Connection(app, session_id), data)

    async def load(session_id):
        return await backend.load(Connection(app, session_id))

    asyncio.run(save("s1", {"id": 1}))
    assert app.stores["sessions"] is store and store.data == {"s1": {"id": 1}}
    backend.save_now(Connection(app, "s2"), {"id": 2})
    assert store.data == {"s1": {"id": 1}, "s2": {"id": 2}}
    assert asyncio.run(load("s1")) == {"id": 1}
    assert app.config is config and config.namer is default_namer and app({"path": "/a/"}) == "a"
'''


def test_what_a_call_changes_deep_inside_an_argument_reaches_the_tests_own_objects_apart(run_repoexec, pytester):
    """A method that writes into a store the test's app holds, reached through a request's connection (litestar's
    ``ServerSideSessionBackend.store_in_message``): the store's dict the test holds gets the entry, whether the
    method is a coroutine or not, and the rest of the app stays the test's own objects (a dataclass whose field
    defaults to a function is never sent back). A candidate that does not save fails."""
    reference = "class Backend:" + SESSIONS.split("class Backend:", 1)[1]
    wrong = reference.replace("].data[connection.session_id] = dict(data)", "].data.get(connection.session_id)")
    _right_passes_and_wrong_fails_apart(run_repoexec, pytester, ("web", "sessions", "Backend"), SESSIONS,
                                        SESSIONS_TESTS, reference, wrong)


SHARED_BAG = '''\
class Bag:
    """Holds the test's dict and works on it (litestar's ``State``, which a handler makes again around
    ``app.state._state``)."""

    def __init__(self, data):
        self.data = data

    def put(self, key, value):
        self.data[key] = value

    def get(self, key):
        return self.data.get(key)
'''
SHARED_BAG_TESTS = '''\
from web.bag import Bag


def test_two_instances_over_one_dict_see_each_others_changes():
    data = {"called": False}
    first = Bag(data)
    second = Bag(first.data)
    second.put("called", True)
    assert first.get("called") is True and data == {"called": True}
    data["more"] = 1
    assert second.get("more") == 1 and first.get("more") == 1
'''


def test_an_object_sent_again_is_the_candidates_one_copy_of_it_apart(run_repoexec, pytester):
    """The test's dict, kept by one instance under test, given to a second one: the candidate's process has one
    copy of it, not two, so what one instance writes the other reads. A candidate whose ``put`` writes nowhere
    fails."""
    wrong = SHARED_BAG.replace("        self.data[key] = value\n", "        self.data = dict(self.data, **{key: value})\n")
    _right_passes_and_wrong_fails_apart(run_repoexec, pytester, ("web", "bag", "Bag"), SHARED_BAG, SHARED_BAG_TESTS,
                                        SHARED_BAG, wrong)
