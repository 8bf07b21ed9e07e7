"""From a completion (what a model wrote) to the module that a sample runs against.

A completion may hold a whole function (or class, for a class problem), several definitions, or only the body
that continues the prompt, bare or in chat markup (see ``postprocess``). What cannot be turned into the entry
point's definition fails the sample with an error type of its own, without running anything.
"""

from __future__ import annotations

import ast
import difflib
import re
import textwrap
from dataclasses import dataclass

from . import syntax
from .environment import ProjectEnv
from .executor import module_file
from .postprocess import answer_shapes, extract_code, is_empty_body
from .problem import ManifestError, Problem
from .runtime.repoexec_protocol import ErrorType


@dataclass(frozen=True)
class Candidate:
    completion: str
    function: str | None  # the candidate function (or class), dedented; None when none could be made
    error_type: ErrorType | None = None  # why the completion is not a usable function
    error: str | None = None

    def shapes(self, problem: Problem) -> list[str]:
        """Which of ``postprocess.ANSWER_SHAPES`` the completion has (fences, prose, a cut-off body, ...)."""
        shapes = answer_shapes(self.completion, self.function, problem.function_name, syntax.KEYWORDS[problem.kind])
        first = (problem.description or "").strip().partition("\n")[0].strip()
        if "echo" not in shapes and len(first) >= 20 and first in self.completion:  # the prompt's docstring again
            shapes.insert(shapes.index("cut_short") if "cut_short" in shapes else len(shapes), "echo")
        return shapes

    @property
    def empty(self) -> bool:
        """Nothing written: a blank completion, or a body (a class's too) of only a docstring, ``pass`` or ``...``."""
        if self.function is None:
            return self.error_type == ErrorType.EMPTY_COMPLETION
        return is_empty_body(self.function)


def make_candidate(problem: Problem, completion: str) -> Candidate:
    """The entry point's definition in the completion's code, or the signature completed by it as a body."""
    code = extract_code(completion)
    header = re.compile(rf"\s*{syntax.KEYWORDS[problem.kind]}\s+{problem.function_name}\b")
    first = next((line for line in code.splitlines() if line.strip()), "")
    # a continuation of the body: a definition of the same name further on is the model's nested helper (seen:
    # SmolLM2 writing `def is_palindrome(c):` inside is_palindrome's body), not the function
    body = first[:1].isspace() and not header.match(first) and not first.lstrip().startswith("@")
    function = None if body else syntax.find_function(code, problem.function_name, problem.kind)
    if function is None:
        if not code.strip():
            return Candidate(completion, None, ErrorType.EMPTY_COMPLETION, "the completion is empty")
        if not body and re.search(rf"^\s*{syntax.KEYWORDS[problem.kind]}\s+{problem.function_name}\b", code, re.MULTILINE):
            function = textwrap.dedent(code)  # a definition too broken to parse: show it as it is
        else:
            function = _complete_signature(problem.signature, code)
    try:
        ast.parse(function)
    except SyntaxError as exc:
        return Candidate(completion, function, ErrorType.SYNTAX_ERROR, f"{exc.msg} (line {exc.lineno})")
    return Candidate(completion, function)


def _complete_signature(signature: str, body: str) -> str:
    """A completion that continues the prompt is the function's (or class's) body: put the header back on top."""
    lines = body.strip("\n").splitlines()
    first = next(line for line in lines if line.strip())
    if not first[0].isspace():
        lines = [f"    {line}" if line.strip() else line for line in lines]
    return signature + "\n" + "\n".join(lines) + "\n"


def focal_module(problem: Problem, env: ProjectEnv) -> str:
    """The focal module's source, which must define the entry point: a manifest error names the problem's file
    and the missing identifier otherwise (a source from PyPI or git is only seen here, not at loading)."""
    path = module_file(env.import_root, problem.module)
    source = path.read_text(encoding="utf-8")
    try:
        syntax.find_definition(source, problem.entry_point, problem.kind)
    except syntax.DefinitionNotFound as exc:
        raise ManifestError(problem.manifest, "entry_point", f"module {problem.module} ({path}): {exc}") from None
    return source


def candidate_module(problem: Problem, module_source: str, candidate: Candidate) -> str:
    """The focal module with the reference replaced by the candidate; the rest of the file unchanged.

    The result may not parse (a candidate can break its surroundings): ``module_syntax_error`` says.
    """
    assert candidate.function is not None
    return syntax.replace_definition(module_source, problem.entry_point, candidate.function, problem.kind)


def module_syntax_error(problem: Problem, module_source: str, candidate: Candidate) -> str | None:
    """Why the candidate module (``candidate_module``) does not parse, or None. Apart from the splice: a verdict
    read back from the result store needs no parse."""
    assert candidate.function is not None
    error = syntax.splice_syntax_error(module_source, problem.entry_point, candidate.function, problem.kind)
    return None if error is None else f"in the module: {error}"


def dependency_share(problem: Problem, candidate: Candidate) -> float | None:
    """DIR of one sample: the share of the reference's dependencies that the candidate's body uses."""
    if not problem.dependencies:
        return None
    used = syntax.body_identifiers(candidate.function, problem.kind) if candidate.function else set()
    return len(used & set(problem.dependencies)) / len(problem.dependencies)


def candidate_diff(problem: Problem, candidate: Candidate) -> str | None:
    """The candidate against the reference, as a unified diff (what a person reads first when a sample fails);
    None where there is no candidate definition."""
    if candidate.function is None:
        return None
    reference, written = (text.strip("\n").splitlines() for text in (problem.reference, candidate.function))
    lines = difflib.unified_diff(reference, written, "reference", "candidate", n=2, lineterm="")
    return "\n".join(lines) or None
