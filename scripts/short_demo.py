"""Short demo: products that reference their own code, on thousands of functions.

Attaches such a product to N run-time functions through coextra and through the
naive strong co_extra store, drops the functions, and counts the code objects
that were freed.
"""

from __future__ import annotations

import gc
import sys
import weakref

import coextra
from coextra import _naive


def make_functions(n: int, tag: str):
    out = []
    for i in range(n):
        ns: dict = {}
        exec(f"def {tag}{i}(x):\n    return x * {i}\n", ns)
        out.append(ns[f"{tag}{i}"])
    return out


def freed(refs) -> int:
    gc.collect()
    return sum(r() is None for r in refs)


def main(n: int = 5000) -> None:
    naive_fns = make_functions(n, "naive")
    naive_refs = [weakref.ref(f.__code__) for f in naive_fns]
    for f in naive_fns:
        _naive.put(f.__code__, (f, "compiled"))  # product -> function -> code
    del naive_fns, f

    ours = make_functions(n, "ours")
    our_refs = [weakref.ref(f.__code__) for f in ours]
    for f in ours:
        coextra.attach(f, (f, "compiled"))
    del ours, f

    print(f"{n} functions dropped; code objects freed after gc.collect():")
    print(f"  naive strong co_extra store: {freed(naive_refs):>6} / {n}")
    print(f"  coextra:                     {freed(our_refs):>6} / {n}"
          f"  ({coextra.stats()['holders']} holders still attached)")
    detached = coextra.reset()
    print(f"  coextra after reset():       {freed(our_refs):>6} / {n}"
          f"  (reset detached {detached}; the naive store has no way to do this)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
