"""Interpreter exit with thousands of EphemeronMap entries still in live maps.

Three maps hold entries in pairs across two maps: each entry's value references
its own key and the other key of its pair (cross-map cycles through the weakly
held keys, the shape a WeakKeyDictionary leaks). The keys are instances, classes
made with type(), code objects and functions, the latter two with holders whose
products reference them too. Half the pairs have their keys referenced from
outside; coextra.collect() must remove the other half's entries (and detach
their holders), after which the ordinary GC frees them. Entries whose key dies
by reference counting leave at once. The kept half stays in its maps, with
automatic collection on, until exit; the harness then checks that nothing
coextra allocated is lost."""

import gc
import weakref

import coextra
from _scenario import check, fresh_function

# The explicit collect() below must find all of them: no automatic collection yet.
coextra.set_auto_collect(False)

N = 2000  # entries: N // 2 pairs


class Key:
    pass


def make_key(i: int):
    kind = i % 4
    if kind == 0:
        return Key()
    if kind == 1:
        return type(f"K{i}", (), {})
    if kind == 2:
        code = compile(f"x + {i}", f"<key {i}>", "eval")
        coextra.attach(code, (code, bytearray(16)))  # code -> holder -> product -> code
        return code
    f = fresh_function(i)
    coextra.attach(f, (f, bytearray(16)))  # f.__code__ -> holder -> product -> f
    return f


maps = [coextra.EphemeronMap() for _ in range(3)]
kept = []
garbage_keys = []  # weak references to the keys only values reach
for p in range(N // 2):
    a, b = make_key(2 * p), make_key(2 * p + 1)
    first, second = maps[p % 3], maps[(p + 1) % 3]
    first[a] = [a, b, bytearray(32)]
    second[b] = [b, a, bytearray(32)]
    if p % 4 in (1, 2):  # pairs of every kind on both sides
        kept += (a, b)
    else:
        garbage_keys += (weakref.ref(a), weakref.ref(b))
del a, b, first, second

s = coextra.stats()
check(s["ephemeron_maps"] == 3 and s["ephemeron_entries"] == N, f"expected {N} entries: {s}")
check(sum(len(m) for m in maps) == N, f"the maps hold {[len(m) for m in maps]} entries")

# A key that dies by reference counting takes its entry with it at once.
transient = Key()
maps[0][transient] = ["transient", bytearray(32)]
del transient
check(coextra.stats()["ephemeron_entries"] == N, "a dead key's entry left its map at once")

gc.collect()
removed_before = coextra.stats()["ephemeron_removed_by_collector"]
detached = coextra.collect()
gc.collect()
s = coextra.stats()
removed = s["ephemeron_removed_by_collector"] - removed_before
check(removed == N // 2, f"collect() removed {removed} entries, expected {N // 2}")
check(detached == N // 2 + N // 4, f"collect() removed or detached {detached}, expected "
      f"{N // 2} entries and {N // 4} holders")
check(s["ephemeron_entries"] == N // 2, f"{s['ephemeron_entries']} entries left, expected {N // 2}")
check(s["ephemeron_entries_alive"] == N // 2, f"{s['ephemeron_entries_alive']} entries alive")
check(sum(len(m) for m in maps) == N // 2, f"the maps hold {[len(m) for m in maps]} entries")
check(all(r() is None for r in garbage_keys), "every key only values reached was freed")
check(all(m[k][0] is k for m in maps for k in m.keys()), "the kept entries keep their values")

coextra.set_auto_collect(True)
print("exiting with", sum(len(m) for m in maps), "ephemeron entries in", len(maps), "maps")
