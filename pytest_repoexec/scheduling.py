"""The order xdist's workers take problems in: a problem's samples on one worker, the slowest problems first,
and no worker idle while another still has samples waiting.

xdist's ``loadscope`` keeps the items of one scope (here a problem manifest: its samples) on one worker, where the
problem's zygotes are, and hands the scopes out in the order collected. Here each problem is expected to cost its
samples times what one of its samples took when it was last run (``store.ProblemTimes``), and the costliest
problems are handed out first, so that the last ones to start are short (longest processing time first), except
that a worker takes the costliest problem of a project whose warm process it still keeps before one of another
project (a warm process per project and worker, the least recently used out: costliest first across projects
started one again for most problems: 273 times in a run of RepoExec's 388, 15% of its CPU). Where
the estimates are wrong, or missing (a first run), a worker that runs out of problems while another still has
samples queued takes the later half of them (xdist's ``steal`` command, as its ``worksteal`` scheduler uses it):
that problem's zygotes are then made on two workers, which costs less than a worker waiting.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

DEFAULT_SECONDS = 1.0  # a sample's expected time, and its zygotes' start, where no problem of the run has one


class ProblemScheduling(LoadScopeScheduling):
    """``loadscope`` with its units (problems) ordered by expected cost and work taken from a busy worker at the
    end. ``problems``: the scopes that are problems (a manifest's node id), each with its problem id, the only
    ones split (another test module's tests stay together, as loadscope keeps them); ``times``: by problem scope,
    the expected seconds of one of its samples and of starting its zygotes (``store.ProblemTimes``)."""

    def __init__(self, config: pytest.Config, log: Any = None, problems: Mapping[str, str] = {},
                 times: Mapping[str, Mapping[str, float]] = {}) -> None:
        super().__init__(config, log)
        self.problems = set(problems)
        self.projects = {scope: problem.partition("/")[0] for scope, problem in problems.items()}
        self.kept = max(int(config.getoption("repoexec_warm_processes", 4) or 1), 1)  # warm processes a worker keeps
        self.held: dict[Any, list[str]] = {}  # node -> the projects of its last problems, most recent last
        self.seconds = {scope: known["sample"] for scope, known in times.items() if known.get("sample", 0) > 0}
        self.starts = {scope: known["start"] for scope, known in times.items() if "start" in known}
        self.default = _mean(self.seconds.values(), DEFAULT_SECONDS)
        self.default_start = _mean(self.starts.values(), DEFAULT_SECONDS)
        self.index: dict[str, int] = {}  # node id -> its place in the collection (the same on every worker)
        self.stealing: dict[Any, Any] = {}  # victim node -> the node waiting for what is taken from it

    def _cost(self, scope: str, count: int) -> float:
        return count * self.seconds.get(scope, self.default)

    def schedule(self) -> None:
        """Once every worker has collected: the problems as units, costliest first (unless
        ``--no-loadscope-reorder``, an option of newer xdist releases: as collected), one to each worker, then a second where there are enough."""
        if self.collection is not None:  # a worker added later: the others' work as it is
            for node in self.nodes:
                self._reschedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        units: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
        ordered = sorted(units.items(), key=lambda unit: -self._cost(unit[0], len(unit[1]))) \
            if getattr(self.config.option, "loadscopereorder", True) else units.items()  # older xdist lacks it
        self.workqueue = OrderedDict(ordered)
        for node in self.nodes:
            if self.workqueue:
                self._assign_work_unit(node)
        for node in self.nodes:
            self._reschedule(node)

    def _assign_work_unit(self, node: Any) -> None:
        """The first queued problem (the costliest) of a project whose warm process the node keeps, else the first."""
        held = self.held.setdefault(node, [])
        scope = next((scope for scope in self.workqueue if self.projects.get(scope) in held), None) if held else None
        if scope is None:
            scope = next(iter(self.workqueue))
        unit = self.workqueue.pop(scope)
        project = self.projects.get(scope)
        if project is not None:
            if project in held:
                held.remove(project)
            held.append(project)
            del held[:-self.kept]
        self.assigned_work.setdefault(node, {})[scope] = unit
        node.send_runtest_some([self._place(nodeid) for nodeid, done in unit.items() if not done])

    @property
    def tests_finished(self) -> bool:
        return super().tests_finished and not self.stealing

    def _reschedule(self, node: Any) -> None:
        """More problems while there are some; then, once the node is down to its last sample (a worker runs an
        item only when it has the next one, or is told to stop), the later half of another's queued samples."""
        if node.shutting_down or node in self.stealing.values():
            return
        if self.workqueue:
            if self._pending_of(self.assigned_work[node]) <= 2:
                self._assign_work_unit(node)
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        victim, taken = self._victim(node)
        if victim is None:
            node.shutdown()
            return
        self.stealing[victim] = node
        victim.send_steal([self._place(nodeid) for nodeid in taken])

    def _victim(self, thief: Any) -> tuple[Any, list[str]]:
        """The node whose queued samples (not the one it runs, nor the next it holds) gain most from being shared,
        and the ones to take: of the n queued samples of its last problem, t seconds each, the later
        k = (n t - s) / 2t, s being what that problem's zygotes cost to start (the thief pays it), so that the two
        end together; (None, []) where no k is 1 or more."""
        best, taken, gain = None, [], 0.0
        for node, units in self.assigned_work.items():
            if node is thief or node in self.stealing:
                continue
            queued = [(scope, nodeid) for scope, unit in units.items() for nodeid, done in unit.items() if not done][2:]
            if not queued:
                continue
            scope = queued[-1][0]
            if scope not in self.problems:
                continue
            same = [nodeid for owner, nodeid in queued if owner == scope]
            each, start = self.seconds.get(scope, self.default), self.starts.get(scope, self.default_start)
            count = int((len(same) * each - start) / (2 * each)) if each > 0 else 0
            if count >= 1 and count * each > gain:
                best, taken, gain = node, same[len(same) - count:], count * each
        return best, taken

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        """The victim's answer to ``steal``: the samples it gave up (all asked for, or none) go to the thief."""
        thief = self.stealing.pop(node)
        collection = self.registered_collections[node]
        moved: dict[str, dict[str, bool]] = {}
        for index in indices:
            nodeid = collection[index]
            scope = self._split_scope(nodeid)
            del self.assigned_work[node][scope][nodeid]
            moved.setdefault(scope, {})[nodeid] = False
        if thief not in self.assigned_work or thief.shutting_down:  # it went down meanwhile: to whoever asks
            self.workqueue.update(moved)
            for other in self.nodes:
                self._reschedule(other)
            return
        if not moved:  # the victim had started them: look elsewhere, or stop
            self._reschedule(thief)
            return
        self._give(thief, moved)

    def _give(self, node: Any, units: dict[str, dict[str, bool]]) -> None:
        for scope, unit in units.items():
            self.assigned_work[node].setdefault(scope, {}).update(unit)
        node.send_runtest_some([self._place(nodeid) for unit in units.values() for nodeid in unit])

    def _place(self, nodeid: str) -> int:
        if not self.index:
            self.index = {nodeid: place for place, nodeid in enumerate(self.collection or ())}
        return self.index[nodeid]

    def remove_node(self, node: Any) -> str | None:
        """A node that ends (or dies) while a steal from it is under way: its thief looks elsewhere."""
        thief = self.stealing.pop(node, None)
        crashed = super().remove_node(node)
        if thief is not None and thief in self.assigned_work:
            self._reschedule(thief)
        return crashed


def _mean(values: Any, default: float) -> float:
    known = list(values)
    return sum(known) / len(known) if known else default
