"""From a completion (what a model wrote) to the module that a sample runs against.

A completion may hold a whole function, several definitions, or only the body that continues the prompt,
bare or in chat markup (see ``postprocess``). What cannot be turned into the entry point's function fails
the sample with an error type of its own, without running anything.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from dataclasses import dataclass

from . import syntax
from .postprocess import extract_code, is_empty_body
from .problem import Problem
from .runtime.repoexec_protocol import ErrorType


@dataclass(frozen=True)
class Candidate:
    completion: str
    function: str | None  # the candidate function, dedented; None when none could be made
    error_type: ErrorType | None = None  # why the completion is not a usable function
    error: str | None = None

    @property
    def empty(self) -> bool:
        """Nothing written: a blank completion, or a body of only a docstring, ``pass`` or ``...``."""
        if self.function is None:
            return self.error_type == ErrorType.EMPTY_COMPLETION
        return is_empty_body(self.function)


def make_candidate(problem: Problem, completion: str) -> Candidate:
    """The entry point's definition in the completion's code, or the signature completed by it as a body."""
    code = extract_code(completion)
    function = syntax.find_function(code, problem.function_name)
    if function is None:
        if not code.strip():
            return Candidate(completion, None, ErrorType.EMPTY_COMPLETION, "the completion is empty")
        if re.search(rf"^\s*(async\s+)?def\s+{problem.function_name}\b", code, re.MULTILINE):
            function = textwrap.dedent(code)  # a definition too broken to parse: show it as it is
        else:
            function = _complete_signature(problem.signature, code)
    try:
        ast.parse(function)
    except SyntaxError as exc:
        return Candidate(completion, function, ErrorType.SYNTAX_ERROR, f"{exc.msg} (line {exc.lineno})")
    return Candidate(completion, function)


def _complete_signature(signature: str, body: str) -> str:
    """A completion that continues the prompt is the function's body: put the signature back on top."""
    lines = body.strip("\n").splitlines()
    first = next(line for line in lines if line.strip())
    if not first[0].isspace():
        lines = [f"    {line}" if line.strip() else line for line in lines]
    return signature + "\n" + "\n".join(lines) + "\n"


def candidate_module(problem: Problem, module_source: str, candidate: Candidate) -> str:
    """The focal module with the reference replaced by the candidate; the rest of the file unchanged.

    The result may not parse (a candidate can break its surroundings): ``module_syntax_error`` says.
    """
    assert candidate.function is not None
    return syntax.replace_definition(module_source, problem.entry_point, candidate.function)


def module_syntax_error(module: str) -> str | None:
    """Why the candidate module does not parse, or None. Apart from the splice: a verdict read back from the
    result store needs no parse."""
    try:
        ast.parse(module)
    except SyntaxError as exc:
        return f"in the module: {exc.msg}"
    return None


def dependency_share(problem: Problem, candidate: Candidate) -> float | None:
    """DIR of one sample: the share of the reference's dependencies that the candidate's body uses."""
    if not problem.dependencies:
        return None
    used = syntax.body_identifiers(candidate.function) if candidate.function else set()
    return len(used & set(problem.dependencies)) / len(problem.dependencies)


def candidate_diff(problem: Problem, candidate: Candidate) -> str | None:
    """The candidate function against the reference, as a unified diff (what a person reads first when a
    sample fails); None where there is no candidate function."""
    if candidate.function is None:
        return None
    reference, written = (text.strip("\n").splitlines() for text in (problem.reference, candidate.function))
    lines = difflib.unified_diff(reference, written, "reference", "candidate", n=2, lineterm="")
    return "\n".join(lines) or None
