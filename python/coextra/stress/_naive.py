"""The naive store: what a backend does without coextra. It leaks on purpose.

``NaiveStore`` keeps one product per code object in co_extra with a *strong*
reference (the free function drops it when the code object dies). A product that
references its own code closes a cycle the cyclic GC cannot see, so the code
object, and everything the product holds, is never freed. It is the control
that coextra's tests, leak harnesses and benchmarks are measured against; do
not use it for anything else.
"""

from __future__ import annotations

import ctypes
import sys
from types import CodeType
from typing import Any, Optional

_api = ctypes.pythonapi
if sys.version_info >= (3, 12):
    _request_index = _api.PyUnstable_Eval_RequestCodeExtraIndex
    _set_extra = _api.PyUnstable_Code_SetExtra
    _get_extra = _api.PyUnstable_Code_GetExtra
else:
    _request_index = _api._PyEval_RequestCodeExtraIndex
    _set_extra = _api._PyCode_SetExtra
    _get_extra = _api._PyCode_GetExtra

_request_index.argtypes = [ctypes.c_void_p]
_request_index.restype = ctypes.c_ssize_t
_set_extra.argtypes = [ctypes.py_object, ctypes.c_ssize_t, ctypes.c_void_p]
_set_extra.restype = ctypes.c_int
_get_extra.argtypes = [ctypes.py_object, ctypes.c_ssize_t, ctypes.POINTER(ctypes.c_void_p)]
_get_extra.restype = ctypes.c_int
_api.Py_IncRef.argtypes = [ctypes.py_object]
_api.Py_IncRef.restype = None

# Py_DecRef has the signature of a co_extra free function: void (*)(void *).
_INDEX = _request_index(ctypes.cast(_api.Py_DecRef, ctypes.c_void_p))
if _INDEX < 0:  # pragma: no cover - only when all 254 indices are taken
    raise ImportError("coextra.stress._naive: no co_extra index left")


def put(code: CodeType, product: Any) -> None:
    """Store product in code's co_extra, owning one reference to it."""
    if not isinstance(code, CodeType):
        raise TypeError("put() needs a code object")
    _api.Py_IncRef(product)
    # CPython frees (decrefs) a previous value through the free function.
    if _set_extra(code, _INDEX, id(product)) != 0:  # pragma: no cover
        raise RuntimeError("co_extra store failed")


def get(code: CodeType) -> Optional[Any]:
    """The product stored on code, or None."""
    slot = ctypes.c_void_p()
    if _get_extra(code, _INDEX, ctypes.byref(slot)) != 0:  # pragma: no cover
        raise RuntimeError("co_extra read failed")
    if not slot.value:
        return None
    return ctypes.cast(slot.value, ctypes.py_object).value
