// ephemeron_map.h -- EphemeronMap: a mapping whose entries live exactly as
// long as their key is reachable from outside the entries.
//
// Keys are any weakly referenceable objects, compared by identity. Each entry
// is an EphemeronEntry: a weak reference to its key (a subclass of
// weakref.ref) that also owns the value. The map owns its entries through an
// EntryTable (ephemeron_table.h), in insertion order.
//
// The files: ephemeron_table.{h,cpp} the table; ephemeron_entry.{h,cpp} the
// entry type; ephemeron_map_iterator.cpp iterating over keys, values and
// items; ephemeron_map.cpp the map's operations (for the C API, the Python
// type and the collector) and the callback that removes an entry whose key
// died; ephemeron_map_type.cpp the Python type (the dict protocol).
//
// Two mechanisms remove an entry:
//   - the key dies by reference counting (or CPython's GC frees it): the
//     weak reference's callback removes the entry at once;
//   - the key is reachable only through values of ephemeron entries (its own
//     or others', in any map) and code caches: the cycle collector finds it
//     and removes the entry (ephemeron_detach), after which the ordinary GC
//     frees the rest.
//
// For the collector (node_rules.h, exploration.cpp) the map's reference to an
// entry is not an edge of the heap: it is the virtual edge key -> entry, the
// same device as code -> holder for holders. A key's entries are found
// through the key's own weak reference list, so no index is needed. The map
// object is a node like any other (it may be garbage, or a key), but the
// collector never follows its references to its entries.
//
// Reentrancy: an operation that drops a reference (to an old value, to a
// removed entry) first leaves the table consistent, so a value's __del__ may
// use the map freely. Lookups run no Python code (keys are compared by
// identity).
#pragma once

#include "compat.h"
#include "ephemeron_entry.h"
#include "ephemeron_table.h"

#include <cstdint>
#include <vector>

