"""From a model's raw answer to the code a candidate is made of.

Chat models wrap code in markup (fences, an echoed ``[/INST]``, a reasoning block closed by ``</think>``);
a base model that continues the prompt runs on past the function. Both are undone here, so that the same
completions give the same candidates whichever generator or saved file they come from.
"""

from __future__ import annotations

import ast
import re

# The original harness's stop sequences: a continuation of the function's body ends at the first
# top-level statement after it, or at a closing fence.
STOP_SEQUENCES = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\n```")

_PREFIX_MARKERS = ("[/INST]", "</think>")
_FENCED_BLOCK = re.compile(r"^[ \t]*```[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.MULTILINE | re.DOTALL)


def cut_at_stop(text: str, stops: tuple[str, ...] = STOP_SEQUENCES) -> str:
    """``text`` up to the earliest stop sequence, which is left out."""
    ends = [index for index in (text.find(stop) for stop in stops) if index != -1]
    return text[: min(ends)] if ends else text


def extract_code(completion: str) -> str:
    """The code in a completion: what follows the last chat marker, then either a continuation cut at the
    stop sequences (its first line is indented: the body goes on from the prompt) or the fenced blocks of
    an answer, joined (the whole text when it has no fence or is Python already)."""
    text = completion
    for marker in _PREFIX_MARKERS:
        _, found, after = text.rpartition(marker)
        if found:
            text = after.lstrip(" \t")  # the marker's line holds no indentation
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first[:1].isspace():
        return cut_at_stop(text)
    blocks = _FENCED_BLOCK.findall(text)
    return "\n".join(blocks) if blocks and not _parses(text) else text  # fences inside a docstring stay


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def is_empty_body(function_source: str) -> bool:
    """Whether the first function (or class) in ``function_source`` does nothing: its body holds only a
    docstring, ``pass`` or ``...``. Such a completion is counted apart from wrong ones; a source that does not
    parse is not empty (it is a syntax error)."""
    try:
        tree = ast.parse(function_source)
    except SyntaxError:
        return False
    function = next(
        (node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))),
        None,
    )
    return function is not None and all(_is_placeholder(statement) for statement in function.body)


def _is_placeholder(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass):
        return True
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and (isinstance(statement.value.value, str) or statement.value.value is Ellipsis)
    )
