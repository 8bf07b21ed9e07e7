"""Two copies of one object graph kept alike, object by object: the judge's argument and the candidate's process's
copy of it, where the candidate keeps the argument past the call (an instance that holds the test's scope dict and
fills a state object inside it on a later call) or the test changes what it sent.

A copy sent again whole would give the other side new objects where the test (or the candidate) holds the old
ones (``connection_state = ScopeState.from_scope(scope)`` before ``connection.url`` fills it). So each side
remembers, at each point where the two agree, where every node of its copy stands (``paths``); a change is sent as
the new state with, for each node that is still an old one, its path now and its path then (``moved``); the
receiver finds its own old node by the old path and gives it the new contents (``apply_graph``). Nodes are the
mutable containers and objects with attributes; a path is made of list indexes, dict keys that are plain values
and attribute names, so it means the same on both sides.

What a sender's paths can do is only what the sender could do to its own copy: a node is found in the receiver's
graph of the same object, by its own items and attributes (never a property, never ``__getitem__`` of a
subclass), and filled only with contents of a node of the same class.
"""

import collections
import enum
import functools
import pickle
import types

_MISSING = object()
_SCALARS = frozenset({bool, int, float, complex, str, bytes, type(None)})
_KEY_TYPES = frozenset({bool, int, float, str, bytes, type(None)})
_LEAVES = (set, bytearray, collections.deque)  # filled whole: their items hold no node
_SLOTS = {}  # class -> its slots' names
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType, functools.partial,
              type(functools.lru_cache()(len)), staticmethod, classmethod, property)  # code, not state
OPAQUE = []  # classes whose instances stand for themselves, never walked into: the classes under test, whose
# instances the judge holds as remote ones (the candidate's process sets them)


def is_node(obj, deep=False):
    """Whether an object is one whose identity is kept: a list, dict, set or bytearray, or an object with
    attributes of its own that is not a class, a function, an enum's member (each side has its own, by name) or one
    of the runtime's own stand-ins; an instance that is callable only where ``deep`` (what a call did to its
    arguments: an ASGI app holds the stores its requests write to; a graph kept alike at every call stops there)."""
    if isinstance(obj, (list, dict, *_LEAVES)):
        return True
    cls = type(obj)
    if cls in _SCALARS or cls is tuple or isinstance(obj, (type, enum.Enum, *_FUNCTIONS, *OPAQUE)) \
            or not deep and callable(obj) or any(
            str(vars(klass).get("__module__", "")).startswith("repoexec_") for klass in cls.__mro__):
        return False
    return _attributes(obj) is not None or bool(_slots(cls))


def paths(root, deep=False):
    """id -> (path, node) for each node reached from ``root`` through items and attributes, by the first path
    met breadth first (tuples are walked through, not kept: they are rebuilt, not filled)."""
    found, queue = {}, collections.deque([((), root)])
    while queue:
        path, obj = queue.popleft()
        if id(obj) in found:
            continue
        if type(obj) is tuple:
            queue.extend((path + (("i", index),), item) for index, item in enumerate(obj) if type(item) not in _SCALARS)
            continue
        if not is_node(obj, deep):
            continue
        found[id(obj)] = (path, obj)
        queue.extend((path + (step,), child) for step, child in _children(obj) if type(child) not in _SCALARS)
    return found


def fingerprint(nodes):
    """What a graph (its ``paths``) holds, to tell whether it changed since: each node's class and contents, a
    node named by its place in the walk, any other object by its identity. Read, never pickled: a graph that
    holds what pickle cannot write (a lent object, a lock) is compared all the same, and none of its objects'
    code runs."""
    order = {key: index for index, key in enumerate(nodes)}

    def mark(value):
        cls = type(value)
        if cls in _SCALARS:
            return cls, value
        if id(value) in order:
            return "node", order[id(value)]
        if cls is tuple:
            return "tuple", tuple(map(mark, value))
        return "object", id(value)

    return [_marked(node, mark) for _, node in nodes.values()]


