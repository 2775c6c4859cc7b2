// garbage.cpp -- detaching what a pass found unreachable (garbage.h).
#include "garbage.h"

#include "ephemeron_map.h"
#include "heap_graph.h"
#include "registry.h"

#include <algorithm>

namespace coextra::detail {

Garbage detach_garbage(Pass &pass, const HolderTable &holders) {
    const HeapGraph &g = pass.graph;
    PodArray<Holder *> garbage;
    // An entry, and once it is removed the value it held: both are dropped last.
    struct RemovedEntry {
        EphemeronEntry *entry;
        PyObject *value;
    };
    PodArray<RemovedEntry> garbage_entries;
    bool ok = true;
    // Every code node in the holder index has a holder; an unexpanded node is
    // a root, so not being live is the whole test.
    g.for_each_holder_node([&](size_t slot, uint32_t node) {
        if (ok && !(g.nodes[node].flags & NODE_LIVE)) {
            ok = garbage.push(holders[slot]);  // the registry is unchanged since the analysis
        }
    });
    for (size_t i = 0; ok && i < pass.other_cached_codes.size(); i++) {
        const CodeWithHolder &c = pass.other_cached_codes[i];
        if (!(g.nodes[c.node].flags & NODE_LIVE)) {
            ok = garbage.push(c.holder);
        }
    }
    for (size_t i = 0; ok && i < pass.ephemeron_edges.size(); i++) {
        const EphemeronEdge &edge = pass.ephemeron_edges[i];
        if (!(g.nodes[edge.source].flags & NODE_LIVE)) {
            ok = garbage_entries.push(RemovedEntry{edge.entry, nullptr});
        }
    }
    if (!ok) {
        PyErr_NoMemory();
        return Garbage{-1, 0};
    }
    // In address order, as a map frees its entries (ephemeron_map.cpp): the
    // order they were found in follows the maps' hashed tables.
    if (garbage_entries.size() > 1) {
        std::sort(&garbage_entries[0], &garbage_entries[0] + garbage_entries.size(),
                  [](const RemovedEntry &a, const RemovedEntry &b) { return a.entry < b.entry; });
    }
    for (size_t i = 0; i < garbage.size(); i++) {
        Py_INCREF(garbage[i]);
    }
    for (size_t i = 0; i < garbage_entries.size(); i++) {
        Py_INCREF(garbage_entries[i].entry);
    }
    Garbage found;
    for (size_t i = 0; i < garbage.size(); i++) {
        found.holders += registry_detach(garbage[i]);
    }
    for (size_t i = 0; i < garbage_entries.size(); i++) {
        garbage_entries[i].value = ephemeron_detach(garbage_entries[i].entry);
        found.entries += garbage_entries[i].value != nullptr;
    }
    for (size_t i = 0; i < garbage.size(); i++) {
        Py_DECREF(garbage[i]);
    }
    for (size_t i = 0; i < garbage_entries.size(); i++) {
        Py_DECREF(garbage_entries[i].entry);
        Py_XDECREF(garbage_entries[i].value);
    }
    return found;
}

}  // namespace coextra::detail
