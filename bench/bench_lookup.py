"""coextra.holder(code) against WeakKeyDictionary.get(code) and dict.get(code).

All three run side by side in one process, interleaved round by round, so the
machine's noise hits each alike; the figure that matters is the ratio.

    python bench/bench_lookup.py [--rounds 15] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import timeit
import weakref

import coextra


def make_codes(n: int):
    functions = []
    for i in range(n):
        ns: dict = {}
        exec(f"def f{i}(x):\n    return x + {i}\n", ns)
        functions.append(ns[f"f{i}"])
    return functions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=200_000)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    functions = make_codes(1000)
    codes = [f.__code__ for f in functions]
    wkd: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    plain: dict = {}
    for code in codes:
        coextra.attach(code, "product")
        wkd[code] = "product"
        plain[code] = "product"
    code = codes[500]
    holder = coextra.holder
    candidates = {
        "coextra.holder(code)": lambda: holder(code),
        "WeakKeyDictionary.get(code)": lambda: wkd.get(code),
        "dict.get(code)": lambda: plain.get(code),
    }
    assert holder(code) is not None and wkd.get(code) == "product"
    # The lambda call itself is common overhead; measure and subtract it.
    empty = lambda: None  # noqa: E731
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    baseline: list[float] = []
    for _ in range(args.rounds):
        baseline.append(timeit.timeit(empty, number=args.number) / args.number)
        for name, fn in candidates.items():
            samples[name].append(timeit.timeit(fn, number=args.number) / args.number)
    call_ns = min(baseline) * 1e9
    raw = {name: min(times) * 1e9 for name, times in samples.items()}
    results = {name: max(ns - call_ns, 0.1) for name, ns in raw.items()}
    spread = {name: statistics.pstdev(t) / statistics.mean(t) for name, t in samples.items()}
    ours, ours_raw = results["coextra.holder(code)"], raw["coextra.holder(code)"]

    print(f"Python {sys.version.split()[0]}; {args.rounds} interleaved rounds of {args.number} calls;")
    print(f"best round; 'net' subtracts the {call_ns:.1f} ns of an empty lambda call\n")
    print("| lookup | ns/call | net ns | ratio to coextra.holder (net) | ratio (with call) |")
    print("|---|---:|---:|---:|---:|")
    for name, ns in results.items():
        print(f"| `{name}` | {raw[name]:.1f} | {ns:.1f} | {ns / ours:.2f}x | {raw[name] / ours_raw:.2f}x |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"python": sys.version.split()[0], "ns_per_call": raw, "net_ns": results,
                       "relative_spread": spread, "call_overhead_ns": call_ns,
                       # The summary format of scripts/bench_summary.py (make bench).
                       "suite": "Python lookup, interleaved rounds (bench_lookup.py)",
                       "how": f"timeit, best of {args.rounds} interleaved rounds of {args.number} calls, "
                              f"minus the {call_ns:.1f} ns of an empty lambda call",
                       "groups": [{"title": "Lookup from Python, net of the call", "unit": "ns",
                                   "reference": "coextra.holder(code)", "results": results}]},
                      fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
