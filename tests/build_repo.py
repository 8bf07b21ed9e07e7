"""A small repository with its own test suite, written by the build tests: documented functions with in-file
and cross-file dependencies, a class, functions each build step must leave out for a reason of its own, a
conftest.py fixture, a re-exported cross-file dependency, a test that fails with the reference and a function
only a fixture's set-up runs."""

from __future__ import annotations

from pathlib import Path

FILES = {
    "pyproject.toml": '[project]\nname = "tally"\nversion = "0.1"\n',
    "setup.py": 'def configure():\n    """Not a candidate: a setup script."""\n    x = 1\n    return x\n',
    "tally/__init__.py": "from .core import total\n",
    "tally/units.py": '''\
"""Amounts and cents."""

FACTOR = 100


def to_cents(amount):
    """Convert an amount in units to whole cents."""
    value = round(amount * FACTOR)
    return int(value)


def _private_helper(amount):
    """Private: picked only with --private."""
    doubled = amount * 2
    return doubled
''',
    "tally/fmt/__init__.py": "from .text import shout\n",
    "tally/fmt/text.py": '''\
def shout(text):
    """The text in capitals, with an exclamation mark."""
    loud = text.upper()
    return loud + "!"
''',
    "tally/core.py": '''\
import math
import os
from .units import FACTOR, to_cents
from .fmt import shout

SEPARATOR = ", "
UNUSED = 1


def total(amounts):
    """The total of the amounts, in cents."""
    cents = [to_cents(amount) for amount in amounts]
    return sum(cents)


def describe(amounts):
    """The amounts in cents, then the whole units of their total in brackets."""
    parts = [str(to_cents(amount)) for amount in amounts]
    return SEPARATOR.join(parts) + " (" + str(math.floor(total(amounts) / FACTOR)) + ")"


def headline(amounts):
    """The total as a headline."""
    text = "total " + str(total(amounts))
    return shout(text)


def undocumented(value):
    doubled = value * 2
    return doubled


def tiny(value):
    """Trivial: returns its argument."""
    return value


def doubled(value):
    """Twice the value (its test expects something else, so it fails with this reference)."""
    result = value * 2
    return result


def prepared(value):
    """Only a fixture's set-up runs this, never a test's call."""
    result = value - 1
    return result


class Account:
    """An account of amounts in cents."""

    def __init__(self, owner):
        self.owner = owner
        self.entries = []

    @property
    def name(self):
        """The owner's name."""
        return self.owner

    def add(self, amount):
        """Add an amount given in units; return the balance in cents."""
        self.entries.append(to_cents(amount))
        return self.balance()

    def balance(self):
        """The balance in cents."""
        cents = sum(self.entries)
        return cents

    def report(self):
        """Not used by add: it stays out of add's context."""
        lines = [str(entry) for entry in self.entries]
        return "\\n".join(lines)
''',
    "docs/conf.py": 'def setup(app):\n    """Not a candidate: docs."""\n    x = app\n    return x\n',
    "tests/conftest.py": '''\
import pytest

from tally.core import Account, prepared


@pytest.fixture
def account():
    prepared(3)
    return Account("ann")
''',
    "tests/test_core.py": '''\
import pytest

from tally.core import describe, doubled, headline, total


def test_total():
    assert total([1, 2.5]) == 350


def test_total_wrong():
    assert total([1]) == 1


def test_headline():
    assert headline([1]) == "TOTAL 100!"


@pytest.mark.parametrize("amounts, expected", [([1], "100 (1)"), ([1, 2], "100, 200 (3)")])
def test_describe(amounts, expected):
    assert describe(amounts) == expected


def test_doubled():
    assert doubled(2) == 5


class TestAccount:
    def test_add(self, account):
        assert account.add(1.5) == 150

    def test_balance(self, account):
        account.add(1)
        account.add(2)
        assert account.balance() == 300
''',
    "tests/test_units.py": '''\
from tally.units import to_cents


def test_to_cents():
    assert to_cents(1.25) == 125
''',
}


def write_build_repo(root: Path) -> Path:
    """Write the repository under ``root`` and return it."""
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root
