// ephemeron_map.h -- EphemeronMap: a mapping whose entries live exactly as
// long as their key is reachable from outside the entries.
//
// Keys are any weakly referenceable objects, compared by identity. Each entry
// is an EphemeronEntry: a weak reference to its key (a subclass of
// weakref.ref) that also owns the value. The map owns its entries through an
// open-addressing table keyed by the key's address.
//
// Two mechanisms remove an entry:
//   - the key dies by reference counting (or CPython's GC frees it): the
//     weak reference's callback removes the entry at once;
//   - the key is reachable only through values of ephemeron entries (its own
//     or others', in any map) and code caches: the cycle collector finds it
//     and removes the entry (ephemeron_detach), after which the ordinary GC
//     frees the rest.
//
// For the collector (heap_graph.h, collector.cpp) the map's reference to an
// entry is not an edge of the heap: it is the virtual edge key -> entry, the
// same device as code -> holder for holders. A key's entries are found
// through the key's own weak reference list, so no index is needed. The map
// object is a node like any other (it may be garbage, or a key), but the
// collector never follows its references to its entries.
//
// Reentrancy: an operation that drops a reference (to an old value, to a
// removed entry) first leaves the table consistent, so a value's __del__ may
// use the map freely. Lookups run no Python code (identity hashing).
#pragma once

#include "compat.h"

#include <cstdint>
#include <vector>

namespace coextra::detail {

struct EphemeronMap;

struct EphemeronEntry {
    // ref.wr_object is the key (weak), ref.wr_callback the map's KeyDeath
    // object (owned by the weak reference).
    PyWeakReference ref;
    // Owned. Never NULL while the entry is in its map's table; NULL once it
    // left and its value was released (an entry is never put back). An entry
    // that clear() took out keeps its value until clear() releases both.
    PyObject *value;
    // The key's address, which hashes the entry's table slot: the callback
    // needs it after CPython has cleared ref.wr_object.
    uintptr_t key_address;
};

// Automatic collection's generations of one map's entries (auto_collect.h),
// kept as the registry keeps holders' (registry.h): the entries added since
// the generation pass in progress began (young), those that pass examines
// (examined), and those one generation pass found live (middle); every other
// entry is old. A generation is a list of key addresses, or `whole`: the
// whole map. An address names an entry only while the map holds an entry
// whose live key is at that address (ephemeron_generation_key): one that
// left stays listed until the list is next compacted, aged or cleared, and
// an address reused by a later entry of the same map only seeds that entry
// too, which is sound. A young list longer than a quarter of the map (and
// than kListMin addresses) gives way to `whole`: a map that fills faster
// than generation passes come is examined whole, at most about four times
// the work of its young entries, and its generations then cost no memory
// per entry.
struct EntryGeneration {
    std::vector<uintptr_t> listed;
    bool whole = false;
};

struct EntryGenerations {
    EntryGeneration young, examined, middle;
    size_t compact_at;  // young's length at which stale addresses are dropped
};

struct EphemeronMap {
    PyObject_HEAD
    // Owned references to the entries; NULL marks an empty slot. Linear
    // probing with backward-shift deletion (no tombstones); at most 2/3 full.
    EphemeronEntry **slots;
    size_t mask;       // slot count - 1 (a power of two), 0 while slots is NULL
    size_t size;       // entries in the table
    // The callback every entry's weak reference calls when its key dies.
    // Owned; it points back to this map with a borrowed pointer that the map
    // clears when it dies (so an entry that outlives its map calls nothing).
    PyObject *key_death;
    size_t registered_slot;  // index in EphemeronState::maps
    PyObject *weakreflist;
    EntryGenerations *generations;  // owned (new/delete); NULL until the first entry
};

extern PyTypeObject EphemeronMapType;
extern PyTypeObject EphemeronEntryType;

// Ephemeron maps' part of internals (internals.h).
struct EphemeronState {
    // Every live map, borrowed: a map removes itself when it is freed. The
    // collector seeds passes with the keys of their entries.
    std::vector<EphemeronMap *> maps;
    size_t entries = 0;           // in the tables of all maps
    uint64_t added_total = 0;     // entries ever added
    // Over every map's EntryGenerations: addresses listed, and generations
    // that are whole maps.
    size_t listed = 0;
    size_t whole = 0;
};

int ephemeron_types_ready();

// Calls visit(entry, arg) for every ephemeron entry whose key is `key` (the
// virtual edges key -> entry), found through key's weak reference list.
void ephemeron_visit_entries(PyObject *key, visitproc visit, void *arg);

// Removes `entry` from its map, if it is still in one, and returns its value
// (the reference the entry held), else NULL. Runs no code: the caller holds
// a reference to the entry, and drops it and the value's when it is ready.
PyObject *ephemeron_detach(EphemeronEntry *entry);

// The entry of `key` in `map` (borrowed, valid until code runs), or NULL.
EphemeronEntry *ephemeron_find_entry(EphemeronMap *map, PyObject *key);

// The key of an entry still in a map (borrowed, alive while the entry is in
// its map), or NULL (also while a dying key's callback is pending).
PyObject *ephemeron_entry_key(EphemeronEntry *entry);

// The generations of every map's entries, for automatic collection: a
// generation pass begins (young becomes examined), has examined them
// (middle becomes old, examined becomes middle, or old too when
// `straight_to_old`, as registry_age_generations), or a pass over everything
// found every survivor live (all old).
void ephemeron_begin_generation_pass();
void ephemeron_age_generations(bool straight_to_old);
void ephemeron_all_old();

// Whether some map's entries are young or middle.
bool ephemeron_generations_pending();

// The entries of m a generation pass examines (middle and examined): every
// entry when one of the two is the whole map; else by index: how many, and
// the key of one (borrowed, valid while no code runs), NULL when that entry
// has left the map or its key is dying.
bool ephemeron_generation_whole(const EphemeronMap *m);
size_t ephemeron_generation_seeds(const EphemeronMap *m);
PyObject *ephemeron_generation_key(const EphemeronMap *m, size_t i);

// The C API's operations (coextra.h). `map` must be an EphemeronMap.
// get: 1 with a new reference in *value, 0 when missing, -1 with TypeError
// for a key that cannot be weakly referenced.
int ephemeron_get(EphemeronMap *map, PyObject *key, PyObject **value);
// 0, or -1 with an exception (TypeError, MemoryError).
int ephemeron_set(EphemeronMap *map, PyObject *key, PyObject *value);
// 1 removed, 0 missing, -1 with TypeError.
int ephemeron_delete(EphemeronMap *map, PyObject *key);
// A new, empty map, or NULL with an exception.
EphemeronMap *ephemeron_new();

}  // namespace coextra::detail
