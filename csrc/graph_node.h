// graph_node.h -- a node and an edge of the heap graph (heap_graph.h), the
// records a collector pass keeps per object and per reference it explored.
//
// Plain values, owned by the graph's arrays. A node's object pointer is
// borrowed: nothing can free an object while an analysis runs (no Python code
// runs and no reference is dropped; docs/design.md, invariant 5).
#pragma once

#include "compat.h"

#include <cstdint>

namespace coextra::detail {

// No node: an empty list of edges, an index entry without a node, a seed's
// discoverer.
constexpr uint32_t kNoNode = UINT32_MAX;

enum NodeFlags : uint32_t {
    NODE_EXPANDED = 1,  // its references were visited and counted
    NODE_LIVE = 2,      // reachable from a root
    NODE_BY_HOLDER = 4, // indexed by its holder's registry slot, not in the address index
    NODE_DEFERRED = 8,  // a structure a recent pass found live: left unexpanded unless
                        // this pass's counts say it may have died (live_structures.h)
};

// A node's unexplained count has kCountBits bits, so that a node is 16 bytes:
// the node array is among the largest of a pass, and a large pass touches its
// pages fresh (see Pass in collector_pass.h). A reference count above kMaxCount
// is stored as kMaxCount; a graph records fewer edges than that
// (HeapGraph::kMaxEdges), so such a node keeps a positive count and stays a
// root -- conservative, and what an object so referenced is anyway.
constexpr int kCountBits = 28;
constexpr int32_t kMaxCount = (int32_t{1} << (kCountBits - 1)) - 1;

inline int32_t saturated_count(Py_ssize_t references) {
    return references < kMaxCount ? static_cast<int32_t>(references) : kMaxCount;
}

struct GraphNode {
    PyObject *op;             // borrowed (see the file comment)
    uint32_t first_edge;      // its latest out-edge (edges[]), kNoNode when it has none
    // Py_REFCNT(op) (saturated_count) minus the edges that enter it from
    // expanded nodes. A node in the holder index starts at 0 and gets its
    // count when it is expanded: a seed is added without reading its code
    // object (the read is then a prefetched one), and an unexpanded node is
    // a root whatever it says.
    int32_t unexplained : kCountBits;
    uint32_t flags : 32 - kCountBits;  // NodeFlags
};
static_assert(sizeof(GraphNode) == 16, "a node is two words");

// Out-edges form one list per source node, newest first. Adding an edge
// writes only the source node, which is the node being expanded (in cache);
// the lists need no sorting pass and no per-edge source field.
struct GraphEdge {
    uint32_t target;
    uint32_t next;  // the source's previous out-edge, kNoNode at the end
};

}  // namespace coextra::detail
