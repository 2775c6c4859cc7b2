"""The Python API against WeakKeyDictionary and dict, with pyperf (CPython's benchmark harness).

    python bench/bench_python_api.py [--json FILE] [pyperf options, e.g. --fast, -o FILE]

Lookup: coextra.holder(code), Holder.lookup(), and the product through both,
against WeakKeyDictionary.get(code) and dict.get(code). Store: coextra.attach on
a holder bounded to one entry against setting a WeakKeyDictionary or dict item.
Every statement runs ten times per loop iteration (pyperf's inner_loops), so the
loop itself costs little; each benchmark runs in its own pyperf worker processes.
--json FILE writes the suite in the summary format that scripts/bench_summary.py merges (make bench).
"""

from __future__ import annotations

import json
import sys
import time
import weakref

import pyperf

import coextra

REPEAT = 10  # statements per loop iteration

# (group, name, statement); the first of each group is the reference.
CASES = [
    ("Python lookup", "coextra.holder(code)", "holder(code)"),
    ("Python lookup", "Holder.lookup() (1 entry, no guard)", "h.lookup()"),
    ("Python lookup", "coextra.holder(code).lookup().product", "holder(code).lookup().product"),
    ("Python lookup", "WeakKeyDictionary.get(code)", "wkd.get(code)"),
    ("Python lookup", "dict.get(code)", "plain.get(code)"),
    ("Python store", "coextra.attach(code, product) (max_entries=1)", "attach(code, product)"),
    ("Python store", "WeakKeyDictionary[code] = product", "wkd[code] = product"),
    ("Python store", "dict[code] = product", "plain[code] = product"),
]


def make_namespace() -> dict:
    """The objects every benchmark uses: one run-time code object cached in all three stores."""
    source: dict = {}
    exec("def f(x):\n    return x + 1\n", source)
    code = source["f"].__code__
    product = ("compiled", code)  # references its code, as real products do
    wkd: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    plain: dict = {}
    h = coextra.holder(code, create=True)
    h.max_entries = 1
    h.add(product)
    wkd[code] = product
    plain[code] = product
    return {"holder": coextra.holder, "attach": coextra.attach, "code": code, "product": product,
            "h": h, "wkd": wkd, "plain": plain, "perf_counter": time.perf_counter}


def make_time_func(statement: str, namespace: dict):
    """A pyperf time function running `statement` REPEAT times per loop, with every name local."""
    names = ", ".join(sorted(namespace))
    body = "\n".join(f"        {statement}" for _ in range(REPEAT))
    source = (f"def time_func(loops, {names}):\n"
              f"    t0 = perf_counter()\n"
              f"    for _ in range(loops):\n{body}\n"
              f"    return perf_counter() - t0\n")
    scope: dict = {}
    exec(source, scope)
    function = scope["time_func"]
    return lambda loops: function(loops, **namespace)


def summary(results: dict) -> dict:
    groups: dict = {}
    for group, name, _ in CASES:
        if name not in results:
            continue
        entry = groups.setdefault(group, {"title": group, "unit": "ns", "reference": name, "results": {}})
        entry["results"][name] = results[name]
    return {"suite": "Python API (pyperf)", "python": sys.version.split()[0],
            "how": f"pyperf, median per call, {REPEAT} statements per loop iteration; "
                   "each benchmark in its own worker processes",
            "groups": list(groups.values())}


def main() -> int:
    runner = pyperf.Runner(processes=3, values=3, warmups=1, min_time=0.05)
    runner.argparser.add_argument("--json", help="write the summary-format results to this file")
    runner.argparser.set_defaults(quiet=True)  # ratios matter here, not pyperf's stability advice
    args = runner.parse_args()
    namespace = make_namespace()
    results = {}
    for _, name, statement in CASES:
        benchmark = runner.bench_time_func(name, make_time_func(statement, namespace), inner_loops=REPEAT)
        if not args.worker:  # worker processes only measure; the main one reports
            results[name] = benchmark.median() * 1e9
    if args.json and not args.worker:
        with open(args.json, "w") as fh:
            json.dump(summary(results), fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
