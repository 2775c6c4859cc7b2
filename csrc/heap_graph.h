// heap_graph.h -- HeapGraph: the part of the heap one collector pass (or one
// explain()) has explored: its nodes, the edges between them, and the two
// indexes that find a node from its object.
//
// Owned by the pass (Pass, collector_pass.h) or the explain() search that
// fills it. Everything here is filled from tp_traverse callbacks, that is from
// C frames a C++ exception must not cross, and while no Python code may run
// (docs/design.md, invariant 5). So: PodArrays that report allocation failure
// instead of throwing, borrowed PyObject pointers only, no Python allocation.
// The pointers stay valid for the whole analysis because nothing can free an
// object while it runs: no Python code runs and no reference is dropped.
//
// The parts: graph_node.h (a node and an edge), address_index.h (the index
// by address), pod_array.h (the arrays). Which objects become nodes and which
// of their references are edges: node_rules.h.
#pragma once

#include "address_index.h"
#include "compat.h"
#include "graph_node.h"
#include "holder.h"
#include "pod_array.h"
#include "registry.h"

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

// Nodes in discovery order, their out-edges (explain() adds none), and two
// indexes from object to node:
//   - code objects with a holder (every seed of a pass, and most of its code
//     nodes) by their holder's registry slot, when expect() sized that index:
//     the holder is at hand (a seed is found from it, and expanding a code
//     object reads its holder anyway), and the array is small and filled in
//     registry order;
//   - every other object by address (AddressIndex).
// The address index then holds fewer nodes, and the commonest lookups of a
// pass (a seed, and a function's reference to its code) skip it: the index's
// cold slots are the largest cost of a pass once it outgrows the CPU caches
// (measured side by side in bench/bench_collector.py; figures in
// docs/benchmarks.md).
class HeapGraph {
public:
    static constexpr uint32_t kNone = kNoNode;

    // The room expect() makes per expected node in the address index: about
    // as many nodes again go to the holder index, and a node has an edge or
    // two; twice that, so that most passes never grow these arrays.
    static constexpr size_t kNodesPerExpected = 4;
    static constexpr size_t kEdgesPerExpected = 8;

    // Edges a graph records at most: fewer than kMaxCount (see GraphNode).
    static constexpr size_t kMaxEdges = kMaxCount - 1;
    static_assert(kMaxEdges < static_cast<size_t>(kMaxCount), "a saturated count stays positive");

    // At most `limit` nodes (adding beyond it sets budget_exhausted) and
    // `max_edges` edges (add_edge; the tests lower it).
    explicit HeapGraph(size_t limit, size_t max_edges = kMaxEdges)
        : limit_(limit), max_edges_(max_edges < kMaxEdges ? max_edges : kMaxEdges) {}

    // Empties the graph for a new pass, keeping the memory: a large pass then
    // does not page-fault its way through fresh arrays every time.
    void reset(size_t limit) {
        nodes.clear();
        edges.clear();
        by_address_.clear();
        by_holder_.clear();
        merged = 0;
        budget_exhausted = out_of_memory = false;
        limit_ = limit;
    }

    void release_memory() {
        nodes.release();
        edges.release();
        by_address_.release_memory();
        by_holder_.release();
    }

    PodArray<GraphNode> nodes;
    PodArray<GraphEdge> edges;
    size_t merged = 0;  // objects explored as part of a node instead of as nodes
    bool budget_exhausted = false;
    bool out_of_memory = false;

    // Objects explored so far, nodes and merged objects (what the budget bounds).
    size_t explored() const { return nodes.size() + merged; }

    // Counts one merged object against the budget; false past it.
    bool charge_merged() {
        if (explored() >= limit_) {
            budget_exhausted = true;
            return false;
        }
        merged++;
        return true;
    }

