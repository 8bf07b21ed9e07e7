"""Library values the wire carries that need the library itself (multidict, which the test extra installs; pydantic 1
and pandas, in a virtualenv of their own): sent as the candidate's process sends them, read as the judge reads them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[1] / "pytest_repoexec" / "runtime"
sys.path.insert(0, str(RUNTIME))  # the judge's modules, as the inner plugin imports them in a project's virtualenv

import multidict  # noqa: E402
import repoexec_wire  # noqa: E402


def _crossed(value):
    data = repoexec_wire.dumps(value, as_values=True)
    return repoexec_wire.loads_checked(data, [], lambda pid: None)


def test_a_multidict_proxy_crosses_as_a_proxy_of_a_copy_of_what_it_shows():
    """multidict's read-only proxies refuse pickle: litestar's ``ImmutableMultiDict`` answers one."""
    for plain, proxy in ((multidict.MultiDict, multidict.MultiDictProxy),
                         (multidict.CIMultiDict, multidict.CIMultiDictProxy)):
        shown = proxy(plain([("a", 1), ("A", 2), ("b", 3)]))
        answer = _crossed(shown)
        assert type(answer) is proxy and list(answer.items()) == list(shown.items())
        assert answer.getall("a") == shown.getall("a")


def test_a_case_insensitive_multidict_keeps_its_keys():
    """Its keys are ``istr``, a ``str`` that multidict makes in C: made by its own C ``__new__`` on the value."""
    answer = _crossed(multidict.CIMultiDict([("Key", "v"), ("key", "w")]))
    assert type(answer) is multidict.CIMultiDict and answer.getall("KEY") == ["v", "w"]


PYDANTIC_FIELD = r'''
import sys, typing
sys.path.insert(0, sys.argv[1])
import repoexec_wire
from pydantic import BaseConfig
from pydantic.fields import ModelField

field = ModelField(name="n", type_=typing.Optional[typing.List[int]], class_validators={}, model_config=BaseConfig)
data = repoexec_wire.dumps(field, as_values=True)
crossed = repoexec_wire.loads_checked(data, [], lambda pid: None)
print("sent validators:", b"post_validators" in data)
print("validates:", crossed.validate(["1", 2], {}, loc="n")[0], crossed.validate("x", {}, loc="n")[1] is not None)
print("sub field validates:", crossed.sub_fields[0].validate("3", {}, loc="n")[0])

# the candidate's process is the candidate's: a state that sets the derived slots itself is overruled
state = {name: getattr(field, name) for name in ModelField.__slots__}
from pydantic.validators import str_validator
state["validators"] = [str_validator]  # a function of its choosing where pydantic keeps its own
import copyreg
forged = repoexec_wire.dumps(field, as_values=True, reduce=lambda obj: (copyreg.__newobj__, (ModelField,), (None, state))
                             if obj is field else NotImplemented)
crossed = repoexec_wire.loads_checked(forged, [], lambda pid: None)
print("forged validators kept:", any(v is str_validator for v in crossed.validators))
'''


PANDAS_VALUES = r'''
import fractions, sys
sys.path.insert(0, sys.argv[1])
import repoexec_wire
import pandas as pd
import pytz

times = pd.date_range("2020-01-01", periods=3, freq="h", tz=pytz.timezone("Europe/Paris"))
values = [pd.Index([1.5, 2.5], name="x"), pd.MultiIndex.from_product([["a", "b"], [1, 2]], names=["one", "two"]),
          times, pd.Timestamp("2020-01-01"), pd.Series(["a", "b", "c"], index=times),
          pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}, index=times), pd.offsets.Hour(6),
          pd.offsets.MonthEnd(3)]
for value in values:
    crossed = repoexec_wire.loads_checked(repoexec_wire.dumps(value, as_values=True), [], lambda pid: None)
    print(type(crossed).__name__, crossed.equals(value) if hasattr(value, "equals") else crossed == value)

# the candidate's process is the candidate's: pandas' rebuilder named on a class that is no index is refused
from pandas.core.indexes.base import _new_Index
forged = repoexec_wire.dumps(pd.Index([1]), reduce=lambda obj: (_new_Index, (fractions.Fraction, {"numerator": 1}))
                             if isinstance(obj, pd.Index) else NotImplemented)
try:
    repoexec_wire.loads_checked(forged, [], lambda pid: None)
except repoexec_wire.WireError as exc:
    print("refused:", exc)
'''

MSGSPEC_STRUCT = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
with open(os.path.join(here, "stored.py"), "w") as module:
    module.write("import msgspec\n\n\nclass Stored(msgspec.Struct):\n    expires: int | None\n    data: bytes\n\n\n"
                 "class Checked(msgspec.Struct):\n    data: bytes\n\n    def __post_init__(self):\n"
                 "        print('post init ran')\n")
import repoexec_wire
import stored

crossed = repoexec_wire.loads_checked(repoexec_wire.dumps(stored.Stored(None, b"x"), as_values=True), [here],
                                      lambda pid: None)
print(type(crossed).__name__, crossed == stored.Stored(None, b"x"))
try:  # its __post_init__ would run the project's code on the candidate's data: not made by the judge
    repoexec_wire.loads_checked(repoexec_wire.dumps(stored.Checked(b"x"), as_values=True), [here], lambda pid: None)
except repoexec_wire.WireError as exc:
    print("refused:", exc)
'''


@pytest.fixture(scope="module")
def library_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv of the libraries whose values need their own rebuilding, as a project's is: pydantic 1 (fastapi's
    pin), today's pandas and msgspec."""
    import subprocess
    import venv

    folder = tmp_path_factory.mktemp("libraries")
    venv.create(folder / "v", with_pip=True)
    python = folder / "v" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "pydantic<2", "pandas", "pytz", "msgspec"], check=True)
    return python


