"""The RepoExec paper's test-generation prompts (its Appendix C): assertions continued after the function under
test, then coverage enhancement with the tests kept so far as examples, one of the paper's three wordings a
round. The function under test is shown with its dependency context, so that a test can build its inputs."""

from __future__ import annotations

from ..prompts import Prompt
from .functions import Function

_INITIAL = '{function}\n# test to check the correctness of "{name}" function\nassert'
_COVERAGE = (
    "Here are some Python unit test functions and the focal function that they test:\n# Test functions:\n"
    "{tests}\n# Focal function:\n{function}\n"
    "Write more unit test functions that will increase the test coverage of the function under test.",
    "Here are some Python unit test functions and the focal function that they test:\n# Test functions:\n"
    "{tests}\n# Focal function:\n{function}\n"
    "Write more unit test functions that will cover corner cases missed by the original and will increase the "
    "test coverage of the function under test.",
    "Here is a focal function under test:\n{function}\n"
    "This function under test can be tested with these Python unit test functions:\n{tests}\n"
    "Here is an extended version of the unit test function that includes additional unit test cases that will "
    "cover methods, edge cases, corner cases, and other features of the function under test that were missed by "
    "the original unit test functions:",
)


def initial_prompt(function: Function, context: str) -> Prompt:
    """The first prompt: the answer goes on from ``assert``, as a base model continues it."""
    return Prompt(None, _INITIAL.format(function=_under_test(function, context), name=function.qualname))


def coverage_prompt(function: Function, context: str, tests: str, round: int) -> Prompt:
    """Round ``round`` (from 1) of coverage enhancement, with the problem's current test functions."""
    template = _COVERAGE[(round - 1) % len(_COVERAGE)]
    return Prompt(None, template.format(tests=tests.strip(), function=_under_test(function, context)))


def _under_test(function: Function, context: str) -> str:
    return f"{context.strip()}\n\n\n{function.reference.strip()}".strip()
