"""The cycle collector on every cache shape that closes a cycle through
co_extra: each dead shape is freed by
``gc.collect(); coextra.collect(); gc.collect()`` (and survives ``gc.collect()``
alone, so it really is a cycle through the cache); its live variant keeps every
holder and entry; the naive strong store (the control) leaks every dead shape.

A shape is a function ``shape(store, i)`` that builds one instance with
``store(code_or_function, product, guard=None)`` and returns
``(cached_codes, root)``: the code objects it cached, and the object that keeps
the instance alive in the live variant (the dead variant drops it).
"""

from __future__ import annotations

import functools
import gc
import sys
import threading
import types
import weakref
from collections import Counter

import pytest

import coextra
from coextra.stress import _naive
from conftest import make_function

INSTANCES = 8


# Automatic collection off (conftest.py): these tests prove what collect() does.
pytestmark = pytest.mark.usefixtures("explicit_collection_only")


def fresh(i: int, body: str = "return x + 1"):
    return make_function(f"def f{i}(x):\n    {body}\n", f"f{i}")


class Plain:
    def __init__(self, value):
        self.value = value


class Slotted:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


# --- shapes -----------------------------------------------------------------


def shape_product_is_the_code(store, i):
    f = fresh(i)
    store(f, f.__code__)
    return [f.__code__], f


def shape_code_in_list(store, i):
    f = fresh(i)
    store(f, [f.__code__])
    return [f.__code__], f


def shape_code_in_untracked_tuple(store, i):
    f = fresh(i)
    product = (f.__code__, "compiled")
    gc.collect()  # the GC untracks tuples of non-container objects
    assert not gc.is_tracked(product), "the shape needs an untracked tuple"
    store(f, product)
    return [f.__code__], f


def shape_code_in_tracked_tuple(store, i):
    f = fresh(i)
    store(f, (f.__code__, []))
    return [f.__code__], f


def shape_code_in_dict(store, i):
    f = fresh(i)
    store(f, {"code": f.__code__, "n": i})
    return [f.__code__], f


def shape_code_in_instance_dict(store, i):
    f = fresh(i)
    store(f, Plain(f.__code__))
    return [f.__code__], f


def shape_code_in_instance_slots(store, i):
    f = fresh(i)
    store(f, Slotted(f.__code__))
    return [f.__code__], f


def shape_function_object(store, i):
    f = fresh(i)
    store(f, f)
    return [f.__code__], f.__code__


def shape_exec_namespace(store, i):
    f = fresh(i)
    store(f, f.__globals__)
    return [f.__code__], f


def shape_closure_over_function(store, i):
    f = fresh(i)
    store(f, lambda x: f(x) * 2)
    return [f.__code__], f


def shape_functools_partial(store, i):
    f = fresh(i)
    store(f, functools.partial(f, 1))
    return [f.__code__], f


def shape_guard_closing_over_function(store, i):
    f = fresh(i)
    store(f, ("compiled", i), lambda x: f is not None)
    return [f.__code__], f


def shape_caches_referencing_each_other(store, i):
    fs = [fresh(i * 3 + k) for k in range(3)]
    for k, f in enumerate(fs):
        store(f, Plain(fs[(k + 1) % 3]))  # f0 -> f1 -> f2 -> f0, through caches only
    return [f.__code__ for f in fs], fs[0]


def shape_traceback_of_a_call(store, i):
    f = fresh(i, "raise ValueError(x)")
    try:
        f(i)
    except ValueError as error:
        tb = error.__traceback__
    store(f, tb)
    return [f.__code__], f


def shape_frame_of_a_call(store, i):
    f = make_function(f"import sys\ndef f{i}(x):\n    return sys._getframe()\n", f"f{i}")
    store(f, f(i))
    return [f.__code__], f


def shape_suspended_generator(store, i):
    f = fresh(i, "yield x\n    yield x + 1")
    generator = f(i)
    next(generator)
    store(f, generator)
    return [f.__code__], f


def shape_nested_function_in_parent_co_consts(store, i):
    outer = make_function(
        f"def outer{i}():\n    def inner(y):\n        return y\n    return inner\n", f"outer{i}"
    )
    inner = outer()
    assert inner.__code__ in outer.__code__.co_consts
    store(outer, outer)
    store(inner, inner)
    return [outer.__code__, inner.__code__], outer


def shape_bound_method_of_runtime_class(store, i):
    f = fresh(i)
    cls = type(f"Runtime{i}", (), {"method": f})
    store(f, cls().method)
    return [f.__code__], f


def shape_compiled_code_without_function(store, i):
    code = compile(f"x + {i}", f"<compiled {i}>", "eval")
    store(code, ["compiled", code])
    return [code], code


def shape_several_entries_one_referencing_the_code(store, i):
    f = fresh(i)
    store(f, ("a", i))
    store(f, Plain(f))
    store(f, ["c"])
    return [f.__code__], f


