"""The collector against an oracle, on random object graphs (Hypothesis).

Each example builds a random graph of lists, dicts, tuples (untracked ones too),
instances (some of them of a class of the graph), functions, compiled code
objects and classes made with type(), caches products on some of the functions
and code objects (a product is a list of other nodes, so caches add edges), and
keeps a random subset alive. It may also make up to three EphemeronMaps, whose
entries are keyed by weakly referenceable nodes (instances, functions, their
code objects, code objects, classes) and whose values are lists of other nodes
(and of maps), across maps and in cycles through them; in some graphs, entries
with the same targets share one value object (automatic passes seed such an
entry by its value rather than its key).

The oracle computes, in plain Python, what is reachable from the kept nodes
along the graph's edges, instance -> its class, function -> code, code -> the
products cached on it, and key -> the value of each of its map entries (an
ephemeron edge: a value is reachable only through its key). The maps are kept
alive by the test, but their references to their entries are not edges. After
rounds of ``gc.collect(); coextra.collect()`` until neither frees anything,
every reachable code object must keep its holder and all its entries, every
entry with a reachable key must still be in its map with its value, and every
other code object, key and removed value must be freed; coextra.stats() must
count exactly the entries left. (Several rounds, because garbage that a GC
pass releases while it frees other garbage -- a function <-> namespace cycle
that a freed product held -- waits for the next pass, in CPython's GC as in
ours; until it is freed it is an outside reference the collector must
respect.) Before any collection, the entry of every key that has died already
must have left its map.

COEXTRA_ORACLE_EXAMPLES sets the number of graphs (default 1000).
"""

from __future__ import annotations

import gc
import os
import weakref
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coextra
import product_shapes
from conftest import make_function

EXAMPLES = int(os.environ.get("COEXTRA_ORACLE_EXAMPLES", "1000"))
KINDS = ("list", "dict", "tuple", "instance", "function", "code", "class")
KEY_KINDS = ("instance", "function", "code", "class")  # weakly referenceable: map keys
MAX_MAPS = 3


class Instance:
    pass


class Value(list):
    """An entry's value: a list of nodes, weakly referenceable (to check that it
    was freed with its entry)."""

    __slots__ = ("__weakref__",)


# A map key: (node, via_code) -- the node itself, or (via_code, for a function
# node only) the function's code object, which is reachable exactly when the
# function is.
Key = tuple[int, bool]


@dataclass
class Graph:
    kinds: list[str]
    edges: list[list[int]]  # each node's out-edges (its links)
    classes: dict[int, int]  # instance node -> the class node it is an instance of
    cached: dict[int, list[list[int]]]  # function/code node -> its products (lists of nodes)
    kept: set[int]
    automatic: bool
    # Per map, the assignments map[key] = value made in this order (a key set
    # twice gets its last value). A value target t names node t, or map t - n
    # when t >= n.
    assignments: list[list[tuple[Key, list[int]]]]
    # Entries whose targets are the same share one value object.
    shared_values: bool = False

    def entries(self) -> list[dict[Key, list[int]]]:
        """Per map, what it holds after the assignments."""
        return [dict(a) for a in self.assignments]


@st.composite
def graphs(draw):
    """A Graph: node kinds, edges, classes, caches, the kept nodes, whether
    automatic collection is on, and the ephemeron maps' entries."""
    n = draw(st.integers(min_value=1, max_value=14))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=n, max_size=n))
    links = st.lists(st.integers(0, 63), max_size=3)
    raw_edges = draw(st.lists(links, min_size=n, max_size=n))
    raw_cache = draw(st.lists(st.lists(links, max_size=2), min_size=n, max_size=n))
    edges = []
    for i, kind in enumerate(kinds):
        if kind == "code":
            edges.append([])  # a code object holds nothing of the graph but its cache
        elif kind == "tuple":  # immutable: only nodes built before it
            edges.append([t % i for t in raw_edges[i]] if i else [])
        else:
            edges.append([t % n for t in raw_edges[i]])
    cached = {
        i: [[t % n for t in product] for product in raw_cache[i]]
        for i, kind in enumerate(kinds)
        if kind in ("function", "code") and raw_cache[i]
    }
    kept = draw(st.sets(st.integers(0, n - 1), max_size=n))
    automatic = draw(st.booleans())

    # An instance may be of a class node built before it (an edge instance ->
    # class that only the instance's type pointer makes); raw_cache, unused
    # for instances, says which.
    classes = {}
    class_nodes = [i for i, kind in enumerate(kinds) if kind == "class"]
    for i, kind in enumerate(kinds):
        before = [j for j in class_nodes if j < i]
        if kind == "instance" and before and raw_cache[i] and raw_cache[i][0]:
            classes[i] = before[raw_cache[i][0][0] % len(before)]

    # Each entry is [key, *value]: the key picks a weakly referenceable node
    # (and, with its low bit, a function's code object instead of the
    # function); the value's targets are nodes or maps.
    # With shared values, an entry whose key number has bit 6 set takes the
    # previous entry's targets (of any map), so that values are shared often.
    assignments: list[list[tuple[Key, list[int]]]] = []
    keyable = [i for i, kind in enumerate(kinds) if kind in KEY_KINDS]
    shared_values = draw(st.booleans())
    if keyable:
        entry = st.lists(st.integers(0, 127), min_size=1, max_size=4)
        raw_maps = draw(st.lists(st.lists(entry, min_size=1, max_size=6), max_size=MAX_MAPS))
        previous: list[int] | None = None
        for raw_entries in raw_maps:
            made = []
            for k, *targets in raw_entries:
                node = keyable[(k >> 1) % len(keyable)]
                chosen = [t % (n + len(raw_maps)) for t in targets]
                if shared_values and k & 64 and previous is not None:
                    chosen = previous
                made.append(((node, bool(k & 1) and kinds[node] == "function"), chosen))
                previous = chosen
            assignments.append(made)
    return Graph(kinds, edges, classes, cached, kept, automatic, assignments, shared_values)


