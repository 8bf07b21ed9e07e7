"""``repoexec paraphrase`` on a class benchmark built here: the benchmark's identifiers case-flipped in the
repository's code, its tests and the manifests (strings, comments and a str's ``encode`` untouched), the
paraphrased references admitted and passing, a problem whose test names a method in a string dropped, a
collision with an existing name reported with the file and the identifier, and the members read where only the
trace of the tests on the original can tell the object (a mixin's ``self.cls()``, a factory's result) renamed,
with a test's override of a renamed member and a sibling's definition a renamed read finds; a member that a base
outside the repository defines (and calls) kept as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_repoexec.builder.classes import ClassOptions
from pytest_repoexec.builder.pipeline import BuildOptions, build
from pytest_repoexec.paraphrase import ParaphraseError
from pytest_repoexec.paraphrase.index import Index
from pytest_repoexec.paraphrase.manifest import benchmark_names, rewrite_manifest
from pytest_repoexec.paraphrase.names import choose, variants
from pytest_repoexec.paraphrase.project import ParaphraseOptions, paraphrase
from pytest_repoexec.paraphrase.rename import Renames
from pytest_repoexec.paraphrase.trace import Read, Traced

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CORE = '''\
from .errors import CodecError

PREFIX = "x:"


class Codec:
    """Encodes text behind a prefix.

    What it encodes it can decode.
    """

    def __init__(self, prefix=PREFIX):
        self.prefix = prefix

    def encode(self, text):
        """The text behind the prefix, as bytes."""
        # encode: a comment keeps its spelling
        if not isinstance(text, str):
            raise CodecError("encode needs text")
        return (self.prefix + text).encode("utf-8")

    def decode(self, data):
        """The text back from bytes."""
        text = data.decode("utf-8")
        if not text.startswith(self.prefix):
            raise CodecError("no prefix")
        return text[len(self.prefix):]

    def roundtrip(self, text):
        """The text encoded and decoded again."""
        return self.decode(self.encode(text))


class Registry:
    """Names whose handlers are its own methods."""

    def __init__(self):
        self.names = []

    def register(self, name):
        """Remember a name; how many there are."""
        if not name:
            raise CodecError("no name")
        self.names.append(name)
        return len(self.names)

    def handler(self, name):
        """The method called name."""
        return getattr(self, name)
'''
TESTS = '''\
import pytest

from codec import Codec
from codec.core import Registry
from codec.errors import CodecError


def test_encode():
    codec = Codec()
    assert codec.encode("a") == b"x:a"
    assert "a".encode() == b"a"


def test_decode():
    assert Codec().decode(b"x:b") == "b"
    with pytest.raises(CodecError):
        Codec().encode(1)


def test_roundtrip():
    assert Codec("y:").roundtrip("c") == "c"


def test_registry():
    registry = Registry()
    assert registry.register("register") == 1
    assert registry.handler("register") is not None
'''

SHELF = '''\
import collections.abc

from .errors import ShelfError


class Shelf(collections.abc.MutableSequence):
    """Holds items, the newest last."""

    def __init__(self, items=()):
        self.items = list(items)

    def __getitem__(self, index):
        return self.items[index]

    def __setitem__(self, index, item):
        self.items[index] = item

    def __delitem__(self, index):
        del self.items[index]

    def __len__(self):
        return len(self.items)

    def insert(self, index, item):
        """Insert an item as weighed (MutableSequence.append calls it)."""
        self.items.insert(index, self.weigh(item))

    def weigh(self, item):
        """The item as kept."""
        return item

    def put(self, item):
        """Add an item; how many there are."""
        self.append(item)
        return len(self.items)

    def last(self):
        """The newest item."""
        if not self.items:
            raise ShelfError("empty")
        return self.items[-1]


def make_shelf(*items):
    return Shelf(items)
'''
SHELF_TESTS = '''\
import unittest

from shelf.core import Shelf, make_shelf


class ShelfMixin:
    cls = None

    def test_put(self):
        shelf = self.cls()
        assert shelf.put("a") == 1
        assert shelf.last() == "a"

    def test_weigh_in_a_subclass(self):
        class Loud(self.cls):
            @staticmethod
            def weigh(item):
                return item.upper()

        shelf = Loud()
        shelf.put("a")
        assert shelf.last() == "A"


class ShelfTests(ShelfMixin, unittest.TestCase):
    cls = Shelf


def test_factory():
    shelf = make_shelf("b")
    assert shelf.last() == "b", "last is the newest"
'''
# the Shelf's test subclasses the class under test, which cannot be judged apart: judged beside its candidate
GATE = ("--repoexec-mutants=0", "--repoexec-reruns=2", "--repoexec-judge=apart-or-in-process")


def write_codec(root: Path) -> Path:
    (root / "codec").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "codec"\nversion = "0.1"\n')
    (root / "codec" / "__init__.py").write_text("from .core import Codec\n")
    (root / "codec" / "errors.py").write_text("class CodecError(Exception):\n    pass\n")
    (root / "codec" / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(TESTS)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, repoexec_cache: Path) -> Path:
    root = tmp_path_factory.mktemp("paraphrase")
    out = root / "built" / "codec"
    report = build(BuildOptions(str(write_codec(root / "src")), out, repoexec_cache, classes=ClassOptions(),
                                gate_options=("--repoexec-mutants=0", "--repoexec-reruns=2")), say=lambda line: None)
    assert sorted(p["name"] for p in report.problems if p["verdict"] == "admitted") == ["core_Codec", "core_Registry"]
    return out


@pytest.fixture(scope="module")
def built_shelf(tmp_path_factory: pytest.TempPathFactory, repoexec_cache: Path) -> Path:
    root = tmp_path_factory.mktemp("traced")
    (root / "src" / "shelf").mkdir(parents=True)
    (root / "src" / "tests").mkdir()
    (root / "src" / "pyproject.toml").write_text('[project]\nname = "shelf"\nversion = "0.1"\n')
    (root / "src" / "shelf" / "__init__.py").write_text("")
    (root / "src" / "shelf" / "errors.py").write_text("class ShelfError(Exception):\n    pass\n")
    (root / "src" / "shelf" / "core.py").write_text(SHELF)
    (root / "src" / "tests" / "test_shelf.py").write_text(SHELF_TESTS)
    out = root / "built" / "shelf"
    report = build(BuildOptions(str(root / "src"), out, repoexec_cache, classes=ClassOptions(), gate_options=GATE),
                   say=lambda line: None)
    assert [p["name"] for p in report.problems if p["verdict"] == "admitted"] == ["core_Shelf"]
    return out


def test_flips_are_deterministic_and_step_past_taken_names() -> None:
    assert variants("encode") == ["eNcOdE", "EnCoDe"]
    assert choose(["encode", "Codec"], {"eNcOdE": "codec/other.py"}) == (
        {"Codec": "COdEc", "encode": "EnCoDe"}, ["encode: eNcOdE is already a name in codec/other.py"])
    with pytest.raises(ParaphraseError, match=r"identifier 'encode'.*eNcOdE is already a name in a\.py.*"
                                              r"EnCoDe is already a name in b\.py"):
        choose(["encode"], {"eNcOdE": "a.py", "EnCoDe": "b.py"})


def test_names_follow_their_bindings_not_their_spelling(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .core import total as summed, total\n__all__ = ['total']\n")
    (tmp_path / "pkg" / "core.py").write_text("def total(items):\n    return sum(items)\n")
    (tmp_path / "use.py").write_text(
        "import pkg.core as core\nimport pkg\nfrom pkg import summed\n\n\n"
        "def run(total, other):\n    other.total()\n    return core.total([1]) + pkg.total([total]) + summed([])\n\n\n"
        "def again(items):\n    return pkg.core.total(items, total=1)  # total\n")
    renames = Renames(Index(tmp_path, "."), {"total": "tOtAl"}, {("pkg.core", "total")})
    assert renames.rewrite((tmp_path / "pkg" / "__init__.py").read_text(), "pkg") == \
        "from .core import tOtAl as summed, tOtAl\n__all__ = ['tOtAl']\n"
    assert renames.rewrite((tmp_path / "use.py").read_text(), "use") == (
        "import pkg.core as core\nimport pkg\nfrom pkg import summed\n\n\n"
        "def run(total, other):\n    other.total()\n    return core.tOtAl([1]) + pkg.tOtAl([total]) + summed([])\n\n\n"
        "def again(items):\n    return pkg.core.tOtAl(items, total=1)  # total\n")


def test_a_paraphrase_renames_keeps_what_passes_and_drops_what_breaks(built: Path, tmp_path: Path,
                                                                        repoexec_cache: Path) -> None:
    out = tmp_path / "codec"
    report = paraphrase(ParaphraseOptions(built, out, repoexec_cache, gate_options=("--repoexec-mutants=0",
                                                                                    "--repoexec-reruns=2")),
                        say=lambda line: None)
    assert report.renamed == {"Codec": "COdEc", "Registry": "REgIsTrY", "decode": "dEcOdE", "encode": "eNcOdE",
                              "handler": "hAnDlEr", "register": "rEgIsTeR", "roundtrip": "rOuNdTrIp"}
    assert [(p["name"], p["new_entry_point"], p["verdict"]) for p in report.problems] == [
        ("core_Codec", "COdEc", "admitted"), ("core_Registry", "REgIsTrY", "dropped")]
    assert any("test_registry" in reason for reason in report.problems[1]["reasons"]), report.problems[1]
    assert (out / "rejected" / "core_Registry" / "rejected.toml").is_file()
    assert "dropped core_Registry (Registry)" in report.table()[2]

    core = (out / "repo" / "codec" / "core.py").read_text()
    assert "class COdEc:" in core and "def eNcOdE(self, text):" in core and "self.dEcOdE(self.eNcOdE(text))" in core
    assert '# encode: a comment keeps its spelling' in core and 'CodecError("encode needs text")' in core
    assert '(self.prefix + text).encode("utf-8")' in core and 'data.decode("utf-8")' in core
    assert (out / "repo" / "codec" / "__init__.py").read_text() == "from .core import COdEc\n"
    tests = (out / "repo" / "tests" / "test_core.py").read_text()
    assert "codec = COdEc()\n    assert codec.eNcOdE(\"a\")" in tests and 'assert "a".encode() == b"a"' in tests
    assert 'registry.rEgIsTeR("register")' in tests

    manifest = tomllib.loads((out / "core_Codec" / "problem.toml").read_text())
    assert manifest["entry_point"] == "COdEc" and manifest["reference"].startswith("class COdEc:")
    assert "def rOuNdTrIp(self, text):" in manifest["reference"]
    assert manifest["suite"] == ["tests/test_core.py::test_decode", "tests/test_core.py::test_encode",
                                 "tests/test_core.py::test_roundtrip"]
    assert "- `eNcOdE(self, text)`: The text behind the prefix, as bytes." in manifest["prompt"]["description_detailed"]
    assert manifest["prompt"]["description_sketchy"] == "Encodes text behind a prefix."
    assert tomllib.loads((out / "project.toml").read_text())["source"] == {"path": "repo"}
    document = json.loads((out / "paraphrase-report.json").read_text())
    assert (document["problems_in"], document["admitted"], document["kept_share"]) == (2, 1, 0.5)

    scored = subprocess.run([sys.executable, "-m", "pytest", str(out), "-q", "-p", "no:cacheprovider",
                             f"--repoexec-cache={repoexec_cache}"], capture_output=True, text=True, cwd=tmp_path)
    assert scored.returncode == 0 and "1 passed" in scored.stdout, scored.stdout[-2000:]


def test_a_collision_names_the_file_and_the_identifier(built: Path, tmp_path: Path, repoexec_cache: Path) -> None:
    taken = tmp_path / "taken"
    subprocess.run(["cp", "-r", str(built), str(taken)], check=True)
    (taken / "repo" / "codec" / "names.py").write_text("eNcOdE = 1\nEnCoDe = 2\n")
    with pytest.raises(ParaphraseError, match=r"collision: identifier 'encode'.*eNcOdE is already a name in "
                                              r"codec/names\.py"):
        paraphrase(ParaphraseOptions(taken, tmp_path / "out", repoexec_cache, gate=False), say=lambda line: None)
    assert not (tmp_path / "out").exists()
    (taken / "repo" / "codec" / "names.py").write_text("eNcOdE = 1\n")
    report = paraphrase(ParaphraseOptions(taken, tmp_path / "out", repoexec_cache, gate=False), say=lambda line: None)
    assert report.renamed["encode"] == "EnCoDe"
    assert report.passed_over == ["encode: eNcOdE is already a name in codec/names.py"]
    assert "def EnCoDe(self, text):" in (tmp_path / "out" / "repo" / "codec" / "core.py").read_text()


def test_a_method_problem_manifest_in_the_new_spellings(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "prices.py").write_text("def rounded(value):\n    return round(value, 2)\n")
    (tmp_path / "shop" / "cart.py").write_text(
        "from .prices import rounded\n\n\nclass Cart:\n    def add(self, price):\n        self.items.append("
        "rounded(price))\n        return self.total()\n\n    def total(self):\n        return sum(self.items)\n")
    (tmp_path / "tests" / "test_cart.py").write_text(
        "from shop.cart import Cart\n\n\nclass TestCart:\n    def test_add(self):\n        assert Cart().add(1)\n")
    renames = Renames(Index(tmp_path, "."), {})
    key, own = benchmark_names(renames, "shop.cart", "Cart.add")
    assert (key, own) == (("shop.cart", "Cart"), ["Cart", "add"])
    renames.names, _ = choose([*own, "rounded"], {})
    renames.top, renames.own = {key, ("shop.prices", "rounded")}, {key: {"add"}}
    context = "from .prices import rounded\n\n\ndef rounded(value):\n    return round(value, 2)\n\n\nclass Cart:\n" \
              "    def total(self):\n        return sum(self.items)\n"
    manifest = {"module": "shop.cart", "entry_point": "Cart.add", "dependencies": ["rounded"],
                "reference": 'def add(self, price):\n    """add it"""\n    self.items.append(rounded(price))\n'
                             "    return self.total()\n",
                "suite": ["tests/test_cart.py::TestCart::test_add"], "prompt": {"context": {"full": context}}}
    assert rewrite_manifest(manifest, renames, own) == {
        "module": "shop.cart", "entry_point": "CArT.aDd", "dependencies": ["rOuNdEd"],
        "reference": 'def aDd(self, price):\n    """add it"""\n    self.items.append(rOuNdEd(price))\n'
                     "    return self.total()\n",
        "suite": ["tests/test_cart.py::TestCart::test_add"],
        "prompt": {"context": {"full": context.replace("rounded", "rOuNdEd").replace("Cart", "CArT")}}}
    assert renames.rewrite((tmp_path / "tests" / "test_cart.py").read_text(), "tests.test_cart").endswith(
        "assert CArT().aDd(1)\n")


def test_the_trace_renames_reads_and_overrides_static_typing_cannot_tell(built_shelf: Path, tmp_path: Path,
                                                                         repoexec_cache: Path) -> None:
    """Also: ``insert``, which ``MutableSequence.append`` calls, keeps its name; a test's subclass (of
    ``self.cls``) overrides ``weigh``, which the base calls by its new name, so the override is renamed."""
    static = paraphrase(ParaphraseOptions(built_shelf, tmp_path / "static", repoexec_cache, gate_options=GATE,
                                          trace=False), say=lambda line: None)
    assert [(p["name"], p["verdict"]) for p in static.problems] == [("core_Shelf", "dropped")]
    assert static.traced_sites == 0

    out = tmp_path / "shelf"
    report = paraphrase(ParaphraseOptions(built_shelf, out, repoexec_cache, gate_options=GATE), say=lambda line: None)
    assert report.renamed == {"Shelf": "SHeLf", "last": "lAsT", "put": "pUt", "weigh": "wEiGh"}
    assert [(p["name"], p["verdict"]) for p in report.problems] == [("core_Shelf", "admitted")], report.problems
    assert (report.traced_sites, report.renamed_overrides) == (5, 1)
    assert report.kept_as_interface == {"Shelf.insert": "collections.abc.MutableSequence"}
    core = (out / "repo" / "shelf" / "core.py").read_text()
    assert "def insert(self, index, item):" in core and "self.items.insert(index, self.wEiGh(item))" in core
    tests = (out / "repo" / "tests" / "test_shelf.py").read_text()
    assert 'shelf = self.cls()\n        assert shelf.pUt("a") == 1\n        assert shelf.lAsT() == "a"' in tests
    assert 'shelf = make_shelf("b")\n    assert shelf.lAsT() == "b", "last is the newest"' in tests
    assert "    cls = SHeLf\n" in tests
    assert "class Loud(self.cls):\n            @staticmethod\n            def wEiGh(item):" in tests
    description = tomllib.loads((out / "core_Shelf" / "problem.toml").read_text())["prompt"]["description_detailed"]
    assert "`insert(self, index, item)`" in description and "`wEiGh(self, item)`" in description
    document = json.loads((out / "paraphrase-report.json").read_text())
    assert (document["traced_sites"], document["renamed_overrides"]) == (5, 1)
    assert document["kept_as_interface"] == {"Shelf.insert": "collections.abc.MutableSequence"}


def test_a_renamed_read_renames_a_sibling_definition_it_also_finds(tmp_path: Path) -> None:
    """The common base calls ``self.expire()``; the trace saw it find the benchmark's ``Timed.expire`` and the
    sibling's own ``Other.expire`` there, so the sibling's is renamed too (a base outside keeps ``get``)."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "core.py").write_text(
        "class Base:\n    def tick(self):\n        return self.expire()\n\n\nclass Timed(Base):\n"
        "    def expire(self):\n        return 1\n\n    def get(self):\n        return 0\n\n\n"
        "class Other(Base):\n    def expire(self):\n        return 2\n\n    def again(self):\n"
        "        return self.expire()\n")
    base, timed, other = ("pkg.core", "Base"), ("pkg.core", "Timed"), ("pkg.core", "Other")
    renames = Renames(Index(tmp_path, "."), {"Base": "BAsE", "Timed": "TImEd", "expire": "eXpIrE", "get": "gEt",
                                             "tick": "tIcK"}, {base, timed}, {base: {"tick"}, timed: {"expire", "get"}})
    reads = [Read("pkg/core.py", 3, 26, "expire", base, timed), Read("pkg/core.py", 3, 26, "expire", base, other)]
    traced = Traced(reads, [], {(timed, "get"): "collections.abc.Mapping"}, [])
    renames.keep(timed, "get")
    assert traced.spread(renames) == ["Other.expire"] and "get" not in renames.names
    renames.sites = traced.sites(renames)
    assert renames.rewrite((tmp_path / "pkg" / "core.py").read_text(), "pkg.core", path="pkg/core.py") == (
        "class BAsE:\n    def tIcK(self):\n        return self.eXpIrE()\n\n\nclass TImEd(BAsE):\n"
        "    def eXpIrE(self):\n        return 1\n\n    def get(self):\n        return 0\n\n\n"
        "class Other(BAsE):\n    def eXpIrE(self):\n        return 2\n\n    def again(self):\n"
        "        return self.eXpIrE()\n")


