"""Python code that runs while the collector works: products whose __del__
calls back into coextra while a collection detaches them, guards and
finalizers that run the GC (and so automatic collection) in the middle of
coextra calls."""

from __future__ import annotations

import gc
import weakref

import coextra
from conftest import make_function

calls: list = []


class CallsBack:
    """A product whose finalizer uses coextra while its cache is being dropped."""

    def __init__(self, function, action):
        self.function = function
        self.action = action

    def __del__(self):
        calls.append(self.action(self.function))


def dying_caches(count, action):
    refs = []
    for i in range(count):
        f = make_function(f"def f{i}(x):\n    return x\n", f"f{i}")
        coextra.attach(f, CallsBack(f, action))
        refs.append(weakref.ref(f.__code__))
    return refs


def run(action, count=50):
    coextra.set_auto_collect(False)
    calls.clear()
    try:
        refs = dying_caches(count, action)
        gc.collect()
        detached = coextra.collect()
        gc.collect()
        return detached, list(calls), refs
    finally:
        calls.clear()
        coextra.set_auto_collect(True)


def test_del_that_calls_collect_gets_zero_while_a_collection_runs():
    detached, results, refs = run(lambda f: coextra.collect())
    assert detached == 50
    assert results == [0] * 50, "a nested collect() returns 0 at once"
    assert all(r() is None for r in refs)


def test_del_that_attaches_new_caches_during_a_collection():
    made = []

    def attach_new(f):
        g = make_function("def g(x):\n    return -x\n", "g")
        made.append(g)
        return coextra.attach(g, ("fresh", f.__name__)) is not None

    detached, results, refs = run(attach_new)
    assert detached == 50 and results == [True] * 50
    assert all(coextra.holder(g) is not None for g in made), "new caches stay attached"
    assert all(r() is None for r in refs)
    made.clear()


def test_del_that_looks_up_its_own_holder_during_a_collection():
    detached, results, refs = run(lambda f: coextra.holder(f))
    assert detached == 50
    assert results == [None] * 50, "the holder was detached before any finalizer ran"
    assert all(r() is None for r in refs)


def test_del_that_runs_the_gc_with_automatic_collection_on():
    calls.clear()
    refs = dying_caches(50, lambda f: gc.collect() >= 0)
    gc.collect()
    detached = coextra.collect()
    gc.collect()
    assert len(calls) == 50 and all(calls)
    assert detached + coextra.stats()["detached_by_collector"] >= 50
    assert all(r() is None for r in refs)
    calls.clear()


def test_guard_that_runs_the_gc_during_lookup():
    f = make_function()
    box = [f]

    def guard(x):
        box.clear()  # the last outside reference to f goes away during the lookup
        gc.collect()  # ... and the GC, with automatic collection, runs right here
        return True

    coextra.attach(f, ("product", f), guard)
    h = coextra.holder(f)
    code_ref = weakref.ref(f.__code__)
    del f
    entry = h.lookup(1)
    assert entry is not None and entry.product[0] == "product"
    assert h.code is code_ref(), "the holder we hold keeps the cycle live"
    del entry, h
    # It died after surviving a pass (the one the guard ran): automatic
    # collection finds it at a later pass; collect() finds it now.
    assert coextra.collect() == 1
    gc.collect()
    assert code_ref() is None


def test_collect_during_automatic_collection_from_a_gc_callback():
    seen = []

    def callback(phase, info):
        if phase == "start":
            seen.append(coextra.collect())

    gc.callbacks.insert(0, callback)
    try:
        refs = dying_caches(20, lambda f: True)
        gc.collect()
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
        calls.clear()
    assert seen and all(n >= 0 for n in seen)
    assert all(r() is None for r in refs)
