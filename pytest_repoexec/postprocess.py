"""From a model's raw answer to the code a candidate is made of.

Chat models wrap code in markup (fences, an echoed ``[/INST]``, a reasoning block closed by ``</think>``);
a base model that continues the prompt runs on past the function. Both are undone here, so that the same
completions give the same candidates whichever generator or saved file they come from.
"""

from __future__ import annotations

import ast
import codeop
import re

# The original harness's stop sequences: a continuation of the function's body ends at the first
# top-level statement after it, or at a closing fence.
STOP_SEQUENCES = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif", "\n```")

_PREFIX_MARKERS = ("[/INST]", "</think>", "### Response:", "<|im_start|>assistant", "<|assistant|>")
# the end of a turn in a chat template that the answer echoes: what follows is another turn, not the answer
_TURN_ENDS = ("<|im_end|>", "<|im_start|>", "<|endoftext|>", "</s>", "<|user|>", "<|end|>")
_ECHO = ("### Instruction:", "### Response:", "<|im_start|>", "<|im_end|>", "<|user|>", "<|assistant|>",
         "[INST]", "[/INST]")
_FENCED_BLOCK = re.compile(r"^[ \t]*```[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.MULTILINE | re.DOTALL)
_FENCE = re.compile(r"^[ \t]*```", re.MULTILINE)

# The shapes of a model's answer that are counted in the report (``answers``), a sample in each that it shows:
ANSWER_SHAPES = {
    "fenced": "code in Markdown fences (opened)",
    "prose": "text around the code that is not code (dropped)",
    "echo": "the prompt echoed: the chat template's markup (dropped up to the answer) or the docstring written again",
    "repeated_signature": "a continuation that writes the function's header again (first: that definition is "
                          "taken; further on, nested in the body: the body is kept whole)",
    "cut_short": "code cut off mid-statement, where the token limit ends it (a SyntaxError)",
}


def cut_at_stop(text: str, stops: tuple[str, ...] = STOP_SEQUENCES) -> str:
    """``text`` up to the earliest stop sequence, which is left out."""
    ends = [index for index in (text.find(stop) for stop in stops) if index != -1]
    return text[: min(ends)] if ends else text


def extract_code(completion: str) -> str:
    """The code in a completion: what follows the last chat marker, then either a continuation cut at the
    stop sequences (its first line is indented: the body goes on from the prompt) or the fenced blocks of
    an answer, joined (the whole text when it has no fence or is Python already)."""
    text = answer_text(completion)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first[:1].isspace():
        return cut_at_stop(text)
    blocks = _FENCED_BLOCK.findall(text)
    return "\n".join(blocks) if blocks and not _parses(text) else text  # fences inside a docstring stay


def answer_text(completion: str) -> str:
    """The answer without what a chat template or the prompt put before it (up to the last ``[/INST]``,
    ``</think>``, ``### Response:``, ``<|im_start|>assistant``) and without a next turn it ran on into."""
    text = completion
    for marker in _PREFIX_MARKERS:
        _, found, after = text.rpartition(marker)
        if found:
            text = after.lstrip(" \t")  # the marker's line holds no indentation
            if marker.startswith("<|"):
                text = text.removeprefix("\n")  # a role marker ends its own line
    ends = [index for index in (text.find(end) for end in _TURN_ENDS) if index != -1]
    return text[: min(ends)] if ends else text


def answer_shapes(completion: str, function: str | None, name: str, keyword: str = r"(async\s+)?def") -> list[str]:
    """Which of ``ANSWER_SHAPES`` the raw ``completion`` has, given the ``function`` made of it (None where none
    was) and the entry point's ``name``."""
    shapes = []
    text = answer_text(completion)
    code = extract_code(completion)
    fenced = bool(_FENCE.search(text)) and not _parses(text)
    if fenced:
        shapes.append("fenced")
    outside = _FENCED_BLOCK.sub("", text) if fenced else (text.replace(code, "", 1) if code in text else "")
    if fenced and outside.strip() or not fenced and not _parses(text) and function is not None and _parses(function) \
            and text.strip() != function.strip() and _has_prose(text):
        shapes.append("prose")
    if any(marker in completion for marker in _ECHO):
        shapes.append("echo")
    header = re.compile(rf"^(?P<indent>[ \t]*){keyword}\s+{re.escape(name)}\b", re.MULTILINE)
    first = next((line for line in code.splitlines() if line.strip()), "")
    if first[:1].isspace() and header.search(code):  # a continuation of the body that opens the function again
        shapes.append("repeated_signature")
    if function is not None and _cut_short(function):
        shapes.append("cut_short")
    return shapes


def _has_prose(text: str) -> bool:
    """Whether some line of ``text`` reads as a sentence rather than code."""
    return any(re.match(r"^[A-Z][\w']*(\s+[\w'`,.()-]+){3,}", line.strip()) and not _parses(line.strip())
               for line in text.splitlines())


def _cut_short(function: str) -> bool:
    """A function that does not parse because its text stops mid-statement (an unclosed bracket or string, a
    block opened on the last line), not because of a mistake inside."""
    try:
        ast.parse(function)
    except SyntaxError as exc:
        if any(words in (exc.msg or "") for words in ("was never closed", "unexpected EOF", "unterminated")):
            return True
        if "expected an indented block" in (exc.msg or ""):  # at the end; not a body that was never indented
            return (exc.lineno or 0) >= len(function.rstrip().splitlines())
        try:  # what the interactive prompt would answer with "...": the start of something valid
            return codeop.compile_command(function.rstrip("\n"), symbol="exec") is None
        except (SyntaxError, ValueError, OverflowError):
            return False
    except ValueError:
        return False
    return False


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
