"""The xdist controller's own collection, made only to learn which problems the run selected.

xdist leaves collection to the workers and starts them before anyone collects; but the completions must be
made before the workers start (the model is asked once, with every selected prompt, and the workers receive
the completions in ``workerinput``). So the controller runs pytest's own collection, with every plugin's
selection applied (``-k``, ``-m``, ``--deselect``, ``--ignore``, ``--lf``/``--ff``, node ids), then puts the
session back as it found it: the workers' collection is the one that runs and is reported. The scoring
session keeps this collection to problem manifests (no test module is imported on the controller) and
leaves malformed manifests for the workers to report.
"""

from __future__ import annotations

import pytest


def collect_on_controller(session: pytest.Session) -> list[pytest.Item]:
    """The items that pytest selects for this run, collected in this process."""
    try:
        return list(session.perform_collect())
    finally:
        session.items = []
        session.testscollected = 0
        session.testsfailed = 0
        session.shouldfail = session.shouldstop = False


class Unread(pytest.File):
    """A test module named on the command line, left unimported on the controller: its workers collect it."""

    def collect(self) -> list[pytest.Item]:
        return []
