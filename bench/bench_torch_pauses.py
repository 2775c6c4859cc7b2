"""Automatic collection's pauses under PyTorch torch.compile, side by side
with CPython's own collections in the same run (skipped without torch).

Waves of small models, each of a class made at run time (so each has its own
forward code), compiled with torch.compile(backend="eager") and run: the
compiled module cached on its forward's code (coextra.attach, the product
referencing the compiled module), and an EphemeronMap keyed by the model
whose value references it and its compiled module (as a backend keeps
per-model state). Waves live for a few waves, then are dropped; the program
calls gc.collect() after every wave. Reported: the longest automatic pause
(coextra's whole gc.callbacks entry) beside CPython's longest collection,
the share of the run in automatic passes, and the dead caches attached after
the last gc.collect().

    python bench/bench_torch_pauses.py [--waves 30] [--per-wave 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import weakref

import coextra
from bench_collector import Pauses

SOURCE = """
import torch

class Model{n}(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) + {n}
        return x
"""


def wave(torch, number: int, per_wave: int, table) -> list:
    made = []
    for i in range(per_wave):
        namespace: dict = {}
        exec(compile(SOURCE.format(n=number * per_wave + i), f"<model {number}.{i}>", "exec"), namespace)
        model = namespace[f"Model{number * per_wave + i}"]()
        compiled = torch.compile(model, backend="eager")
        compiled(torch.ones(2, 8))
        coextra.attach(type(model).forward, ("compiled", compiled))
        table[model] = ("state", model, compiled)
        made.append((model, compiled, weakref.ref(type(model).forward.__code__)))
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", type=int, default=30)
    parser.add_argument("--per-wave", type=int, default=10)
    parser.add_argument("--lifetime", type=int, default=3, help="waves a wave lives")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    try:
        import torch
        import torch._dynamo
    except ImportError:
        print("skipped: torch is not installed")
        return 0
    torch._dynamo.config.cache_size_limit = 10**6
    table = coextra.EphemeronMap()
    live: list[list] = []
    dropped: list[weakref.ref] = []
    before = coextra.stats()
    start = time.perf_counter()
    with Pauses() as p:
        for number in range(args.waves):
            live.append(wave(torch, number, args.per_wave, table))
            if len(live) > args.lifetime:
                dropped += [ref for _, _, ref in live.pop(0)]
            gc.collect()
    elapsed = time.perf_counter() - start
    after = coextra.stats()
    dead = sum(r() is not None and coextra.holder(r()) is not None for r in dropped)
    result = {"python": sys.version.split()[0], "torch": torch.__version__, "waves": args.waves,
              "per_wave": args.per_wave, "seconds": elapsed, "coextra_s": p.coextra_max, "gc_s": p.gc_max,
              "auto_share": (after["auto_seconds"] - before["auto_seconds"]) / elapsed,
              "largest_pass_nodes": after["last_nodes"], "dead_attached": dead, "dropped": len(dropped),
              "map_entries": len(table)}
    print(f"torch {torch.__version__}, Python {result['python']}: {args.waves} waves of {args.per_wave} "
          f"compiled models in {elapsed:.1f} s\n")
    print("| longest automatic pause (target <= 2 ms) | CPython's longest collection in the same run "
          "| in automatic passes | dropped caches still attached after the last gc.collect() |")
    print("|---:|---:|---:|---:|")
    print(f"| **{p.coextra_max * 1e3:.1f} ms** | {p.gc_max * 1e3:.1f} ms | {result['auto_share']:.1%} "
          f"| {dead} of {len(dropped)} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
