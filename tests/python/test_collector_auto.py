"""Automatic collection (gc.callbacks): on by default, bounded leaks without
ever calling collect(), removable, and quiet at interpreter exit."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import time
import weakref

import coextra
import pytest
from conftest import make_function, subprocess_env


def our_callbacks():
    return [cb for cb in gc.callbacks if getattr(cb, "__name__", "") == "_coextra_auto_collect"]


class Product:
    def __init__(self, function):
        self.function = function


def churn(count: int) -> list:
    """Attach `count` caches whose products reference their own function, keep
    none of them, never call collect(); weak references to the code objects."""
    refs = []
    for i in range(count):
        f = make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}")
        coextra.attach(f, Product(f))
        refs.append(weakref.ref(f.__code__))
    del f
    return refs


def alive(refs) -> int:
    return sum(r() is not None for r in refs)


def test_on_by_default_and_in_gc_callbacks():
    assert coextra.get_auto_collect() is True
    assert len(our_callbacks()) == 1


def test_set_auto_collect_removes_and_restores_exactly_one_callback():
    try:
        coextra.set_auto_collect(False)
        assert coextra.get_auto_collect() is False
        assert our_callbacks() == []
        coextra.set_auto_collect(True)
        coextra.set_auto_collect(True)
        assert coextra.get_auto_collect() is True
        assert len(our_callbacks()) == 1
    finally:
        coextra.set_auto_collect(True)


def test_20000_dying_caches_stay_bounded_without_calling_collect():
    collections = coextra.stats()["auto_collections"]
    refs = churn(20_000)
    gc.collect()
    assert alive(refs) <= len(refs) * 5 // 100
    assert coextra.stats()["auto_collections"] > collections
    coextra.collect()
    gc.collect()
    assert alive(refs) == 0


def test_without_automatic_collection_the_same_loop_leaks():
    """The control: the bound above is the collector's doing."""
    coextra.set_auto_collect(False)
    try:
        refs = churn(2_000)
        gc.collect()
        assert alive(refs) == len(refs)
        assert coextra.collect() == len(refs)
        gc.collect()
        assert alive(refs) == 0
    finally:
        coextra.set_auto_collect(True)


def test_live_caches_survive_automatic_collection():
    functions = [make_function(f"def g{i}(x):\n    return {i}\n", f"g{i}") for i in range(2_000)]
    for f in functions:
        coextra.attach(f, Product(f))
    churn(2_000)  # drives young and generation passes, and sweeps
    gc.collect()
    gc.collect()
    assert all(coextra.holder(f) is not None and len(coextra.holder(f)) == 1 for f in functions)


