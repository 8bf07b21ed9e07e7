"""The agent's static tools and its text protocol, on a small repository written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_project import write_agent_project
from generators.agent_chat import text_calls, tool_calls
from generators.agent_tools import Toolbox, undefined_names
from generators.repository import Repository, tokens

EXTRA = '''\
import math
from collections import OrderedDict as Ordered

try:
    import json
except ImportError:
    json = None

from .geometry import Rect


class Square(Rect):
    """A rectangle whose sides are equal."""

    def __init__(self, side):
        super().__init__(side, side)
        self.side = side

    def diagonal(self):
        return self.side * math.sqrt(2)
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Repository:
    root = write_agent_project(tmp_path_factory.mktemp("tools")) / "repo"
    (root / "shapes" / "square.py").write_text(EXTRA)
    (root / "shapes" / "test_square.py").write_text("def test_secret():\n    assert 'oracle'\n")
    (root / "tests").mkdir()
    (root / "tests" / "helpers.py").write_text("def oracle_helper():\n    pass\n")
    return Repository(root)


@pytest.fixture
def tools(repo: Repository) -> Toolbox:
    return Toolbox(repo, "shapes.geometry", "Rect.area_in")


def test_the_index_leaves_tests_out_and_reads_guarded_imports(repo):
    assert set(repo.modules) == {"shapes", "shapes.base", "shapes.units", "shapes.geometry", "shapes.square"}
    square = repo.modules["shapes.square"]
    assert square.imports["json"] == "import json" and square.imports["Rect"] == "from shapes.geometry import Rect"
    assert square.imports["Ordered"] == "from collections import OrderedDict as Ordered"


def test_class_info_lists_members_inherited_ones_and_attributes(tools):
    info = tools.call("get_class_info", {"name": "Square"})
    lines = info.splitlines()
    assert lines[0] == "class Square(Rect)  # module shapes.square (shapes/square.py)"
    assert "    def diagonal(self):" in lines and "    attributes: side" in lines
    rect = lines.index("inherited from Rect (module shapes.geometry):")
    shape = lines.index("inherited from Shape (module shapes.base):")
    assert rect < shape
    assert "    def area_in(self, unit):  # The area in square metres, the sides being measured in `unit`." in lines
    assert lines.count("    def __init__(self, side):") == 1 and "    def __init__(self, width, height):" not in lines
    assert "    def describe(self, precision: int = 2) -> str:  # The shape's kind and area." in lines[shape:]
    assert tools.call("get_class_info", {"name": "Sqare"}) == "no class named 'Sqare' in the repository; did you mean Square, Shape?"


def test_the_definition_being_written_is_hidden(repo, tools):
    assert tools.call("get_method_body", {"class_name": "Rect", "method": "area_in"}) == (
        "Rect.area_in is the definition you are writing: its body is yours to write")
    assert "from .units import to_square" not in tools.call("get_relevant_code", {"query": "area_in square metres unit"})
    writing_the_class = Toolbox(repo, "shapes.geometry", "Rect")
    assert "is the class you are writing" in writing_the_class.call("get_class_info", {"name": "Rect"})
    assert "Rect.area (method)" not in writing_the_class.call("get_relevant_code", {"query": "area width height"})


def test_signature_and_body_of_methods_inherited_or_not_and_of_functions(tools):
    assert tools.call("get_signature", {"class_name": "Square", "method": "describe"}) == (
        'def describe(self, precision: int = 2) -> str:\n    """The shape\'s kind and area."""\n# module shapes.base')
    assert tools.call("get_method_body", {"class_name": "Square", "method": "area"}) == (
        "# module shapes.geometry (shapes/geometry.py)\ndef area(self):\n    return self.width * self.height")
    assert tools.call("get_method_body", {"class_name": "", "method": "to_square"}).endswith(
        "return value * FACTORS[unit] ** 2")
    assert tools.call("get_signature", {"class_name": "Rect", "method": "perimeter"}).startswith(
        "no method of Rect named 'perimeter'")


def test_relevant_code_is_ranked_by_the_query(tools):
    answer = tools.call("get_relevant_code", {"query": "diagonal sqrt"})
    assert answer.startswith("# shapes/square.py: Square.diagonal (method)\ndef diagonal(self):")
    assert answer.index("Square.diagonal (method)") < answer.index("Square (class)")  # the class names it once
    assert tools.call("get_relevant_code", {"query": "zebra"}) == "nothing in the repository matches 'zebra'"
    assert tools.get_related_snippets("zebra") == "(no code of the repository matches the task's words)"
    assert tools.call("get_relevant_code", {"query": "oracle_helper test_secret"}).startswith("nothing")  # tests unindexed


def test_imports_for_the_attempts_undefined_names(tools):
    attempt = "```python\ndef area_in(self, unit):\n    d = Ordered()\n    return to_square(math.floor(self.area()), unit) + nope\n```"
    assert tools.call("get_imports", {}, attempt) == (
        "from collections import OrderedDict as Ordered\nfrom shapes.units import to_square\nimport math\n"
        "# not found in the repository: nope")
    assert tools.call("get_imports", {"code": "def area_in(self):\n    return Shape, len(self)"}).startswith(
        "every name the code uses")  # Shape: geometry imports it; len: a builtin
    assert tools.call("get_imports", {}) == "error: there is no attempt yet; pass the code to check as `code`"


def test_undefined_names_know_every_way_python_binds_a_name():
    code = ("def f(a, b=c, *d, e: T = 1, **k):\n    import os.path as p\n    try:\n        pass\n"
            "    except E as err:\n        g = lambda q: q + err\n    with open(a) as h:\n        (w := 3)\n"
            "    for i, (j, l) in enumerate(d):\n        pass\n    x.y = z(key=1)\n"
            "    return [m for m in d], h, k, p, w, g, i, j, l\n")
    assert undefined_names(code) == ["c", "T", "E", "x", "z"]


def test_wrong_calls_are_answered_not_raised(tools):
    assert tools.call("get_everything", {}).startswith("error: there is no tool 'get_everything'")
    assert tools.call("get_signature", {"method": "area", "extra": 1}) == (
        "error: get_signature takes (class_name, method); unknown: extra; missing: class_name")


def test_the_text_protocol_reads_call_lines():
    calls = text_calls('Looking.\nCALL get_class_info("Rect")\n  CALL get_signature("Rect", method="area")\n'
                       "CALL get_imports()\nCALL get_class_info(Rect)\nCALL os.system('x')\n")
    assert [(c.name, c.arguments, c.error is None) for c in calls[:3]] == [
        ("get_class_info", {"name": "Rect"}, True), ("get_signature", {"class_name": "Rect", "method": "area"}, True),
        ("get_imports", {}, True)]
    assert calls[3].error.startswith("cannot read the call") and calls[4].error.startswith("cannot read the call")
    assert text_calls("def f():\n    return 1\n") == ()


def test_function_calls_with_arguments_that_are_not_json_are_errors():
    message = {"tool_calls": [{"id": "1", "function": {"name": "get_class_info", "arguments": '{"name": "Rect"}'}},
                              {"id": "2", "function": {"name": "get_class_info", "arguments": "Rect"}}]}
    good, bad = tool_calls(message)
    assert good.arguments == {"name": "Rect"} and good.error is None
    assert bad.error == "the arguments are not a JSON object: Rect"


def test_tokens_split_identifiers():
    assert tokens("def to_square(self, areaInCm)") == ["to_square", "to", "square", "areaincm", "area", "cm"]
