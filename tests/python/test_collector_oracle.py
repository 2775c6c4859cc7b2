"""The collector against an oracle, on random object graphs (Hypothesis).

Each example builds a random graph of lists, dicts, tuples (untracked ones too),
instances, functions and compiled code objects, caches products on some of the
functions and code objects (a product is a list of other nodes, so caches add
edges), and keeps a random subset alive. The oracle computes, in plain Python,
what is reachable from the kept nodes along the graph's edges, function ->
code, and code -> the products cached on it. After rounds of
``gc.collect(); coextra.collect()`` until neither frees anything, every
reachable code object must keep its holder and all its entries, and every
other one must be freed. (Several rounds, because garbage that a GC pass
releases while it frees other garbage -- a function <-> namespace cycle that a
freed product held -- waits for the next pass, in CPython's GC as in ours;
until it is freed it is an outside reference the collector must respect.)

COEXTRA_ORACLE_EXAMPLES sets the number of graphs (default 1000).
"""

from __future__ import annotations

import gc
import os
import weakref

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import coextra
from conftest import make_function

EXAMPLES = int(os.environ.get("COEXTRA_ORACLE_EXAMPLES", "1000"))
KINDS = ("list", "dict", "tuple", "instance", "function", "code")


class Instance:
    pass


@st.composite
def graphs(draw):
    """(kinds, edges, cached, kept, automatic): node kinds, each node's out-edges,
    the products cached on function/code nodes (each a list of nodes), the
    nodes kept alive, and whether automatic collection is on."""
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
    return kinds, edges, cached, kept, automatic


counter = iter(range(10**9))


def build(kinds, edges, cached):
    """The objects, and for each function/code node the code object."""
    objects: list = [None] * len(kinds)
    for i, kind in enumerate(kinds):
        if kind == "list":
            objects[i] = []
        elif kind == "dict":
            objects[i] = {}
        elif kind == "tuple":
            objects[i] = tuple(objects[j] for j in edges[i])
        elif kind == "instance":
            objects[i] = Instance()
        elif kind == "function":
            k = next(counter)
            objects[i] = make_function(f"def g{k}(x):\n    return x + {k}\n", f"g{k}")
        else:
            k = next(counter)
            objects[i] = compile(f"x + {k}", f"<oracle {k}>", "eval")
    for i, kind in enumerate(kinds):
        targets = [objects[j] for j in edges[i]]
        if kind == "list":
            objects[i].extend(targets)
        elif kind == "dict":
            objects[i].update((f"k{n}", t) for n, t in enumerate(targets))
        elif kind == "instance":
            objects[i].links = targets
        elif kind == "function":
            objects[i].links = targets
    for i, products in cached.items():
        for product in products:
            coextra.attach(objects[i], [objects[j] for j in product])
    return objects


def oracle(kinds, edges, cached, kept):
    """Indices of the nodes reachable from the kept ones."""
    reachable, stack = set(), list(kept)
    while stack:
        i = stack.pop()
        if i in reachable:
            continue
        reachable.add(i)
        stack.extend(edges[i])
        for product in cached.get(i, ()):  # node -> its code -> its cached products
            stack.extend(product)
    return reachable


@pytest.fixture(scope="module")
def frozen_heap():
    """Each example starts with gc.freeze(), so that its gc.collect() calls scan
    only the objects it made, not Hypothesis's ever-growing bookkeeping."""
    gc.collect()
    yield
    gc.unfreeze()
    gc.collect()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=graphs())
def test_collector_matches_the_reachability_oracle(frozen_heap, graph):
    kinds, edges, cached, kept, automatic = graph
    gc.freeze()
    coextra.set_auto_collect(automatic)
    try:
        objects = build(kinds, edges, cached)
        codes = {i: weakref.ref(getattr(o, "__code__", o)) for i, o in enumerate(objects)
                 if kinds[i] in ("function", "code")}
        roots = [objects[i] for i in kept]
        del objects
        for _ in range(len(kinds) + 2):
            if gc.collect() + coextra.collect() == 0:
                break
        live = oracle(kinds, edges, cached, kept)
        for i, ref in codes.items():
            if i in live:
                assert ref() is not None, f"node {i} is reachable from the kept set"
                h = coextra.holder(ref())
                expected = len(cached.get(i, ()))
                assert (len(h) if h is not None else 0) == expected, f"node {i} lost its cache"
            else:
                assert ref() is None, f"node {i} is unreachable but was not freed"
        del roots
    finally:
        coextra.set_auto_collect(True)
        coextra.reset()
