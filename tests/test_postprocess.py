"""From raw model answers to candidate functions: markup, continuations, stop sequences, empty bodies."""

import pytest

from mini_project import write_mini_project
from pytest_repoexec.candidate import make_candidate
from pytest_repoexec.postprocess import STOP_SEQUENCES, cut_at_stop, extract_code, is_empty_body
from pytest_repoexec.problem import load_problem

RIGHT = "def scaled(value):\n    return clamp(value * SCALE, 0, 100)"


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    return load_problem(write_mini_project(tmp_path_factory.mktemp("post")) / "scaled" / "problem.toml")


def function_of(problem, completion):
    candidate = make_candidate(problem, completion)
    assert candidate.error_type is None, candidate.error
    return candidate.function.strip()


@pytest.mark.parametrize(
    "completion",
    [
        f"Here is the function:\n```python\n{RIGHT}\n```\nIt scales, then clamps.",
        f"```py\nimport math\n```\nand then\n```python\n{RIGHT}\n```",  # several blocks
        f"Sure.\n```python\n{RIGHT}\n",  # the answer ran out before the closing fence
        f"[INST] Write scaled [/INST] {RIGHT}",
        f"<think>\ndef scaled(value):\n    return value\n</think>\n\n```python\n{RIGHT}\n```",
        f"def helper():\n    return 1\n\n\n{RIGHT}\n\n\ndef other():\n    pass\n",  # the entry point's only
        f"{RIGHT}\n\nif __name__ == '__main__':\n    print(scaled(3))\n",
    ],
    ids=["fence", "blocks", "unclosed", "inst", "think", "several", "main"],
)
def test_markup_around_the_function_is_removed(scaled, completion):
    assert function_of(scaled, completion) == RIGHT


@pytest.mark.parametrize("stop", STOP_SEQUENCES)
def test_a_continuation_ends_at_the_first_stop_sequence(scaled, stop):
    continuation = f"\n    return clamp(value * SCALE, 0, 100){stop} something else\n    return 0\n"
    assert function_of(scaled, continuation) == RIGHT


def test_a_body_without_signature_gets_it_back_in_any_indentation(scaled):
    assert function_of(scaled, "    return clamp(value * SCALE, 0, 100)\n") == RIGHT
    assert function_of(scaled, "return clamp(value * SCALE, 0, 100)") == RIGHT
    assert function_of(scaled, "```python\nreturn clamp(value * SCALE, 0, 100)\n```") == RIGHT
    two_lines = "\n    scaled_value = value * SCALE\n    return clamp(scaled_value, 0, 100)\n\nclass X:\n    pass"
    assert function_of(scaled, two_lines) == "def scaled(value):" + two_lines.partition("\n\nclass")[0]


def test_stop_sequences_do_not_cut_a_whole_answer_or_indented_lines():
    answer = "def helper():\n    pass\n\ndef scaled(value):\n    if value:\n        # fine\n        return 1\n"
    assert extract_code(answer) == answer
    documented = 'def scaled(value):\n    """Use it so:\n\n```python\nscaled(3)\n```\n"""\n    return value\n'
    assert extract_code(documented) == documented  # a fence inside a docstring is no markup
    body = "\n    x = 1\n    if x:\n        print(x)"
    assert cut_at_stop(body + "\nprint(2)") == body


@pytest.mark.parametrize(
    ("source", "empty"),
    [
        ('def f(x):\n    """Only a docstring."""\n', True),
        ("def f(x):\n    pass\n", True),
        ("def f(x):\n    ...\n", True),
        ('@staticmethod\ndef f(x):\n    """Doc."""\n    pass\n    ...\n', True),
        ("def f(x):\n    return None\n", False),
        ('def f(x):\n    """Doc."""\n    raise NotImplementedError\n', False),
        ("def f(x)\n    pass\n", False),  # a syntax error, not an empty body
    ],
)
def test_empty_bodies(source, empty):
    assert is_empty_body(source) is empty


def test_candidates_know_they_are_empty(scaled):
    assert make_candidate(scaled, "   \n").empty
    assert make_candidate(scaled, '\n    """Scale a value."""\n    pass\n').empty
    assert make_candidate(scaled, "```python\ndef scaled(value):\n    ...\n```").empty
    assert not make_candidate(scaled, RIGHT).empty
    assert not make_candidate(scaled, "def scaled(value)\n    pass").empty


