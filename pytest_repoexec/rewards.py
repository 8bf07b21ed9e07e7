"""Verdicts as rewards, in the shapes the trainers call: TRL's reward functions (sync and async), verl's
``compute_score`` (and its batch form), OpenRLHF's remote reward protocol (``service`` serves it).

A problem is named by its id: TRL's dataset column ``problem_id``, verl's ``ground_truth``, OpenRLHF's label;
``repoexec export`` writes all three. The shapes: ``pass`` (1 or 0) or ``tr`` (the share of tests passed). A
completion the host could not judge (``Verdict.counts`` False) is TRL's None, which it masks; verl and
OpenRLHF take only numbers, so there it is the value the caller states (``unjudged``), and without one an error
rather than a made-up 0.
"""

from __future__ import annotations

import atexit
import json
import threading
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .api import ProblemSet, RewardShape, Verdict, open_problems

PROBLEM_COLUMN = "problem_id"  # the dataset column that names each row's problem (``export``)


class NoReward(RuntimeError):
    """A completion the host could not judge, where the trainer takes only numbers and no ``unjudged`` value
    was stated; ``lasting``: nor will it if asked again (``Verdict.lasting``)."""

    def __init__(self, message: str, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting


def completion_text(completion: Any) -> str:
    """TRL hands a standard dataset's completion as text, a conversational one as its messages: the answer is
    the assistant's last turn."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise TypeError(f"completions: expected text or a list of messages, got {type(completion).__name__}")


def trl_reward(problems: ProblemSet, shape: RewardShape = "pass", column: str = PROBLEM_COLUMN,
               unjudged: float | None = None) -> Callable[..., list[float | None]]:
    """A TRL reward function: ``f(prompts, completions, completion_ids, **columns) -> list[float | None]``.
    TRL logs its rewards under the function's ``__name__`` (``repoexec_pass`` or ``repoexec_tr``)."""

    def reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), completion_ids: Any = None,
               **columns: Any) -> list[float | None]:
        verdicts = problems.score_batch(_samples(completions, columns, column), tr=shape == "tr")
        return _trl_rewards(verdicts, shape, unjudged, columns)

    reward.__name__ = reward.__qualname__ = f"repoexec_{shape}"
    return reward


def trl_async_reward(problems: ProblemSet, shape: RewardShape = "pass", column: str = PROBLEM_COLUMN,
                     unjudged: float | None = None) -> Callable[..., Any]:
    """The same as an ``async def``, which TRL awaits beside its other reward functions."""

    async def reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), completion_ids: Any = None,
                     **columns: Any) -> list[float | None]:
        verdicts = await problems.ascore_batch(_samples(completions, columns, column), tr=shape == "tr")
        return _trl_rewards(verdicts, shape, unjudged, columns)

    reward.__name__ = reward.__qualname__ = f"repoexec_{shape}"
    return reward


def _trl_rewards(verdicts: list[Verdict], shape: RewardShape, unjudged: float | None,
                 columns: dict[str, Any]) -> list[float | None]:
    """The rewards; where TRL offers ``log_extra``, each sample's error type goes to its completions table."""
    if callable(columns.get("log_extra")):
        columns["log_extra"](f"repoexec_{shape}_error", [verdict.error_type or "" for verdict in verdicts])
    return [verdict.reward(shape, unjudged) for verdict in verdicts]


def _samples(completions: Sequence[Any], columns: dict[str, Any], column: str) -> list[tuple[str, str]]:
    ids = columns.get(column)
    if ids is None:
        raise KeyError(f"{column}: the dataset has no such column (TRL passes the dataset's columns; "
                       f"`repoexec export --format trl` writes it)")
    if len(ids) != len(completions):
        raise ValueError(f"{column}: {len(ids)} problem ids for {len(completions)} completions")
    return [(str(problem_id), completion_text(completion)) for problem_id, completion in zip(ids, completions)]


# verl: a custom reward function is loaded from a file by name, and called with the config's reward_kwargs.

_opened: dict[tuple[Any, ...], ProblemSet] = {}  # this process's problem sets, by how they were opened
_opening = threading.Lock()


def _problem_set(problems: str | Path, options: dict[str, Any]) -> ProblemSet:
    key = (str(problems), tuple(sorted(options.items())))
    with _opening:
        if key not in _opened:
            if not _opened:  # at the interpreter's exit, while its process pools still take work: concurrent.futures
                # stops them from threading's exit hooks, which run before atexit's, in the reverse of their order
                getattr(threading, "_register_atexit", atexit.register)(_close_opened)
            _opened[key] = open_problems(problems, **options)
        return _opened[key]


