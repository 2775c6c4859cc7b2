"""PLANTED LEAK (run only when explicitly selected): a reference taken on a fresh
object and never released, as a missing Py_DECREF in C would do."""

import ctypes

ctypes.pythonapi.Py_IncRef.argtypes = [ctypes.py_object]
ctypes.pythonapi.Py_IncRef.restype = None
ctypes.pythonapi.Py_IncRef(bytearray(b"planted reference leak " * 8))
print("one reference leaked on purpose")
