"""Helpers shared by the leak scenarios (plain scripts run by tests/scenarios/run.py).

A scenario exits 0 when it ran and 1 when one of its own checks failed; the harness
around it decides whether memory was leaked or corrupted.
"""

from __future__ import annotations

import gc
import sys

def fresh_function(i: int, namespace: dict | None = None):
    """A function compiled at run time, so its code object is new and can die."""
    ns = {} if namespace is None else namespace
    exec(compile(f"def f{i}(x):\n    return x + {i}\n", f"<scenario f{i}>", "exec"), ns)
    return ns[f"f{i}"]


def check(condition: bool, message: str) -> None:
    """A scenario's own sanity check (the harness checks memory; this checks behaviour)."""
    if not condition:
        print(f"scenario check failed: {message}", file=sys.stderr, flush=True)
        sys.exit(1)


def alive() -> tuple[int, int]:
    import coextra

    gc.collect()
    s = coextra.stats()
    return s["holders_alive"], s["entries_alive"]
