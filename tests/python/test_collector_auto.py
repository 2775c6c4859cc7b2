"""Automatic collection (gc.callbacks): on by default, bounded leaks without
ever calling collect(), removable, and quiet at interpreter exit."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import weakref

import coextra
from conftest import make_function, subprocess_env


def our_callbacks():
    return [cb for cb in gc.callbacks if getattr(cb, "__name__", "") == "_coextra_auto_collect"]


class Product:
    def __init__(self, function):
        self.function = function


def churn(count: int) -> list:
    """Attach `count` caches whose products reference their own function, keep
    none of them, never call collect(); weak references to the code objects."""
    refs = []
    for i in range(count):
        f = make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}")
        coextra.attach(f, Product(f))
        refs.append(weakref.ref(f.__code__))
    del f
    return refs


def alive(refs) -> int:
    return sum(r() is not None for r in refs)


def test_on_by_default_and_in_gc_callbacks():
    assert coextra.get_auto_collect() is True
    assert len(our_callbacks()) == 1


def test_set_auto_collect_removes_and_restores_exactly_one_callback():
    try:
        coextra.set_auto_collect(False)
        assert coextra.get_auto_collect() is False
        assert our_callbacks() == []
        coextra.set_auto_collect(True)
        coextra.set_auto_collect(True)
        assert coextra.get_auto_collect() is True
        assert len(our_callbacks()) == 1
    finally:
        coextra.set_auto_collect(True)


def test_20000_dying_caches_stay_bounded_without_calling_collect():
    collections = coextra.stats()["auto_collections"]
    refs = churn(20_000)
    gc.collect()
    assert alive(refs) <= len(refs) * 5 // 100
    assert coextra.stats()["auto_collections"] > collections
    coextra.collect()
    gc.collect()
    assert alive(refs) == 0


def test_without_automatic_collection_the_same_loop_leaks():
    """The control: the bound above is the collector's doing."""
    coextra.set_auto_collect(False)
    try:
        refs = churn(2_000)
        gc.collect()
        assert alive(refs) == len(refs)
        assert coextra.collect() == len(refs)
        gc.collect()
        assert alive(refs) == 0
    finally:
        coextra.set_auto_collect(True)


def test_live_caches_survive_automatic_collection():
    functions = [make_function(f"def g{i}(x):\n    return {i}\n", f"g{i}") for i in range(2_000)]
    for f in functions:
        coextra.attach(f, Product(f))
    churn(2_000)  # drives young and full passes
    gc.collect()
    gc.collect()
    assert all(coextra.holder(f) is not None and len(coextra.holder(f)) == 1 for f in functions)


def test_exit_with_automatic_collection_and_reentrant_products_is_clean():
    script = textwrap.dedent(
        """
        import gc, coextra

        class Noisy:
            def __init__(self, f):
                self.f = f
            def __del__(self):
                # Runs while a collection (or teardown) detaches the cache.
                coextra.collect()
                coextra.holder(self.f)
                gc.collect()

        keep = []
        for i in range(3000):
            ns = {}
            exec(f"def f{i}(x):\\n    return x\\n", ns)
            coextra.attach(ns[f"f{i}"], Noisy(ns[f"f{i}"]))
            if i % 3 == 0:
                keep.append(ns[f"f{i}"])
        print("ok", coextra.get_auto_collect())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip() == "ok True"