def test_a_member_a_repository_base_declares_is_renamed_everywhere_or_nowhere(tmp_path: Path) -> None:
    """marshmallow's case: ``Field`` (not a benchmark class) declares ``_serialize`` abstract and calls it;
    renaming it in the benchmark's ``String`` alone left ``String`` abstract. It is kept in both, while a member
    only the benchmark class defines is renamed, and one the benchmark's own base renames is renamed in both."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "fields.py").write_text(
        "import abc\n\n\nclass Field(abc.ABC):\n    @abc.abstractmethod\n    def _serialize(self, value):\n"
        "        ...\n\n    def serialize(self, value):\n        return self._serialize(value)\n\n\n"
        "class String(Field):\n    def _serialize(self, value):\n        return str(value)\n\n"
        "    def strip(self, value):\n        return self._serialize(value).strip()\n\n\n"
        "class Email(String):\n    def strip(self, value):\n        return value\n")
    field_, string, email = ("pkg.fields", "Field"), ("pkg.fields", "String"), ("pkg.fields", "Email")
    index = Index(tmp_path, ".")
    renames = Renames(index, {"String": "STrInG", "Email": "EmAiL", "_serialize": "_sErIaLiZe", "strip": "sTrIp"},
                      {string, email}, {string: {"_serialize", "strip"}, email: {"strip"}})
    assert index.defines(field_) == {"_serialize", "serialize"}
    assert renames.keep_inherited() == {"String._serialize": "pkg.fields.Field"}
    assert "_serialize" not in renames.names and renames.own == {string: {"strip"}, email: {"strip"}}
    rewritten = renames.rewrite((tmp_path / "pkg" / "fields.py").read_text(), "pkg.fields")
    assert "def _serialize(self, value):\n        return str(value)" in rewritten
    assert "    def sTrIp(self, value):\n        return self._serialize(value).strip()" in rewritten
    assert "class EmAiL(STrInG):\n    def sTrIp(self, value):" in rewritten
    namespace: dict = {}
    exec(compile(rewritten, "fields.py", "exec"), namespace)  # the renamed classes still instantiate and work
    assert namespace["STrInG"]().sTrIp(" a ") == "a" and namespace["EmAiL"]().serialize(3) == "3"


def test_a_bare_name_in_a_subclass_body_is_not_an_inherited_member(tmp_path: Path) -> None:
    """marshmallow's case: ``validate=validate.OneOf(...)`` in a ``Schema`` subclass's body reads the module
    ``validate``, since Python never finds an inherited member as a bare name in a class body; renaming it with
    ``Schema.validate`` made every test module import-fail (``NameError: vAlIdAtE``). A name the body itself binds
    is still the member."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "validate.py").write_text("def one_of(*choices):\n    return set(choices)\n")
    (tmp_path / "pkg" / "schema.py").write_text(
        "class Schema:\n    def validate(self, data):\n        return data in self.allowed\n\n\n"
        "class Fixed(Schema):\n    def check(self, data):\n        return data\n\n    run = check\n")
    (tmp_path / "pkg" / "users.py").write_text(
        "from pkg import validate\nfrom pkg.schema import Fixed, Schema\n\n\n"
        "class Users(Schema):\n    allowed = validate.one_of('a', 'b')\n\n\n"
        "class Checked(Fixed):\n    again = check if False else None\n")
    schema, fixed = ("pkg.schema", "Schema"), ("pkg.schema", "Fixed")
    index = Index(tmp_path, ".")
    renames = Renames(index, {"Schema": "SChEmA", "validate": "vAlIdAtE", "Fixed": "FiXeD", "check": "cHeCk"},
                      {schema, fixed}, {schema: {"validate"}, fixed: {"check"}})
    users = renames.rewrite((tmp_path / "pkg" / "users.py").read_text(), "pkg.users")
    assert "    allowed = validate.one_of('a', 'b')" in users  # the module, not SChEmA.vAlIdAtE
    assert "class Users(SChEmA):" in users
    assert "    again = check if False else None" in users  # inherited: not a name of this body either
    assert "    run = cHeCk" in renames.rewrite((tmp_path / "pkg" / "schema.py").read_text(), "pkg.schema")


