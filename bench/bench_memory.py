"""Memory per cached product, the product itself excluded: coextra against the other stores.

    python bench/bench_memory.py [-n 100000] [--json FILE]

Creates n code objects first (code.replace, so they cost nothing later), then
caches one shared product on each and measures what the caching allocated:

* tracemalloc: every block CPython's allocators handed out (the holder, the
  entry, the code object's co_extra array; a holder keeps its first entry
  inline, so an item array appears only from the second entry on), exactly;
* RSS: everything, including the registry's table of holders (allocated
  outside CPython's allocators, which tracemalloc does not see), at page
  granularity.

Each store is measured in its own child process, so one store's freed memory
never flatters the next. The target: a holder with one entry costs at most 160 bytes.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tracemalloc

TARGET_BYTES = 160

# (name, setup, cache one product on `code`); the first is the reference.
STORES = {
    "coextra: holder + 1 entry (coextra.attach, automatic collection off)": (
        "import coextra\ncoextra.set_auto_collect(False)", "coextra.attach(code, product)"),
    "coextra: holder + 1 entry, automatic collection on (the default)": (
        "import coextra", "coextra.attach(code, product)"),
    "coextra: each further entry (Holder.add)": (
        "import coextra\ncoextra.set_auto_collect(False)\n"
        "for code in codes: coextra.attach(code, product)",
        "coextra.holder(code).add(product)"),
    "WeakKeyDictionary[code] = product": (
        "import weakref\ntable = weakref.WeakKeyDictionary()", "table[code] = product"),
    "dict[code] = product (keeps code alive)": ("table = {}", "table[code] = product"),
    "naive strong co_extra (coextra.stress._naive.put)": ("from coextra.stress import _naive", "_naive.put(code, product)"),
}


def rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def measure_one(name: str, n: int, method: str) -> float:
    """Bytes per cached product for one store, measured in this process."""
    setup, cache = STORES[name]
    base = compile("def f(x):\n    return x + 1\n", "<bench_memory>", "exec").co_consts[0]
    codes = [base.replace(co_name=f"f{i}") for i in range(n)]
    product = object()  # one shared product: its size is not the store's
    scope = {"codes": codes, "product": product}
    exec(setup, scope)
    loop = compile(f"for code in codes:\n    {cache}\n", "<bench_memory>", "exec")
    return bytes_per_item(loop, scope, n, method)


def bytes_per_item(loop, scope: dict, n: int, method: str) -> float:
    """What running `loop` in `scope` adds to the process, per item of n: bytes
    requested ("tracemalloc") or resident ("rss")."""
    gc.collect()
    if method == "tracemalloc":
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        exec(loop, scope)
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    else:
        before = rss_bytes()
        exec(loop, scope)
        after = rss_bytes()
    return (after - before) / n


def analytical() -> dict:
    """sys.getsizeof (which includes the GC header) of a holder and an entry, for the breakdown."""
    import coextra

    code = compile("def f(x):\n    return x\n", "<analytical>", "exec").co_consts[0]
    entry = coextra.attach(code, None)
    holder = coextra.holder(code)
    sizes = {"Holder (sys.getsizeof)": sys.getsizeof(holder), "Entry (sys.getsizeof)": sys.getsizeof(entry),
             "code's co_extra array (CPython)": 16, "registry slot (its table)": 8}
    coextra.reset()
    return sizes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100_000)
    parser.add_argument("--json", help="write the summary-format results to this file")
    parser.add_argument("--child", nargs=2, metavar=("STORE", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_one(args.child[0], args.n, args.child[1])))
        return 0

    def child(name: str, method: str) -> float:
        out = subprocess.run([sys.executable, __file__, "-n", str(args.n), "--child", name, method],
                             check=True, capture_output=True, text=True, env=dict(os.environ))
        return json.loads(out.stdout)

    traced = {name: child(name, "tracemalloc") for name in STORES}
    rss = {name: child(name, "rss") for name in STORES}
    reference = next(iter(STORES))
    holder_one_entry = traced[reference]
    holder_one_entry_rss = rss[reference]
    verdict = lambda value: "meets" if value <= TARGET_BYTES else "MISSES"  # noqa: E731

    print(f"Python {sys.version.split()[0]}; {args.n} code objects, one shared product each; "
          "bytes per cached product, product excluded\n")
    print("| store | tracemalloc B | RSS B |")
    print("|---|---:|---:|")
    for name in STORES:
        print(f"| {name} | {traced[name]:.1f} | {rss[name]:.1f} |")
    print(f"\nA holder with one entry: {holder_one_entry:.1f} B requested (tracemalloc): "
          f"{verdict(holder_one_entry)} the {TARGET_BYTES} B target; {holder_one_entry_rss:.1f} B resident (RSS, "
          f"with allocator rounding and the registry's table): {verdict(holder_one_entry_rss)} it.")
    sizes = analytical()
    print("Analytical: " + ", ".join(f"{k} {v} B" for k, v in sizes.items()))

    if args.json:
        result = {
            "suite": "Memory (bench_memory.py)", "python": sys.version.split()[0],
            "how": f"{args.n} code objects, one shared product each, one child process per store and method",
            "groups": [
                {"title": "Memory per cached product, product excluded (tracemalloc)", "unit": "B",
                 "reference": reference, "results": traced},
                {"title": "Memory per cached product, product excluded (RSS delta)", "unit": "B",
                 "reference": reference, "results": rss},
            ],
            "checks": [{"what": f"holder with one entry <= {TARGET_BYTES} B, bytes requested (tracemalloc)",
                        "value": holder_one_entry, "passed": holder_one_entry <= TARGET_BYTES},
                       {"what": f"holder with one entry <= {TARGET_BYTES} B, resident (RSS: allocator rounding, "
                                "registry table included)",
                        "value": holder_one_entry_rss, "passed": holder_one_entry_rss <= TARGET_BYTES}],
            "analytical_bytes": sizes,
        }
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
