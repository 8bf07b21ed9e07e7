"""A class problem's two descriptions, as RepoClassBench has them: a detailed one that lists the members and what
each does, and a sketchy one of a few sentences. From the class's own docstrings, or written by a model
(``--describe-model``) for classes whose docstrings say too little, or to keep the reference's words out of the
prompt.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable

from generators.standalone import ModelOptions, ask, model_generator

from ..generation import GenerationError
from ..prompts import Prompt
from . import BuildError
from .classes import Klass

NO_DOCSTRING = "no docstring (describe it with --describe-model)"
NO_DESCRIPTION = "no description from the model"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SKETCH_SENTENCES = 2

_ASK = {
    "detailed": (
        "Below is the Python class `{name}` of the module `{module}`. Describe it for a developer who must write it "
        "again without seeing it: first a sentence on what the class is for, then one line for each method, as "
        "\"- `signature`: what it does\", naming the other parts of the repository each one relies on. Do not show "
        "code. Answer with the description alone.\n\n{reference}"),
    "sketchy": (
        "Below is the Python class `{name}` of the module `{module}`. In two or three sentences, say what the class "
        "is for and how it is used, without listing its methods and without code. Answer with the description "
        "alone.\n\n{reference}"),
}


def docstring_descriptions(klass: Klass) -> tuple[str, str] | None:
    """(detailed, sketchy) from the docstrings: the class's docstring and each method's signature and docstring's
    first line; its docstring's first sentences. None without a class docstring."""
    if not klass.docstring or not klass.docstring.strip():
        return None
    text = inspect.cleandoc(klass.docstring)
    members = "\n".join(f"- `{method.signature}`" + (f": {method.summary}" if method.summary else "")
                        for method in klass.methods)
    first_paragraph = " ".join(text.split("\n\n")[0].split())
    sketch = " ".join(_SENTENCE_END.split(first_paragraph)[:_SKETCH_SENTENCES])
    return f"{text}\n\nMembers:\n{members}", sketch


def model_descriptions(project: str, classes: Iterable[Klass], model: str, options: ModelOptions
                       ) -> dict[str, tuple[str, str]]:
    """(detailed, sketchy) written by ``model`` for each class, by ``module:Name``; a class it gives an empty
    answer for is left out."""
    try:
        generator = model_generator(model, options)
        prompts = {f"{form}:{klass.module}:{klass.name}": Prompt(_ASK[form].format(
            name=klass.name, module=klass.module, reference=klass.reference.strip()), "")
            for klass in classes for form in _ASK}
        answers = ask(generator, prompts, 1, whole=True)
    except GenerationError as exc:
        raise BuildError(project, "describing classes", str(exc)) from None
    described = {}
    for key in {key.partition(":")[2] for key in prompts}:
        detailed, sketchy = (_cleaned(answers.get(f"{form}:{key}", [""])) for form in _ASK)
        if detailed and sketchy:
            described[key] = (detailed, sketchy)
    return described


def _cleaned(answers: list[str]) -> str:
    """The answer without a reasoning block or code fences around it."""
    text = (answers[0] if answers else "").rpartition("</think>")[2].strip()
    return re.sub(r"^```\w*\n|\n```$", "", text).strip()
