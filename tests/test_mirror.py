"""Two copies of a graph kept alike node by node (``repoexec_mirror``): what one side changes in its copy reaches
the other side's own objects, which that side's holders keep."""

from __future__ import annotations

import array
import collections
import pickle
import sys
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "pytest_repoexec" / "runtime"
sys.path.insert(0, str(RUNTIME))  # the judge's modules, as the inner plugin imports them in a project's virtualenv

import threading  # noqa: E402

from repoexec_mirror import apply_graph, changed_nodes, fingerprint, is_node, moved, node_marks, paths  # noqa: E402


class State:
    def __init__(self):
        self.url = None


class Slotted:
    __slots__ = ("value", "unset")

    def __init__(self, value):
        self.value = value


class Guarded:
    @property
    def secret(self):
        raise AssertionError("a property was read")


def _sent(obj):
    """The other side's copy, as it crossed, and where its nodes stood when the two agreed."""
    copy = pickle.loads(pickle.dumps(obj))
    return copy, paths(copy)


def _back(copy, nodes, receiver):
    """The copy's changes applied to the receiver's graph, as they cross: by value, with the moves."""
    apply_graph(receiver, pickle.loads(pickle.dumps(copy)), moved(paths(copy), nodes))


def test_a_node_filled_there_is_the_receivers_own_node_here():
    state, slotted, cells = State(), Slotted([1]), collections.deque([1])
    scope = {"state": {"connection": state}, "pair": (slotted, [2]), "cells": cells, "seen": {1}}
    copy, nodes = _sent(scope)
    copy["state"]["connection"].url = "http://a"
    copy["pair"][0].value.append(2)
    copy["pair"][1].append(3)
    copy["cells"].append(2)
    copy["seen"].add(2)
    copy["new"] = [copy["state"]["connection"]]  # a new node holding an old one
    _back(copy, nodes, scope)
    assert scope["state"]["connection"] is state and state.url == "http://a"
    assert scope["pair"][0] is slotted and slotted.value == [1, 2] and scope["pair"][1] == [2, 3]
    assert scope["cells"] is cells and list(cells) == [1, 2] and scope["seen"] == {1, 2}
    assert scope["new"] == [state] and scope["new"][0] is state


def test_a_node_replaced_there_leaves_the_receivers_old_node_as_it_was():
    old = {"a": 1}
    scope = {"inner": old, "loop": None}
    scope["loop"] = scope
    copy, nodes = _sent(scope)
    copy["inner"] = {"a": 2}
    _back(copy, nodes, scope)
    assert scope["inner"] == {"a": 2} and scope["inner"] is not old and old == {"a": 1}
    assert scope["loop"] is scope


def test_moves_name_only_the_receivers_nodes_of_the_same_class_by_items_and_attributes():
    guarded, target = Guarded(), {"a": [1], "b": {"c": 1}}
    target["guarded"] = guarded
    state = {"a": [5], "b": {"c": 2}, "guarded": Guarded()}
    moves = [((("k", "a"),), (("k", "b"),)),  # another class: not filled
             ((("k", "b"),), (("k", "guarded"), ("a", "secret"))),  # through a property: not followed
             ((("k", "b"),), (("k", "nowhere"),)), ("not a move",), ((("x", 1),), ())]
    a, b = target["a"], target["b"]
    apply_graph(target, state, moves)
    assert target == {"a": [5], "b": {"c": 2}, "guarded": state["guarded"]}
    assert a == [1] and b == {"c": 1}  # neither was named by a move that holds


def test_a_state_of_another_class_is_not_applied():
    target = [1]
    apply_graph(target, {"a": 1}, [])
    assert target == [1]


def test_a_change_is_seen_where_pickle_cannot_write_the_graph():
    """A kept graph may hold what pickle refuses (a lock, a lent object): its changes are read, not pickled."""
    lock, state = threading.Lock(), State()
    scope = {"lock": lock, "state": state, "items": [1, (2, state)], "seen": {1}}
    agreed = fingerprint(paths(scope))
    assert fingerprint(paths(scope)) == agreed
    for change in (lambda: setattr(state, "url", "u"), lambda: scope["items"].append(3),
                   lambda: scope.__setitem__("lock", threading.Lock()), lambda: scope["seen"].add(2)):
        change()
        now = fingerprint(paths(scope))
        assert now != agreed
        agreed = now


class App:
    """Callable, as an ASGI app is: a node only where a call's changes to its arguments are read (``deep``)."""

    def __init__(self):
        self.stores = {"sessions": State()}

    def __call__(self):
        return self.stores


def test_the_nodes_a_call_changed_are_named_by_their_paths_then():
    app = App()
    root = {"app": app, "numbers": array.array("i", [1, 2]), "kept": [1]}
    assert not is_node(app) and is_node(app, deep=True)
    before = paths(root, deep=True)
    marks = node_marks(before)
    assert changed_nodes(paths(root, deep=True), before, marks) == []
    app.stores["sessions"].url = "/x"  # an object deep inside, through the callable app
    root["numbers"][0] = 5  # an array changed in place: its holder changed
    root["kept"] = [1]  # a new list in the old one's place: the root changed, the old list is no longer held
    changed = changed_nodes(paths(root, deep=True), before, marks)
    assert sorted(path for path, _ in changed) == [(), (("k", "app"), ("a", "stores"), ("k", "sessions"))]
    assert dict(changed)[()] is root and dict(changed)[(("k", "app"), ("a", "stores"), ("k", "sessions"))] \
        is app.stores["sessions"]
