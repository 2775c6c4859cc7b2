"""A long run of generated code in waves, with automatic collection alone.

A program that compiles code for hours: waves of 200-3,000 functions exec'd
into fresh namespaces, each function cached three ways (coextra.attach with a
product referencing the function, coextra.evalframe's callback with a product
referencing the code, an EphemeronMap entry whose value references its key),
every product carrying a payload. Waves live for a random number of waves:
half are dropped at once, some after 1-4 waves, some after 20-300 (their
caches die old, which only the sweep finds). A persistent set stays attached
throughout. After a drop the program calls gc.collect() half of the time; it
never calls coextra.collect().

Checked, and the exit status is 1 when one fails:
  - the bound: after every gc.collect(), the dropped holders still attached
    whose caches died young (fewer generation passes completed while they
    lived than make a holder old, stats()["auto_passes_to_old"], so no pass
    made them old) number at most max(2,000, 10% of the live holders);
  - every dropped code object is freed within --max-latency seconds of its
    drop, whatever its age (a weakref callback times it);
  - at the end, with everything dropped but the persistent set: every dropped
    code is freed, the registry holds the persistent holders only, and no
    Holder or Entry object is left over.
Reported every --report-every seconds: holders and map entries, the most dead
caches attached after a gc.collect() (promised / all), drop-to-free latency
(median, 99th percentile, max), resident memory, time in automatic passes,
the longest automatic pause so far (coextra's whole gc.callbacks entry)
beside the longest collection CPython itself ran so far.

    python tests/soak/waves.py [--minutes 60] [--report-every 60] [--seed 0]
                               [--no-auto] [--json FILE]

--no-auto turns automatic collection off: the twin whose bound must fail
(tests/python/test_soak.py runs both, short).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
import weakref
from pathlib import Path

import coextra
from coextra import evalframe

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_collector import Pauses  # noqa: E402  (coextra's whole callback, CPython's collections)
from coextra.stress._memory import rss_bytes

FLOOR = 2_000
FRACTION = 0.10
PERSISTENT = 500
PAYLOAD = 256


def bound(live: int) -> int:
    return max(FLOOR, int(FRACTION * live))


class Deaths:
    """Drop-to-free latency of code objects, by weakref callbacks."""

    def __init__(self) -> None:
        # id(ref) -> (drop time or 0, promised, a holder's code (not a map key's))
        self.pending: dict[int, tuple[float, bool, bool]] = {}
        self.refs: dict[int, weakref.ref] = {}
        self.latencies: list[float] = []   # since the previous report
        self.freed_before_drop = 0

    def watch(self, code, holder: bool) -> weakref.ref:
        ref = weakref.ref(code, self._freed)
        self.refs[id(ref)] = ref
        self.pending[id(ref)] = (0.0, False, holder)
        return ref

    def dropped(self, ref: weakref.ref, promised: bool, now: float) -> None:
        if id(ref) in self.pending:
            _, _, holder = self.pending[id(ref)]
            self.pending[id(ref)] = (now, promised and holder, holder)

    def _freed(self, ref: weakref.ref) -> None:
        dropped_at, _, _ = self.pending.pop(id(ref), (0.0, False, False))
        self.refs.pop(id(ref), None)
        if dropped_at:
            self.latencies.append(time.perf_counter() - dropped_at)
        else:
            self.freed_before_drop += 1

    def dead_attached(self) -> tuple[int, int, int]:
        """Dropped code objects still alive (their caches keep them): holders
        whose caches died young, all holders, map keys."""
        # A copy: weakref callbacks (a GC pass run by an allocation here) change pending.
        dropped = [(promised, holder) for at, promised, holder in self.pending.copy().values() if at]
        holders = sum(holder for _, holder in dropped)
        return sum(promised for promised, _ in dropped), holders, len(dropped) - holders

    def oldest_drop(self) -> float:
        return min((at for at, _, _ in self.pending.copy().values() if at), default=0.0)


class Wave:
    def __init__(self, number: int, size: int, payload: bytes, table, deaths: Deaths) -> None:
        source = "".join(f"def w{number}_{i}(x):\n    return x + {i}\n" for i in range(size))
        namespace: dict = {}
        exec(compile(source, f"<wave {number}>", "exec"), namespace)
        self.functions = [namespace[f"w{number}_{i}"] for i in range(size)]
        third = size // 3
        self.refs = [deaths.watch(f.__code__, holder=i < 2 * third) for i, f in enumerate(self.functions)]
        stats = coextra.stats()
        self.passes_at_start = stats["auto_generation_passes"]
        self.passes_to_old = stats["auto_passes_to_old"]
        for f in self.functions[:third]:
            coextra.attach(f, ("product", f, payload))
        with evalframe.enabled(lambda code: ("compiled", code, payload)):
            for f in self.functions[third:2 * third]:
                f(1)
        for f in self.functions[2 * third:]:
            table[f] = ("value", f, payload)

    def drop(self, deaths: Deaths) -> None:
        # Promised: no generation pass made these holders old while they lived
        # (two make a holder old, or one before any cache had died).
        promised = coextra.stats()["auto_generation_passes"] - self.passes_at_start < self.passes_to_old
        now = time.perf_counter()
        for ref in self.refs:
            deaths.dropped(ref, promised, now)
        self.functions.clear()


def lifetime(rng: random.Random) -> int:
    draw = rng.random()
    if draw < 0.5:
        return 0
    if draw < 0.8:
        return rng.randint(1, 4)
    return rng.randint(20, 300)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def churn(seconds: float) -> None:
    """Allocation without collect() calls: the GC passes that automatic
    collection (its sweep included) runs from."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        junk = [[i] for i in range(2_000)]
        junk.append(junk)
        del junk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--report-every", type=float, default=60.0, help="seconds")
    parser.add_argument("--max-latency", type=float, default=30.0,
                        help="seconds a dropped code object may take to be freed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-auto", action="store_true", help="automatic collection off (the twin)")
    parser.add_argument("--json", help="also write the reports and checks to this file")
    args = parser.parse_args()

    coextra.set_auto_collect(not args.no_auto)
    rng = random.Random(args.seed)
    payload = bytes(PAYLOAD)
    deaths = Deaths()
    table = coextra.EphemeronMap()
    pauses = Pauses().__enter__() if not args.no_auto else None
    persistent = Wave(0, PERSISTENT, payload, table, deaths)
    alive: list[tuple[int, Wave]] = []  # (the wave number it is dropped after, wave)
    failures: list[str] = []
    reports: list[dict] = []
    worst = {"promised": 0, "all": 0, "map": 0, "limit": bound(0)}
    start = last_report = time.perf_counter()
    deadline = start + args.minutes * 60.0
    auto_mark = coextra.stats()["auto_seconds"]
    wave_number = waves_at_report = 0

    print("| minutes | waves | holders | map entries | most dead holders attached after a gc.collect(): "
          "died young (bound) / all | dead map keys | drop to free: median, p99, max | RSS "
          "| in automatic passes | longest automatic pause so far | CPython's longest collection so far |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    while time.perf_counter() < deadline and not failures:
        wave = Wave(wave_number + 1, rng.randint(200, 3_000), payload, table, deaths)
        alive.append((wave_number + lifetime(rng), wave))
        del wave
        for last_wave, wave in list(alive):
            if last_wave <= wave_number:
                alive.remove((last_wave, wave))
                wave.drop(deaths)
        del wave
        wave_number += 1
        if rng.random() < 0.5:
            gc.collect()
            promised, every, keys = deaths.dead_attached()
            live = coextra.stats()["holders"] - every
            if promised - bound(live) > worst["promised"] - worst["limit"]:
                worst.update(promised=promised, limit=bound(live))
            worst["all"] = max(worst["all"], every)
            worst["map"] = max(worst["map"], keys)
            if promised > bound(live):
                failures.append(f"wave {wave_number}: {promised:,} dead caches that died young "
                                f"attached after gc.collect(), bound {bound(live):,}")
        oldest = deaths.oldest_drop()
        if oldest and time.perf_counter() - oldest > args.max_latency:
            failures.append(f"wave {wave_number}: a code object dropped "
                            f"{time.perf_counter() - oldest:.0f} s ago is still alive "
                            f"(limit {args.max_latency:.0f} s)")
        now = time.perf_counter()
        if now - last_report >= args.report_every or now >= deadline or failures:
            stats = coextra.stats()
            latencies = deaths.latencies
            row = {"minutes": (now - start) / 60, "waves": wave_number - waves_at_report,
                   "holders": stats["holders"], "map_entries": stats["ephemeron_entries"],
                   "dead_promised": worst["promised"], "dead_all": worst["all"], "bound": worst["limit"],
                   "dead_map_keys": worst["map"],
                   "latency_median_s": statistics.median(latencies) if latencies else 0.0,
                   "latency_p99_s": percentile(latencies, 0.99),
                   "latency_max_s": max(latencies, default=0.0),
                   "rss_mib": (rss_bytes() or 0) / 2**20,
                   "auto_share": (stats["auto_seconds"] - auto_mark) / (now - last_report),
                   "max_pause_s": pauses.coextra_max if pauses else 0.0,
                   "gc_max_s": pauses.gc_max if pauses else 0.0}
            reports.append(row)
            print(f"| {row['minutes']:.1f} | {row['waves']} | {row['holders']:,} | {row['map_entries']:,} "
                  f"| {row['dead_promised']:,} ({row['bound']:,}) / {row['dead_all']:,} "
                  f"| {row['dead_map_keys']:,} "
                  f"| {row['latency_median_s'] * 1e3:.0f} ms, {row['latency_p99_s'] * 1e3:.0f} ms, "
                  f"{row['latency_max_s'] * 1e3:.0f} ms | {row['rss_mib']:.0f} MiB "
                  f"| {row['auto_share']:.1%} | {row['max_pause_s'] * 1e3:.1f} ms "
                  f"| {row['gc_max_s'] * 1e3:.1f} ms |", flush=True)
            deaths.latencies = []
            worst = {"promised": 0, "all": 0, "map": 0, "limit": bound(0)}
            auto_mark = stats["auto_seconds"]
            waves_at_report = wave_number
            last_report = now

    # The end: everything but the persistent set goes, and automatic
    # collection alone must free it.
    for _, wave in alive:
        wave.drop(deaths)
    alive.clear()
    end = time.perf_counter() + args.max_latency
    while sum(deaths.dead_attached()[1:]) and time.perf_counter() < end:
        gc.collect()
        churn(0.2)
    left = sum(deaths.dead_attached()[1:])
    if left:
        failures.append(f"the end: {left:,} dropped code objects still alive "
                        f"{args.max_latency:.0f} s after the last drop")
    # Holders on the program's own code (evalframe compiles the frames that
    # run while it is on, contextlib's among them) are not the waves'.
    holders = sum(h.code.co_filename.startswith("<wave ") for h in coextra.holders())
    expected = (2 * (PERSISTENT // 3), PERSISTENT - 2 * (PERSISTENT // 3))
    if (holders, len(table)) != expected:
        failures.append(f"the end: {holders:,} holders on generated code attached and "
                        f"{len(table):,} map entries; the persistent set has {expected[0]} and {expected[1]}")
    persistent.drop(deaths)
    del persistent
    table.clear()
    coextra.reset()
    gc.collect()
    stats = coextra.stats()
    if stats["holders_alive"] or stats["entries_alive"] or stats["ephemeron_entries_alive"]:
        failures.append(f"the end: objects left over: {stats['holders_alive']} holders, "
                        f"{stats['entries_alive']} entries, "
                        f"{stats['ephemeron_entries_alive']} ephemeron entries")
    if pauses:
        pauses.__exit__(None, None, None)
        print(f"longest automatic pause {pauses.coextra_max * 1e3:.1f} ms, "
              f"CPython's longest collection {pauses.gc_max * 1e3:.1f} ms")
    print(f"\n{wave_number:,} waves in {(time.perf_counter() - start) / 60:.1f} minutes, "
          f"automatic collection {'off' if args.no_auto else 'on'}, seed {args.seed}")
    for failure in failures:
        print(f"FAILED: {failure}")
    if not failures:
        print("every check passed")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"python": sys.version.split()[0], "args": vars(args), "waves": wave_number,
                       "reports": reports, "failures": failures}, fh, indent=2)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
