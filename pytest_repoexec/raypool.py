"""Judges past one machine, as Ray actors (what verl, OpenRLHF and NeMo-RL already run on).

One actor per CPU each node offers, pinned to its node, each holding a ``Judge`` (``api``: its engine, warm
executor and zygotes) for its life; the environments are built once per node, in that node's cache, under the
cache's file locks. A batch's samples of one problem go to one actor, so that its zygote stays warm. An actor
lost mid-request (its node gone, its process killed) is dropped and its samples sent to another: each sample
gets one verdict, never none and never two, and what the lost actor had judged is read back from the result
store where the nodes share it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .api import Judge, Verdict, find_problem, load_problems, place, settings_for
from .cgroups import ENGINE_ERROR
from .settings import Settings


@ray.remote(num_cpus=1)
class JudgeActor:
    def __init__(self, settings: Settings, run: str) -> None:
        self.judge = Judge(settings, run)

    def node(self) -> str:
        return ray.get_runtime_context().get_node_id()

    def score(self, manifest: str, sample: int, completion: str, fail_fast: bool = False) -> dict[str, Any]:
        return self.judge.judge(manifest, sample, completion, fail_fast)

    def close(self) -> None:
        self.judge.close()


class RayPool:
    """Judges on every node of the Ray cluster this process is connected to (``ray.init`` first)."""

    def __init__(self, paths: Iterable[Path | str], settings: Settings | None = None,
                 actors_per_node: int | None = None, **options: Any) -> None:
        self.settings = settings or settings_for(**options)
        self.problems = load_problems(paths, self.settings.context)
        run = uuid.uuid4().hex
        self.actors = []
        for node in ray.nodes():
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            if not node.get("Alive") or cpus < 1:
                continue
            pinned = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            self.actors += [JudgeActor.options(scheduling_strategy=pinned).remote(self.settings, run)
                            for _ in range(actors_per_node or cpus)]
        if not self.actors:
            raise RuntimeError("ray: no live node offers a CPU (is ray.init called, and the cluster up?)")

    def nodes(self) -> list[str]:
        """The node of each actor, in order."""
        return ray.get([actor.node.remote() for actor in self.actors])

    def score_batch(self, samples: Sequence[tuple[str, str]], *, tr: bool = True) -> list[Verdict]:
        """Verdicts of (problem id, completion) pairs, in their order; ``tr``: as ``ProblemSet.submit``'s."""
        manifests = [str(find_problem(self.problems, problem_id).manifest) for problem_id, _ in samples]
        alive = list(self.actors)
        placed = place([problem_id for problem_id, _ in samples], [0] * len(alive))
        waiting = {}  # ref -> (sample index, actor)
        for index, (problem_id, completion) in enumerate(samples):
            actor = alive[placed[problem_id]]
            waiting[actor.score.remote(manifests[index], index, completion, not tr)] = (index, actor)
        verdicts: list[Verdict | None] = [None] * len(samples)
        while waiting:
            done, _ = ray.wait(list(waiting), num_returns=1)
            index, actor = waiting.pop(done[0])
            try:
                verdicts[index] = Verdict.from_dict(ray.get(done[0]))
                continue
            except RayActorError as exc:
                lost = exc
            if actor in alive:
                alive.remove(actor)
                self.actors.remove(actor)
            problem_id, completion = samples[index]
            if not alive:
                verdicts[index] = Verdict(problem_id, None, f"{ENGINE_ERROR}: every judge was lost ({lost})")
                continue
            again = alive[placed[problem_id] % len(alive)]  # the problem's samples still go to one actor
            waiting[again.score.remote(manifests[index], index, completion, not tr)] = (index, again)
        return [verdict for verdict in verdicts if verdict is not None]

    def close(self) -> None:
        ray.get([actor.close.remote() for actor in self.actors])
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