def _shown(python: Path, script: str, folder: Path) -> list[str]:
    import subprocess

    (folder / "check.py").write_text(script)
    shown = subprocess.run([python, folder / "check.py", RUNTIME], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.splitlines()


def test_a_pydantic_field_crosses_with_the_validators_pydantic_derives_in_the_judge(library_python, tmp_path):
    """pydantic 1's ``ModelField`` keeps compiled lambdas that wrap its validators (fastapi's
    ``create_response_field`` answers one): no name finds them, so the field could not cross. Its derived slots now
    cross as nothing and pydantic's own ``populate_validators`` makes them again in the judge, on the data that
    crossed; a state that sets them itself is overruled."""
    assert _shown(library_python, PYDANTIC_FIELD, tmp_path) == [
        "sent validators: False", "validates: [1, 2] True", "sub field validates: 3", "forged validators kept: False"]


def test_pandas_indexes_series_and_frames_cross_rebuilt_by_pandas(library_python, tmp_path):
    """pandas' indexes pickle as a call of its ``_new_Index``, its frames' block managers as their constructor's
    arguments, its timestamps and time zones by their unpicklers: none crossed (xarray's ``PandasMultiIndex``); its
    date offsets as their constructor's scalars (pvlib's ``PVSystem``: made without them, ``Hour(6)`` was
    ``Hour(0)``). Each is now made by pandas' own code from the data; ``_new_Index`` named on a class that is no index is refused."""
    shown = _shown(library_python, PANDAS_VALUES, tmp_path)
    assert shown[:-1] == ["Index True", "MultiIndex True", "DatetimeIndex True", "Timestamp True", "Series True",
                          "DataFrame True", "Hour True", "MonthEnd True"]  # an offset was Hour(0) before
    assert shown[-1].startswith("refused: a call of a function may not be made by the judge")


def test_a_msgspec_struct_crosses_made_by_its_own_constructor(library_python, tmp_path):
    """msgspec refuses ``__new__`` alone for its ``Struct``s (litestar's ``StorageObject``: "object.__new__ is not
    safe"), which pickle as their fields' values: the judge calls the class, whose C constructor sets them. One
    with a ``__post_init__`` of its own is not made so (that would run code on the candidate's data)."""
    assert _shown(library_python, MSGSPEC_STRUCT, tmp_path) == [
        "Stored True", "post init ran", "refused: an answer the judge cannot read: TypeError: object.__new__(Checked) "
        "is not safe, use Checked.__new__()"]