namespace coextra::detail {

struct EphemeronMap;

struct EphemeronMap {
    PyObject_HEAD
    // Owns one reference to each of its entries. Constructed in place when
    // the map is made (the type's allocation runs no constructor).
    EntryTable table;
    // The callback every entry's weak reference calls when its key dies.
    // Owned; it points back to this map with a borrowed pointer that the map
    // clears when it dies (so an entry that outlives its map calls nothing).
    PyObject *key_death;
    size_t registered_slot;  // index in ephemeron_maps()
    PyObject *weakreflist;
};

extern PyTypeObject EphemeronMapType;

// Every live map, borrowed (a map removes itself when it is freed): the
// collector seeds passes with their entries.
const std::vector<EphemeronMap *> &ephemeron_maps();
// Entries in the tables of all maps.
size_t ephemeron_entry_count();

int ephemeron_types_ready();

// Removes `entry` from its map, if it is still in one, and returns its value
// (the reference the entry held), else NULL. Runs no code: the caller holds
// a reference to the entry, and drops it and the value's when it is ready.
PyObject *ephemeron_detach(EphemeronEntry *entry);

// The entry of `key` in m's table, its value set (borrowed, valid until code
// runs), or NULL. Runs no code.
//
// An entry is a weak reference to its key, so the key's own list of weak
// references names it: reading the list starts at the key, which the caller
// has in hand, so a lookup costs one miss to memory (the entry) where the
// table's index costs three (index slot, entry array, entry). The list holds
// exactly the weak references whose referent is the key (CPython unlinks a
// reference when it clears it), so a list read to its end without an entry of
// m proves the key absent. Only where the list is out of reach (a static
// builtin type) or long (the key is in many maps, or weakly referenced
// often) does the lookup go to the index. An entry of m in the list may be
// out of the table (taken out, or being released by clear() while it still
// holds its value): its position tells.
inline EphemeronEntry *ephemeron_find_entry(const EphemeronMap *m, PyObject *key) {
    // The index costs about three misses; past that many references, the list
    // costs more.
    constexpr int kListReads = 3;
    PyWeakReference **list = compat::weaklist_of(key);
    if (list == nullptr) {
        return m->table.find(key);
    }
    int reads = 0;
    for (PyWeakReference *ref = *list; ref != nullptr; ref = ref->wr_next) {
        if (++reads > kListReads) {
            return m->table.find(key);
        }
        // The callback first: it tells m's entries from any other reference
        // (and the type, from a plain weakref.ref given m's callback).
        if (ref->wr_callback == m->key_death && Py_IS_TYPE(reinterpret_cast<PyObject *>(ref), &EphemeronEntryType)) {
            auto *e = reinterpret_cast<EphemeronEntry *>(ref);
            if (e->value != nullptr && e->position != kNoPosition) {
                return e;
            }
        }
    }
    return nullptr;
}

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

// Whether `value` reaches nothing the collector follows: it is neither a GC
// object nor a code object (a str, an int, None), or it is an exact tuple of
// at most kAtomicTupleItems such values, tuples nested at most
// kAtomicTupleDepth deep (the outermost counts). CPython's GC stops tracking
// a tuple of atoms by the same reasoning, but takes code objects (not GC
// objects) for atoms; the collector follows them, so a tuple holding one
// reaches something. Larger or deeper tuples are taken as reaching
// something: the check is made for every entry a pass walks, and stays a
// few loads.
constexpr Py_ssize_t kAtomicTupleItems = 16;
constexpr int kAtomicTupleDepth = 2;
inline bool ephemeron_value_reaches_nothing(PyObject *value, int depth = kAtomicTupleDepth) {
    if (PyCode_Check(value)) {
        return false;
    }
    if (!compat::is_gc_object(value)) {
        return true;
    }
    if (!PyTuple_CheckExact(value) || depth == 0 || PyTuple_GET_SIZE(value) > kAtomicTupleItems) {
        return false;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(value); i++) {
        PyObject *item = PyTuple_GET_ITEM(value, i);
        if (item != nullptr && !ephemeron_value_reaches_nothing(item, depth - 1)) {
            return false;
        }
    }
    return true;
}

// What the collector seeds for the entry at `position` of m's table
// (EntryTable::at): borrowed, valid while no code runs. NULL for a hole, an
// entry the GC cleared, a dying key, or an entry whose value reaches nothing
// the collector follows (ephemeron_value_reaches_nothing): such an entry
// never keeps its key alive, so seeding it decides nothing -- its key lives
// or dies by its other referrers, which their own seeds reach, and the key's
// death removes the entry. Else the entry's key; or, with `shared_values`
// (automatic passes), its value when something besides the entry references
// it. A key then becomes a node only when a seed's exploration reaches it,
// and a value that many entries share is explored once for all of them
// instead of through each key. That finds every key reachable only through
// values: to be, it must be reached from one. What it does not find at
// once is a key whose only referrers lie in a cycle through the key itself
// but through no value; CPython's GC frees that cycle itself (the entry
// holds the value, not the key), and the key's death removes its entry.
// False past the end. Seeding walks the positions in order, which is memory
// order: the entry a few positions ahead is prefetched, and so are its key
// and value.
inline bool ephemeron_position_seed(const EphemeronMap *m, size_t position, bool shared_values, PyObject **seed) {
    constexpr size_t kPrefetch = 8;
    const EntryTable &t = m->table;
    if (position >= t.end()) {
        return false;
    }
    if (position + kPrefetch < t.end()) {
        if (const EphemeronEntry *ahead = t.at(position + kPrefetch)) {
            __builtin_prefetch(ahead->ref.wr_object);
            __builtin_prefetch(ahead->value);  // its type decides whether the entry is seeded
        }
    }
    EphemeronEntry *e = t.at(position);
    PyObject *value = e != nullptr ? e->value : nullptr;
    *seed = nullptr;
    if (value != nullptr && !ephemeron_value_reaches_nothing(value)) {
        PyObject *key = ephemeron_entry_key(e);
        *seed = key != nullptr && shared_values && Py_REFCNT(value) > 1 ? value : key;
    }
    return true;
}

// --- Shared by the map's own files (ephemeron_*.cpp) ------------------------

// The map's operations (ephemeron_map.cpp) for its Python type.
// -1 with TypeError when key cannot be weakly referenced, else 0.
int ephemeron_check_key(PyObject *key);
// Takes `entry` out of m's table and returns its value (the reference the
// entry held), or NULL when the table does not hold it. Drops the table's
// reference to the entry; runs no code unless that frees the entry.
PyObject *ephemeron_take_value(EphemeronMap *m, EphemeronEntry *entry);
// Removes `entry` if m's table holds it; its value is released last.
void ephemeron_remove(EphemeronMap *m, EphemeronEntry *entry);
// Empties m; every entry and value is released after the table is empty.
void ephemeron_clear(EphemeronMap *m);
// A new map of `type`, empty, or NULL with an exception; and its end.
PyObject *ephemeron_alloc(PyTypeObject *type);
void ephemeron_dealloc(EphemeronMap *m);
int ephemeron_map_type_ready();

// A new iterator over m's keys, values or (key, value) pairs, or NULL with
// an exception (ephemeron_map_iterator.cpp).
enum class EntryPart { kKeys, kValues, kItems };
PyObject *ephemeron_iterate_entries(EphemeronMap *m, EntryPart part);
int ephemeron_iterator_type_ready();

}  // namespace coextra::detail
