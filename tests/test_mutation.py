"""Tests for pytest_repoexec.mutation: mutants of a reference function, and its `pass` stub."""

import ast
import textwrap

import pytest

from pytest_repoexec.mutation import OPERATORS, Mutant, mutants, pass_body


def source(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def only(function_source: str, operator: str) -> list[Mutant]:
    return [mutant for mutant in mutants(function_source, limit=100) if mutant.operator == operator]


def call(function_source: str, *args: object) -> object:
    namespace: dict = {}
    exec(function_source, namespace)
    name = ast.parse(function_source).body[0].name
    return namespace[name](*args)


RICH = source(
    '''
    @staticmethod
    def rich(xs: list[int] = [1, 2], *, label: str = "x") -> int:
        """Sum the positive items; 2 + 2 stays in the docstring."""
        total = 0  # a running total
        for x in xs:
            if x > 0 and x is not None:
                total += x * 2
            elif x in (1, 2):
                total = total - (x ** 2) // 3
        note = f"total: {total + 1} > 0"
        while not total:
            total = max(
                total,
                1,
            )
        assert total >= 0, "negative"
        return total if total != 7 else True
    '''
)


@pytest.mark.parametrize(
    ("old", "new"), [("+", "-"), ("-", "+"), ("*", "/"), ("/", "*"), ("//", "*"), ("%", "*"), ("**", "*")]
)
def test_arithmetic_swaps_the_operator(old: str, new: str) -> None:
    (mutant,) = only(f"def f(a, b):\n    return a {old} b\n", "arithmetic")
    assert mutant.function == f"def f(a, b):\n    return a {new} b\n"
    assert mutant.description == f"line 2: `{old}` -> `{new}`"
    assert mutant.line == 2


def test_arithmetic_swaps_augmented_assignments_and_looks_past_parentheses_and_comments() -> None:
    function = "def f(a, b):\n    a += b\n    return (a  # left\n        ) * (b)\n"
    assert [(mutant.description, mutant.function) for mutant in only(function, "arithmetic")] == [
        ("line 2: `+=` -> `-=`", "def f(a, b):\n    a -= b\n    return (a  # left\n        ) * (b)\n"),
        ("line 4: `*` -> `/`", "def f(a, b):\n    a += b\n    return (a  # left\n        ) / (b)\n"),
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("<", "<="), ("<=", "<"), (">", ">="), (">=", ">"), ("==", "!="), ("!=", "=="),
        ("is", "is not"), ("is not", "is"), ("in", "not in"), ("not in", "in"),
    ],
)  # fmt: skip
def test_comparison_swaps_the_operator(old: str, new: str) -> None:
    (mutant,) = only(f"def f(a, b):\n    return a {old} b\n", "comparison")
    assert mutant.function == f"def f(a, b):\n    return a {new} b\n"
    assert mutant.description == f"line 2: `{old}` -> `{new}`"


def test_comparison_mutates_each_link_of_a_chain() -> None:
    functions = [mutant.function for mutant in only("def f(a, b, c):\n    return a < b == c\n", "comparison")]
    assert functions == ["def f(a, b, c):\n    return a <= b == c\n", "def f(a, b, c):\n    return a < b != c\n"]


def test_boolean_swaps_and_or_and_true_false() -> None:
    function = "def f(a, b):\n    return (a and b) or True\n"
    assert [(mutant.description, mutant.function) for mutant in only(function, "boolean")] == [
        ("line 2: `and` -> `or`", "def f(a, b):\n    return (a or b) or True\n"),
        ("line 2: `or` -> `and`", "def f(a, b):\n    return (a and b) and True\n"),
        ("line 2: `True` -> `False`", "def f(a, b):\n    return (a and b) or False\n"),
    ]


def test_constant_adds_one_to_numbers_and_xx_to_strings_and_leaves_none() -> None:
    function = 'def f():\n    return [0, 1.5, "ab", "", None]\n'
    assert [(mutant.description, mutant.function) for mutant in only(function, "constant")] == [
        ("line 2: `0` -> `1`", 'def f():\n    return [1, 1.5, "ab", "", None]\n'),
        ("line 2: `1.5` -> `2.5`", 'def f():\n    return [0, 2.5, "ab", "", None]\n'),
        ("line 2: `\"ab\"` -> `'abXX'`", "def f():\n    return [0, 1.5, 'abXX', \"\", None]\n"),
        ("line 2: `\"\"` -> `'XX'`", "def f():\n    return [0, 1.5, \"ab\", 'XX', None]\n"),
    ]


