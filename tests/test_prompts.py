"""The paper's prompt formats at its three context levels, on a shipped problem, and in a chat template."""

import dataclasses

import pytest

from conftest import SHIPPED
from mini_project import write_mini_project
from pytest_repoexec.problem import load_problem
from pytest_repoexec.prompts import Prompt, build_prompt, chat_messages, chat_text, header

SLUGIFY_SIGNATURE = 'def slugify(text, separator="-", max_length=None)'


@pytest.fixture(scope="module")
def slugify():
    return load_problem(SHIPPED / "textkit" / "slugify" / "problem.toml")


def test_the_header_is_the_signature_with_its_docstring_indented_below(slugify):
    text = header(slugify)
    assert text.startswith(f'{SLUGIFY_SIGNATURE}:\n    """\n    Turn text into a lowercase, URL-friendly slug.\n')
    assert text.endswith('max_length is given and smaller than 1.\n    """')
    one_line = dataclasses.replace(slugify, reference='def slugify(text):\n    """Slug."""\n    return text\n')
    assert header(one_line) == 'def slugify(text):\n    """Slug."""'
    bare = dataclasses.replace(slugify, reference="def slugify(text):\n    return text\n")
    assert header(bare) == "def slugify(text):"


@pytest.mark.parametrize("level", ["full", "medium", "small"])
def test_base_prompt_is_the_context_then_the_header_stripped(slugify, level):
    prompt = build_prompt(slugify, "base", level)
    assert prompt.instruction is None
    assert prompt.text == f"{slugify.context(level).strip()}\n\n{header(slugify)}"
    assert prompt.text == prompt.text.strip()
    assert prompt.text.startswith("import unicodedata\n")


def test_context_levels_keep_less_and_less(slugify):
    full, medium, small = (build_prompt(slugify, "base", level).text for level in ("full", "medium", "small"))
    assert "return isinstance(obj, str)" in full
    assert "return isinstance(obj, str)" not in medium and '"""Return True if obj is a str instance."""' in medium
    assert "Return True if obj is a str instance." not in small and "def is_string(obj):" in small
    assert len(full) > len(medium) > len(small)


@pytest.mark.parametrize("level", ["full", "medium", "small"])
def test_instruct1_asks_for_the_signature_and_continues_the_base_prompt(slugify, level):
    prompt = build_prompt(slugify, "instruct1", level)
    assert prompt.instruction == (
        f"Write a Python function `{SLUGIFY_SIGNATURE}` to solve the following problem:\n{slugify.docstring}"
    )
    assert prompt.response == build_prompt(slugify, "base", level).text
    assert prompt.text == f"### Instruction:\n{prompt.instruction}\n### Response:\n{prompt.response}"


@pytest.mark.parametrize("level", ["full", "medium", "small"])
def test_instruct2_puts_the_context_in_the_instruction_and_continues_the_header(slugify, level):
    prompt = build_prompt(slugify, "instruct2", level)
    assert prompt.instruction == (
        f"{slugify.context(level).strip()}\nThe provided code snippet includes necessary dependencies for "
        f"implementing the `slugify` function. Write a Python function `{SLUGIFY_SIGNATURE}` to solve the "
        f"following problem:\n{slugify.docstring}"
    )
    assert prompt.response == header(slugify)


def test_the_instruction_names_the_def_line_without_decorators(tmp_path):
    swap = load_problem(write_mini_project(tmp_path) / "swap" / "problem.toml")
    assert swap.signature.startswith("@staticmethod\n")
    assert "Write a Python function `def swap(pair)` to solve" in build_prompt(swap, "instruct1").instruction
    assert header(swap).startswith("@staticmethod\ndef swap(pair):\n")


def test_unknown_style_is_refused(slugify):
    with pytest.raises(ValueError, match="instruct1"):
        build_prompt(slugify, "fancy")


def test_chat_forms():
    from tiny_model import tiny_tokenizer

    instruct = Prompt("Write f.", "def f():")
    base = Prompt(None, "import os\n\ndef f():")
    assert chat_messages(instruct) == [{"role": "user", "content": instruct.text}]
    assert instruct.text == "### Instruction:\nWrite f.\n### Response:\ndef f():"
    assert chat_text(instruct, tiny_tokenizer()) == "<|user|>\nWrite f.\n<|assistant|>def f():"
    assert chat_text(base, tiny_tokenizer()) == base.text  # a base prompt is continued as it is
    assert chat_text(instruct, tiny_tokenizer(chat_template=None)) == instruct.text
