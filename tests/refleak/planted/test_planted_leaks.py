"""PLANTED LEAKS for the refleak harness: each test here leaks on purpose, and
tests/leakcheck/ asserts that scripts/refleak.sh reports every one of them.

They run only when selected explicitly with COEXTRA_PLANTED_LEAKS=1 (never in the
normal suite: they are outside tests/python and skip themselves otherwise)."""

from __future__ import annotations

import ctypes
import os

import pytest

if os.environ.get("COEXTRA_PLANTED_LEAKS") != "1":
    pytest.skip("planted leaks run only with COEXTRA_PLANTED_LEAKS=1", allow_module_level=True)

from coextra.stress import _naive  # noqa: E402

ctypes.pythonapi.Py_IncRef.argtypes = [ctypes.py_object]
ctypes.pythonapi.Py_IncRef.restype = None


def fresh_function():
    namespace: dict = {}
    exec("def f(x):\n    return x + 1\n", namespace)
    return namespace["f"]


def test_naive_twin_leaks_products_that_reference_their_code():
    f = fresh_function()
    _naive.put(f.__code__, (f, f.__code__, {"payload": [1, 2, 3]}))
    assert _naive.get(f.__code__)[0] is f


def test_injected_reference_leak():
    ctypes.pythonapi.Py_IncRef(["a fresh list, never released"])