def test_the_trace_runs_a_parameter_id_a_path_would_fold_as_its_function() -> None:
    """A node id whose parameter id a path join folds (``[http://x]``) names no test once joined, and one such id
    made pytest run none of the trace's tests (marshmallow's URL tests): the trace runs the function instead."""
    from pytest_repoexec.paraphrase.trace import _as_path_keeps_it

    assert _as_path_keeps_it("tests/t.py::test_url[http://example.org]") == "tests/t.py::test_url"
    assert _as_path_keeps_it("tests/t.py::test_url[a/./b]") == "tests/t.py::test_url"
    assert _as_path_keeps_it("tests/t.py::TestX::test_y[1-2]") == "tests/t.py::TestX::test_y[1-2]"


def test_a_parameter_id_made_from_a_renamed_class_is_spelled_anew(tmp_path: Path) -> None:
    """pytest names a parameter that is a class by its ``__name__``: marshmallow's ``[Integer]`` tests are
    ``[INtEgEr]`` once the class is renamed, and a suite that kept the old id ran none of them."""
    from pytest_repoexec.paraphrase.manifest import _parameter_id

    (tmp_path / "m.py").write_text("class Integer:\n    pass\n")
    renames = Renames(Index(tmp_path, "."), {"Integer": "INtEgEr", "add": "aDd"}, {("m", "Integer")})
    assert _parameter_id("Integer]", renames) == "INtEgEr]"
    assert _parameter_id("Integer1-FieldClass22-add]", renames) == "INtEgEr1-FieldClass22-add]"  # add: a member
    assert _parameter_id("Integers]", renames) == "Integers]"


