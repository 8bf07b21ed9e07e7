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
