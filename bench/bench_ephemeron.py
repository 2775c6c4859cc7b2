"""coextra.EphemeronMap against weakref.WeakKeyDictionary and dict, side by side in one run.

1. Lookups: m.get(k) and m[k] against WeakKeyDictionary.get(k) / wkd[k] and
   dict.get(k) / d[k] (the keys hash by identity, object's default), for
   function keys, class keys and plain instances; 1,000 entries per container,
   ten different keys per loop iteration (timeit, the names local), rounds
   interleaved so the machine's noise hits every case alike; the median round,
   in ns per lookup. Targets, for m.get(k) and m[k] alike:
   WeakKeyDictionary.get over EphemeronMap at least 3x; dict.get over
   EphemeronMap at least 1.0x (the map at least as fast). wkd[k] and d[k] are
   shown beside them (CPython specialises d[k] for exact dicts).
2. Memory per entry, value excluded: n keys (functions) made first, then
   inserted into a container made beforehand, one shared value; bytes
   requested (tracemalloc: every block CPython's allocators handed out,
   exactly) and resident (RSS delta: allocator rounding, at page
   granularity), each store and method in its own child process, as
   bench_memory.py does. Targets: EphemeronMap over WeakKeyDictionary at most
   1.0; EphemeronMap at most 117 B per entry (tracemalloc).
3. The collector: n map entries whose values reference their key and one
   shared structure (value = [key, shared]), the keys alive in a list, so
   nothing is garbage: one coextra.collect() against one gc.collect() on that
   heap, rounds interleaved, the median; automatic collection off meanwhile.
   Target: at most 0.6x. For information: one coextra.collect() that finds all
   n entries garbage (the same heap with the keys' list dropped) and removes
   them, beside m.clear() on that heap (the same freeing, without the analysis).
4. Every dict operation by size: 1,000, 10,000, 100,000 and 1,000,000 entries
   (--quick: 1,000 and 10,000), plain-class instances as keys, EphemeronMap
   against WeakKeyDictionary in one process, rounds interleaved, the median;
   ns per operation, a Python loop's cost included for both: inserting every
   key into an empty container, c[k] with the keys in insertion order and in
   a random order, c.get(k), `k in c`, `for k in c`, `for k, v in c.items()`,
   deleting every key, and inserting every key again with a function as the
   value. The first insert's value is ("value",), a tuple of atoms, which
   the collector knows cannot keep a key alive and so never seeds; a
   function is a value the collector must follow, as a backend's products
   are. Targets: WeakKeyDictionary over EphemeronMap at
   least 1.0x for every operation at every size; c[k] at least 3x at 100,000
   entries (both orders).

    PYTHONPATH=python python bench/bench_ephemeron.py [--quick] [--rounds R] [-n N] [--json FILE]

No timing is asserted: the checks are reported (and recorded in --json),
met or not. What is asserted is that every lookup finds its value and that
the collector keeps every live entry and removes every garbage one.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
import types
import weakref

import coextra
from bench_memory import bytes_per_item  # a sibling script (bench/)

LOOKUP_TARGET_WKD = 3.0    # WeakKeyDictionary time over EphemeronMap time, at least
LOOKUP_TARGET_DICT = 1.0   # dict time over EphemeronMap time, at least
MEMORY_TARGET = 1.0        # EphemeronMap bytes over WeakKeyDictionary bytes, at most
MEMORY_BYTES_TARGET = 117  # EphemeronMap bytes per entry (tracemalloc), at most
COLLECTOR_TARGET = 0.6     # coextra.collect() time over gc.collect() time, at most
OPERATION_TARGET = 1.0     # WeakKeyDictionary time over EphemeronMap time, every operation and size, at least
LOOKUP_TARGET_100K = 3.0   # the same for c[k] at 100,000 entries, at least

ENTRIES = 1_000            # per container, in the lookup benchmark
KEYS_PER_LOOP = 10         # different keys looked up per loop iteration


def template(x):
    return x + 1


class Plain:
    """Instances: identity hash, a __weakref__ slot."""


def make_keys(kind: str, n: int) -> list:
    if kind == "function":
        code, g = template.__code__, globals()
        return [types.FunctionType(code, g, f"k{i}") for i in range(n)]
    if kind == "class":
        return [type(f"K{i}", (), {}) for i in range(n)]
    if kind == "instance":
        return [Plain() for _ in range(n)]
    raise ValueError(kind)


def extension_info() -> dict:
    """Which build was measured."""
    path = coextra._coextra.__file__
    return {"path": os.path.relpath(path), "bytes": os.path.getsize(path),
            "mtime": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(os.path.getmtime(path)))}


# ---------------------------------------------------------------------------
# 1. Lookups

# (operation, container, statement with {k}); per operation, EphemeronMap first (the reference).
LOOKUPS = [
    ("get", "EphemeronMap", "m.get({k})"),
    ("get", "WeakKeyDictionary", "wkd.get({k})"),
    ("get", "dict", "d.get({k})"),
    ("[]", "EphemeronMap", "m[{k}]"),
    ("[]", "WeakKeyDictionary", "wkd[{k}]"),
    ("[]", "dict", "d[{k}]"),
]


def case_label(operation: str, container: str) -> str:
    return f"{container}.get(k)" if operation == "get" else f"{container}[k]"


def lookup_timers(kind: str) -> tuple[dict, list]:
    """One timeit.Timer per lookup case (and the loop's own cost) over
    containers of ENTRIES keys of `kind`; the keys, which the caller keeps."""
    keys = make_keys(kind, ENTRIES)
    value = ("value",)
    m = coextra.EphemeronMap()
    wkd: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    d: dict = {}
    for k in keys:
        m[k] = value
        wkd[k] = value
        d[k] = value
    looked_up = keys[:: ENTRIES // KEYS_PER_LOOP][:KEYS_PER_LOOP]
    for k in looked_up:
        assert m.get(k) is value and m[k] is value and wkd.get(k) is value and d.get(k) is value
    namespace = {"m": m, "wkd": wkd, "d": d, **{f"k{j}": k for j, k in enumerate(looked_up)}}
    # timeit runs the setup inside its timing function: every name is a local there.
    setup = "\n".join(f"{name} = _ns[{name!r}]" for name in namespace)
    timers = {}
    for operation, container, statement in LOOKUPS:
        stmt = "\n".join(statement.format(k=f"k{j}") for j in range(KEYS_PER_LOOP))
        timers[case_label(operation, container)] = timeit.Timer(stmt, setup, globals={"_ns": namespace})
    # The loop and a bare name per statement: what every case pays besides its lookup.
    timers["loop"] = timeit.Timer("\n".join(f"k{j}" for j in range(KEYS_PER_LOOP)), setup,
                                  globals={"_ns": namespace})
    return timers, keys


def calibrate(timer: timeit.Timer, sample_seconds: float) -> int:
    number = 1_000
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= sample_seconds / 10:
            return max(1, int(number * sample_seconds / elapsed))
        number *= 10


def lookups(kinds, rounds: int, sample_seconds: float) -> dict:
    results = {}
    for kind in kinds:
        timers, keys = lookup_timers(kind)
        numbers = {name: calibrate(t, sample_seconds) for name, t in timers.items()}
        samples: dict[str, list[float]] = {name: [] for name in timers}
        for _ in range(rounds):  # interleaved: noise hits every case alike
            for name, timer in timers.items():
                samples[name].append(timer.timeit(numbers[name]) / (numbers[name] * KEYS_PER_LOOP) * 1e9)
        results[kind] = {"median_ns": {name: statistics.median(s) for name, s in samples.items()},
                         "min_ns": {name: min(s) for name, s in samples.items()},
                         "relative_spread": {name: statistics.pstdev(s) / statistics.mean(s)
                                             for name, s in samples.items()},
                         "calls_per_sample": {name: numbers[name] * KEYS_PER_LOOP for name in numbers}}
        del timers, keys
    return results


# ---------------------------------------------------------------------------
# 2. Memory per entry

# (name, setup, insert `k`); the first is the reference.
STORES = {
    "EphemeronMap[k] = value (automatic collection on, the default)": (
        "import coextra\ntable = coextra.EphemeronMap()", "table[k] = value"),
    "EphemeronMap[k] = value (automatic collection off)": (
        "import coextra\ncoextra.set_auto_collect(False)\ntable = coextra.EphemeronMap()", "table[k] = value"),
    "WeakKeyDictionary[k] = value": (
        "import weakref\ntable = weakref.WeakKeyDictionary()", "table[k] = value"),
    "dict[k] = value (keeps k alive)": ("table = {}", "table[k] = value"),
}
EPHEMERON_STORE = next(iter(STORES))
WKD_STORE = "WeakKeyDictionary[k] = value"


def measure_one(name: str, n: int, method: str) -> float:
    """Bytes per entry for one store, measured in this (child) process."""
    setup, insert = STORES[name]
    keys = make_keys("function", n)
    value = object()  # one shared value: its size is not the store's
    scope = {"keys": keys, "value": value}
    exec(setup, scope)
    loop = compile(f"for k in keys:\n    {insert}\n", "<bench_ephemeron>", "exec")
    per_entry = bytes_per_item(loop, scope, n, method)
    assert len(scope["table"]) == n  # type: ignore[arg-type]
    return per_entry


def analytical() -> dict:
    """sys.getsizeof (GC header included) of the per-entry objects, for the breakdown."""
    key = make_keys("function", 1)[0]
    m = coextra.EphemeronMap()
    m[key] = None
    entry = next(r for r in weakref.getweakrefs(key) if type(r).__name__ == "_EphemeronEntry")
    wkd: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    wkd[key] = None
    ref = next(r for r in weakref.getweakrefs(key) if type(r) is weakref.ref)
    return {"EphemeronMap entry (sys.getsizeof)": sys.getsizeof(entry),
            "WeakKeyDictionary's weak reference (sys.getsizeof)": sys.getsizeof(ref)}


def memory(n: int) -> dict:
    def child(name: str, method: str):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "-n", str(n), "--child", name, method],
                             check=True, capture_output=True, text=True, env=dict(os.environ))
        return json.loads(out.stdout)

    traced = {name: child(name, "tracemalloc") for name in STORES}
    rss = {name: child(name, "rss") for name in STORES}
    return {"entries": n, "tracemalloc": traced, "rss": rss, "analytical": analytical()}


# ---------------------------------------------------------------------------
# 3. The collector

def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def build_heap(n: int, shared) -> tuple[coextra.EphemeronMap, list]:
    m = coextra.EphemeronMap()
    keys = make_keys("function", n)
    for k in keys:
        m[k] = [k, shared]
    return m, keys


def collector(n: int, rounds: int) -> dict:
    was_on = coextra.get_auto_collect()
    coextra.set_auto_collect(False)
    try:
        gc.collect()
        shared = [[i] for i in range(100)]  # one structure every value references
        m, keys = build_heap(n, shared)
        gc.collect()
        samples_gc, samples_collector = [], []
        for _ in range(rounds):  # interleaved: noise hits both alike
            samples_gc.append(timed(gc.collect)[0])
            elapsed, removed = timed(coextra.collect)
            assert removed == 0 and len(m) == n, "every entry is live"
            samples_collector.append(elapsed)
        stats = coextra.stats()
        live = {"entries": n, "gc_s": statistics.median(samples_gc),
                "collector_s": statistics.median(samples_collector),
                "gc_min_s": min(samples_gc), "collector_min_s": min(samples_collector),
                "nodes": stats["last_nodes"], "budget_exhausted": stats["budget_exhausted"],
                "gc_objects": len(gc.get_objects())}
        live["ratio"] = live["collector_s"] / live["gc_s"]
        del m, keys
        gc.collect()

        samples_garbage = []
        for _ in range(rounds):
            m, keys = build_heap(n, shared)
            probe = weakref.ref(keys[-1])
            del keys  # now each key is reachable only through its own entry's value
            gc.collect()
            assert len(m) == n and probe() is not None, "gc.collect() cannot free them"
            elapsed, removed = timed(coextra.collect)
            assert removed == n and len(m) == 0 and probe() is None, (removed, len(m))
            samples_garbage.append(elapsed)
            del m
            gc.collect()
        garbage_nodes = coextra.stats()["last_nodes"]

        # The freeing alone, no analysis: the same garbage heap emptied by clear().
        samples_clear = []
        for _ in range(rounds):
            m, keys = build_heap(n, shared)
            del keys
            gc.collect()
            elapsed, _ = timed(m.clear)
            assert len(m) == 0
            samples_clear.append(elapsed)
            del m
            gc.collect()
        garbage = {"entries": n, "collector_s": statistics.median(samples_garbage),
                   "collector_min_s": min(samples_garbage), "nodes": garbage_nodes,
                   "clear_s": statistics.median(samples_clear), "clear_min_s": min(samples_clear)}
    finally:
        coextra.set_auto_collect(was_on)
    return {"live": live, "garbage": garbage}


# ---------------------------------------------------------------------------
# 4. Every dict operation by size

CONTAINERS = {"EphemeronMap": coextra.EphemeronMap, "WeakKeyDictionary": weakref.WeakKeyDictionary}
# Timed over every key (its own loop); per container, the reference first.
OPERATIONS = ["insert", "c[k] (insertion order)", "c[k] (random order)", "c.get(k)", "k in c",
              "for k in c", "for k, v in c.items()", "del c[k]", "insert, value a function"]
# The key lists each operation loops over: all keys, or (random order) a shuffled copy.
LOOPS = {
    "insert": "for k in keys:\n    c[k] = value",
    "c[k] (insertion order)": "for k in keys:\n    c[k]",
    "c[k] (random order)": "for k in shuffled:\n    c[k]",
    "c.get(k)": "for k in keys:\n    c.get(k)",
    "k in c": "for k in keys:\n    k in c",
    "for k in c": "for k in c:\n    pass",
    "for k, v in c.items()": "for k, v in c.items():\n    pass",
    "del c[k]": "for k in keys:\n    del c[k]",
    "insert, value a function": "for k in keys:\n    c[k] = function",
}
COMPILED = {op: compile(f"def run(c, keys, shuffled, value, function):\n" + "\n".join("    " + line for line in
                                                                              loop.splitlines()) + "\n",
                        "<bench_ephemeron>", "exec") for op, loop in LOOPS.items()}


def operation_function(op: str):
    scope: dict = {}
    exec(COMPILED[op], scope)
    return scope["run"]


def one_round(container, keys: list, shuffled: list, reps: int) -> dict:
    """Seconds per operation for each of OPERATIONS: `reps` times, a new
    container gets every key, each operation is timed over it, and the
    container is dropped empty (so one container, and one entry per key, is
    alive at a time)."""
    value = ("value",)

    def function():
        pass

    fns = {op: operation_function(op) for op in OPERATIONS}
    times = dict.fromkeys(OPERATIONS, 0.0)
    for _ in range(reps):
        c = container()
        for op in OPERATIONS:
            t0 = time.perf_counter()
            fns[op](c, keys, shuffled, value, function)
            times[op] += time.perf_counter() - t0
            assert len(c) == (0 if op == "del c[k]" else len(keys)), op
        c.clear()
        del c
    return {op: t / (reps * len(keys)) for op, t in times.items()}


def operations_by_size(sizes, rounds: int) -> dict:
    import random

    rng = random.Random(29)
    results = {}
    for n in sizes:
        keys = [Plain() for _ in range(n)]
        shuffled = keys[:]
        rng.shuffle(shuffled)
        reps = max(1, 100_000 // n)  # at least 100,000 operations per sample
        samples: dict = {name: {op: [] for op in OPERATIONS} for name in CONTAINERS}
        size_rounds = rounds if n < 1_000_000 else max(3, rounds // 3)
        for _ in range(size_rounds):  # interleaved: noise hits both alike
            for name, container in CONTAINERS.items():
                gc.collect()
                for op, seconds in one_round(container, keys, shuffled, reps).items():
                    samples[name][op].append(seconds * 1e9)
        results[n] = {"rounds": size_rounds,
                      "median_ns": {name: {op: statistics.median(s) for op, s in ops.items()}
                                    for name, ops in samples.items()}}
        del keys, shuffled
    return results


# ---------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a few short rounds (a smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds (default 15, --quick 3)")
    parser.add_argument("-n", type=int, default=None, help="entries for memory and the collector "
                                                           "(default 100,000, --quick 20,000)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--child", nargs=2, metavar=("STORE", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    n = args.n or (20_000 if args.quick else 100_000)
    if args.child:
        print(json.dumps(measure_one(args.child[0], n, args.child[1])))
        return 0
    rounds = args.rounds or (3 if args.quick else 15)
    collector_rounds = args.rounds or (3 if args.quick else 7)
    sample_seconds = 0.002 if args.quick else 0.02
    kinds = ["function", "class", "instance"]

    op_sizes = [1_000, 10_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    operation_rounds = args.rounds or (3 if args.quick else 7)

    look = lookups(kinds, rounds, sample_seconds)
    coll = collector(n, collector_rounds)
    by_size = operations_by_size(op_sizes, operation_rounds)
    mem = memory(n)

    version = sys.version.split()[0]
    ext = extension_info()
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"Python {version}; extension {ext['path']} ({ext['mtime']})"
          + (f"; load average {load[0]:.2f}" if load else ""))

    # 1. Lookups
    print(f"\n1. Lookups: median of {rounds} interleaved rounds, ns per lookup; {ENTRIES:,} entries per "
          f"container, {KEYS_PER_LOOP} keys per loop iteration (timeit, names local)\n")
    print("| keys | lookup | EphemeronMap | WeakKeyDictionary | dict | WKD.get / EphemeronMap (target >= "
          f"{LOOKUP_TARGET_WKD:.0f}x) | dict.get / EphemeronMap (target >= {LOOKUP_TARGET_DICT:.1f}x) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ratios = []
    for kind in kinds:
        med = look[kind]["median_ns"]
        for operation, spelled in (("get", "get(k)"), ("[]", "[k]")):
            em, wkd, d = (med[case_label(operation, c)] for c in ("EphemeronMap", "WeakKeyDictionary", "dict"))
            wkd_get, d_get = (med[case_label("get", c)] for c in ("WeakKeyDictionary", "dict"))
            ratios.append({"keys": kind, "lookup": spelled, "wkd": wkd_get / em, "dict": d_get / em})
            print(f"| {kind} | `{spelled}` | {em:.1f} | {wkd:.1f} | {d:.1f} | {wkd_get / em:.2f}x "
                  f"| {d_get / em:.2f}x |")
    print("loop overhead (a bare local name per statement): "
          + ", ".join(f"{kind} {look[kind]['median_ns']['loop']:.1f} ns" for kind in kinds)
          + "; included in every figure above")
    worst_wkd = min(ratios, key=lambda r: r["wkd"])
    worst_dict = min(ratios, key=lambda r: r["dict"])
    wkd_ok = worst_wkd["wkd"] >= LOOKUP_TARGET_WKD
    dict_ok = worst_dict["dict"] >= LOOKUP_TARGET_DICT
    print(f"WKD.get / EphemeronMap: lowest {worst_wkd['wkd']:.2f}x ({worst_wkd['keys']} keys, "
          f"`{worst_wkd['lookup']}`): {'meets' if wkd_ok else 'MISSES'} the {LOOKUP_TARGET_WKD:.0f}x target")
    print(f"dict.get / EphemeronMap: lowest {worst_dict['dict']:.2f}x ({worst_dict['keys']} keys, "
          f"`{worst_dict['lookup']}`): {'meets' if dict_ok else 'MISSES'} the {LOOKUP_TARGET_DICT:.1f}x target; "
          "below it: " + (", ".join(f"{r['keys']} `{r['lookup']}` {r['dict']:.2f}x" for r in ratios
                                    if r["dict"] < LOOKUP_TARGET_DICT) or "none"))

    # 2. Memory
    traced, rss = mem["tracemalloc"], mem["rss"]
    print(f"\n2. Memory per entry, value excluded: {n:,} function keys made first, inserted into a "
          "container made beforehand; one child process per store and method\n")
    print("| store | tracemalloc B | RSS B |")
    print("|---|---:|---:|")
    for name in STORES:
        print(f"| {name} | {traced[name]:.1f} | {rss[name]:.1f} |")
    mem_ratio = traced[EPHEMERON_STORE] / traced[WKD_STORE]
    mem_ok = mem_ratio <= MEMORY_TARGET
    print(f"EphemeronMap / WeakKeyDictionary, bytes requested (tracemalloc): {mem_ratio:.3f}: "
          f"{'meets' if mem_ok else 'MISSES'} the {MEMORY_TARGET:.1f} target")
    bytes_ok = traced[EPHEMERON_STORE] <= MEMORY_BYTES_TARGET
    print(f"EphemeronMap, bytes requested per entry (tracemalloc): {traced[EPHEMERON_STORE]:.1f} B: "
          f"{'meets' if bytes_ok else 'MISSES'} the {MEMORY_BYTES_TARGET} B target")
    rss_ratio = rss[EPHEMERON_STORE] / rss[WKD_STORE]
    rss_ok = rss_ratio <= MEMORY_TARGET
    print(f"EphemeronMap / WeakKeyDictionary, resident (RSS): {rss_ratio:.3f}: "
          f"{'meets' if rss_ok else 'MISSES'} the {MEMORY_TARGET:.1f} target")
    sizes = mem["analytical"]
    entry_size = sizes["EphemeronMap entry (sys.getsizeof)"]
    ref_size = sizes["WeakKeyDictionary's weak reference (sys.getsizeof)"]
    print(f"Breakdown (tracemalloc): EphemeronMap = entry object {entry_size} B + table "
          f"{traced[EPHEMERON_STORE] - entry_size:.1f} B; WeakKeyDictionary = weak reference {ref_size} B + "
          f"dict {traced[WKD_STORE] - ref_size:.1f} B")

    # 3. The collector
    live, garbage = coll["live"], coll["garbage"]
    coll_ok = live["ratio"] <= COLLECTOR_TARGET
    print(f"\n3. The collector: {n:,} map entries, value = [key, shared], median of {collector_rounds} "
          "interleaved rounds, automatic collection off\n")
    print("| heap | gc.collect() | coextra.collect() | ratio (target <= "
          f"{COLLECTOR_TARGET}) | nodes | gc-tracked objects |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| {n:,} live entries (keys kept in a list) | {live['gc_s'] * 1e3:.2f} ms "
          f"| {live['collector_s'] * 1e3:.2f} ms | {live['ratio']:.2f}x | {live['nodes']:,} "
          f"| {live['gc_objects']:,} |")
    print(f"| {n:,} garbage entries (keys dropped; collect() removes them all) | n/a "
          f"| {garbage['collector_s'] * 1e3:.2f} ms | n/a | {garbage['nodes']:,} | |")
    print(f"For comparison, the freeing alone: m.clear() on the same garbage heap, {garbage['clear_s'] * 1e3:.2f} ms.")
    print(f"coextra.collect() / gc.collect() on the live heap: {live['ratio']:.2f}x: "
          f"{'meets' if coll_ok else 'MISSES'} the {COLLECTOR_TARGET}x target"
          + (f"; budget exhausted {live['budget_exhausted']} time(s)" if live["budget_exhausted"] else ""))

    # 4. Operations by size
    rounds_by_size = ", ".join(f"{size:,} entries: {by_size[size]['rounds']}" for size in op_sizes)
    print(f"\n4. Every dict operation by size: plain-class instances as keys, ns per operation (a Python loop's "
          f"cost included), median of interleaved rounds ({rounds_by_size})\n")
    print("| entries | operation | EphemeronMap | WeakKeyDictionary | WKD / EphemeronMap |")
    print("|---:|---|---:|---:|---:|")
    op_ratios = []
    for size in op_sizes:
        med = by_size[size]["median_ns"]
        for op in OPERATIONS:
            em, wkd = med["EphemeronMap"][op], med["WeakKeyDictionary"][op]
            op_ratios.append({"entries": size, "operation": op, "ratio": wkd / em})
            print(f"| {size:,} | `{op}` | {em:.1f} | {wkd:.1f} | {wkd / em:.2f}x |")
    worst_op = min(op_ratios, key=lambda r: r["ratio"])
    ops_ok = worst_op["ratio"] >= OPERATION_TARGET
    print(f"WKD / EphemeronMap, every operation and size: lowest {worst_op['ratio']:.2f}x ({worst_op['operation']}, "
          f"{worst_op['entries']:,} entries): {'meets' if ops_ok else 'MISSES'} the {OPERATION_TARGET:.1f}x target; "
          "below it: " + (", ".join(f"`{r['operation']}` at {r['entries']:,} {r['ratio']:.2f}x" for r in op_ratios
                                    if r["ratio"] < OPERATION_TARGET) or "none"))
    lookups_100k = [r for r in op_ratios if r["entries"] == 100_000 and r["operation"].startswith("c[k]")]
    worst_100k = min(lookups_100k, key=lambda r: r["ratio"]) if lookups_100k else None
    lookups_100k_ok = worst_100k is None or worst_100k["ratio"] >= LOOKUP_TARGET_100K
    if worst_100k is not None:
        print(f"c[k] at 100,000 entries, WKD / EphemeronMap: lowest {worst_100k['ratio']:.2f}x "
              f"({worst_100k['operation']}): {'meets' if lookups_100k_ok else 'MISSES'} the "
              f"{LOOKUP_TARGET_100K:.0f}x target")

    if args.json:
        groups = []
        for kind in kinds:
            med = look[kind]["median_ns"]
            for operation, spelled in (("get", "get(k)"), ("[]", "[k]")):
                names = [case_label(operation, c) for c in ("EphemeronMap", "WeakKeyDictionary", "dict")]
                groups.append({"title": f"Lookup `{spelled}`, {kind} keys, median ns per lookup",
                               "unit": "ns", "reference": names[0],
                               "results": {name: med[name] for name in names}})
        groups += [
            {"title": f"Memory per entry, value excluded, {n:,} entries (tracemalloc)", "unit": "B",
             "reference": EPHEMERON_STORE, "results": traced},
            {"title": f"Memory per entry, value excluded, {n:,} entries (RSS delta)", "unit": "B",
             "reference": EPHEMERON_STORE, "results": rss},
            {"title": f"{n:,} live map entries (value = [key, shared]): collect() against gc.collect()",
             "unit": "ms", "reference": "gc.collect()",
             "results": {"gc.collect()": live["gc_s"] * 1e3, "coextra.collect()": live["collector_s"] * 1e3}},
            {"title": f"{n:,} map entries: coextra.collect() with every entry live, and with every entry "
                      "garbage (removes them), beside clearing the garbage heap",
             "unit": "ms", "reference": "entries live",
             "results": {"entries live": live["collector_s"] * 1e3,
                         "entries garbage": garbage["collector_s"] * 1e3,
                         "m.clear() on the garbage heap (the freeing alone)": garbage["clear_s"] * 1e3}},
        ]
        # Ratios in %, as bench_programs.py does: the summary prints check values to one decimal.
        checks = [
            {"what": f"lookups: WeakKeyDictionary.get over EphemeronMap, the lowest ({worst_wkd['keys']} keys, "
                     f"`{worst_wkd['lookup']}`), in % (target >= {LOOKUP_TARGET_WKD * 100:.0f})",
             "value": worst_wkd["wkd"] * 100, "passed": wkd_ok},
            {"what": f"lookups: dict.get over EphemeronMap, the lowest ({worst_dict['keys']} keys, "
                     f"`{worst_dict['lookup']}`), in % (target >= {LOOKUP_TARGET_DICT * 100:.0f})",
             "value": worst_dict["dict"] * 100, "passed": dict_ok},
            {"what": f"memory per entry: EphemeronMap over WeakKeyDictionary, bytes requested (tracemalloc), "
                     f"in % (target <= {MEMORY_TARGET * 100:.0f})",
             "value": mem_ratio * 100, "passed": mem_ok},
            {"what": "memory per entry: EphemeronMap over WeakKeyDictionary, resident (RSS), "
                     f"in % (target <= {MEMORY_TARGET * 100:.0f})",
             "value": rss_ratio * 100, "passed": rss_ok},
        ]
        for size in op_sizes:
            med = by_size[size]["median_ns"]
            for op in OPERATIONS:
                groups.append({"title": f"`{op}`, {size:,} entries, ns per operation", "unit": "ns",
                               "reference": "EphemeronMap",
                               "results": {name: med[name][op] for name in CONTAINERS}})
        checks.append({"what": f"memory per entry: EphemeronMap, bytes requested (tracemalloc), in B "
                               f"(target <= {MEMORY_BYTES_TARGET})",
                       "value": traced[EPHEMERON_STORE], "passed": bytes_ok})
        checks.append({"what": f"every dict operation at {', '.join(f'{size:,}' for size in op_sizes)} entries: "
                               f"WeakKeyDictionary over EphemeronMap, the lowest ({worst_op['operation']}, "
                               f"{worst_op['entries']:,} entries), in % (target >= {OPERATION_TARGET * 100:.0f})",
                       "value": worst_op["ratio"] * 100, "passed": ops_ok})
        if worst_100k is not None:
            checks.append({"what": f"c[k] at 100,000 entries: WeakKeyDictionary over EphemeronMap, the lowest "
                                   f"({worst_100k['operation']}), in % (target >= {LOOKUP_TARGET_100K * 100:.0f})",
                           "value": worst_100k["ratio"] * 100, "passed": lookups_100k_ok})
        checks.append({"what": f"{n:,} live map entries: coextra.collect() over gc.collect(), in % "
                               f"(target <= {COLLECTOR_TARGET * 100:.0f})",
                       "value": live["ratio"] * 100, "passed": coll_ok})
        with open(args.json, "w") as fh:
            # "groups" and "checks": the summary format scripts/bench_summary.py merges (make bench).
            json.dump({"suite": "EphemeronMap (bench_ephemeron.py)", "python": version,
                       "how": f"lookups: median of {rounds} interleaved timeit rounds, {ENTRIES:,} entries per "
                              f"container; memory: {n:,} function keys, one child process per store and method; "
                              f"collector: median of {collector_rounds} interleaved rounds, automatic "
                              "collection off",
                       "groups": groups, "checks": checks,
                       "lookups": look, "lookup_ratios": ratios, "memory": mem, "collector": coll,
                       "operations_by_size": {str(size): by_size[size] for size in op_sizes},
                       "operation_ratios": op_ratios,
                       "rounds": rounds, "collector_rounds": collector_rounds, "load_average": load,
                       "extension": ext}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
