"""The RepoExec paper's prompts: BasePrompt and the two InstructPrompt variants, at each context level.

A prompt has two parts: the instruction (none for BasePrompt) and the code the answer continues, which ends
with the target function's header. Kept apart, they can be laid out as the paper's plain text, or put in a
model's own chat format with the instruction as the user's turn and the code as the start of the answer.

A class problem is laid out the same way, its description (detailed or sketchy, the run's choice) standing
where a function's docstring stands, below the class's header: the answer writes the class's body.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import Any

from . import syntax
from .problem import Problem

PROMPT_STYLES = ("base", "instruct1", "instruct2")

_INSTRUCTION = "Write a Python {noun} `{signature}` to solve the following problem:\n{docstring}"
_DEPENDENCIES = "The provided code snippet includes necessary dependencies for implementing the `{name}` {noun}."


@dataclass(frozen=True)
class Prompt:
    instruction: str | None  # what the model is asked; None for BasePrompt
    response: str  # the code the answer continues: the target function's header comes last

    @property
    def text(self) -> str:
        """The paper's plain-text layout."""
        if self.instruction is None:
            return self.response
        return f"### Instruction:\n{self.instruction}\n### Response:\n{self.response}".strip()


def header(problem: Problem) -> str:
    """The target's signature with its docstring (a class's description) indented below it, as the model sees it."""
    docstring = problem.description
    if docstring is None:
        return problem.signature
    if "\n" in docstring:
        docstring = "\n" + textwrap.indent(docstring, "    ") + "\n    "
    return f'{problem.signature}\n    """{docstring}"""'


def build_prompt(problem: Problem, style: str = "base", level: str = "full") -> Prompt:
    """The problem's prompt in one of ``PROMPT_STYLES``, its context at one of the levels (full, medium, small)."""
    context = problem.context(level).strip()
    target = header(problem)
    base = f"{context}\n\n{target}".strip()
    instruction = _instruction(problem)
    if style == "base":
        return Prompt(None, base)
    if style == "instruct1":
        return Prompt(instruction, base)
    if style == "instruct2":
        dependencies = _DEPENDENCIES.format(name=problem.function_name, noun=problem.noun)
        return Prompt(f"{context}\n{dependencies} {instruction}".strip(), target)
    raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(PROMPT_STYLES)}")


_DEBUG = """\
{context}
# {dependencies} {instruction}
# Here is the current solution.
{solution}
# When executing the below test case.
{test_case}
# The provided python code solution fails the test with the following errors, please correct them.
{error_log}
# Please provide the modified code for me to review and provide feedback.
{target}"""


def debug_prompt(problem: Problem, level: str, solution: str, test_case: str, error_log: str) -> Prompt:
    """The paper's debugging prompt (Appendix F): the failing solution, the test it fails and the error, then
    the target's header again, which the answer continues as a BasePrompt's does."""
    text = _DEBUG.format(
        context=problem.context(level).strip(),
        dependencies=_DEPENDENCIES.format(name=problem.function_name, noun=problem.noun),
        instruction=_instruction(problem),
        solution=solution.strip("\n"),
        test_case=test_case.strip("\n"),
        error_log=error_log.strip("\n"),
        target=header(problem),
    )
    return Prompt(None, text.lstrip("\n"))


def _instruction(problem: Problem) -> str:
    return _INSTRUCTION.format(noun=problem.noun, signature=_one_line(problem), docstring=problem.description or "")


def _one_line(problem: Problem) -> str:
    """The ``def`` (or ``class``) line of the signature without decorators or the final colon, for the
    instruction's text."""
    signature = problem.signature
    definition = signature[re.search(rf"^[ \t]*{syntax.KEYWORDS[problem.kind]}\b", signature, re.MULTILINE).start() :]
    return re.sub(r"\s*\n\s*", " ", definition.strip()).removesuffix(":")


def chat_messages(prompt: Prompt) -> list[dict[str, str]]:
    """The prompt as a chat API's messages: the whole plain text as the user's turn (an API answer cannot be
    prefilled, so the code the answer would continue goes with the question)."""
    return [{"role": "user", "content": prompt.text}]


def chat_text(prompt: Prompt, tokenizer: Any) -> str:
    """The prompt as one text for a local model: an instruction in the tokenizer's chat template, when it has
    one, with the answer prefilled with the code to continue; otherwise the plain layout."""
    if prompt.instruction is None or not getattr(tokenizer, "chat_template", None):
        return prompt.text
    opening = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt.instruction}], tokenize=False, add_generation_prompt=True
    )
    return opening + prompt.response
