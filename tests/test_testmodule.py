"""Reading a problem's test module: the sanity check, the assertion sites, instrumentation and rewriting."""

from __future__ import annotations

import textwrap

from pytest_repoexec.testmodule import (
    CAPTURE,
    assertion_sites,
    instrument,
    remove_functions,
    replace_spans,
    sanity_problems,
)

TESTS = textwrap.dedent('''\
    import pytest
    from .core import Account, scaled


    def check(x):
        return scaled(x)


    def test_result_name():
        result = scaled(3)
        doubled = result * 2
        assert doubled == 60


    def test_helper():
        assert check(2) == 20


    def test_receiver_changed():
        account = Account()
        account.scaled(5)
        assert account.total == 5


    def test_raises():
        with pytest.raises(TypeError):
            scaled("x")


    def test_raises_call_form():
        pytest.raises(TypeError, scaled, "x")


    def test_passed_to_map():
        assert list(map(scaled, [1, 2])) == [10, 20]


    class TestMethods:
        def test_unittest_style(self):
            self.assertEqual(scaled(1), 10)


    def test_expected_on_the_left():
        assert 100 == scaled(50)


    def test_no_comparison():
        assert scaled(1) > 0
''')


def test_tests_that_check_the_function_in_every_usual_way_are_sane():
    assert sanity_problems(TESTS, "scaled") == []


def test_tests_that_never_call_or_never_check_the_function_are_named_with_their_lines():
    source = ("from .core import scaled\n\n\ndef test_a():\n    assert 1\n\n\ndef test_b():\n    scaled(1)\n    assert True\n"
              "\n\ndef test_c():\n    assert scaled\n")
    assert sanity_problems(source, "scaled") == [
        "test_a (line 4) never calls scaled",
        "test_b (line 8) asserts nothing about scaled",
        "test_c (line 13) never calls scaled",  # RepoExec has tests like this one
    ]
    assert sanity_problems("def test_a(:\n", "scaled") == ["the test module does not parse: invalid syntax (line 1)"]
    assert sanity_problems("x = 1\n", "scaled") == ["the test module defines no test functions"]


def test_sites_find_the_actual_side_and_an_expected_side_only_for_equality():
    sites = assertion_sites(TESTS, "scaled")
    text = TESTS.encode()

    def show(span):
        return None if span is None else text[span.start : span.end].decode()

    assert [(s.test, show(s.actual), show(s.expected)) for s in sites] == [
        ("test_result_name", "doubled", "60"),
        ("test_helper", "check(2)", "20"),
        ("test_receiver_changed", "account.total", "5"),
        ("test_passed_to_map", "list(map(scaled, [1, 2]))", "[10, 20]"),
        ("test_expected_on_the_left", "scaled(50)", "100"),
        ("test_no_comparison", "scaled(1)", None),  # the side that holds the result
    ]
    assert [s.id for s in sites] == [0, 1, 2, 3, 4, 5]


def test_instrumentation_keeps_every_line_where_it_was():
    sites = assertion_sites(TESTS, "scaled")
    instrumented = instrument(TESTS, sites)
    original, changed = TESTS.splitlines(), instrumented.splitlines()
    assert changed[: len(original)] != original
    assert [i for i, (a, b) in enumerate(zip(original, changed)) if a != b] == [s.line - 1 for s in sites]
    assert f"assert {CAPTURE}(4, 'expected', 100) == {CAPTURE}(4, 'actual', scaled(50))" in instrumented
    assert changed[-1] == f"from repoexec_inner import capture as {CAPTURE}  # added by pytest-repoexec"
    compile(instrumented, "instrumented", "exec")


def test_spans_are_replaced_and_tests_removed_with_their_decorators():
    source = "import pytest\n\n\n@pytest.mark.slow\ndef test_a():\n    assert f(1) == 'é'\n\n\ndef test_b():\n    assert f(2) == 3\n"
    sites = assertion_sites(source, "f")
    rewritten = replace_spans(source, {sites[0].expected: "'ü'", sites[1].expected: "4"})
    assert "assert f(1) == 'ü'\n" in rewritten and "assert f(2) == 4\n" in rewritten
    assert remove_functions(rewritten, {"test_a"}) == "import pytest\n\n\n\n\ndef test_b():\n    assert f(2) == 4\n"