def test_exit_with_automatic_collection_and_reentrant_products_is_clean():
    script = textwrap.dedent(
        """
        import gc, coextra

        class Noisy:
            def __init__(self, f):
                self.f = f
            def __del__(self):
                # Runs while a collection (or teardown) detaches the cache.
                coextra.collect()
                coextra.holder(self.f)
                gc.collect()

        keep = []
        for i in range(3000):
            ns = {}
            exec(f"def f{i}(x):\\n    return x\\n", ns)
            coextra.attach(ns[f"f{i}"], Noisy(ns[f"f{i}"]))
            if i % 3 == 0:
                keep.append(ns[f"f{i}"])
        print("ok", coextra.get_auto_collect())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip() == "ok True"


def test_a_generation_pass_makes_holders_old_at_once_until_a_cache_dies():
    """Adaptive tenuring as stats() reports it, in a fresh process (the rule
    looks at the whole program's history): one generation pass makes a live
    holder old while no cache has died; once one has, two do, for good. (The
    C++ GenerationSlices tests check the generations themselves.)"""
    script = textwrap.dedent(
        """
        import gc, coextra

        def cached(name):
            ns = {}
            exec(f"def {name}(x):\\n    return x\\n", ns)
            coextra.attach(ns[name], [ns[name]])
            return ns[name]

        gc.disable()  # only the gc.collect() calls below run generation passes
        before = coextra.stats()["auto_passes_to_old"]
        live = [cached(f"live{i}") for i in range(100)]
        gc.collect()
        while_none_died = coextra.stats()["auto_passes_to_old"]
        for i in range(50):
            cached(f"dead{i}")  # only its own product references it
        gc.collect()
        stats = coextra.stats()
        detached = stats["auto_detached"]
        after = stats["auto_passes_to_old"]
        for _ in range(3):
            gc.collect()  # nothing dies in these
        print(before, while_none_died, detached, after, coextra.stats()["auto_passes_to_old"])
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "1", "50", "2", "2"]


def test_holders_and_map_entries_are_counted_apart():
    """In a fresh process that never attaches a holder, map entries the
    collector removes (by collect() and automatically) count as entries
    removed, not as holders detached, and leave the holders' tenuring alone;
    map entries have their own. Then a dead holder counts as a holder only."""
    script = textwrap.dedent(
        """
        import gc, coextra

        class Key:
            pass

        def dead_entries(m, n):
            for _ in range(n):
                k = Key()
                m[k] = [k]  # only its own value references the key

        gc.disable()  # only the calls below collect
        m = coextra.EphemeronMap()
        dead_entries(m, 100)
        print(coextra.collect())
        dead_entries(m, 30)
        gc.collect()  # automatic: the first generation pass scans every map
        s = coextra.stats()
        print(s["detached_total"], s["detached_by_collector"], s["auto_detached"],
              s["ephemeron_removed_by_collector"], s["auto_ephemeron_removed"],
              s["auto_last_generation_detached"], s["auto_passes_to_old"],
              s["auto_ephemeron_passes_to_old"])
        ns = {}
        exec("def f(x):\\n    return x\\n", ns)
        coextra.attach(ns["f"], [ns["f"]])
        del ns
        print(coextra.collect())
        s = coextra.stats()
        print(s["detached_total"], s["detached_by_collector"], s["ephemeron_removed_by_collector"],
              s["auto_passes_to_old"])
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "100", "collect() returns holders detached plus entries removed"
    assert lines[1].split() == ["0", "0", "0", "130", "30", "0", "1", "2"]
    assert lines[2] == "1"
    assert lines[3].split() == ["1", "1", "130", "2"]


def attached(refs) -> int:
    """How many of the code objects still have a holder."""
    return sum(1 for r in refs if r() is not None and coextra.holder(r()) is not None)


def drive_gc_until(done, seconds: float = 30.0, generation: int = 0) -> bool:
    """GC passes of `generation` until done(): young ones, as a running
    program triggers them, or generation-2 ones, as a program (a test
    harness, a REPL) that calls gc.collect() and allocates little."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        gc.collect(generation)
        time.sleep(0.001)
    return True


def old_caches(count: int) -> list:
    """`count` caches referencing their functions, made old: coextra.collect()
    found them live, so no generation pass examines them again."""
    functions = [make_function(f"def o{i}(x):\n    return x - {i}\n", f"o{i}") for i in range(count)]
    for f in functions:
        coextra.attach(f, Product(f))
    assert coextra.collect() == 0
    return functions


@pytest.mark.parametrize("generation", [0, 2], ids=["young-collections", "gc.collect-only"])
def test_caches_that_die_old_are_swept_without_calling_collect(generation):
    coextra.reset()
    functions = old_caches(4_000)
    kept, dropped = functions[::2], [weakref.ref(f.__code__) for f in functions[1::2]]
    before = coextra.stats()
    del functions
    assert alive(dropped) == 2_000, "only their caches keep them now"
    assert drive_gc_until(lambda: attached(dropped) == 0, generation=generation), \
        f"{attached(dropped)} dead old caches left"
    gc.collect()
    assert alive(dropped) == 0
    after = coextra.stats()
    counts = {k: after[k] - before[k] for k in after if k.startswith("auto_") and isinstance(after[k], int)}
    # What the sweep's slices detached, whether or not the sweep has reached
    # its last slot yet: no other automatic pass looks at old holders.
    assert counts["auto_sweep_detached"] >= 2_000, counts
    assert counts["auto_detached"] >= 2_000, counts
    assert all(coextra.holder(f) is not None for f in kept), "a sweep dropped a live cache"
    coextra.reset()


def test_without_automatic_collection_caches_that_die_old_stay():
    """The control: the sweep above is what finds them."""
    coextra.reset()
    coextra.set_auto_collect(False)
    try:
        functions = old_caches(1_000)
        dropped = [weakref.ref(f.__code__) for f in functions]
        del functions
        assert not drive_gc_until(lambda: attached(dropped) == 0, seconds=1.0)
        gc.collect()
        assert attached(dropped) == alive(dropped) == 1_000
    finally:
        coextra.set_auto_collect(True)
        coextra.reset()


def test_a_generation_pass_lists_the_module_dicts_anew():
    """A pass never expands the globals of a module in sys.modules. Slices
    relist those dicts only when sys.modules changes size, but a generation
    pass relists them when it begins: a module that replaced another under
    the same name is pruned from its first slice on."""
    script = textwrap.dedent(
        """
        import gc, sys, types, coextra

        gc.disable()  # only the gc.collect() below runs a generation pass
        sys.modules["replaced"] = types.ModuleType("replaced")
        coextra.collect()  # lists the module dicts, with that module's
        module = types.ModuleType("replaced")
        module.__dict__.update({f"v{i}": [i] for i in range(1000)})
        sys.modules["replaced"] = module  # sys.modules keeps its size
        ns = {}
        exec("def f(x):\\n    return x\\n", ns)
        gc.collect()  # no garbage left: the next one frees nothing, so looks once
        coextra.attach(ns["f"], [ns["f"], module.__dict__])
        gc.collect()
        print(coextra.stats()["auto_generation_slices"], coextra.stats()["last_nodes"])
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    slices, nodes = map(int, proc.stdout.split())
    assert slices == 1, "one generation pass, one slice"
    assert nodes < 100, f"the module's globals were explored ({nodes} objects)"


def automatic_passes_explored():
    """A gc.callbacks entry placed after coextra's, and the list of objects
    each automatic pass explored that it fills."""
    explored = []
    seen = [coextra.stats()["auto_collections"]]

    def after_ours(phase, info):
        if phase == "start":
            s = coextra.stats()
            if s["auto_collections"] != seen[0]:
                seen[0] = s["auto_collections"]
                explored.append(s["last_nodes"])

    return after_ours, explored


class MapKey:
    pass


def test_a_map_scan_goes_in_slices_and_finds_the_keys_that_died_old():
    """Entries whose keys die old are the map scan's: it finds them without
    collect(), and no automatic pass seeds every key at once (a scan is
    sliced by table positions, as the sweep is by holders)."""
    coextra.reset()
    count = 100_000  # a whole scan explores three objects per entry
    table = coextra.EphemeronMap()
    keys = [MapKey() for _ in range(count)]
    for k in keys:
        table[k] = [k]  # the value references its key
    assert coextra.collect() == 0  # every entry old: no generation pass examines them
    after_ours, explored = automatic_passes_explored()
    collections = [0]

    def half_dropped():
        collections[0] += 1
        if collections[0] % 50 == 0:
            gc.collect()  # a generation-2 collection now and then, as in a running program
        return len(table) == count // 2

    gc.callbacks.append(after_ours)  # after coextra's: sees each automatic pass
    try:
        del keys[::2]  # only their own values reference those keys now
        before = coextra.stats()
        scans = before["map_scans"]
        # Until the scan that removed them has walked its last position too.
        assert drive_gc_until(lambda: half_dropped() and coextra.stats()["map_scans"] > scans,
                              seconds=60.0), f"{len(table):,} entries left, {coextra.stats()['map_scans'] - scans} scans"
        assert coextra.stats()["auto_ephemeron_removed"] - before["auto_ephemeron_removed"] >= count // 2
        assert all(table[k] == [k] for k in keys), "a live key's entry was removed"
        assert explored and max(explored) < count // 2, f"a pass explored {max(explored):,} objects"
    finally:
        gc.callbacks.remove(after_ours)
        table.clear()


def shared_structure(size: int) -> list:
    return [[i] for i in range(size)]


def attach_sharing(count: int, shared, tag: str) -> list:
    functions = [make_function(f"def {tag}{i}(x):\n    return x * {i}\n", f"{tag}{i}") for i in range(count)]
    for f in functions:
        coextra.attach(f, [f, shared])
    return functions


@pytest.mark.parametrize("way_in", ["directly", "through-a-part", "by-another-node"])
def test_a_large_structure_found_live_is_not_explored_again_by_automatic_passes(way_in):
    """Products that all reach one large live structure: once a pass has
    explored it and found it referenced from outside, automatic passes stop
    at it while its reference count says it is still live (a young pass
    would otherwise spend its whole node budget in it), and dead caches that
    reach it still go at the next generation-2 collection. Also when the
    products reach it through one of its own parts that references it back
    (a child keeping its parent): the part is in every later pass's graph,
    so its reference into the structure is explained there, and the
    structure, referenced once from outside, is still known live. And when
    the pass recorded it from another node (an owner list) than the one
    later products reference: every node of the recorded reach is recorded
    with it."""
    coextra.reset()
    shared = shared_structure(100_000)
    owner = [shared]
    if way_in == "through-a-part":
        shared[5].append(shared)  # the part: referenced by the structure and the products only
    first = {"directly": shared, "through-a-part": shared[5], "by-another-node": owner}[way_in]
    kept = attach_sharing(200, first, "s")
    del first
    gc.collect()  # a generation pass explores the structure
    after_ours, explored = automatic_passes_explored()
    gc.callbacks.append(after_ours)
    try:
        later = shared[5] if way_in == "through-a-part" else shared
        more = attach_sharing(2_000, later, "t")
        dropped = attach_sharing(2_000, later, "u")  # the youngest: the first slices'
        refs = [weakref.ref(f.__code__) for f in dropped]
        del dropped, later
        for _ in range(100):
            gc.collect(0)
        assert explored, "young passes ran"
        assert max(explored) < 20_000, f"a young pass explored {max(explored):,} objects"
        gc.collect()
        assert attached(refs) == 0, "dead caches reaching the structure were found"
        assert all(coextra.holder(f) is not None for f in kept + more)
    finally:
        gc.callbacks.remove(after_ours)
        coextra.reset()


def test_a_large_structure_reached_through_a_part_that_references_it_goes_with_its_caches():
    """The same shape, dropped with the caches that reach it and that it
    keeps: a reference into the structure is explained only when it comes
    from one of the parts that referenced it when it was recorded (here,
    the newer caches reference it directly and no part is reached), so the
    next pass to meet the structure explores it and detaches them, without
    a generation-2 collection."""
    coextra.reset()
    shared = shared_structure(10_000)  # within a young pass's budget
    shared[5].append(shared)
    shared[7].append(shared)
    functions = attach_sharing(300, shared[5], "e")
    shared.append(functions)  # the structure keeps the functions: dies with them or not
    gc.collect()  # a generation pass finds it live, through `shared`, and records it
    newer = attach_sharing(100, shared, "n")
    shared.append(newer)
    refs = [weakref.ref(f.__code__) for f in functions + newer]
    del functions, newer, shared
    assert drive_gc_until(lambda: attached(refs) == 0, seconds=20.0), f"{attached(refs)} left"
    gc.collect()
    assert alive(refs) == 0


def test_a_node_of_a_recorded_reach_referenced_only_from_that_reach_is_explored_and_its_caches_go():
    """A node of a recorded structure's reach whose only other referrer is
    in that reach (the owner it was recorded from, which it references
    back) is explored by the next pass to meet it: the caches it keeps go
    without a generation-2 collection."""
    coextra.reset()
    shared = shared_structure(10_000)  # within a young pass's budget
    owner = [shared]
    shared.append(owner)
    first = attach_sharing(10, owner, "r")
    gc.collect()  # a generation pass records the structure from `owner`
    for f in first:
        coextra.detach(f)
    functions = attach_sharing(300, shared, "k")
    shared.append(functions)  # the structure keeps the functions: dies with them or not
    refs = [weakref.ref(f.__code__) for f in functions]
    del first, functions, shared, owner
    assert drive_gc_until(lambda: attached(refs) == 0, seconds=20.0), f"{attached(refs)} left"
    gc.collect()
    assert alive(refs) == 0


def recorded_structure(size: int, back_reference: bool) -> list:
    """A structure of `size` objects, explored and found live by collect()
    (through a cache detached since), none of whose holders is attached."""
    shared = shared_structure(size)
    if back_reference:
        shared[5].append(shared)  # a reference back from its own part
    (f,) = attach_sharing(1, shared, "r")
    assert coextra.collect() == 0
    coextra.detach(f)
    return shared


def test_a_large_structure_that_dies_with_its_caches_is_explored_and_they_go():
    """A structure found live, then dropped with the young caches that reach
    it and that it keeps, one of its parts referencing it back: its
    reference count no longer says live (the reference back was counted when
    it was found live), so the next pass to meet it explores it and detaches
    them, without a generation-2 collection."""
    coextra.reset()
    shared = recorded_structure(10_000, back_reference=True)  # within a young pass's budget
    gc.disable()  # no GC pass until all is dropped: the young pass sees them dead
    try:
        functions = attach_sharing(300, shared, "d")
        shared.append(functions)  # the structure keeps the functions: dies with them or not
        refs = [weakref.ref(f.__code__) for f in functions]
        del functions, shared
    finally:
        gc.enable()
    assert drive_gc_until(lambda: attached(refs) == 0, seconds=20.0), f"{attached(refs)} left"
    gc.collect()
    assert alive(refs) == 0


def test_a_structure_that_dies_in_a_way_its_counts_hide_goes_at_the_next_generation_pass():
    """A reference back from its own part, added after a pass recorded the
    structure, makes a dead structure look live to the counts: a generation
    pass explores it anew, so its caches go at the next generation-2
    collection all the same."""
    coextra.reset()
    shared = recorded_structure(100_000, back_reference=False)
    functions = attach_sharing(300, shared, "h")
    shared.append(functions)  # the structure keeps the functions: dies with them or not
    shared[7].append(shared)  # after the recording
    refs = [weakref.ref(f.__code__) for f in functions]
    del functions, shared
    gc.collect()
    assert attached(refs) == 0
    gc.collect()
    assert alive(refs) == 0