def test_statement_removal_replaces_the_statement_with_pass() -> None:
    function = source(
        """
        def f(xs):
            total = 0
            for x in xs:
                total += x
            print(total)
            return total
        """
    )
    removed = {mutant.line: mutant for mutant in only(function, "statement")}
    assert sorted(removed) == [2, 4, 5, 6]
    assert removed[4].description == "line 4: removed `total += x`"
    assert removed[4].function == function.replace("total += x", "pass")
    assert removed[6].function == function.replace("return total", "pass")


def test_removing_a_multiline_statement_keeps_later_lines_where_they_were() -> None:
    function = "def f(a):\n    a = max(\n        a,\n        1)\n    return a\n"
    (mutant,) = [mutant for mutant in only(function, "statement") if mutant.line == 2]
    assert mutant.description == "line 2: removed `a = max( a, 1)`"
    assert mutant.function.splitlines()[4] == "    return a"
    assert call(mutant.function, -5) == -5


def test_a_multiline_constant_keeps_later_lines_where_they_were() -> None:
    function = 'def f():\n    x = ("ab"\n         "cd")\n    return x\n'
    (mutant,) = only(function, "constant")
    assert mutant.function.splitlines()[3] == "    return x"
    assert call(mutant.function) == "abcdXX"


def test_condition_negates_if_elif_while_ternary_and_assert() -> None:
    function = source(
        """
        def f(x):
            if x > 0:
                x = 1
            elif x:
                x = 2
            while x < 0:
                x = 3
            assert x, "zero"
            return 4 if x else 5
        """
    )
    negated = only(function, "condition")
    assert [mutant.description for mutant in negated] == [
        "line 2: `if x > 0` negated",
        "line 4: `elif x` negated",
        "line 6: `while x < 0` negated",
        "line 8: `assert x` negated",
        "line 9: `... if x` negated",
    ]
    assert negated[0].function == function.replace("if x > 0:", "if not (x > 0):")
    assert negated[1].function == function.replace("elif x:", "elif not (x):")
    assert negated[3].function == function.replace("assert x,", "assert not (x),")
    assert negated[4].function == function.replace("4 if x else", "4 if not (x) else")


def test_mutants_of_a_decorated_method_keep_decorator_signature_and_docstring() -> None:
    method = source(
        '''
        @functools.lru_cache(maxsize=8)
        def area(self, width: int = 2, height: float = 1.5) -> float:
            """Area of a rectangle, scaled by 2 + 1 (that `+` is not code)."""
            scale = 2 + 1
            return width * height * scale
        '''
    )
    original = ast.parse(method).body[0]
    found = mutants(method, limit=100)
    assert {mutant.operator for mutant in found} == {"arithmetic", "constant", "statement"}
    for mutant in found:
        mutated = ast.parse(mutant.function).body[0]
        assert mutant.function.splitlines()[:3] == method.splitlines()[:3]
        assert ast.get_docstring(mutated) == ast.get_docstring(original)
        assert ast.dump(mutated.args) == ast.dump(original.args)
        assert ast.dump(mutated.returns) == ast.dump(original.returns)
        assert [ast.dump(d) for d in mutated.decorator_list] == [ast.dump(d) for d in original.decorator_list]


def test_f_string_literal_parts_and_annotations_in_the_body_are_left_alone() -> None:
    function = 'def f(x):\n    label: "a + b" = f"x > 1: {x}"\n    return label\n'
    assert [(mutant.operator, mutant.line) for mutant in mutants(function, limit=100)] == [
        ("statement", 2),
        ("statement", 3),
    ]


def test_every_mutant_parses_differs_from_the_original_and_from_every_other() -> None:
    found = mutants(RICH, limit=1000)
    original = ast.dump(ast.parse(RICH))
    trees = [ast.dump(ast.parse(mutant.function)) for mutant in found]
    assert len(found) > 30
    assert original not in trees
    assert len(set(trees)) == len(trees)
    assert {mutant.operator for mutant in found} == set(OPERATORS)
    assert all(mutant.function.count("\n") == RICH.count("\n") for mutant in found)


