"""A small repository with classes, for the agent's tests: ``Rect(Shape)`` whose method ``area_in`` (the problem)
needs ``to_square`` of another module, which its own module does not import."""

from __future__ import annotations

from pathlib import Path

BASE = '''\
class Shape:
    """Something with an area."""

    kind = "shape"

    def area(self) -> float:
        raise NotImplementedError

    def describe(self, precision: int = 2) -> str:
        """The shape's kind and area."""
        return f"{self.kind}: {round(self.area(), precision)}"
'''

UNITS = '''\
FACTORS = {"m": 1.0, "cm": 0.01}


def to_square(value, unit):
    """Square metres of an area measured in `unit` squared."""
    return value * FACTORS[unit] ** 2
'''

GEOMETRY = '''\
from .base import Shape


class Rect(Shape):
    kind = "rect"

    def __init__(self, width, height):
        self.width, self.height = width, height

    def area(self):
        return self.width * self.height

    def area_in(self, unit):
        """The area in square metres, the sides being measured in `unit`."""
        from .units import to_square
        return to_square(self.area(), unit)
'''

REFERENCE = '''\
def area_in(self, unit):
    """The area in square metres, the sides being measured in `unit`."""
    from .units import to_square
    return to_square(self.area(), unit)
'''

TESTS = '''\
from .geometry import Rect


def test_metres():
    assert Rect(2, 3).area_in("m") == 6.0


def test_centimetres():
    assert abs(Rect(200, 300).area_in("cm") - 6.0) < 1e-9
'''

WRONG = "```python\ndef area_in(self, unit):\n    return to_square(self.area(), unit)\n```"  # NameError
RIGHT = "```python\ndef area_in(self, unit):\n    from shapes.units import to_square\n    return to_square(self.area(), unit)\n```"


def write_agent_project(root: Path) -> Path:
    """The project ``shapes`` under ``root``, with its one problem ``area_in``; returns the project folder."""
    project = root / "shapes"
    package = project / "repo" / "shapes"
    package.mkdir(parents=True)
    for name, text in {"__init__.py": "", "base.py": BASE, "units.py": UNITS, "geometry.py": GEOMETRY}.items():
        (package / name).write_text(text)
    (project / "project.toml").write_text('[source]\npath = "repo"\n')
    problem = project / "area_in"
    problem.mkdir()
    (problem / "test_area_in.py").write_text(TESTS)
    (problem / "problem.toml").write_text(
        'module = "shapes.geometry"\nentry_point = "Rect.area_in"\ntest_count = 2\n'
        f"reference = '''\n{REFERENCE}'''\n\n[prompt.context]\nfull = '''\nfrom .base import Shape\n'''\n"
    )
    return project
