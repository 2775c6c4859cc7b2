// module_dicts.h -- ModuleDicts: the __dict__ of every module in sys.modules,
// which a collector pass never expands (docs/design.md, "The collector",
// step 2: a module's globals are live while it is imported, and large).
//
// Owned by the collector's scratch (CollectorScratch, collector.cpp), kept
// from pass to pass; a pass consults it through Pass::module_dicts. Its
// pointers are borrowed and compared by address only, never dereferenced, so
// a dict freed since the listing costs nothing: a stale entry only has
// another dict at that address treated as live, and a missed one is only
// explored. Rebuilt (refresh) before an analysis, never during one; when:
// collector_relist_module_dicts (collector.h).
#pragma once

#include "compat.h"

#include <algorithm>
#include <vector>

namespace coextra::detail {

struct ModuleDicts {
    std::vector<PyObject *> sorted;  // by address
    Py_ssize_t modules_seen = -1;    // len(sys.modules) when built
    // The two latest elements of `sorted` found (or NULL), compared only. The
    // functions of one module share its globals and, since 3.10, the builtins
    // dict: a function's two lookups alternate between them, so one entry
    // missed every time: a binary search per function.
    PyObject *recent[2] = {nullptr, nullptr};

    // Inline: a pass asks it of every dict it meets.
    bool contains(PyObject *dict) {
        if (dict == recent[0] || dict == recent[1]) {
            return true;
        }
        if (!std::binary_search(sorted.begin(), sorted.end(), dict)) {
            return false;
        }
        recent[1] = recent[0];
        recent[0] = dict;
        return true;
    }

    void forget_recent() { recent[0] = recent[1] = nullptr; }

    // Lists the module dicts anew when `force`, or when sys.modules changed
    // size since the last listing; walks sys.modules (needs the GIL, runs no
    // Python code). False when out of memory (nothing is then pruned: still
    // sound).
    bool refresh(bool force);
};

}  // namespace coextra::detail