def _close_opened() -> None:
    """At the process's exit: the problem sets verl's calls opened stop their workers."""
    while _opened:
        _opened.popitem()[1].close()


def verl_score(verdict: Verdict, shape: RewardShape, unjudged: float | None) -> dict[str, Any]:
    """verl's dict form: ``score`` is the reward, the rest goes to its ``reward_extra_info`` (numbers, the
    same keys for every sample of a shape: ``tr`` where the shape is TR, the only one that measures it)."""
    score = verdict.reward(shape, unjudged)
    if score is None:
        raise NoReward(f"{verdict.problem}: {verdict.engine_error or 'not judged'} (state a value for it: "
                       "reward_kwargs.unjudged)")
    tr = {"tr": verdict.tr if verdict.tr is not None else 0.0} if shape == "tr" else {}
    return {"score": score, "passed": float(bool(verdict.passed)), **tr, "counts": float(verdict.counts)}


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, *,
                  problems: str | None = None, url: str | None = None, shape: RewardShape = "pass",
                  unjudged: float | None = None, **options: Any) -> dict[str, Any]:
    """verl's ``custom_reward_function``: ``ground_truth`` is the problem id. Judged here, by a problem set
    opened once per process (``problems``: its folder; ``options``: ``open_problems``'s), or by a running
    ``repoexec serve`` at ``url``."""
    return compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info], problems=problems,
                               url=url, shape=shape, unjudged=unjudged, **options)[0]


def compute_score_batch(data_sources: Sequence[str], solution_strs: Sequence[str], ground_truths: Sequence[str],
                        extra_infos: Sequence[dict | None] | None = None, *, problems: str | None = None,
                        url: str | None = None, shape: RewardShape = "pass", unjudged: float | None = None,
                        **options: Any) -> list[dict[str, Any]]:
    """verl's batch form (``BatchRewardManager``): the lists of one batch, judged at once."""
    samples = [(str(truth), str(solution)) for truth, solution in zip(ground_truths, solution_strs)]
    if (problems is None) == (url is None):
        raise ValueError("reward_kwargs: give problems (a problem folder) or url (a `repoexec serve`), one of them")
    if url is not None:
        verdicts = score_remotely(url, samples, tr=shape == "tr")
    else:
        verdicts = _problem_set(problems, options).score_batch(samples, tr=shape == "tr")
    return [verl_score(verdict, shape, unjudged) for verdict in verdicts]


def score_remotely(url: str, samples: Sequence[tuple[str, str]], request_id: str | None = None,
                   timeout: float = 600.0, tr: bool = True) -> list[Verdict]:
    """Verdicts from a ``repoexec serve`` (``POST /score``); ``tr``: as ``ProblemSet.submit``'s."""
    body: dict[str, Any] = {"samples": [{"problem": problem, "completion": completion}
                                        for problem, completion in samples]}
    if not tr:
        body["tr"] = False
    if request_id is not None:
        body["request_id"] = request_id
    request = urllib.request.Request(url.rstrip("/") + "/score", json.dumps(body).encode("utf-8"),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return [Verdict.from_dict(verdict) for verdict in json.load(answer)["verdicts"]]


def openrlhf_samples(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(problem id, completion) of OpenRLHF's request ``{"query", "prompts", "labels"}``: the completion is the
    query with its prompt removed, the label the problem id."""
    query, prompts, labels = body["query"], body["prompts"], body["labels"]
    return [(str(label), completion_of(text, prompt)) for text, prompt, label in zip(query, prompts, labels)]


def openrlhf_answer(verdicts: Sequence[Verdict], shape: RewardShape, unjudged: float | None) -> dict[str, Any]:
    """OpenRLHF's remote reward answer; NoReward where a verdict does not count and no ``unjudged`` value was
    stated (the service then answers 503: OpenRLHF retries the request, and what was judged is read back from
    the result store; or 422 where no retry can help: ``NoReward.lasting``)."""
    rewards = [verdict.reward(shape, unjudged) for verdict in verdicts]
    missing = [verdict for verdict, reward in zip(verdicts, rewards) if reward is None]
    if missing:
        raise NoReward(f"{missing[0].problem}: {missing[0].engine_error or 'not judged'}",
                       lasting=all(verdict.lasting for verdict in missing))
    return {"rewards": rewards, "scores": rewards,
            "extra_logs": {"pass": [float(bool(verdict.passed)) for verdict in verdicts],
                           "counts": [float(verdict.counts) for verdict in verdicts]}}


def completion_of(query: str, prompt: str) -> str:
    """The completion in an OpenRLHF query: what follows the prompt (the whole query where it does not start
    with it, as OpenRLHF's own reward functions take it)."""
    return query[len(prompt):] if query.startswith(prompt) else query