SHAPES = [value for name, value in sorted(globals().items()) if name.startswith("shape_")]


# --- harness ----------------------------------------------------------------


class CoextraStore:
    """store() for coextra; remembers how many entries each code should keep."""

    def __init__(self):
        self.entries = Counter()

    def __call__(self, target, product, guard=None):
        coextra.attach(target, product, guard)
        self.entries[id(getattr(target, "__code__", target))] += 1


def naive_store(target, product, guard=None):
    code = getattr(target, "__code__", target)
    _naive.put(code, (_naive.get(code), product, guard))  # keeps every product


def build(shape, store):
    watched, roots = [], []
    for i in range(INSTANCES):
        codes, root = shape(store, i)
        watched.extend(weakref.ref(code) for code in codes)
        roots.append(root)
        del codes, root
    return watched, roots


def alive(watched):
    return [r for r in watched if r() is not None]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.__name__[len("shape_"):])
def test_dead_shape_is_collected(shape):
    watched, roots = build(shape, CoextraStore())
    del roots
    gc.collect()
    assert len(alive(watched)) == len(watched), "a cycle through the cache survives the GC"
    detached = coextra.collect()
    gc.collect()
    assert alive(watched) == []
    assert detached == len(watched), "one holder per cached code object"
    assert coextra.stats()["holders"] == 0


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.__name__[len("shape_"):])
def test_live_shape_keeps_every_holder_and_entry(shape):
    store = CoextraStore()
    watched, roots = build(shape, store)
    gc.collect()
    assert coextra.collect() == 0
    gc.collect()
    assert len(alive(watched)) == len(watched)
    for ref in watched:
        h = coextra.holder(ref())
        assert h is not None and len(h) == store.entries[id(ref())]
    del h  # a holder we reference is live, and so is its code
    del roots  # and once the roots go, the same caches are garbage
    gc.collect()  # (after the GC has freed the function <-> namespace cycles)
    assert coextra.collect() == len(watched)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.__name__[len("shape_"):])
def test_naive_store_leaks_the_same_shape(shape):
    """The control: without coextra every one of these shapes leaks."""
    watched, roots = build(shape, naive_store)
    del roots
    gc.collect()
    coextra.collect()
    gc.collect()
    assert len(alive(watched)) == len(watched)


# --- must-keep cases ----------------------------------------------------------


class LazyModule(types.ModuleType):
    """A module subclass, as lazy importers install: the collector explores
    these like any object (it skips only exact modules) and must still see
    them as live."""


@pytest.mark.parametrize("module_type", [types.ModuleType, LazyModule])
def test_kept_when_reachable_from_a_module_in_sys_modules(module_type):
    module = module_type("coextra_test_collector_module")
    sys.modules[module.__name__] = module
    try:
        f = fresh(0)
        module.f = f
        coextra.attach(f, Plain(f))
        code_ref = weakref.ref(f.__code__)
        del f
        assert coextra.collect() == 0
        assert coextra.holder(code_ref()) is not None
    finally:
        del sys.modules[module.__name__]
    del module
    assert coextra.collect() == 1


def test_kept_when_reachable_from_another_code_objects_co_consts():
    outer = make_function("def outer():\n    def inner(y):\n        return y\n    return inner\n", "outer")
    inner = outer()
    coextra.attach(inner, Plain(inner))  # only the inner code is cached
    code_ref = weakref.ref(inner.__code__)
    del inner
    assert coextra.collect() == 0, "the live outer code holds the inner one in co_consts"
    assert coextra.holder(code_ref()) is not None
    del outer
    assert coextra.collect() == 1


@pytest.mark.parametrize("held", ["holder", "entry"])
def test_kept_while_something_outside_holds_its_holder_or_an_entry(held):
    # The collector explores a holder and its entries as part of their code's
    # node only while nothing else references them; a reference from outside
    # reaches the product, and through it the code.
    f = fresh(0)
    coextra.attach(f, Plain(f))
    outside = coextra.holder(f) if held == "holder" else coextra.holder(f).entries[0]
    code_ref = weakref.ref(f.__code__)
    del f
    assert coextra.collect() == 0
    assert coextra.holder(code_ref()) is not None
    del outside
    assert coextra.collect() == 1
    gc.collect()
    assert code_ref() is None


def _immortal_stdlib_functions():
    """Functions of deep-frozen stdlib modules: their code objects are immortal
    (3.12) or carry a reference count of about 10**9 (3.11)."""
    import os
    import posixpath

    functions = [f for f in vars(posixpath).values() if isinstance(f, types.FunctionType)]
    functions += [f for f in vars(os).values() if isinstance(f, types.FunctionType)]
    return [f for f in functions if sys.getrefcount(f.__code__) > 1 << 29][:8]