counter = iter(range(10**9))


def build(graph: Graph):
    """The objects (for each function/code node the code object) and the maps."""
    kinds = graph.kinds
    objects: list = [None] * len(kinds)
    for i, kind in enumerate(kinds):
        if kind == "list":
            objects[i] = []
        elif kind == "dict":
            objects[i] = {}
        elif kind == "tuple":
            objects[i] = tuple(objects[j] for j in graph.edges[i])
        elif kind == "instance":
            objects[i] = objects[graph.classes[i]]() if i in graph.classes else Instance()
        elif kind == "function":
            k = next(counter)
            objects[i] = make_function(f"def g{k}(x):\n    return x + {k}\n", f"g{k}")
        elif kind == "class":
            objects[i] = type(f"C{next(counter)}", (), {})
        else:
            k = next(counter)
            objects[i] = compile(f"x + {k}", f"<oracle {k}>", "eval")
    for i, kind in enumerate(kinds):
        targets = [objects[j] for j in graph.edges[i]]
        if kind == "list":
            objects[i].extend(targets)
        elif kind == "dict":
            objects[i].update((f"k{n}", t) for n, t in enumerate(targets))
        elif kind in ("instance", "function", "class"):
            objects[i].links = targets
    for i, products in graph.cached.items():
        for product in products:
            coextra.attach(objects[i], [objects[j] for j in product])
    maps = [coextra.EphemeronMap() for _ in graph.assignments]
    n = len(kinds)
    values: dict[tuple[int, ...], Value] = {}  # by targets, when shared
    for m, assignments in zip(maps, graph.assignments):
        for (node, via_code), targets in assignments:
            key = objects[node].__code__ if via_code else objects[node]
            value = values.get(tuple(targets)) if graph.shared_values else None
            if value is None:
                value = Value(objects[t] if t < n else maps[t - n] for t in targets)
                if graph.shared_values:
                    values[tuple(targets)] = value
            m[key] = value
            del value
    return objects, maps


def oracle(graph: Graph):
    """Indices of the nodes reachable from the kept ones."""
    n = len(graph.kinds)
    values: dict[int, list[int]] = {}  # key node -> the nodes its entries' values hold
    for entries in graph.entries():
        for (node, _), targets in entries.items():
            values.setdefault(node, []).extend(t for t in targets if t < n)
    reachable, stack = set(), list(graph.kept)
    while stack:
        i = stack.pop()
        if i in reachable:
            continue
        reachable.add(i)
        stack.extend(graph.edges[i])
        if i in graph.classes:
            stack.append(graph.classes[i])
        for product in graph.cached.get(i, ()):  # node -> its code -> its cached products
            stack.extend(product)
        stack.extend(values.get(i, ()))  # key -> the values of its entries
    return reachable


@pytest.fixture(scope="module")
def frozen_heap():
    """Each example starts with gc.freeze(), so that its gc.collect() calls scan
    only the objects it made, not Hypothesis's ever-growing bookkeeping."""
    gc.collect()
    yield
    gc.unfreeze()
    gc.collect()


def entry_refs(graph: Graph, objects, maps):
    """Weak references to the key of every entry, by key, and to its value, by
    (map, key)."""
    key_refs, value_refs = {}, {}
    for index, (m, entries) in enumerate(zip(maps, graph.entries())):
        for node, via_code in entries:
            key = objects[node].__code__ if via_code else objects[node]
            key_refs[node, via_code] = weakref.ref(key)
            value_refs[index, (node, via_code)] = weakref.ref(m[key])
    return key_refs, value_refs


def check_dead_keys_removed(graph: Graph, maps, key_refs) -> None:
    """Before any collection: the entry of a key that died (by reference
    counting, or in a GC pass meanwhile) left its map at once. Without
    automatic collection no other entry can have left."""
    for index, (m, entries) in enumerate(zip(maps, graph.entries())):
        alive = sum(key_refs[spec]() is not None for spec in entries)
        if graph.automatic:
            assert len(m) <= alive, f"map {index}: {len(m)} entries, only {alive} live keys"
        else:
            assert len(m) == alive, f"map {index}: {len(m)} entries, {alive} live keys"


