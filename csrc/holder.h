// holder.h -- Holder: the cache of one code object.
//
// A Holder is a GC-tracked Python object holding an ordered list of Entry
// objects, most recently used first, optionally bounded by max_entries (the
// least recently used entry is evicted). It is created attached to one code
// object by the Registry and may later be detached (see registry.h); a detached
// holder keeps working as a plain container and is never attached again.
//
// Reentrancy: every operation that can run Python code (a guard call, or the
// last reference to an entry going away and running a product's __del__) first
// leaves the holder in a consistent state, so that code may freely call back
// into this holder or into coextra.
#pragma once

#include "compat.h"
#include "entry.h"

#include <cstdint>

namespace coextra::detail {

struct Holder {
    PyObject_HEAD
    // The code object this holder is attached to, or NULL once detached (and
    // only then: NULL is the "detached" mark). Borrowed: the registry detaches
    // the holder before the code object is freed (co_extra free function), so
    // the pointer never dangles while it is non-NULL.
    PyObject *code;
    // Owned references to the Entry objects, most recently used first; use
    // holder_items(). Most holders have one entry, so room for one lives in the
    // holder itself and an array is allocated only from the second entry on:
    // that saves a 16-byte block per holder (see bench/bench_memory.py).
    union {
        PyObject **many;  // capacity > 1: a PyMem array of `capacity` slots
        PyObject *one;    // capacity <= 1: the slot itself
    } items;
    uint32_t size;           // entries held
    uint32_t capacity;       // slots available
    uint32_t max_entries;    // 0: unbounded
    uint32_t registry_slot;  // index in the registry's holder table while attached
};

extern PyTypeObject HolderType;

// The entry slots of h, [0, h->size) in use. Valid until h next changes.
inline PyObject **holder_items(Holder *h) {
    return h->capacity > 1 ? h->items.many : &h->items.one;
}

inline bool holder_attached(const Holder *h) { return h->code != nullptr; }

// The registry's attach and detach set and clear h->code through these, so
// that the count of attached entries (holder_attached_entries) follows.
void holder_mark_attached(Holder *h, PyObject *code);
void holder_mark_detached(Holder *h);

// The entries of every attached holder.
uint64_t holder_attached_entries();

// Holder objects that exist right now, attached or not: tests and stats()
// prove with it that holders are really freed.
int64_t holder_live_count();

// A new, empty, detached holder (the registry attaches it), or NULL with an exception.
Holder *holder_new();

// Inserts a new entry at the front and evicts beyond max_entries.
// Returns a new reference to the entry, or NULL with an exception.
Entry *holder_add(Holder *h, PyObject *product, PyObject *guard);

// Decides whether `entry` answers a lookup: 1 yes, 0 no, -1 error (exception set).
using EntryMatcher = int (*)(Entry *entry, void *context);

// Finds the first entry (MRU order) that `match` accepts; moves it to the front
// and counts the hit. Returns 1 and a new reference in *found, 0 when nothing
// matches, -1 with an exception (the holder is then left unchanged).
int holder_lookup(Holder *h, EntryMatcher match, void *context, Entry **found);

// Removes `entry`: 1 when it was there, 0 when it was not.
int holder_remove(Holder *h, Entry *entry);

// Drops every entry.
void holder_clear(Holder *h);

// 0 means unbounded. Evicts the least recently used entries beyond the bound.
void holder_set_max_entries(Holder *h, uint32_t max_entries);

// A new list of the entries, MRU first, or NULL with an exception.
PyObject *holder_entries(Holder *h);

int holder_type_ready();

}  // namespace coextra::detail