def node_marks(nodes):
    """Each node's contents (``paths``), every object in them named by its identity (one that has no hash, an
    array say, by its pickled state too: it may change in place), with the objects named held, so that no identity
    is taken again by a new object while the marks are kept: to tell, after a call, which of these nodes it changed
    (``changed_nodes``)."""
    held = []

    def mark(value):
        cls = type(value)
        if cls in _SCALARS:
            return cls, value
        if cls is tuple:
            return "tuple", tuple(map(mark, value))
        held.append(value)
        if getattr(cls, "__hash__", None) is None and not is_node(value, True):
            try:
                return "object", id(value), pickle.dumps(value, protocol=4)
            except Exception:
                return "object", id(value), None
        return "object", id(value)

    return {key: _marked(node, mark) for key, (_, node) in nodes.items()}, held


def changed_nodes(now, before, marks):
    """(path then, node) of each node ``before`` held (``paths``, with its ``node_marks``) that a graph still holds
    (``paths`` now) and whose contents changed: what the receiver fills. A node new to the graph is reached only
    through one of them."""
    kept = {key: entry for key, entry in now.items() if key in before and before[key][1] is entry[1]}
    return [(before[key][0], kept[key][1]) for key, mark in node_marks(kept)[0].items() if mark != marks[0].get(key)]


def _marked(node, mark):
    if isinstance(node, _LEAVES):
        return type(node), bytes(node) if isinstance(node, bytearray) else tuple(map(mark, node))
    return (type(node), *_contents(node, mark))


def moved(now, before):
    """(path now, path then) of each node of a graph (``paths`` now) that ``before`` (``paths`` at the last
    agreement) held too: the receiver's own node stays that node."""
    return [(path, before[key][0]) for key, (path, obj) in now.items()
            if path and key in before and before[key][1] is obj]


def apply_graph(target, state, moves, deep=False):
    """``state`` (the other side's copy, as it crossed) applied to ``target`` in place: each node ``moves`` names
    (``moved``) is the target's old node at the old path, filled with the new contents; any other node of the
    state is new and taken as it is; references between them are kept. Returns the state's nodes that stand for
    the target's (by id), each with the target's node it filled."""
    if type(target) is not type(state) or not is_node(target, deep):
        return {}
    mapped = {id(state): target}
    for move in moves if type(moves) is list else ():
        if type(move) is tuple and len(move) == 2 and type(move[0]) is tuple and type(move[1]) is tuple:
            new, old = _follow(state, move[0]), _follow(target, move[1])
            if new is not _MISSING and old is not _MISSING and type(new) is type(old) and is_node(old, deep):
                mapped.setdefault(id(new), old)

    def translated(value):
        if id(value) in mapped:
            return mapped[id(value)]
        if type(value) is tuple:
            items = tuple(translated(item) for item in value)
            return items if any(a is not b for a, b in zip(items, value)) else value
        return value

    fills = []  # all contents read before any node is written: a state may hold the receiver's own nodes
    for _, node in paths(state, deep).values():
        into = mapped.get(id(node), node)
        contents = _contents(node, translated)
        if into is not node or any(new is not old for new, old in zip(_values(contents), _values(_contents(
                node, lambda value: value)))):
            fills.append((into, contents))
    for into, contents in fills:
        _fill(into, contents)
    return mapped


def _children(obj):
    if isinstance(obj, list):
        yield from ((("i", index), item) for index, item in enumerate(obj))
    elif isinstance(obj, dict):
        yield from ((("k", key), value) for key, value in dict.items(obj) if type(key) in _KEY_TYPES)
    if isinstance(obj, _LEAVES):
        return
    attributes = _attributes(obj)
    if attributes is not None:
        yield from ((("a", name), value) for name, value in attributes.items() if type(name) is str)
    for name in _slots(type(obj)):
        value = _slot(obj, name)
        if value is not _MISSING:
            yield ("a", name), value


def follow(obj, path):
    """The node (or tuple) at ``path`` from ``obj``, by items and attributes alone; None where there is none."""
    found = _follow(obj, path)
    return None if found is _MISSING else found