def test_a_string_that_opens_as_a_renamed_classs_repr_follows_it(tmp_path: Path) -> None:
    """marshmallow's ``test_length_repr`` compares ``repr(Length(...))``, made from ``__name__``, with
    ``"<Length(min=1, ...)>"``: the repr shows the renamed name, so the expectation is spelled anew; a string that
    merely mentions the class, and one about another class, stay."""
    (tmp_path / "v.py").write_text(
        "class Length:\n    def __repr__(self):\n        return f\"<{type(self).__name__}(min=1)>\"\n")
    (tmp_path / "test_v.py").write_text(
        "from v import Length\n\n\ndef test_repr():\n    assert repr(Length()) == \"<Length(min=1)>\"\n"
        "    assert \"Length(\" in \"a Length(\" and \"<Lengths>\" != \"<Length\"\n"
        "    assert \"<v.Length(min=1)>\"\n")
    renames = Renames(Index(tmp_path, "."), {"Length": "LeNgTh"}, {("v", "Length")})
    test = renames.rewrite((tmp_path / "test_v.py").read_text(), "test_v")
    assert 'assert repr(LeNgTh()) == "<LeNgTh(min=1)>"' in test
    assert '"Length(" in "a Length(" and "<Lengths>" != "<LeNgTh"' in test  # only a repr's opening follows
    assert 'assert "<v.LeNgTh(min=1)>"' in test  # a module's prefix before the name
    namespace: dict = {}
    exec(compile(renames.rewrite((tmp_path / "v.py").read_text(), "v") + test.split("\n", 1)[1], "t", "exec"),
         namespace)
    namespace["test_repr"]()  # the renamed class's repr equals the renamed expectation


