// explain.h -- why a cached code object, or the key of an ephemeron map
// entry, is still alive: the reference paths from its holder (entry) back to
// it, as the collector sees them.
#pragma once

#include "compat.h"

namespace coextra::detail {

// A new list of paths, each a list [holder, entry, product, ..., code], found
// breadth first (shortest first, at most kMaxExplainPaths) within `node_budget`
// nodes; [] when the code has no holder or no path was found. NULL with an
// exception on failure. `code` must be a code object.
constexpr size_t kMaxExplainPaths = 16;
PyObject *explain_paths(PyObject *code, Py_ssize_t node_budget);

// The same for the entry of `key` in `map`: paths [entry, value, ..., key];
// [] when key has no entry there.
struct EphemeronMap;
PyObject *explain_entry_paths(PyObject *key, EphemeronMap *map, Py_ssize_t node_budget);

}  // namespace coextra::detail
