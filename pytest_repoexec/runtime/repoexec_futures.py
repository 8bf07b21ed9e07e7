"""Futures as data: twisted's ``Deferred`` and ``Failure``, and a done ``asyncio.Future`` (tornado's too), cross
as what they hold, and the judge's copy is made by the judge's own library.

A future the candidate answers (scrapy's ``defer_succeed``, tornado's ``maybe_future``) is a promise of a value,
and its class's behaviour is the library's: the judge makes a new one of the same class from what the candidate's
one holds, so a test's ``isinstance``, ``addCallback``, ``.result`` and ``run_sync`` run the judge's library on
data. A ``Deferred`` crosses as one of two states, or stays in the candidate's process as a handle:

- fired, nothing left to run: its result (data, or a ``Failure``), fired again on the judge's copy;
- pending: its chain of callbacks, each a handle to a function of the candidate's process (run there when the
  judge's copy fires), a function of the judge's own that was lent to the candidate, or twisted's own
  pass-through; their arguments data only. The candidate's process runs no reactor of its own, so what it
  scheduled to fire its ``Deferred`` later never fires the judge's copy.

A ``Failure`` crosses as its exception (which the wire reads as any exception) and is made again around it. An
``asyncio.Future`` that is done crosses as its result, exception or cancellation, set on a new future of the
judge's (made where the test runs, on its loop, as the candidate's ``Future()`` would be in-process), and a test's
done future reaches the candidate so too (tornado's ``maybe_future`` answers it as it is); a pending one crosses
as a handle, and the judge's future made for it is settled, when the test's loop runs, by awaiting that handle (the
candidate's process runs its own loop until its future is done; what that comes to crosses as data).

Standard library only, no library imported to send: a class is looked up in ``sys.modules``, where a process
that holds one of its objects has it. ``repoexec_wire`` calls ``reduced`` and checks what ``parts`` names.
"""

import functools
import importlib
import sys

_DEFER, _FAILURE = "twisted.internet.defer", "twisted.python.failure"
# where the classes of futures are defined
MODULES = frozenset({_DEFER, _FAILURE, "_asyncio", "asyncio.futures", "asyncio.tasks"})
_LIST_STATE = ("resultList", "fireOnOneCallback", "fireOnOneErrback", "consumeErrors", "finishedCount",
               "_deferredList")  # a DeferredList's data besides a Deferred's


def _found(module, name):
    owner = sys.modules.get(module)
    return getattr(owner, name, None) if owner is not None else None


def reduced(obj, as_values):
    """How a Deferred (answers only: ``as_values``), a done asyncio future or a Failure crosses, as pickle's reduce
    value, or None."""
    cls = type(obj)
    if cls.__module__ in ("_asyncio", "asyncio.futures", "asyncio.tasks"):
        if not _asyncio_future(obj) or not obj.done():
            return None
        if obj.cancelled():
            return future, ("cancelled", None)
        failed = obj.exception()
        return future, ("done", obj.result()) if failed is None else ("failed", failed)
    if cls.__module__ == _FAILURE and cls is _found(_FAILURE, "Failure") and isinstance(obj.value, BaseException):
        return failure, (obj.value,)
    if not as_values or not is_deferred(obj):
        return None
    state = vars(obj)
    chain = state.get("_callbacks", state.get("callbacks"))  # Twisted 24.7 on: ``callbacks`` is a property
    if not isinstance(chain, list) or obj.paused or obj._chainedTo is not None or obj._runningCallbacks \
            or not all(_link(link) for link in chain):
        return None
    fired = bool(obj.called)
    if fired and chain:
        return None  # fired, with callbacks yet to run (paused on another): it stays a handle
    extra = {name: state[name] for name in _LIST_STATE if name in state} if cls.__name__ == "DeferredList" else {}
    return deferred, (cls.__name__, fired, obj.result if fired else None,
                      tuple((tuple(callback), tuple(errback)) for callback, errback in chain), extra)


def is_deferred(obj):
    """A twisted Deferred or DeferredList, exactly: what crosses as data, and whose methods cross bound to it."""
    cls = type(obj)
    return cls.__module__ == _DEFER and cls in (_found(_DEFER, "Deferred"), _found(_DEFER, "DeferredList"))


def _link(link):
    return isinstance(link, tuple) and len(link) == 2 and all(
        isinstance(step, tuple) and len(step) == 3 and callable(step[0]) and isinstance(step[1], tuple)
        for step in link)


