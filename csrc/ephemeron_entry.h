// ephemeron_entry.h -- EphemeronEntry: one entry of an EphemeronMap, a weak
// reference to its key that owns the value (the type: ephemeron_entry.cpp).
#pragma once

#include "compat.h"

#include <cstddef>

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
    // removes it without the key, which CPython has cleared by then.
    size_t position;
};

extern PyTypeObject EphemeronEntryType;

}  // namespace coextra::detail
