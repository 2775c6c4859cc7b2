"""Who owns what: products are freed when they should be, and the naive twin leaks."""

from __future__ import annotations

import gc
import weakref

import coextra
from coextra.stress import _naive
from conftest import make_function


class Product:
    """A weak-referenceable product."""

    def __init__(self, payload=None):
        self.payload = payload


def test_co_extra_does_not_own_the_holder():
    f = make_function()
    h = coextra.holder(f, create=True)
    referrers = gc.get_referrers(h)
    assert any(type(r).__name__ == "Registry" for r in referrers), referrers


def test_plain_product_is_freed_once_its_code_dies_and_the_holder_is_dropped():
    f = make_function()
    product = Product([1, 2, 3])
    coextra.attach(f, product)
    code_ref, product_ref = weakref.ref(f.__code__), weakref.ref(product)
    h = coextra.holder(f)
    del f, product
    gc.collect()
    assert code_ref() is None, "the code object died: the holder did not keep it"
    assert h.code is None, "its death detached the holder"
    assert product_ref() is not None, "our reference to the holder keeps the product"
    del h
    assert product_ref() is None


def test_plain_product_is_freed_with_its_code_when_nobody_holds_the_holder():
    f = make_function()
    product = Product()
    coextra.attach(f, product)
    product_ref = weakref.ref(product)
    del product, f
    gc.collect()
    assert product_ref() is None
    assert coextra.stats()["holders"] == 0


def test_cycle_through_holder_entry_product_is_collected_by_the_gc_once_detached():
    f = make_function()
    h = coextra.holder(f, create=True)
    product = Product()
    product.payload = h  # holder -> entry -> product -> holder, not through the code
    h.add(product)
    product_ref = weakref.ref(product)
    del product, h
    assert coextra.detach(f)
    assert product_ref() is not None, "only the cyclic GC can free this cycle"
    gc.collect()
    assert product_ref() is None


def test_product_referencing_its_code_lives_until_detached():
    # Without the cycle collector this is what keeps the cache valid; detach()
    # (or reset()) breaks it. The collector (on by default, in gc.callbacks)
    # makes this automatic, so it is switched off here.
    coextra.set_auto_collect(False)
    try:
        f = make_function()
        coextra.attach(f, Product(f))
        code_ref = weakref.ref(f.__code__)
        del f
        gc.collect()
        assert code_ref() is not None
        coextra.reset()
        gc.collect()
        assert code_ref() is None
    finally:
        coextra.set_auto_collect(True)


def test_naive_twin_leaks_the_self_referencing_cycle():
    """The control: a strong co_extra store never frees code -> product -> code."""
    f = make_function()
    _naive.put(f.__code__, Product(f))
    assert _naive.get(f.__code__).payload is f
    code_ref = weakref.ref(f.__code__)
    del f
    gc.collect()
    assert code_ref() is not None, "the naive store must leak: this twin is the control"


def test_naive_twin_frees_products_without_a_cycle():
    f = make_function()
    product = Product()
    _naive.put(f.__code__, product)
    product_ref = weakref.ref(product)
    del product, f
    gc.collect()
    assert product_ref() is None
