"""Progress of the long steps that are not pytest items: environment builds, generation, debugging rounds.

Drawn with tqdm on stderr, and only where a person watches: never under ``-q``, never on an xdist worker, and
(tqdm's own rule) never where stderr is not a terminal, so logs, CI output and pytest's own progress line stay
as they are. Each bar is cleared when its step ends.
"""

from __future__ import annotations

import pytest
from tqdm import tqdm


def wanted(config: pytest.Config) -> bool:
    """Whether this process may draw bars: not quiet, and not an xdist worker (its stderr is not the user's)."""
    return config.get_verbosity() >= 0 and not hasattr(config, "workerinput")


def bar(total: int, description: str, unit: str, shown: bool) -> tqdm:
    """A bar of ``total`` steps; ``disable=None`` lets tqdm stay silent where stderr is not a terminal."""
    return tqdm(total=total, desc=description, unit=unit, leave=False, dynamic_ncols=True,
                disable=None if shown else True)