# The shapes of real answers, as SmolLM2-135M-Instruct wrote them on RepoExec's python-string-utils and the shipped
# set (written here anew around the mini project's `scaled`, not copied).
NESTED_SAME_NAME = (  # base prompt, a continuation: a helper of the entry point's own name inside the body
    "\n    if not isinstance(value, int):\n        raise ValueError('an int')\n\n    def scaled(v):\n        return v\n\n"
    "    return clamp(value * SCALE, 0, 100)"
)
CUT_AT_LIMIT = "\n    if value < 0:\n        raise ValueError(f'Invalid value {value}')\n    return clamp(value * SCALE, min(0, "
FENCED_WITH_PROSE = (
    "Here's a Python function that scales a value:\n\n```python\ndef scaled(value):\n    return clamp(value * SCALE, 0, 100)"
    "\n```\n\nThis function multiplies the value by `SCALE` and then clamps it to the range 0 to 100.\n"
)
PROSE_WITHOUT_FENCE = (
    "Here's the implementation of the function:\n\ndef scaled(value):\n    return clamp(value * SCALE, 0, 100)\n\n"
    "This function uses the clamp function from the util module.\n"
)
ECHOED_TEMPLATE = (
    "<|im_start|>assistant\n```python\ndef scaled(value):\n    return clamp(value * SCALE, 0, 100)\n```<|im_end|>\n"
    "<|im_start|>user\nNow write a test.<|im_end|>"
)
ECHOED_PROMPT = (
    "### Instruction:\nWrite a Python function `def scaled(value)` to solve the following problem:\nScale a value.\n"
    "### Response:\nfrom .util import SCALE, clamp\n\ndef scaled(value):\n    return clamp(value * SCALE, 0, 100)\n"
)
RESTARTED = "\n    def scaled(value):\n        return clamp(value * SCALE, 0, 100)\n"  # the header again, first thing


@pytest.mark.parametrize(
    ("completion", "shapes"),
    [
        (FENCED_WITH_PROSE, ["fenced", "prose"]),
        (PROSE_WITHOUT_FENCE, ["prose"]),
        (ECHOED_TEMPLATE, ["fenced", "echo"]),
        (ECHOED_PROMPT, ["echo"]),
        (RESTARTED, ["repeated_signature"]),
        ("\n    return clamp(value * SCALE, 0, 100)\n", []),
    ],
    ids=["fenced-prose", "prose", "echoed-template", "echoed-prompt", "restarted", "plain"],
)
def test_real_answer_shapes_give_the_function_and_are_counted(scaled, completion, shapes):
    assert function_of(scaled, completion) == RIGHT
    candidate = make_candidate(scaled, completion)
    assert candidate.shapes(scaled) == shapes


def test_a_nested_helper_of_the_same_name_stays_inside_the_body(scaled):
    candidate = make_candidate(scaled, NESTED_SAME_NAME)
    assert candidate.error_type is None
    assert candidate.function.startswith("def scaled(value):\n    if not isinstance(value, int):")
    assert candidate.function.rstrip().endswith("    return clamp(value * SCALE, 0, 100)")  # the outer body, whole
    assert candidate.shapes(scaled) == ["repeated_signature"]


def test_a_body_cut_at_the_token_limit_is_a_syntax_error_counted_as_cut_short(scaled):
    candidate = make_candidate(scaled, CUT_AT_LIMIT)
    assert candidate.error_type == "SyntaxError"
    assert candidate.shapes(scaled) == ["cut_short"]
    wrong = make_candidate(scaled, "\n    return clamp(value * SCALE 0, 100)\n")  # a mistake, not an ending
    assert wrong.error_type == "SyntaxError" and "cut_short" not in wrong.shapes(scaled)


def test_a_block_never_indented_is_a_mistake_not_a_cut(scaled):
    """Seen: a continuation that opens a method and writes its body at the method's own indentation."""
    candidate = make_candidate(scaled, "\n\n    def helper(self):\n    if value:\n        return 1\n    return 0\n")
    assert candidate.error_type == "SyntaxError" and "cut_short" not in candidate.shapes(scaled)
    assert "cut_short" in make_candidate(scaled, "\n    if value < 0:\n").shapes(scaled)


def test_an_answer_that_writes_the_prompts_docstring_again_is_an_echo(tmp_path):
    """Seen with instruct1 on the chat endpoint: the header and the whole docstring again, then (at a low token
    limit) nothing else: the docstring is never closed."""
    from pytest_repoexec.problem import load_problem

    from conftest import SHIPPED

    problem = load_problem(SHIPPED / "textkit/slugify/problem.toml")
    first = problem.description.strip().splitlines()[0]
    candidate = make_candidate(problem, f'def slugify(text, separator="-", max_length=None):\n    """{first}\n\n    Accented')
    assert candidate.error_type == "SyntaxError"
    assert candidate.shapes(problem) == ["echo", "cut_short"]
