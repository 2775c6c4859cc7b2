// collector.cpp -- one collector pass: explore, find roots, propagate, act.
#include "collector.h"

#include "heap_graph.h"
#include "holder.h"
#include "registry.h"

#include <chrono>

namespace coextra {

namespace {

struct CollectorState {
    bool running = false;
    Py_ssize_t budget = kDefaultBudget;
    // registry->holders.size() when the previous pass ended. Holders are
    // appended at the back, so [young_mark, size) are the holders attached
    // since then -- approximately: a detach moves the last holder into the
    // freed slot, so a young holder can move below the mark (it then waits for
    // a full pass), and an old one can sit above it after the vector shrank
    // (it is explored once more). Both only change the cost, never soundness:
    // any set of seeds gives a sound answer.
    size_t young_mark = 0;
    CollectorStats stats;
};

CollectorState state;

// A code node whose code object had a holder when it was expanded.
struct CodeWithHolder {
    uint32_t node;
    Holder *holder;  // borrowed: attached, owned by the registry (nothing runs during analysis)
};

struct Pass {
    explicit Pass(size_t limit) : graph(limit) {}
    HeapGraph graph;
    PodArray<CodeWithHolder> cached_codes;
};

// Counts one reference from the node being expanded to `child`.
int count_edge(PyObject *child, void *arg) {
    HeapGraph &g = *static_cast<HeapGraph *>(arg);
    if (child == nullptr || !is_node_candidate(child)) {
        return 0;
    }
    bool added = false;
    uint32_t node = g.intern(child, &added);
    if (node == HeapGraph::kNone) {
        return g.out_of_memory ? -1 : 0;  // past the budget: not a node, so live
    }
    GraphNode &n = g.nodes[node];
    if (n.flags & NODE_PRUNED) {
        return 0;  // live anyway; no need to remember the edge
    }
    n.unexplained--;
    if (!g.edges.push(node)) {
        g.out_of_memory = true;
        return -1;
    }
    return 0;
}

// The __dict__ of every module in sys.modules becomes a pruned node before the
// analysis starts, so looking one up later is one index probe. Reads only.
bool prune_module_dicts(HeapGraph &g) {
    PyObject *modules = PyImport_GetModuleDict();  // borrowed, owned by the interpreter
    if (modules == nullptr || !PyDict_Check(modules)) {
        return true;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *module;
    while (PyDict_Next(modules, &pos, &key, &module)) {
        if (!PyModule_Check(module)) {
            continue;
        }
        PyObject *dict = PyModule_GetDict(module);  // borrowed, never NULL for a module
        bool added = false;
        uint32_t node = g.intern(dict, &added);
        if (node == HeapGraph::kNone) {
            return !g.out_of_memory;
        }
        g.nodes[node].flags |= NODE_PRUNED | NODE_LIVE;
    }
    // Pruned dicts do not count against the budget.
    g.raise_limit(g.nodes.size());
    return true;
}

// Explores breadth first from the nodes already in the graph.
bool explore(Pass &pass) {
    HeapGraph &g = pass.graph;
    for (size_t i = 0; i < g.nodes.size(); i++) {
        g.nodes[i].edge_begin = static_cast<uint32_t>(g.edges.size());
        if (g.nodes[i].flags & NODE_PRUNED) {
            continue;
        }
        PyObject *op = g.nodes[i].op;
        Holder *h = visit_referents(op, count_edge, &g);
        if (g.out_of_memory) {
            return false;
        }
        if (h != nullptr && !pass.cached_codes.push(CodeWithHolder{static_cast<uint32_t>(i), h})) {
            return false;
        }
        g.nodes[i].flags |= NODE_EXPANDED;
        if (g.edges.size() >= UINT32_MAX) {
            return false;  // edge numbers are 32-bit
        }
    }
    return true;
}

// Roots are nodes referenced from outside the graph or never expanded; every
// node reachable from a root, along real and virtual edges, is live.
bool propagate_liveness(HeapGraph &g) {
    PodArray<uint32_t> stack;
    for (size_t i = 0; i < g.nodes.size(); i++) {
        GraphNode &n = g.nodes[i];
        if (n.flags & NODE_LIVE) {
            continue;
        }
        if (n.unexplained > 0 || !(n.flags & NODE_EXPANDED)) {
            n.flags |= NODE_LIVE;
            if (!stack.push(static_cast<uint32_t>(i))) {
                return false;
            }
        }
    }
    while (!stack.empty()) {
        uint32_t node = stack.pop();
        for (uint32_t e = g.nodes[node].edge_begin, end = g.edges_end(node); e < end; e++) {
            GraphNode &target = g.nodes[g.edges[e]];
            if (!(target.flags & NODE_LIVE)) {
                target.flags |= NODE_LIVE;
                if (!stack.push(g.edges[e])) {
                    return false;
                }
            }
        }
    }
    return true;
}

// Detaches the holders of unreachable codes. First every one of them is
// detached while we hold a strong reference to it, so no detach can free
// anything and no Python code runs until all decisions are carried out; then
// our references are dropped, which frees entries and products and may run
// arbitrary code (which may attach, detach or collect: all of that is safe).
Py_ssize_t detach_garbage(Pass &pass) {
    PodArray<Holder *> garbage;
    for (size_t i = 0; i < pass.cached_codes.size(); i++) {
        const CodeWithHolder &c = pass.cached_codes[i];
        if (pass.graph.nodes[c.node].flags & NODE_LIVE) {
            continue;
        }
        if (!garbage.push(c.holder)) {
            PyErr_NoMemory();
            return -1;
        }
    }
    for (size_t i = 0; i < garbage.size(); i++) {
        Py_INCREF(garbage[i]);
    }
    Py_ssize_t detached = 0;
    for (size_t i = 0; i < garbage.size(); i++) {
        detached += registry_detach(garbage[i]);
    }
    for (size_t i = 0; i < garbage.size(); i++) {
        Py_DECREF(garbage[i]);
    }
    return detached;
}

// One pass seeded with the codes of registry->holders[first, end).
Py_ssize_t run_pass(size_t first, size_t node_budget, bool automatic) {
    if (state.running) {
        return 0;
    }
    Registry *r = registry_get();
    if (r == nullptr) {
        return -1;
    }
    auto started = std::chrono::steady_clock::now();
    state.running = true;

    Pass pass(node_budget);
    bool ok = prune_module_dicts(pass.graph);
    // Analysis: from here to detach_garbage nothing runs Python code, nothing
    // allocates a Python object, and no reference count changes.
    for (size_t i = first; ok && i < r->holders.size(); i++) {
        PyObject *code = r->holders[i]->code;  // attached: valid
        if (!is_node_candidate(code)) {
            continue;  // immortal code: always live
        }
        bool added = false;
        if (pass.graph.intern(code, &added) == HeapGraph::kNone) {
            ok = !pass.graph.out_of_memory;
            break;
        }
    }
    ok = ok && explore(pass) && propagate_liveness(pass.graph);
    Py_ssize_t detached = -1;
    if (ok) {
        detached = detach_garbage(pass);
    } else {
        PyErr_NoMemory();
    }

    state.stats.collections++;
    if (automatic) {
        state.stats.auto_collections++;
    }
    if (pass.graph.budget_exhausted) {
        state.stats.budget_exhausted++;
    }
    if (detached > 0) {
        state.stats.detached_by_collector += static_cast<uint64_t>(detached);
    }
    state.stats.last_nodes = pass.graph.nodes.size();
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
    state.stats.last_seconds = elapsed.count();
    Registry *still = registry_get();
    if (still == nullptr) {
        PyErr_Clear();  // torn down by code run while detaching: nothing to remember
    } else {
        state.young_mark = still->holders.size();
    }
    state.running = false;
    return detached;
}

}  // namespace

const CollectorStats &collector_stats() { return state.stats; }

Py_ssize_t collector_collect_all() {
    return run_pass(0, static_cast<size_t>(state.budget), /*automatic=*/false);
}

Py_ssize_t collector_collect_auto_full() {
    return run_pass(0, static_cast<size_t>(state.budget), /*automatic=*/true);
}

Py_ssize_t collector_young_count() {
    Registry *r = registry_get();
    if (r == nullptr) {
        PyErr_Clear();
        return 0;
    }
    size_t size = r->holders.size();
    return static_cast<Py_ssize_t>(size - (state.young_mark < size ? state.young_mark : size));
}

Py_ssize_t collector_collect_young(Py_ssize_t node_budget) {
    Registry *r = registry_get();
    if (r == nullptr) {
        return -1;
    }
    size_t size = r->holders.size();
    size_t first = state.young_mark < size ? state.young_mark : size;
    Py_ssize_t budget = node_budget < state.budget ? node_budget : state.budget;
    return run_pass(first, static_cast<size_t>(budget < 1 ? 1 : budget), /*automatic=*/true);
}

Py_ssize_t collector_budget() { return state.budget; }

int collector_set_budget(Py_ssize_t nodes) {
    if (nodes < 1 || nodes > kMaxBudget) {
        PyErr_Format(PyExc_ValueError, "coextra: the budget must be from 1 to %zd nodes, not %zd",
                     kMaxBudget, nodes);
        return -1;
    }
    state.budget = nodes;
    return 0;
}

bool collector_running() { return state.running; }

}  // namespace coextra
