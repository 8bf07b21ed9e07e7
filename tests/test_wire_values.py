"""Library values the wire carries that need the library itself (multidict, which the test extra installs): sent
as the candidate's process sends them, read as the judge reads them."""

from __future__ import annotations

import sys
from pathlib import Path

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


def test_a_pydantic_field_crosses_with_the_validators_pydantic_derives_in_the_judge(tmp_path: Path):
    """pydantic 1's ``ModelField`` keeps compiled lambdas that wrap its validators (fastapi's
    ``create_response_field`` answers one): no name finds them, so the field could not cross. Its derived slots now
    cross as nothing and pydantic's own ``populate_validators`` makes them again in the judge, on the data that
    crossed; a state that sets them itself is overruled. In a virtualenv of pydantic 1, as a project's is."""
    import subprocess
    import venv

    venv.create(tmp_path / "v", with_pip=True)
    python = tmp_path / "v" / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "pydantic<2"], check=True)
    (tmp_path / "check.py").write_text(PYDANTIC_FIELD)
    shown = subprocess.run([python, tmp_path / "check.py", RUNTIME], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == ["sent validators: False", "validates: [1, 2] True",
                                         "sub field validates: 3", "forged validators kept: False"]
