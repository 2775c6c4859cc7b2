"""The evalframe backend's per-frame cost, and a C API lookup against a raw read.

Side by side in one process, interleaved round by round (the machine's noise
hits each alike); the figures that matter are the ratios.

  fib(N), recursive, with
    (a) no PEP 523 hook,
    (b) a minimal hook that reads one raw co_extra pointer and nothing else,
        then runs the frame with the previous evaluator (tests/capi_ext),
    (c) coextra.evalframe with every frame a hit (looked up through the C API).
  Target: (c)/(b) <= 1.10.

  A C-level lookup in a loop against one raw co_extra read: the header's inline
  coextra_holder_of() (target <= 1.3x), and for reference the same through the
  table (COEXTRA_API->holder_of) and find() (holder + front entry, a new
  reference dropped again: the backend's per-frame query).

    PYTHONPATH=python python bench/bench_evalframe.py [--quick] [--json FILE]

Needs the test extensions built by CMake (make build) in tests/python/_ext.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python", "_ext"))

import _capi_bench as bench  # noqa: E402

import coextra  # noqa: E402
from coextra import evalframe  # noqa: E402


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def fib_calls(n: int) -> int:
    a, b = 1, 1  # calls(0) = calls(1) = 1; calls(n) = 1 + calls(n-1) + calls(n-2)
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return b if n > 0 else 1


def time_fib(n: int, enable, disable) -> float:
    enable()
    try:
        start = time.perf_counter()
        fib(n)
        return time.perf_counter() - start
    finally:
        disable()


def nothing() -> None:
    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few short rounds (a smoke test)")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--n", type=int, default=None, help="fib argument")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 15)
    n = args.n or (18 if args.quick else 24)
    lookups = 200_000 if args.quick else 2_000_000

    compile_all = lambda code: ("compiled", code)  # noqa: E731
    # Warm up (c): every frame of fib must be a hit.
    time_fib(n, lambda: evalframe.enable(compile_all), evalframe.disable)
    assert coextra.holder(fib) is not None
    evalframe.reset_stats()

    variants = {
        "(a) no hook": (nothing, nothing),
        "(b) raw co_extra hook": (bench.raw_hook_enable, bench.raw_hook_disable),
        "(c) coextra.evalframe, all hits": (lambda: evalframe.enable(compile_all),
                                            evalframe.disable),
    }
    fib_times: dict[str, list[float]] = {name: [] for name in variants}
    code = fib.__code__
    lookup_functions = {
        "raw co_extra read": bench.time_raw_read,
        "coextra_holder_of() (header inline)": bench.time_inline_holder_of,
        "COEXTRA_API->holder_of()": bench.time_capi_holder_of,
        "coextra_holder_of() + front() (evalframe's check)": bench.time_inline_front,
        "COEXTRA_API->find() (holder + front entry)": bench.time_capi_find,
    }
    lookup_times: dict[str, list[float]] = {name: [] for name in lookup_functions}
    for _ in range(rounds):
        for name, (enable, disable) in variants.items():
            fib_times[name].append(time_fib(n, enable, disable))
        for name, function in lookup_functions.items():
            lookup_times[name].append(function(code, lookups))

    stats = evalframe.stats()
    frames = fib_calls(n)
    assert stats["frames"] == stats["hits"] == rounds * frames, stats  # all hits, all counted
    best = {name: min(t) for name, t in fib_times.items()}
    per_frame = {name: t / frames * 1e9 for name, t in best.items()}
    a, b, c = (best[name] for name in variants)
    lookup = {name: min(t) for name, t in lookup_times.items()}
    raw = lookup["raw co_extra read"]
    lookup_ratio = lookup["coextra_holder_of() (header inline)"] / raw

    print(f"Python {sys.version.split()[0]}; fib({n}) = {frames} frames; best of {rounds} "
          f"interleaved rounds\n")
    print("| fib variant | ms | ns/frame | ratio to (a) | ratio to (b) |")
    print("|---|---:|---:|---:|---:|")
    for name, t in best.items():
        print(f"| {name} | {t * 1e3:.1f} | {per_frame[name]:.1f} | {t / a:.2f} | {t / b:.2f} |")
    print(f"\n(c)/(b) = **{c / b:.3f}** (target <= 1.10)\n")
    print(f"| C-level lookup, {lookups} in a loop | ns/lookup | ratio |")
    print("|---|---:|---:|")
    for name, ns in lookup.items():
        print(f"| {name} | {ns:.2f} | {ns / raw:.2f} |")
    print(f"\ncoextra_holder_of() / raw read = **{lookup_ratio:.2f}** (target <= 1.3)")
    if args.json:
        with open(args.json, "w") as fh:
            # "groups": the summary format scripts/bench_summary.py merges (make bench).
            groups = [
                {"title": f"fib({n}), {frames} frames: per frame", "unit": "ns",
                 "reference": "(b) raw co_extra hook", "results": dict(per_frame)},
                {"title": "C-level lookup", "unit": "ns", "reference": "raw co_extra read",
                 "results": dict(lookup)},
            ]
            json.dump({"suite": "bench_evalframe.py", "python": sys.version.split()[0],
                       "how": f"best of {rounds} interleaved rounds", "groups": groups,
                       "fib_n": n, "frames": frames,
                       "rounds": rounds, "fib_seconds": fib_times, "fib_best": best,
                       "ratio_c_over_b": c / b, "ratio_b_over_a": b / a,
                       "lookup_ns": lookup_times, "lookup_best_ns": lookup,
                       "ratio_capi_over_raw": lookup_ratio}, fh, indent=2)
    coextra.reset()
    return 0


if __name__ == "__main__":
    sys.exit(main())
