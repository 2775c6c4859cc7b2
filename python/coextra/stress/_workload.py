"""The stress demo's workload: run-time functions, a backend that compiles them, three stores.

Kept apart from the command line (coextra/stress/__init__.py) so the pieces read on their own:

* ``make_function(kind, i)`` compiles one new function: an exec'd ``def``, a
  closure, a lambda, or a method of a class created at run time. Each has its own
  globals (the exec namespace), like code loaded from many modules.
* ``Backend.compile(code)`` produces what a frame-evaluation backend caches:
  a ``Product`` referencing its own code the way real products do -- the code,
  the original function, its globals, and a traceback captured while compiling
  (its frames hold the code and the function in their locals) -- plus a block of
  "machine code" bytes so the memory a leak keeps is visible in the RSS.
* The three stores keep products per code object: the naive strong co_extra
  store (``coextra.stress._naive``), a ``weakref.WeakKeyDictionary`` keyed by code, and
  coextra (``coextra.attach``). All three get the same backend.
"""

from __future__ import annotations

import weakref
from types import CodeType, FunctionType
from typing import Any, Callable, Optional

KINDS = ("exec", "closure", "lambda", "method")

_SOURCES = {
    "exec": (
        "def stress_exec_{i}(x):\n"
        "    total = x\n"
        "    for k in range(3):\n"
        "        total += k * {i}\n"
        "    return total\n"
        "function = stress_exec_{i}\n"
        "call = function\n"
    ),
    "closure": (
        "def make_{i}(k):\n"
        "    def stress_closure_{i}(x):\n"
        "        return x + k\n"
        "    return stress_closure_{i}\n"
        "function = make_{i}({i})\n"
        "call = function\n"
    ),
    "lambda": (
        "function = lambda x: x * {i} + 1\n"
        "call = function\n"
    ),
    "method": (
        "class StressClass{i}:\n"
        "    scale = {i}\n"
        "    def stress_method_{i}(self, x):\n"
        "        return x * self.scale\n"
        "function = StressClass{i}.stress_method_{i}\n"
        "call = StressClass{i}().stress_method_{i}\n"
    ),
}


def make_function(kind: str, i: int) -> tuple[FunctionType, Callable[[int], Any]]:
    """A new function of `kind` (its code object is new), and a callable that runs it with one argument."""
    namespace: dict = {"__name__": f"coextra_stress_{kind}_{i}"}
    exec(compile(_SOURCES[kind].format(i=i), f"<coextra-stress {kind} {i}>", "exec"), namespace)
    # The namespace keeps `function` and `call`; drop those names so the only
    # cycle left is the usual one (function -> globals -> class or function).
    function, call = namespace.pop("function"), namespace.pop("call")
    return function, call


class Product:
    """A compiled product that references its own code object, as real ones do."""

    __slots__ = ("code", "function", "globals", "trace", "machine_code", "__weakref__")

    def __init__(self, code: CodeType, function: FunctionType, trace: Any, machine_code: bytes) -> None:
        self.code = code
        self.function = function
        self.globals = function.__globals__
        self.trace = trace
        self.machine_code = machine_code


class _GraphBreak(Exception):
    """Raised while compiling, caught, and kept: backends keep such diagnostics."""


def _trace_into(code: CodeType, function: FunctionType) -> None:
    raise _GraphBreak(code.co_name)


class Backend:
    """Compiles the functions it has been told about; ignores every other code object.

    A PEP 523 backend sees the frame (its function and globals) in the hook; this
    one receives only the code object, so it keeps a side table from code to a
    *weak* reference to the function, which plays the part of that frame.
    """

    def __init__(self, payload_bytes: int) -> None:
        self.payload_bytes = payload_bytes
        self.compiled = 0
        self._functions: dict[int, weakref.ref] = {}

    def register(self, function: FunctionType) -> None:
        key = id(function.__code__)
        table = self._functions

        def forget(_ref: weakref.ref, key: int = key) -> None:
            table.pop(key, None)

        self._functions[key] = weakref.ref(function, forget)

    def knows(self, code: CodeType) -> bool:
        return id(code) in self._functions

    def compile(self, code: CodeType) -> Optional[Product]:
        ref = self._functions.get(id(code))
        function = ref() if ref is not None else None
        if function is None or function.__code__ is not code:
            return None
        try:
            _trace_into(code, function)
        except _GraphBreak as error:
            trace = error.__traceback__
        self.compiled += 1
        return Product(code, function, trace, bytes(self.payload_bytes))


class NaiveStore:
    """A strong reference in co_extra: what backends do without coextra. Leaks."""

    name = "naive"
    label = "naive co_extra store"

    def __init__(self) -> None:
        from . import _naive

        self.get = _naive.get
        self.put = _naive.put


class WeakKeyStore:
    """A WeakKeyDictionary keyed by code. The product keeps its key alive: leaks."""

    name = "weakkeydict"
    label = "WeakKeyDictionary"

    def __init__(self) -> None:
        self.table: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.get = self.table.get
        self.put = self.table.__setitem__


class CoextraStore:
    """coextra: holders owned by the registry, detached by the collector."""

    name = "coextra"
    label = "coextra"

    def __init__(self) -> None:
        import coextra

        self._holder = coextra.holder
        self.put = coextra.attach

    def get(self, code: CodeType) -> Optional[Any]:
        holder = self._holder(code)
        if holder is None:
            return None
        entry = holder.lookup()
        return None if entry is None else entry.product


STORES = {cls.name: cls for cls in (NaiveStore, WeakKeyStore, CoextraStore)}
