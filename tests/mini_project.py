"""A two-problem project written into a temporary folder, for tests that need a whole run but not the
shipped set: one function with a cross-file dependency, one static method, one pickled expected output."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

UTIL = '''\
SCALE = 10


def clamp(value, low, high):
    return max(low, min(value, high))
'''

CORE = '''\
from .util import SCALE, clamp


def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    return clamp(value * SCALE, 0, 100)


class Pair:
    def __init__(self, left, right):
        self.left, self.right = left, right

    @staticmethod
    def swap(pair):
        """The pair's items in the other order."""
        return (pair[1], pair[0])
'''

SCALED_REFERENCE = '''\
def scaled(value):
    """Scale a value and clamp it to [0, 100]."""
    return clamp(value * SCALE, 0, 100)
'''

SCALED_TESTS = '''\
import os
import pickle

from .core import scaled


def test_middle():
    assert scaled(3) == 30


def test_high():
    assert scaled(50) == 100


def test_low():
    assert scaled(-1) == 0


def test_pickled():
    with open(os.path.join(os.environ["REPOEXEC_EXPECTED"], "seven.pkl"), "rb") as handle:
        assert scaled(7) == pickle.load(handle)
'''

SWAP_TESTS = '''\
from .core import Pair


def test_swap():
    assert Pair.swap((1, 2)) == (2, 1)


def test_swap_strings():
    assert Pair.swap(("a", "b")) == ("b", "a")
'''


def write_mini_project(root: Path, name: str = "mini") -> Path:
    """Write the project under ``root/name`` and return that folder."""
    project = root / name
    package = project / "repo" / "mini"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "util.py").write_text(UTIL)
    (package / "core.py").write_text(CORE)
    (project / "project.toml").write_text('[source]\npath = "repo"\n')

    scaled = project / "scaled"
    (scaled / "expected").mkdir(parents=True)
    (scaled / "expected" / "seven.pkl").write_bytes(pickle.dumps(70))
    (scaled / "test_scaled.py").write_text(SCALED_TESTS)
    (scaled / "problem.toml").write_text(
        'module = "mini.core"\nentry_point = "scaled"\ntest_count = 4\nnumber = 1\n'
        f"reference = '''\n{SCALED_REFERENCE}'''\n\n"
        f"[prompt.context]\nfull = '''\nfrom .util import SCALE, clamp\n\n{UTIL}'''\n"
    )

    swap = project / "swap"
    swap.mkdir()
    (swap / "test_swap.py").write_text(SWAP_TESTS)
    swap_reference = textwrap.dedent(CORE.split("    @staticmethod\n")[1].join(["    @staticmethod\n", ""]))
    (swap / "problem.toml").write_text(
        'module = "mini.core"\nentry_point = "Pair.swap"\ntest_count = 2\nnumber = 2\n'
        f"reference = '''\n{swap_reference}'''\n\n"
        "[prompt.context]\nfull = '''\nclass Pair:\n    def __init__(self, left, right):\n"
        "        self.left, self.right = left, right\n'''\n"
    )
    return project