def test_mutants_are_deterministic() -> None:
    assert mutants(RICH) == mutants(RICH)
    assert mutants(RICH, limit=4) == mutants(RICH, limit=4)


def test_limit_spreads_the_picks_evenly_in_source_order() -> None:
    function = "def f(x):\n    x += 1\n    x -= 2\n    x *= 3\n"
    everything = mutants(function, limit=100)
    assert len(everything) == 9
    picked = mutants(function, limit=3)
    assert picked == [everything[0], everything[4], everything[8]]
    assert [mutant.description for mutant in picked] == [
        "line 2: removed `x += 1`",
        "line 3: `-=` -> `+=`",
        "line 4: `3` -> `4`",
    ]
    assert mutants(function, limit=1) == [everything[0]]
    assert mutants(function, limit=9) == everything
    assert mutants(function, limit=0) == []


def test_limit_never_picks_the_same_mutant_twice() -> None:
    everything = mutants(RICH, limit=1000)
    for limit in range(1, len(everything)):
        picked = mutants(RICH, limit=limit)
        indexes = [everything.index(mutant) for mutant in picked]
        assert len(picked) == limit
        assert indexes == sorted(set(indexes))


def test_non_ascii_text_does_not_shift_offsets() -> None:
    function = 'def f(x):\n    s = "héllo – ünïcode"; return s + x  # café\n'
    assert [mutant.function for mutant in only(function, "arithmetic")] == [
        'def f(x):\n    s = "héllo – ünïcode"; return s - x  # café\n'
    ]
    (constant,) = only(function, "constant")
    assert constant.function == "def f(x):\n    s = 'héllo – ünïcodeXX'; return s + x  # café\n"
    assert call(constant.function, "!") == "héllo – ünïcodeXX!"


def test_pass_body_keeps_decorators_signature_and_docstring() -> None:
    function = source(
        '''
        @staticmethod
        def f(x: int = 1) -> int:
            """Twice x."""
            y = x * 2
            return y
        '''
    )
    stub = pass_body(function)
    assert stub == '@staticmethod\ndef f(x: int = 1) -> int:\n    """Twice x."""\n    pass\n'
    namespace: dict = {}
    exec(stub, namespace)
    assert namespace["f"](3) is None
    assert namespace["f"].__doc__ == "Twice x."


@pytest.mark.parametrize(
    ("function", "stub"),
    [
        ("def f(x):\n    return x\n", "def f(x):\n    pass\n"),
        ("def f(x): return x\n", "def f(x): pass\n"),
        ('def f(x): "Doc."; return x\n', 'def f(x): "Doc."; pass\n'),
        ("def f(x):\n    @staticmethod\n    def g(): pass\n    return g\n", "def f(x):\n    pass\n"),
    ],
)
def test_pass_body_of_other_shapes(function: str, stub: str) -> None:
    assert pass_body(function) == stub
    assert call(stub, 5) is None


def test_a_source_without_a_function_is_refused() -> None:
    with pytest.raises(ValueError, match="function definition"):
        mutants("x = 1\n")


def test_simple_asserts_kill_most_mutants() -> None:
    reference = source(
        '''
        def score(xs):
            """Sum of the positive items, doubled when more than two are positive."""
            total = 0
            count = 0
            for x in xs:
                if x > 0:
                    total += x
                    count += 1
            if count > 2:
                total = total * 2
            return total
        '''
    )

    def passes(function_source: str) -> bool:
        cases = {(): 0, (1, 2): 3, (0, 1, 2): 3, (-1, 1, 2, 3): 12, (1, 1, 1): 6}
        try:
            return all(call(function_source, list(xs)) == expected for xs, expected in cases.items())
        except Exception:
            return False

    found = mutants(reference, limit=100)
    assert passes(reference)
    assert not passes(pass_body(reference))
    assert len(found) >= 15
    killed = [mutant for mutant in found if not passes(mutant.function)]
    assert len(killed) >= 0.9 * len(found)
