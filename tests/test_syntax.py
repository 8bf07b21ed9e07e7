"""Tests for pytest_repoexec.syntax: locating, splicing and dissecting Python source with tree-sitter."""

import ast
import textwrap

import pytest

from pytest_repoexec.syntax import (
    Definition,
    DefinitionNotFound,
    body_identifiers,
    dependencies,
    find_definition,
    find_function,
    replace_definition,
    splice_syntax_error,
    split_function,
    strip_bodies,
    top_level_names,
)

MODULE = textwrap.dedent(
    '''\
    """A module."""
    import functools


    # helper comment before
    def helper(x):
        return x + 1
    # comment right after helper


    class Shape:
        """A shape."""

        sides = 0

        @staticmethod
        @functools.cache
        def unit():
            return Shape()

        def area(self):
            return 0

        class Inner:
            def deep(self):
                return "deep"


    async def fetch(url):
        return url


    def outer():
        def inner():
            return 1
        return inner()
    '''
)


def run_module(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<module>", "exec"), namespace)
    return namespace


def assert_only_span_changed(before: str, after: str, qualname: str) -> None:
    """Everything outside the definition's span is byte-identical."""
    span = find_definition(before, qualname)
    old, new = before.encode(), after.encode()
    assert new[: span.start_byte] == old[: span.start_byte]
    tail = old[span.end_byte :]
    assert new.endswith(tail)


# find_definition


def test_find_definition_plain_function():
    found = find_definition(MODULE, "helper")
    data = MODULE.encode()
    assert data[found.start_byte : found.end_byte] == b"def helper(x):\n    return x + 1"
    assert found == Definition(found.start_byte, found.end_byte, 0, False)


def test_find_definition_decorated_method_starts_at_first_decorator():
    found = find_definition(MODULE, "Shape.unit")
    text = MODULE.encode()[found.start_byte : found.end_byte].decode()
    assert text.startswith("@staticmethod\n    @functools.cache\n    def unit():")
    assert text.endswith("return Shape()")
    assert (found.column, found.decorated) == (4, True)


def test_find_definition_nested_paths():
    deep = find_definition(MODULE, "Shape.Inner.deep")
    inner = find_definition(MODULE, "outer.inner")
    data = MODULE.encode()
    assert data[deep.start_byte : deep.end_byte].decode().endswith('return "deep"')
    assert deep.column == 8
    assert data[inner.start_byte : inner.end_byte] == b"def inner():\n        return 1"


def test_find_definition_byte_offsets_after_non_ascii_text():
    source = '# Grüße, 日本語\nNAME = "é"\n\ndef f():\n    return "ü"\n'
    found = find_definition(source, "f")
    assert source.encode()[found.start_byte : found.end_byte] == 'def f():\n    return "ü"'.encode()
    assert found.start_byte != source.index("def f")


def test_find_definition_last_binding_wins_and_looks_into_if_blocks():
    source = (
        "import sys\nif sys.version_info < (3,):\n    def f():\n        return 2\n"
        "else:\n    def f():\n        return 3\n"
    )
    found = find_definition(source, "f")
    assert source.encode()[found.start_byte : found.end_byte] == b"def f():\n        return 3"


@pytest.mark.parametrize("qualname", ["missing", "Missing.area", "Shape.missing", "Shape.sides", "Shape"])
def test_find_definition_not_found_names_the_qualname(qualname):
    with pytest.raises(DefinitionNotFound, match=repr(qualname)):
        find_definition(MODULE, qualname)


def test_not_found_is_a_lookup_error():
    with pytest.raises(LookupError):
        replace_definition(MODULE, "Nope.area", "def area(self):\n    return 1\n")


# replace_definition


def test_replace_plain_function_keeps_surroundings_and_comments():
    after = replace_definition(MODULE, "helper", "def helper(x):\n    return x * 10\n\n\n")
    assert_only_span_changed(MODULE, after, "helper")
    expected = "# helper comment before\ndef helper(x):\n    return x * 10\n# comment right after helper\n"
    assert expected in after
    assert run_module(after)["helper"](2) == 20


def test_replace_method_reindents_column_zero_candidate():
    after = replace_definition(MODULE, "Shape.area", "def area(self):\n    if True:\n        return 42")
    assert_only_span_changed(MODULE, after, "Shape.area")
    assert "    def area(self):\n        if True:\n            return 42\n" in after
    assert run_module(after)["Shape"]().area() == 42


def test_replace_candidate_at_deeper_indentation():
    candidate = "\n        def area(self):\n            return 7\n    "
    after = replace_definition(MODULE, "Shape.area", candidate)
    assert "    def area(self):\n        return 7\n\n    class Inner:" in after


def test_replace_decorated_method_keeps_original_decorators_when_candidate_has_none():
    after = replace_definition(MODULE, "Shape.unit", "def unit():\n    return 'new'\n")
    assert "    @staticmethod\n    @functools.cache\n    def unit():\n        return 'new'\n" in after
    assert run_module(after)["Shape"].unit() == "new"


def test_replace_decorated_method_candidate_decorators_replace_original():
    candidate = "@classmethod\ndef unit(cls):\n    return cls.__name__\n"
    after = replace_definition(MODULE, "Shape.unit", candidate)
    assert "@staticmethod" not in after and "@functools.cache" not in after
    assert "    @classmethod\n    def unit(cls):\n        return cls.__name__\n" in after
    assert run_module(after)["Shape"].unit() == "Shape"


def test_replace_undecorated_target_with_decorated_candidate():
    after = replace_definition(MODULE, "Shape.area", "@property\ndef area(self):\n    return 5\n")
    assert run_module(after)["Shape"]().area == 5


def test_replace_async_function():
    after = replace_definition(MODULE, "fetch", "async def fetch(url):\n    return url.upper()\n")
    assert_only_span_changed(MODULE, after, "fetch")
    coroutine = run_module(after)["fetch"]("x")
    with pytest.raises(StopIteration) as stop:
        coroutine.send(None)
    assert stop.value.value == "X"


def test_replace_function_nested_in_function():
    after = replace_definition(MODULE, "outer.inner", "def inner():\n    return 99\n")
    assert_only_span_changed(MODULE, after, "outer.inner")
    assert "\ndef outer():\n    def inner():\n        return 99\n    return inner()\n" in after
    assert run_module(after)["outer"]() == 99


def test_replace_method_of_nested_class():
    after = replace_definition(MODULE, "Shape.Inner.deep", "def deep(self):\n    return 'deeper'")
    assert_only_span_changed(MODULE, after, "Shape.Inner.deep")
    assert run_module(after)["Shape"].Inner().deep() == "deeper"


def test_replace_keeps_multiline_string_continuation_lines():
    candidate = 'def area(self):\n    text = """first\n  second\nthird"""\n    return text\n'
    after = replace_definition(MODULE, "Shape.area", candidate)
    assert '        text = """first\n  second\nthird"""\n' in after
    assert run_module(after)["Shape"]().area() == "first\n  second\nthird"


def test_replace_keeps_multiline_fstring_and_backslash_continuation():
    candidate = "def area(self):\n    n = 1\n    return f'''{n}\n    x''' + 'a\\\n b'\n"
    after = replace_definition(MODULE, "Shape.Inner.deep", candidate.replace("area", "deep"))
    assert run_module(after)["Shape"].Inner().deep() == "1\n    xa b"


def test_replace_in_crlf_file_uses_crlf():
    source = "import os\r\n\r\nclass A:\r\n    def m(self):\r\n        return 1\r\n\r\n# end\r\n"
    after = replace_definition(source, "A.m", "def m(self):\n    x = 2\n    return x\n")
    assert after == source.replace("        return 1\r\n", "        x = 2\r\n        return x\r\n")


def test_replace_crlf_candidate_into_lf_file():
    after = replace_definition("def f():\n    return 1\n", "f", "def f():\r\n    return 2\r\n")
    assert after == "def f():\n    return 2\n"


def test_replace_after_non_ascii_text_is_byte_exact():
    source = '"""Ünïcödé ✓ 日本"""\nA = "ß"\n\ndef f():\n    return "é"\n\nB = "→"\n'
    after = replace_definition(source, "f", 'def f():\n    return "ö"\n')
    assert after == '"""Ünïcödé ✓ 日本"""\nA = "ß"\n\ndef f():\n    return "ö"\n\nB = "→"\n'


def test_replace_uses_tab_indentation_of_target():
    source = "class A:\n\tdef m(self):\n\t\treturn 1\n"
    after = replace_definition(source, "A.m", "def m(self):\n    return 2\n")
    assert after == "class A:\n\tdef m(self):\n\t    return 2\n"
    assert run_module(after)["A"]().m() == 2


_TARGETS = [  # (module, qualname): top level, a method, nested scopes, tabs, under `if` and `try`, CRLF
    (MODULE, "helper"), (MODULE, "Shape.area"), (MODULE, "Shape.unit"), (MODULE, "Shape.Inner.deep"),
    (MODULE, "outer.inner"), (MODULE, "fetch"), ("class A:\n\tdef m(self):\n\t\treturn 1\n\tx = 2\n", "A.m"),
    ("import os\nif os.name:\n    def f():\n        return 1\nelse:\n    f = None\n", "f"),
    ("try:\n    import json\nexcept ImportError:  # fallback\n    def f(): return 2\n", "f"),
    ("def f(a):\r\n    return a\r\n\r\nX = f(1)\r\n", "f"),
]
_DEFINITIONS = [  # what models write, well and badly, for a function named as the target's last part
    "def NAME(self=None, *a, **k):\n    return 3\n",
    "def NAME(self=None):\n\treturn 3\n",  # tabs, into a module of spaces
    "def NAME(self=None):\n  if self:\n\treturn 1\n  return 2\n",  # tab after two spaces: inconsistent
    "@property\ndef NAME(self=None):\n    x = (1,\n2)\n    return x\n",  # a line left of the first, in brackets
    "def NAME(self=None):\n    s = \"\"\"\nnot indented\n\"\"\"\n    return s\n",
    "def NAME(self=None):\n    return 1 + \\\n  2\n",
    "def NAME(self=None):\n        return 1\n    return 2\n",  # unindent matching nothing
    "def NAME(self=None):\n    return (1,\n",  # an open bracket: it would swallow the rest
    "def NAME(self=None):\n    pass\n# a comment last",
    "async def NAME(self=None):\n    await x\n    yield 1\n",
]


@pytest.mark.parametrize(("module", "qualname"), _TARGETS)
def test_a_splice_is_checked_by_its_own_lines_as_the_whole_module_would_be(module, qualname):
    name = qualname.rpartition(".")[2]
    for definition in _DEFINITIONS:
        text = definition.replace("NAME", name)
        try:
            ast.parse(replace_definition(module, qualname, text))
            whole = None
        except SyntaxError as exc:
            whole = exc.msg
        assert (splice_syntax_error(module, qualname, text) is None) == (whole is None), (qualname, text, whole)


def test_a_module_that_does_not_parse_is_checked_whole():
    broken = "def f():\n    return 1\n\ndef g(:\n    pass\n"
    assert splice_syntax_error(broken, "f", "def f():\n    return 2\n") is not None


# find_function


def test_find_function_returns_last_definition_dedented_with_decorators():
    text = textwrap.dedent(
        '''\
        Here is my first try:
        def f(x):
            return 1
        And the better one, as a method:
        class C:
            @staticmethod
            def f(x):
                s = """a
          b"""
                return s
        '''
    )
    assert find_function(text, "f") == '@staticmethod\ndef f(x):\n    s = """a\n  b"""\n    return s'


def test_find_function_prefers_definition_without_errors():
    text = "def g(x):\n    return x\n\ndef g(x:\n    return (x\n"
    assert find_function(text, "g") == "def g(x):\n    return x"


def test_find_function_in_markdown_with_broken_text():
    text = (
        "Sure!\n```python\nimport os\n\nasync def get(path) -> str:\n"
        "    return os.path.basename(path)\n```\nThat's it ((("
    )
    assert find_function(text, "get") == "async def get(path) -> str:\n    return os.path.basename(path)"


def test_find_function_absent():
    assert find_function("def g():\n    pass\n", "f") is None
    assert find_function("f = lambda: 1\n", "f") is None


# split_function


def test_split_function_multiline_signature_with_docstring():
    source = textwrap.dedent(
        '''\
        @decorator(1)
        def f(a: int,
              b: "str" = ":") -> dict[str, int]:  # a comment
            """Summary.

            Details, indented.
            """

            total = a
            return {b: total}
        '''
    )
    signature, docstring, body = split_function(source)
    assert signature == '@decorator(1)\ndef f(a: int,\n      b: "str" = ":") -> dict[str, int]:'
    assert docstring == "Summary.\n\nDetails, indented."
    assert body == "    total = a\n    return {b: total}"


def test_split_function_without_docstring():
    signature, docstring, body = split_function("def f(x):\n    # note\n    return 'doc?'\n")
    assert (signature, docstring, body) == ("def f(x):", None, "    # note\n    return 'doc?'")


def test_split_function_fstring_is_not_a_docstring():
    signature, docstring, body = split_function("def f(x):\n    f'{x}'\n    return x\n")
    assert docstring is None
    assert body == "    f'{x}'\n    return x"


def test_split_function_only_docstring_and_one_liner():
    assert split_function("def f():\n    '''Only.'''\n") == ("def f():", "Only.", "")
    assert split_function("async def f(): return 1\n") == ("async def f():", None, "return 1")


def test_split_function_without_function():
    with pytest.raises(ValueError):
        split_function("x = 1\n")


# body_identifiers


def test_body_identifiers_exclude_signature_and_docstring():
    source = textwrap.dedent(
        '''\
        @register(name)
        def target(param: Annotation = default) -> Result:
            """Uses hidden_word from the docstring."""
            value = helper(param)
            return value.attr(other)
        '''
    )
    assert body_identifiers(source) == {"value", "helper", "param", "attr", "other"}


def test_body_identifiers_of_outermost_function_on_broken_text():
    source = "def outer(a):\n    def inner(b):\n        return b ?? c\n    return x.attr(inner)\n\nprose\n"
    assert body_identifiers(source) == {"inner", "b", "c", "x", "attr"}
    assert body_identifiers("x = 1\n") == set()


# top_level_names, dependencies


def test_top_level_names_for_each_kind_of_statement():
    source = textwrap.dedent(
        '''\
        """Docstring."""
        import a.b as c
        from .x import y, z
        from m import *
        import os

        X = 1
        Y: int = 2
        # a comment


        @dataclass
        class P:
            field: int


        def f():
            return X


        async def g():
            pass
        X = 3
        '''
    )
    assert top_level_names(source) == [
        "a", "b", "c", "x", "y", "z", "m", "os", "X", "Y", "dataclass", "P", "f", "g",
    ]  # fmt: skip


def test_dependencies_in_context_order_without_entry_point():
    context = "import re\nfrom .errors import InvalidInputError\n\nLIMIT = 3\n\ndef is_string(x):\n    pass\n"
    reference = textwrap.dedent(
        '''\
        def check(self, text: re.Pattern) -> bool:
            """Mentions LIMIT, but only in the docstring."""
            if not is_string(text):
                raise InvalidInputError(text)
            return self.check(text)
        '''
    )
    assert dependencies(context, reference, "Checker.check") == ["InvalidInputError", "is_string"]
    assert dependencies(context, "def is_string(obj):\n    return is_string(obj)\n", "is_string") == []


# strip_bodies

CONTEXT = textwrap.dedent(
    '''\
    import re
    from typing import Any

    NUMBER_RE = re.compile(r"^\\d+$")


    class InvalidInputError(TypeError):
        """
        Custom error raised when received object is not a string as expected.
        """

        kind = "input"

        def __init__(self, input_data: Any):
            """
            :param input_data: Any received object
            """
            super().__init__(type(input_data).__name__)

        @property
        def name(self) -> str:
            return "x"


    @functools.lru_cache()
    def is_string(obj: Any,
                  strict: bool = False) -> bool:
        """Checks if an object is a string."""
        return isinstance(obj, str)
    '''
)


def test_strip_bodies_medium_keeps_signatures_docstrings_and_class_assignments():
    assert strip_bodies(CONTEXT, keep_docstrings=True) == textwrap.dedent(
        '''\
        import re
        from typing import Any

        NUMBER_RE = re.compile(r"^\\d+$")

        class InvalidInputError(TypeError):
            """
            Custom error raised when received object is not a string as expected.
            """

            kind = "input"

            def __init__(self, input_data: Any):
                """
                :param input_data: Any received object
                """

            @property
            def name(self) -> str:

        @functools.lru_cache()
        def is_string(obj: Any,
                      strict: bool = False) -> bool:
            """Checks if an object is a string."""
        '''
    )


def test_strip_bodies_small_keeps_signatures_only():
    assert strip_bodies(CONTEXT, keep_docstrings=False) == textwrap.dedent(
        '''\
        import re
        from typing import Any

        NUMBER_RE = re.compile(r"^\\d+$")

        class InvalidInputError(TypeError):

            def __init__(self, input_data: Any):

            @property
            def name(self) -> str:

        @functools.lru_cache()
        def is_string(obj: Any,
                      strict: bool = False) -> bool:
        '''
    )


def test_strip_bodies_crlf_context():
    stripped = strip_bodies("import os\r\n\r\ndef f():\r\n    return 1\r\n", keep_docstrings=False)
    assert stripped == "import os\n\ndef f():\n"
