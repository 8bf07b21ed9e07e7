"""``repoexec build --classes`` on a repository written here: which classes are picked and why the others are not,
their tests from the project's suite, their context and descriptions (from docstrings, or from a model on
loopback), and the built problems through the gate and scored with their references."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from generators.standalone import ModelOptions
from loopback import LoopbackServer, prompt_of
from pytest_repoexec.builder import BuildError
from pytest_repoexec.builder.classes import ClassOptions, pick_classes, suite_reason
from pytest_repoexec.builder.describe import docstring_descriptions
from pytest_repoexec.builder.pipeline import BuildOptions, build
from pytest_repoexec.builder.suite import SuiteRun
from pytest_repoexec.problem import load_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CART = '''\
from .errors import ShopError
from .prices import RATE, rounded


class Cart:
    """A shopping cart of priced items.

    Prices are in units; totals carry the tax rate. An empty cart cannot be paid.
    """

    def __init__(self):
        self.items = {}

    def add(self, name: str, price: float) -> int:
        """Put an item in the cart; the number of items."""
        if price < 0:
            raise ShopError("negative price")
        self.items[name] = price
        return len(self.items)

    def total(self):
        """The price of everything with tax, rounded."""
        if not self.items:
            raise ShopError("empty cart")
        return rounded(sum(self.items.values()) * RATE)


class Loner:
    """Counts by itself, needing nothing of the repository."""

    def __init__(self):
        self.count = 0

    def bump(self):
        """One more."""
        self.count += 1
        return self.count


class Half:
    """Prices, of which the tests look at one thing only."""

    def taxed(self, price):
        """The price with tax."""
        return price * RATE

    def untaxed(self, price):
        """The price without tax."""
        return price / RATE

    def label(self, price):
        """The price as text."""
        return f"{price * RATE:.2f}"


class Quiet:
    def taxed(self, price):
        return price * RATE


class _Hidden:
    """Private."""

    def taxed(self, price):
        """Tax."""
        return price * RATE


class Abstract:
    """Nothing but declarations."""

    def taxed(self, price):
        """Tax."""
'''
TESTS = '''\
import pytest

from shop.cart import Cart, Half, Loner, Quiet
from shop.errors import ShopError


def test_add():
    cart = Cart()
    assert cart.add("tea", 2.0) == 1
    with pytest.raises(ShopError):
        cart.add("bad", -1)


def test_total():
    cart = Cart()
    cart.add("tea", 2.0)
    cart.add("cake", 1.25)
    assert cart.total() == 6.5


def test_empty_total():
    with pytest.raises(ShopError):
        Cart().total()


def test_loner():
    assert Loner().bump() == 1


def test_half():
    assert Half().taxed(2) == 4


def test_quiet():
    assert Quiet().taxed(1) == 2
'''


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "shop").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "shop"\nversion = "0.1"\n')
    (root / "shop" / "__init__.py").write_text("")
    (root / "shop" / "errors.py").write_text("class ShopError(Exception):\n    pass\n")
    (root / "shop" / "prices.py").write_text("RATE = 2\n\n\ndef rounded(value):\n    return round(value, 2)\n")
    (root / "shop" / "cart.py").write_text(CART)
    (root / "tests" / "test_cart.py").write_text(TESTS)
    return root


def test_classes_are_picked_before_the_suite_with_reasons(shop: Path) -> None:
    picked = pick_classes(shop)
    assert [klass.name for klass in picked.classes] == ["Cart", "Loner", "Half", "Quiet"]
    assert dict(picked.skipped) == {"shop.cart:_Hidden": "private", "shop.cart:Abstract": "no method with a body",
                                    "shop.errors:ShopError": "no method with a body"}
    cart = picked.classes[0]
    assert [(m.name, m.signature, m.summary) for m in cart.methods] == [
        ("__init__", "__init__(self)", None),
        ("add", "add(self, name: str, price: float) -> int", "Put an item in the cart; the number of items."),
        ("total", "total(self)", "The price of everything with tax, rounded.")]
    assert cart.reference.startswith("class Cart:") and cart.reference.rstrip().endswith("* RATE)")
    assert [klass.name for klass in pick_classes(shop, ".", ClassOptions(private=True)).classes][-1] == "_Hidden"


def test_descriptions_from_docstrings(shop: Path) -> None:
    cart, _, _, quiet = pick_classes(shop).classes
    detailed, sketchy = docstring_descriptions(cart)
    assert detailed == ("A shopping cart of priced items.\n\nPrices are in units; totals carry the tax rate. An empty "
                        "cart cannot be paid.\n\nMembers:\n- `__init__(self)`\n- `add(self, name: str, price: float) "
                        "-> int`: Put an item in the cart; the number of items.\n- `total(self)`: The price of "
                        "everything with tax, rounded.")
    assert sketchy == "A shopping cart of priced items."
    assert docstring_descriptions(quiet) is None


def test_the_share_of_methods_the_suite_runs_decides(shop: Path) -> None:
    half = pick_classes(shop).classes[2]
    first = half.methods[0].body_lines[0]
    run = SuiteRun({"t.py::test_half": "passed", "t.py::test_fails": "failed"}, {},
                   {half.path: {"t.py::test_half": [first], "t.py::test_fails": [half.methods[1].body_lines[0]]}})
    assert suite_reason(half, run, ClassOptions()) == ("passing tests run under 66% of its methods "
                                                       "(--min-method-coverage)")
    assert suite_reason(half, run, ClassOptions(min_method_coverage=30)) is None  # 1 of 3
    assert suite_reason(half, SuiteRun({}, {}, {}), ClassOptions()) == "no passing test runs its methods"


def test_a_class_build_is_admitted_and_its_references_pass(shop: Path, tmp_path: Path, repoexec_cache: Path) -> None:
    out = tmp_path / "built" / "shop"
    options = BuildOptions(str(shop), out, repoexec_cache, classes=ClassOptions(),
                           gate_options=("--repoexec-mutants=3", "--repoexec-reruns=2"))
    report = build(options, say=lambda line: None)
    assert [(p["name"], p["tests"], p["verdict"]) for p in report.problems] == [("cart_Cart", 3, "admitted")], \
        report.problems
    assert report.problems[0]["line_coverage"] == 100.0 and report.problems[0]["tested_methods"] == 3
    assert dict(report.skipped) == {
        "shop.cart:_Hidden": "private", "shop.cart:Abstract": "no method with a body",
        "shop.errors:ShopError": "no method with a body",
        "shop.cart:Loner": "uses no other part of the repository",
        "shop.cart:Half": "passing tests run under 66% of its methods (--min-method-coverage)",
        "shop.cart:Quiet": "no docstring (describe it with --describe-model)"}
    manifest = tomllib.loads((out / "cart_Cart" / "problem.toml").read_text())
    assert (manifest["entry_point"], manifest["test_count"]) == ("Cart", 3)
    assert manifest["suite"] == ["tests/test_cart.py::test_add", "tests/test_cart.py::test_empty_total",
                                 "tests/test_cart.py::test_total"]
    assert "def rounded(value):" in manifest["prompt"]["context"]["full"]
    assert "class ShopError(Exception):" in manifest["prompt"]["context"]["full"]
    problem = load_problem(out / "cart_Cart" / "problem.toml", "sketchy")
    assert problem.description == "A shopping cart of priced items."
    assert problem.dependencies == ("ShopError", "RATE", "rounded")
    document = json.loads((out / "build-report.json").read_text())
    assert (document["kind"], document["found"], document["picked"], document["admitted"]) == ("classes", 7, 4, 1)
    assert document["mean_tests"] == 3 and document["skipped_by_reason"]["private"] == 1
    assert "classes found" in report.table()[0]
    scored = subprocess.run([sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider",
                             f"--repoexec-cache={repoexec_cache}"], capture_output=True, text=True, cwd=tmp_path)
    assert scored.returncode == 0 and "1 passed" in scored.stdout, scored.stdout[-2000:]


def _describer(body: dict) -> str:
    prompt = prompt_of(body)
    if "class `Quiet`" not in prompt and "class `Half`" not in prompt and "class `Cart`" not in prompt:
        return ""
    if "one line for each method" in prompt:
        return "```\nA thing that prices.\n- `taxed(self, price)`: the price with tax.\n```"
    return "A thing that prices things."


def test_a_model_writes_the_descriptions(shop: Path, tmp_path: Path, repoexec_cache: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server = LoopbackServer(_describer)
    try:
        classes = ClassOptions(describe_model="openai:test-model",
                               describe_options=ModelOptions(cache=tmp_path / "cache", base_url=server.url))
        out = tmp_path / "shop"
        report = build(BuildOptions(str(shop), out, repoexec_cache, classes=classes, gate=False), say=lambda x: None)
    finally:
        server.close()
    assert [p["name"] for p in report.problems] == ["cart_Cart", "cart_Quiet"]  # Quiet has no docstring
    quiet = tomllib.loads((out / "cart_Quiet" / "problem.toml").read_text())["prompt"]
    assert quiet["description_detailed"] == "A thing that prices.\n- `taxed(self, price)`: the price with tax."
    assert quiet["description_sketchy"] == "A thing that prices things."
    asked = [prompt_of(body) for _, body in server.requests if body]  # /v1/models has no body
    assert sum("class `Quiet`" in prompt for prompt in asked) == 2  # one a form


def test_a_repository_without_a_fitting_class_stops_the_build(shop: Path, tmp_path: Path,
                                                             repoexec_cache: Path) -> None:
    (shop / "tests" / "test_cart.py").write_text("def test_nothing():\n    assert True\n")
    with pytest.raises(BuildError, match="picking classes: no class uses its repository, has its methods run"):
        build(BuildOptions(str(shop), tmp_path / "shop", repoexec_cache, classes=ClassOptions(), gate=False),
              say=lambda line: None)
    assert not (tmp_path / "shop").exists()