def test_kept_when_the_code_is_immortal_and_the_others_are_still_collected():
    immortal = _immortal_stdlib_functions()
    if not immortal:
        pytest.skip("no immortal code objects in this interpreter's stdlib")
    for f in immortal:  # products that reference their own code: a cycle, but immortal
        coextra.attach(f, [f, f.__code__])
    dead = [fresh(i) for i in range(INSTANCES)]
    for f in dead:
        coextra.attach(f, Plain(f))
    del dead, f
    assert coextra.collect() == INSTANCES
    assert all(coextra.holder(f.__code__) is not None for f in immortal)
    for f in immortal:
        coextra.detach(f.__code__)


def test_kept_while_its_frame_executes_even_with_the_function_deleted():
    source = (
        "import coextra, gc, sys\n"
        "def f(results):\n"
        "    del globals()['f']\n"  # the function object is gone while it runs
        "    gc.collect()\n"
        "    results.append(coextra.collect())\n"
        "    results.append(coextra.holder(sys._getframe().f_code))\n"
    )
    f = make_function(source, "f")
    coextra.attach(f, Plain(f))  # the cache is all that is left of f once it runs
    code_ref = weakref.ref(f.__code__)
    results: list = []
    call = f
    del f
    call(results)
    del call
    detached, h = results
    assert detached == 0 and h is not None and h.code is code_ref()
    del results, h
    assert coextra.collect() == 1
    gc.collect()
    assert code_ref() is None


def test_kept_while_a_thread_is_blocked_inside_the_function():
    f = fresh(0, "x[0].set()\n    x[1].wait()")
    coextra.attach(f, Plain(f))
    code_ref = weakref.ref(f.__code__)
    entered, release = threading.Event(), threading.Event()
    box = [f]
    del f

    def runner():
        box.pop()((entered, release))

    thread = threading.Thread(target=runner)
    thread.start()
    try:
        assert entered.wait(10)
        gc.collect()
        assert coextra.collect() == 0, "the blocked thread's frame is running this code"
        assert coextra.holder(code_ref()) is not None
    finally:
        release.set()
        thread.join()
    assert coextra.collect() == 1
    gc.collect()
    assert code_ref() is None


# --- budget and explain ---------------------------------------------------------


@pytest.fixture
def restore_budget():
    before = coextra.get_budget()
    yield
    coextra.set_budget(before)


def test_past_the_budget_everything_is_live(restore_budget):
    f = fresh(0)
    coextra.attach(f, Plain([Plain(f)]))  # code, holder, entry, product, list, instance, function
    del f
    coextra.set_budget(3)
    exhausted = coextra.stats()["budget_exhausted"]
    assert coextra.collect() == 0, "the cycle goes through nodes past the budget"
    assert coextra.stats()["budget_exhausted"] == exhausted + 1
    assert coextra.stats()["last_nodes"] <= 3
    coextra.set_budget(100_000)
    assert coextra.collect() == 1


def test_budget_rejects_non_ints_and_values_below_one(restore_budget):
    with pytest.raises(ValueError):
        coextra.set_budget(0)
    with pytest.raises(ValueError):
        coextra.set_budget(-5)
    for wrong in (1.5, "10", None, True):
        with pytest.raises(TypeError):
            coextra.set_budget(wrong)
    coextra.set_budget(12345)
    assert coextra.get_budget() == 12345


def test_explain_gives_the_path_from_holder_back_to_the_code():
    f = fresh(0)
    product = Plain(f)
    entry = coextra.attach(f, product)
    paths = coextra.explain(f)
    assert paths, "there is a path holder -> entry -> product -> ... -> code"
    shortest = paths[0]
    assert shortest[0] is coextra.holder(f)
    assert shortest[1] is entry
    assert shortest[2] is product
    assert shortest[-1] is f.__code__
    assert any(step is f for step in shortest), "the function is the last hop to the code"


def test_explain_is_empty_without_a_cycle_or_a_holder():
    f = fresh(0)
    assert coextra.explain(f) == []
    coextra.attach(f, ("no", "reference"))
    assert coextra.explain(f) == []


def test_explain_respects_the_budget(restore_budget):
    f = fresh(0)
    coextra.attach(f, Plain([Plain(f)]))
    coextra.set_budget(2)
    assert coextra.explain(f) == []
    coextra.set_budget(1000)
    assert len(coextra.explain(f)) >= 1


def test_stats_report_the_collector():
    f = fresh(0)
    coextra.attach(f, f)
    del f
    before = coextra.stats()
    assert coextra.collect() == 1
    after = coextra.stats()
    assert after["collections"] == before["collections"] + 1
    assert after["detached_by_collector"] == before["detached_by_collector"] + 1
    assert after["last_nodes"] >= 3  # code, holder, entry, function at least
    assert 0 <= after["last_seconds"] < 10
