"""Twisted's Deferreds judged apart (issue 40): a project whose functions answer Deferreds (scrapy's ``defer_succeed``,
``process_chain``, ``_request_deferred``), run whole with the engine in a virtualenv with today's Twisted. The
reference passes apart; a Deferred crosses as the judge's own, made of data; wrong answers and games fail."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from conftest import write_replay

CHAINS = '''\
from twisted.internet import defer
from twisted.python import failure


def chain(callbacks, value=None):
    """A Deferred that runs each callback in turn: fired with ``value`` now where one is given, else waiting."""
    d = defer.Deferred()
    for callback in callbacks:
        d.addCallback(callback)
    if value is not None:
        d.callback(value)
    return d


def gathered(values):
    """A DeferredList of Deferreds fired with each value."""
    return defer.DeferredList([defer.succeed(value) for value in values])


def failed(message):
    """A Deferred failed with a ValueError of that message."""
    return defer.fail(failure.Failure(ValueError(message)))


def hooked(job):
    """A Deferred that ``job.done`` fires: the job holds its ``callback``."""
    d = defer.Deferred()
    job.done = d.callback
    return d


class Job:
    done = None
'''

TESTS = {
    "chain": '''\
from twisted.internet import defer
from twisted.python import failure

from relay.chains import chain


def test_fired():
    d = chain([lambda x: x + 1, lambda x: x * 10], 1)
    assert isinstance(d, defer.Deferred) and d.called and d.result == 20


def test_waiting_until_the_test_fires_it():
    d = chain([lambda x: x * 2])
    assert isinstance(d, defer.Deferred) and not d.called and len(d.callbacks) == 1
    d.callback(3)
    assert d.result == 6


def test_a_callback_that_raises():
    d = chain([lambda x: 1 / 0], 1)
    assert isinstance(d.result, failure.Failure) and d.result.check(ZeroDivisionError)
    d.addErrback(lambda f: "handled")
    assert d.result == "handled"
''',
    "gathered": '''\
from twisted.internet import defer

from relay.chains import gathered


def test_each_value():
    d = gathered([1, 2])
    assert isinstance(d, defer.DeferredList) and d.result == [(True, 1), (True, 2)]


def test_none():
    assert gathered([]).result == []
''',
    "failed": '''\
from twisted.internet import defer
from twisted.python import failure

from relay.chains import failed


def test_failure():
    d = failed("no")
    assert isinstance(d.result, failure.Failure) and d.result.check(ValueError) and d.result.getErrorMessage() == "no"
    d.addErrback(lambda f: None)
''',
    "hooked": '''\
from relay.chains import Job, hooked


def test_the_job_fires_it():
    job = Job()
    d = hooked(job)
    d.addCallback(lambda x: x + 1)
    job.done(41)
    assert d.result == 42
''',
}

WRONG = {  # each answer is wrong, or a game on the judge's Deferred
    "chain": [
        "def chain(callbacks, value=None):\n    return defer.succeed(value)\n",  # runs no callback
        "def chain(callbacks, value=None):\n    class Fake:\n        called = True\n        result = 20\n"
        "    return Fake()\n",  # what a Deferred shows, of a class of its own
        "def chain(callbacks, value=None):\n    import cProfile\n    d = defer.Deferred()\n"
        "    d.addCallback(cProfile.run)\n    return d\n",  # the judge's Deferred calling a function the answer names
        "def chain(callbacks, value=None):\n    d = defer.Deferred()\n    d.addCallback(print, 'x' * 3)\n"
        "    d.callback(value)\n    return d\n",  # fired on a builtin: stays a handle, its result never the test's
    ],
    "failed": ["def failed(message):\n    return defer.fail(failure.Failure(KeyError(message)))\n"],
    "hooked": ["def hooked(job):\n    d = defer.Deferred()\n    job.done = lambda x: d.callback(x + 1)\n    return d\n"],
}


def _write_project(root: Path) -> Path:
    project = root / "relay"
    package = project / "repo" / "relay"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "chains.py").write_text(CHAINS)
    (project / "project.toml").write_text('requirements = ["twisted"]\n\n[source]\npath = "repo"\n')
    context = "from twisted.internet import defer\nfrom twisted.python import failure\n"
    for number, (name, tests) in enumerate(TESTS.items(), 1):
        folder = project / name
        folder.mkdir()
        (folder / f"test_{name}.py").write_text(tests)
        reference = _function(name)
        (folder / "problem.toml").write_text(
            f'module = "relay.chains"\nentry_point = "{name}"\ntest_count = {tests.count("def test_")}\n'
            f"number = {number}\nreference = '''\n{reference}'''\n\n[prompt.context]\nfull = '''\n{context}'''\n")
    return project


def _function(name: str) -> str:
    start = CHAINS.index(f"def {name}(")
    end = CHAINS.find("\n\n\n", start)
    return CHAINS[start:end if end > 0 else None].rstrip() + "\n"


@pytest.mark.timeout(900)
@pytest.mark.parametrize("executor", ["warm", "process"])
def test_deferreds_cross_as_the_judges_own_and_wrong_answers_fail_apart(run_repoexec, pytester, executor):
    project = _write_project(pytester.path)
    completions = {f"relay/{name}": [_function(name), *WRONG.get(name, [])] for name in TESTS}
    replay = write_replay(pytester.path / "answers.jsonl", completions)
    result, report = run_repoexec(str(project), f"--repoexec-model=replay:{replay}", f"--repoexec-executor={executor}",
                                  "--repoexec-timeout-factor=0", subprocess=True)
    assert report is not None, "\n".join(result.outlines[-30:])
    samples = {(s["problem"], s["sample"]): s for s in report["samples"]}
    assert {s["judge"] for s in samples.values()} == {"apart"}, report["judge"]
    references = {key: s for key, s in samples.items() if key[1] == 0}
    assert all(s["passed"] for s in references.values()), [
        (key, s["error_type"], (s["error_log"] or "")[-600:]) for key, s in references.items() if not s["passed"]]
    wrong = {key: s for key, s in samples.items() if key[1] > 0}
    assert len(wrong) == sum(map(len, WRONG.values())) and not any(s["passed"] for s in wrong.values())
    game = samples[("relay/chain", 3)]
    assert game["error_type"] == "WireError" and "may call only" in game["error_log"], textwrap.shorten(
        game["error_log"] or "", 600)
