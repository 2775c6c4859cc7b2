// entry.h -- Entry: one cached product of a code object.
//
// An Entry is a small GC-tracked Python object: the product a backend compiled,
// the guard that decides whether the product applies to a call, and a hit count.
// Entries live in exactly one Holder's list at a time (or in none, once removed);
// they never point back at their holder, so removing one needs no bookkeeping.
#pragma once

#include "compat.h"

#include <cstdint>

namespace coextra::detail {

struct Entry {
    PyObject_HEAD
    PyObject *product;  // owned, never NULL
    PyObject *guard;    // owned; NULL means "no guard, always matches" (None in Python)
    uint64_t hits;      // lookups this entry answered
};

extern PyTypeObject EntryType;

inline bool entry_check(PyObject *op) { return Py_IS_TYPE(op, &EntryType); }

// 0 when `guard` can be an entry's guard: NULL, None (no guard) or a
// callable; else -1 with a TypeError naming `caller`, the public function it
// was given to ("attach()"). Every entry point that takes a guard checks it
// so before holder_add().
int entry_check_guard(PyObject *guard, const char *caller);

// New entry, or NULL with an exception. `guard` is NULL, None (no guard) or
// a callable (entry_check_guard).
Entry *entry_new(PyObject *product, PyObject *guard);

int entry_type_ready();

// Entry objects that exist right now, in a holder or not: tests and stats()
// prove with it that entries are really freed.
int64_t entry_live_count();

}  // namespace coextra::detail
