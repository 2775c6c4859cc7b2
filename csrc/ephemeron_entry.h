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

}  // namespace coextra::detail
