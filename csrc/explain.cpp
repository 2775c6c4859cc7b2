// explain.cpp -- breadth-first search from a holder back to its code object.
//
// The search uses the collector's graph and pruning rules (heap_graph.h), except
// that module dicts are explored: a path through a module's globals is exactly
// the answer to "why is this code object alive". Like a collector pass, the
// search holds borrowed pointers only and runs no Python code; the result lists
// are built after it, when the graph is no longer needed.
#include "explain.h"

#include "ephemeron_map.h"
#include "heap_graph.h"
#include "include/coextra/ref.hpp"
#include "node_rules.h"
#include "registry.h"

namespace coextra::detail {

namespace {

struct Search {
    explicit Search(size_t limit) : graph(limit) {}
    HeapGraph graph;
    PodArray<uint32_t> parent;     // parent[n]: the node that discovered n (kNone for the holder)
    PodArray<uint32_t> last_hops;  // nodes with an edge to the code, in discovery order
    uint32_t current = HeapGraph::kNone;
    PyObject *target = nullptr;    // borrowed: the caller's argument, alive for the search
};

int follow_edge(PyObject *child, void *arg) {
    Search &s = *static_cast<Search *>(arg);
    if (child == s.target) {
        size_t n = s.last_hops.size();
        if (n < kMaxExplainPaths && (n == 0 || s.last_hops[n - 1] != s.current)) {
            if (!s.last_hops.push(s.current)) {
                s.graph.out_of_memory = true;
                return -1;
            }
        }
        return 0;  // the code itself is never expanded: paths end there
    }
    if (child == nullptr || !is_node_candidate(child)) {
        return 0;
    }
    bool added = false;
    uint32_t node = s.graph.intern(child, &added);
    if (node == HeapGraph::kNone) {
        return s.graph.out_of_memory ? -1 : 0;
    }
    if (added && !s.parent.push(s.current)) {
        s.graph.out_of_memory = true;
        return -1;
    }
    return 0;
}

Ref path_to(Search &s, uint32_t last_hop) {
    size_t length = 1;
    for (uint32_t n = last_hop; n != HeapGraph::kNone; n = s.parent[n]) {
        length++;
    }
    Ref path = Ref::steal(PyList_New(static_cast<Py_ssize_t>(length)));
    if (!path) {
        return path;
    }
    PyList_SET_ITEM(path.get(), length - 1, Py_NewRef(s.target));
    size_t at = length - 1;
    for (uint32_t n = last_hop; n != HeapGraph::kNone; n = s.parent[n]) {
        PyList_SET_ITEM(path.get(), --at, Py_NewRef(s.graph.nodes[n].op));
    }
    return path;
}

// Takes (+1) or drops (-1) one reference to every object on every path.
void hold_paths(Search &s, int delta) {
    for (size_t i = 0; i < s.last_hops.size(); i++) {
        for (uint32_t n = s.last_hops[i]; n != HeapGraph::kNone; n = s.parent[n]) {
            if (delta > 0) {
                Py_INCREF(s.graph.nodes[n].op);
            } else {
                Py_DECREF(s.graph.nodes[n].op);
            }
        }
    }
}

}  // namespace

namespace {

// The paths from `start` (a holder or an ephemeron entry, borrowed from its
// owner, which nothing can change during the search) back to `target`.
PyObject *paths_from(PyObject *start, PyObject *target, Py_ssize_t node_budget) {
    Search s(static_cast<size_t>(node_budget));
    s.target = target;
    bool added = false;
    bool ok = s.graph.intern(start, &added) != HeapGraph::kNone &&
              s.parent.push(HeapGraph::kNone);
    for (size_t i = 0; ok && i < s.graph.nodes.size() && s.last_hops.size() < kMaxExplainPaths;
         i++) {
        s.current = static_cast<uint32_t>(i);
        visit_referents(s.graph.nodes[i].op, follow_edge, &s);
        ok = !s.graph.out_of_memory;
    }
    if (!ok) {
        return PyErr_NoMemory();
    }
    // The search is over. Building the lists allocates, which may run the GC
    // and so any Python code (3.10/3.11), which may free objects of the graph:
    // first take a reference to every object on a path, without allocating.
    hold_paths(s, +1);
    Ref paths = Ref::steal(PyList_New(0));
    for (size_t i = 0; paths && i < s.last_hops.size(); i++) {
        Ref path = path_to(s, s.last_hops[i]);
        if (!path || PyList_Append(paths.get(), path.get()) < 0) {
            paths.reset();
        }
    }
    hold_paths(s, -1);
    return paths.release();
}

}  // namespace

PyObject *explain_paths(PyObject *code, Py_ssize_t node_budget) {
    Holder *h = registry_holder_of(code);
    if (h == nullptr) {
        return PyList_New(0);
    }
    return paths_from(reinterpret_cast<PyObject *>(h), code, node_budget);
}

PyObject *explain_entry_paths(PyObject *key, EphemeronMap *map, Py_ssize_t node_budget) {
    EphemeronEntry *entry = ephemeron_find_entry(map, key);
    if (entry == nullptr) {
        return PyList_New(0);
    }
    return paths_from(reinterpret_cast<PyObject *>(entry), key, node_budget);
}

}  // namespace coextra::detail
