// ephemeron_entry.h -- EphemeronEntry: one entry of an EphemeronMap, a weak
// reference to its key that owns the value (the type: ephemeron_entry.cpp).
#pragma once

#include "compat.h"

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

struct EphemeronEntry {
    // ref.wr_object is the key (weak), ref.wr_callback the map's KeyDeath
    // object (owned by the weak reference).
    PyWeakReference ref;
    // Owned. Never NULL while the entry is in its map's table; NULL once it
    // left and its value was released (an entry is never put back). An entry
    // that clear() took out keeps its value until clear() releases both.
    PyObject *value;
    // Where the map's table holds it (EntryTable), so that the callback
    // removes it without the key, which CPython has cleared by then;
    // kNoPosition while it is in no table (being made, taken out, or being
    // released by clear()), so that finding it through its key's list of weak
    // references (ephemeron_find_entry) can tell.
    size_t position;
};

constexpr size_t kNoPosition = SIZE_MAX;

extern PyTypeObject EphemeronEntryType;

// A new entry for key whose weak reference calls `callback` (its map's
// KeyDeath) when the key dies, its value not yet set and in no table; or
// NULL with an exception. Allocates, so any code may run meanwhile.
EphemeronEntry *ephemeron_new_entry(PyObject *key, PyObject *callback);

// `e` when it is an entry with a live key, else NULL (also for NULL).
EphemeronEntry *ephemeron_usable(EphemeronEntry *e);

// The key of an entry still in a map (borrowed, alive while the entry is in
// its map), or NULL (also while a dying key's callback is pending).
PyObject *ephemeron_entry_key(EphemeronEntry *entry);

// Calls visit(entry, arg) for every ephemeron entry whose key is `key` (the
// virtual edges key -> entry), found through key's weak reference list.
void ephemeron_visit_entries(PyObject *key, visitproc visit, void *arg);

// EphemeronEntry objects that exist right now, in a table or not: tests and
// stats() prove with it that entries are really freed.
int64_t ephemeron_entry_live_count();

int ephemeron_entry_type_ready();

}  // namespace coextra::detail