def test_the_trace_sees_a_store_that_reaches_a_renamed_setter(tmp_path: Path) -> None:
    """marshmallow's ``myfield.default = 0`` on a field of no static type goes through the renamed ``default``
    property's setter: the trace records the store's site as it records reads, so the rewriter renames it."""
    import os

    from pytest_repoexec.paraphrase import trace as tracing

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "field.py").write_text(
        "class Field:\n    @property\n    def default(self):\n        return self._d\n\n"
        "    @default.setter\n    def default(self, value):\n        self._d = value\n")
    (tmp_path / "test_field.py").write_text(
        "import pytest\nfrom pkg.field import Field\n\n\n@pytest.mark.parametrize('cls', [Field])\n"
        "def test_store(cls):\n    f = cls()\n    f.default = 3\n    assert f._d == 3\n")
    read, write = os.pipe()
    classes = json.dumps([["pkg.field", "Field", ["default"]]])
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "test_field.py", "-p", "repoexec_trace", "-q", "-p", "no:cacheprovider",
         f"--repoexec-trace-fd={write}", f"--repoexec-trace-classes={classes}",
         '--repoexec-trace-packages=["pkg"]', f"--repoexec-trace-source={tmp_path}"],
        cwd=tmp_path, pass_fds=(write,), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": f"{Path(tracing.PLUGIN).parent}{os.pathsep}{tmp_path}",
             "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    os.close(write)
    with os.fdopen(read, "rb") as results:
        document = json.loads(results.read())
    output = process.communicate()[0].decode()
    assert process.returncode == 0, output
    assert ["test_field.py", 8, 13, "default", "pkg.field.Field", "pkg.field.Field"] in document["sites"]