def _follow(obj, path):
    for step in path:
        if type(step) is not tuple or len(step) != 2 or not (type(obj) is tuple or is_node(obj, True)):
            return _MISSING
        kind, key = step
        if kind == "i" and isinstance(obj, (list, tuple)) and type(key) is int and 0 <= key < len(obj):
            obj = obj[key] if type(obj) is tuple else list.__getitem__(obj, key)
        elif kind == "k" and isinstance(obj, dict) and type(key) in _KEY_TYPES and dict.__contains__(obj, key):
            obj = dict.__getitem__(obj, key)
        elif kind == "a" and type(key) is str:
            attributes = _attributes(obj)
            if attributes is not None and key in attributes:
                obj = attributes[key]
            elif key in _slots(type(obj)):
                obj = _slot(obj, key)
            else:
                return _MISSING
        else:
            return _MISSING
    return obj


def _contents(node, translated):
    """(items, attributes, slots) of a node, each value passed through ``translated``."""
    if isinstance(node, _LEAVES):
        return (node, {}, {})
    if isinstance(node, list):
        items = [translated(item) for item in node]
    elif isinstance(node, dict):
        items = {key: translated(value) for key, value in dict.items(node)}
    else:
        items = None
    attributes = _attributes(node)
    attributes = {name: translated(value) for name, value in attributes.items()} if attributes is not None else {}
    slots = {name: translated(value) for name in _slots(type(node)) if (value := _slot(node, name)) is not _MISSING}
    return items, attributes, slots


def _values(contents):
    items, attributes, slots = contents
    yield from (items.values() if isinstance(items, dict) else items or ())
    yield from attributes.values()
    yield from slots.values()


def _fill(node, contents):
    items, attributes, slots = contents
    if isinstance(node, set):
        set.clear(node)
        set.update(node, items)
    elif isinstance(node, bytearray):
        bytearray.__setitem__(node, slice(None), items)
    elif isinstance(node, collections.deque):
        collections.deque.clear(node)
        collections.deque.extend(node, items)
    elif isinstance(node, list):
        list.__setitem__(node, slice(None), items)
    elif isinstance(node, dict):
        dict.clear(node)
        dict.update(node, items)
    own = _attributes(node)
    if own is not None and not isinstance(node, _LEAVES):
        own.clear()
        own.update(attributes)
    for name in _slots(type(node)):
        descriptor = _slot_descriptor(type(node), name)
        if descriptor is None:
            continue
        if name in slots:
            descriptor.__set__(node, slots[name])
        elif _slot(node, name) is not _MISSING:
            descriptor.__delete__(node)


def _attributes(obj):
    """An object's own attribute dict, read by its class's descriptor (never a class's ``__getattr__``, which
    would ask the object's process about it): None where it has none."""
    for klass in type(obj).__mro__:
        descriptor = vars(klass).get("__dict__")
        if descriptor is not None:
            if type(descriptor).__name__ != "getset_descriptor":
                return None
            try:
                attributes = descriptor.__get__(obj, type(obj))
            except Exception:
                return None
            return attributes if type(attributes) is dict else None
    return None


def _slots(cls):
    """The names of the slots a class and its bases declare (``__dict__`` and ``__weakref__`` left out)."""
    try:
        return _SLOTS[cls]
    except (KeyError, TypeError):
        pass
    names = []
    for klass in getattr(cls, "__mro__", ()):
        declared = vars(klass).get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared if isinstance(declared, (list, tuple)) \
                else ():
            if isinstance(name, str) and name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    try:
        _SLOTS[cls] = names
    except TypeError:  # a class its metaclass makes unhashable
        pass
    return names


def _slot(obj, name):
    """A slot's value read by its descriptor (never a property or ``__getattr__``): _MISSING where unset."""
    descriptor = _slot_descriptor(type(obj), name)
    try:
        return descriptor.__get__(obj, type(obj)) if descriptor is not None else _MISSING
    except AttributeError:
        return _MISSING


def _slot_descriptor(cls, name):
    for klass in cls.__mro__:
        descriptor = vars(klass).get(name)
        if descriptor is not None:
            return descriptor if type(descriptor).__name__ == "member_descriptor" else None
    return None