def check_maps(graph: Graph, maps, ids, key_refs, value_refs, live) -> int:
    """Checks every map against the oracle; returns how many entries they hold.
    A value an unreachable key's entry had must be freed, unless an entry
    with a reachable key shares it."""
    n = len(graph.kinds)
    held = 0
    values_kept = {id(value_refs[index, spec]()) for index, entries in enumerate(graph.entries())
                   for spec in entries if spec[0] in live}
    for index, (m, entries) in enumerate(zip(maps, graph.entries())):
        expected_keys = set()
        for spec, targets in entries.items():
            key, value = key_refs[spec](), value_refs[index, spec]()
            where = f"map {index}, key {spec} ({graph.kinds[spec[0]]})"
            if spec[0] in live:
                assert key is not None, f"{where}: the key is reachable but was freed"
                assert value is not None, f"{where}: the key is reachable but its value was freed"
                assert m.get(key) is value, f"{where}: the key is reachable but lost its entry"
                expected = [ids[t] if t < n else id(maps[t - n]) for t in targets]
                assert [id(o) for o in value] == expected, f"{where}: its value changed"
                expected_keys.add(id(key))
            else:
                assert key is None, f"{where}: the key is unreachable but was not freed"
                assert value is None or id(value) in values_kept, (
                    f"{where}: the key is unreachable but its value was not freed")
            del key, value
        assert len(m) == len(expected_keys), (
            f"map {index}: {len(m)} entries, expected {len(expected_keys)}")
        assert {id(k) for k in m.keys()} == expected_keys, f"map {index}: other keys than expected"
        held += len(expected_keys)
    return held


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=graphs())
def test_collector_matches_the_reachability_oracle(frozen_heap, graph):
    kinds = graph.kinds
    gc.freeze()
    coextra.set_auto_collect(graph.automatic)
    maps = []
    try:
        before = coextra.stats()
        objects, maps = build(graph)
        codes = {i: weakref.ref(getattr(o, "__code__", o)) for i, o in enumerate(objects)
                 if kinds[i] in ("function", "code")}
        ids = [id(o) for o in objects]
        key_refs, value_refs = entry_refs(graph, objects, maps)
        roots = [objects[i] for i in graph.kept]
        del objects
        check_dead_keys_removed(graph, maps, key_refs)
        for _ in range(len(kinds) + len(value_refs) + 2):
            if gc.collect() + coextra.collect() == 0:
                break
        live = oracle(graph)
        for i, ref in codes.items():
            if i in live:
                assert ref() is not None, f"node {i} is reachable from the kept set"
                h = coextra.holder(ref())
                expected = len(graph.cached.get(i, ()))
                assert (len(h) if h is not None else 0) == expected, f"node {i} lost its cache"
            else:
                assert ref() is None, f"node {i} is unreachable but was not freed"
        held = check_maps(graph, maps, ids, key_refs, value_refs, live)
        after = coextra.stats()
        for counter_name in ("ephemeron_entries", "ephemeron_entries_alive"):
            assert after[counter_name] - before[counter_name] == held, (
                f"{counter_name}: {after[counter_name] - before[counter_name]}, expected {held}")
        del roots
    finally:
        # The entries must not outlive the example in frozen garbage. (This also
        # checks clear() on a map whose values hold the last references to
        # the keys of its other entries.)
        for m in maps:
            m.clear()
        coextra.set_auto_collect(True)
        coextra.reset()


# --- product shapes (product_shapes.py) with automatic collection ------------
#
# The promise for code a program has just dropped: the gc.collect() that
# frees what referenced it from outside also detaches its cache, whatever path
# leads from the product back to the code, and keeps every cache whose
# function the program kept.


@settings(
    max_examples=max(EXAMPLES // 4, 1),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=product_shapes.product_shapes(), kept=st.lists(st.booleans(), min_size=1, max_size=24))
def test_one_gc_collect_detaches_every_dropped_product_shape(frozen_heap, shape, kept):
    gc.freeze()
    coextra.set_auto_collect(True)
    try:
        coextra.reset()
        functions = [product_shapes.build(shape, i) for i in range(len(kept))]
        roots = [f for f, keep in zip(functions, kept) if keep]
        codes = [weakref.ref(f.__code__) for f in functions]
        del functions
        gc.collect()
        attached = {id(h.code) for h in coextra.holders()}
        assert attached == {id(f.__code__) for f in roots}, (
            f"{shape}: {len(attached)} caches attached after gc.collect(), {len(roots)} kept")
        gc.collect()  # what the detached products held in cycles of their own
        assert sum(ref() is not None for ref in codes) == len(roots), f"{shape}: dropped code not freed"
        del roots
    finally:
        coextra.reset()