    // Sizes the indexes of an empty graph up front: the address index for
    // about `expected` nodes (saves rehashing), the holder index for registry
    // slots [first_slot, end_slot) -- a young pass's seeds, or every holder;
    // the codes of other holders go to the address index. The registry cannot
    // change while the graph is in use: no Python code runs. False when out
    // of memory.
    bool expect(size_t expected, size_t first_slot, size_t end_slot) {
        size_t holder_slots = end_slot > first_slot ? end_slot - first_slot : 0;
        holder_base_ = first_slot;
        if (!by_address_.expect(expected) || !by_holder_.assign_bytes(holder_slots, 0xFF)) {
            return false;  // 0xFF bytes: every entry kNone
        }
        // Room for a few nodes and edges per expected index node, as a hint:
        // a large pass's arrays then start as mapped blocks, whose growth
        // touches no page twice (system_memory.h), instead of being copied
        // through every smaller size on the way. Untouched room costs no
        // memory; without it (the mapping refused) the arrays grow as they fill.
        (void)(nodes.reserve(expected * kNodesPerExpected) && edges.reserve(expected * kEdgesPerExpected));
        return true;
    }

    // Brings op's first address index slot into the cache ahead of intern(op).
    void prefetch(PyObject *op) const { by_address_.prefetch(op); }

    // The node of op, added (unexpanded, counting Py_REFCNT(op) as unexplained)
    // when missing; *added says which. kNone past the limit or out of memory.
    uint32_t intern(PyObject *op, bool *added) {
        *added = false;
        if (!by_holder_.empty() && PyCode_Check(op)) {
            Holder *h = registry_holder_of(op);
            if (h != nullptr && in_holder_index(h)) {
                return intern_by_holder(op, h, added);
            }
        }
        if (!by_address_.make_room(nodes)) {
            out_of_memory = true;
            return kNone;
        }
        size_t slot = 0;
        uint32_t found = by_address_.find(op, nodes, &slot);
        if (found != kNone) {
            return found;
        }
        uint32_t node = add_node(op, 0, added);
        if (node != kNone) {
            by_address_.insert(slot, op, node);
        }
        return node;
    }

    // intern(h->code) for an attached holder, without reading co_extra (nor,
    // when the holder index takes it, anything of the code object).
    uint32_t intern_code_of(Holder *h, bool *added) {
        *added = false;
        if (in_holder_index(h)) {
            return intern_by_holder(h->code, h, added);
        }
        return intern(h->code, added);
    }

    // Records a reference from `source` to `target`; false when out of
    // memory. Past max_edges the reference is not recorded and the budget
    // counts as exhausted: the target's count then keeps the reference, so
    // it is only more live (and a saturated count stays positive).
    bool add_edge(uint32_t source, uint32_t target) {
        if (edges.size() >= max_edges_) {
            budget_exhausted = true;
            return true;
        }
        if (!edges.push(GraphEdge{target, nodes[source].first_edge})) {
            return false;
        }
        nodes[source].first_edge = static_cast<uint32_t>(edges.size() - 1);
        return true;
    }

    // Calls f(registry_slot, node) for every node in the holder index.
    template <typename F>
    void for_each_holder_node(F f) const {
        for (size_t i = 0; i < by_holder_.size(); i++) {
            if (by_holder_[i] != kNone) {
                f(holder_base_ + i, by_holder_[i]);
            }
        }
    }

private:
    bool in_holder_index(const Holder *h) const {
        return h->registry_slot >= holder_base_ && h->registry_slot - holder_base_ < by_holder_.size();
    }

    uint32_t intern_by_holder(PyObject *code, Holder *h, bool *added) {
        uint32_t &entry = by_holder_[h->registry_slot - holder_base_];
        if (entry == kNone) {
            entry = add_node(code, NODE_BY_HOLDER, added);
        }
        return entry;
    }

    uint32_t add_node(PyObject *op, uint32_t flags, bool *added) {
        if (explored() >= limit_) {
            budget_exhausted = true;
            return kNone;
        }
        uint32_t node = static_cast<uint32_t>(nodes.size());
        int32_t references = (flags & NODE_BY_HOLDER) ? 0 : saturated_count(Py_REFCNT(op));
        if (!nodes.push(GraphNode{op, kNone, references, flags})) {
            out_of_memory = true;
            return kNone;
        }
        *added = true;
        return node;
    }

    AddressIndex by_address_;       // every node but those in by_holder_
    PodArray<uint32_t> by_holder_;  // registry slot - holder_base_ -> node (kNone: none)
    size_t holder_base_ = 0;
    size_t limit_;
    size_t max_edges_;
};

}  // namespace coextra::detail