def failure(value):
    """A Failure of the judge's twisted around an exception that crossed (no traceback: frames never cross)."""
    if not isinstance(value, BaseException):
        raise TypeError("a Failure holds an exception")
    return importlib.import_module(_FAILURE).Failure(value, type(value))


def _asyncio_future(obj):
    found = _found("asyncio", "Future")
    return found is not None and isinstance(obj, found)


def pending(obj):
    """An asyncio future (or task) not yet done: it crosses as a handle the judge's own future awaits."""
    return type(obj).__module__ in MODULES and _asyncio_future(obj) and not obj.done()


def own_loop(awaitable):
    """The loop a future was made on, where it can be run to its end now (not running, not closed), or None."""
    loop = awaitable.get_loop() if _asyncio_future(awaitable) else None
    return loop if loop is not None and not loop.is_closed() and not loop.is_running() else None


def awaiting(handle, lazily=False):
    """A pending future of the judge's, made where the test runs, that its loop settles when it runs with what
    awaiting ``handle`` (the candidate's future, run in its process) comes to: a result, an exception or a
    cancellation, as data. ``lazily`` (a test's future, lent to the candidate's process): only once something
    there waits on it (a task awaits it, a callback is added). A future the candidate's code never awaits (one an
    app's stream holds) is then never awaited on the judge's loop, where it may be waiting for the very call
    that holds it."""
    import asyncio

    if lazily:
        made = _lazy_future()()
        made.handle = handle
        return made
    made = asyncio.Future()
    made.get_loop().call_soon(_settle, made, handle)
    return made


@functools.lru_cache(maxsize=None)
def _lazy_future():
    """The class of ``awaiting``'s lazy futures (asyncio imported only where a future crosses)."""
    import asyncio

    class Lazy(asyncio.Future):
        handle = None

        def add_done_callback(self, fn, *, context=None):  # what a task awaiting it, or gather, calls
            handle, self.handle = self.handle, None
            if handle is not None:
                _settle(self, handle)
            super().add_done_callback(fn, context=context)

    return Lazy


def _settle(made, handle):
    import asyncio

    async def settled():
        try:
            value = await handle
        except asyncio.CancelledError:
            made.done() or made.cancel()
        except Exception as exc:
            made.done() or made.set_exception(exc)
        else:
            made.done() or made.set_result(value)
    if not made.done():
        asyncio.ensure_future(settled(), loop=made.get_loop())


def future(state, value):
    """A done asyncio future of the judge's: made as ``asyncio.Future()`` makes one where the test runs."""
    import asyncio

    made = asyncio.Future()
    if state == "cancelled":
        made.cancel()
    elif state == "failed" and isinstance(value, Exception):
        made.set_exception(value)
    elif state == "done":
        made.set_result(value)
    else:
        raise TypeError("not a done future's state")
    return made


def deferred(kind, fired, result, chain, extra):
    """The judge's own Deferred (or DeferredList) of that state: ``addCallbacks`` for each link, then fired with
    the result. No callback runs while it is made: a fired one crosses with none left to run."""
    defer = importlib.import_module(_DEFER)
    cls = {"Deferred": defer.Deferred, "DeferredList": defer.DeferredList}[kind]
    if type(fired) is not bool or fired and chain or not isinstance(extra, dict) \
            or not set(extra) <= set(_LIST_STATE) or extra and cls is defer.Deferred:
        raise TypeError("not a Deferred's state")
    made = cls.__new__(cls)
    defer.Deferred.__init__(made)
    for name, value in extra.items():
        setattr(made, name, value)
    for (callback, args, keywords), (errback, errback_args, errback_keywords) in chain:
        made.addCallbacks(callback, errback, tuple(args), dict(keywords or {}), tuple(errback_args),
                          dict(errback_keywords or {}))
    if fired:
        (made.errback if isinstance(result, importlib.import_module(_FAILURE).Failure) else made.callback)(result)
    return made


def parts(args):
    """What a ``deferred`` call's arguments hold, for the judge's checks: (functions its chain would call, their
    arguments, values it holds as results)."""
    _, _, result, chain, extra = args
    called = [step[0] for link in chain for step in link]
    arguments = [(step[1], step[2]) for link in chain for step in link]
    return called, arguments, [result, extra]


def own_steps():
    """Twisted's own functions a chain holds where a caller gave none (the pass-throughs), the judge's own."""
    return tuple(found for name in ("passthru", "_failthru") if (found := _found(_DEFER, name)) is not None)
