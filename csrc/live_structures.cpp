// live_structures.cpp -- keeping and recording the large structures passes
// found live (live_structures.h).
#include "live_structures.h"

#include "collector_pass.h"
#include "heap_graph.h"

#include <algorithm>

namespace coextra::detail {

void LiveStructures::add(const LiveStructure &s) {
    size_t at = count_;
    for (size_t i = 0; i < count_; i++) {
        if (items_[i].op == s.op) {
            at = i;
        }
    }
    if (at == kMax) {
        at = 0;
        for (size_t i = 1; i < count_; i++) {
            if (items_[i].objects < items_[at].objects) {
                at = i;
            }
        }
        if (items_[at].objects >= s.objects) {
            return;
        }
    }
    items_[at] = s;
    count_ = std::max(count_, at + 1);
    refilter();
}

void LiveStructures::begin_pass() {
    for (size_t i = 0; i < count_; i++) {
        for (uint32_t r = 0; r < items_[i].referrer_count; r++) {
            items_[i].referrers[r].explained = 0;
        }
    }
}

void LiveStructures::explain_reference(PyObject *target, PyObject *source) {
    if (!(filter_ & bit(target))) {
        return;  // a reach node, as most deferred nodes are: it keeps no referrers
    }
    for (size_t i = 0; i < count_; i++) {
        LiveStructure &s = items_[i];
        if (s.op != target) {
            continue;
        }
        if (!(s.referrer_filter & bit(source))) {
            return;
        }
        for (uint32_t r = 0; r < s.referrer_count; r++) {
            LiveStructure::Referrer &referrer = s.referrers[r];
            if (referrer.op == source && referrer.explained < referrer.edges) {
                referrer.explained++;
                return;
            }
        }
        return;
    }
}

void LiveStructures::remove(PyObject *op) {
    for (size_t i = 0; i < count_; i++) {
        if (items_[i].op == op) {
            items_[i] = items_[--count_];
            refilter();
            return;
        }
    }
}

bool LiveStructures::grow_reach() {
    size_t kept = 0;  // forgotten nodes go
    for (size_t i = 0; i < reach_.size(); i++) {
        kept += reach_[i].op != nullptr && reach_[i].back_references != kForgotten;
    }
    if (kept + 1 > kMaxReachNodes) {
        return false;
    }
    size_t capacity = 1024;  // a quarter full at most, so that it can take as many again
    while (capacity < 4 * (kept + 1) && capacity < 2 * kMaxReachNodes) {
        capacity *= 2;
    }
    PodArray<ReachNode> old;
    old.swap(reach_);
    if (!reach_.assign_zeroed(capacity)) {
        reach_.swap(old);
        return false;
    }
    reach_mask_ = capacity - 1;
    reach_count_ = 0;
    for (size_t i = 0; i < old.size(); i++) {
        if (old[i].op != nullptr && old[i].back_references != kForgotten) {
            size_t j = reach_slot(old[i].op);
            while (reach_[j].op != nullptr) {
                j = (j + 1) & reach_mask_;
            }
            reach_[j] = old[i];
            reach_count_++;
        }
    }
    old.release();
    return true;
}

void LiveStructures::add_reach_node(PyObject *op, PyTypeObject *type, uint32_t back_references) {
    // Full, or out of memory: a node kept already is still updated.
    bool room = 2 * (reach_count_ + 1) <= reach_.size() || grow_reach();
    if (reach_.size() == 0) {
        return;
    }
    for (size_t i = reach_slot(op);; i = (i + 1) & reach_mask_) {
        ReachNode &slot = reach_[i];
        if (slot.op == op || (slot.op == nullptr && room)) {
            reach_count_ += slot.op == nullptr;
            slot = ReachNode{op, type_bits(type), back_references};
            return;
        }
        if (slot.op == nullptr) {
            return;
        }
    }
}

void LiveStructures::forget(PyObject *op) {
    remove(op);
    if (reach_count_ == 0) {
        return;
    }
    for (size_t i = reach_slot(op);; i = (i + 1) & reach_mask_) {
        ReachNode &slot = reach_[i];
        if (slot.op == op) {
            slot.back_references = kForgotten;
            return;
        }
        if (slot.op == nullptr) {
            return;
        }
    }
}

void LiveStructures::refilter() {
    filter_ = 0;
    for (size_t i = 0; i < count_; i++) {
        filter_ |= bit(items_[i].op);
    }
}

namespace {

// Whether node i of a finished analysis may be recorded as a live structure:
// expanded, referenced from outside the graph, not a code object (what
// passes decide about), with at least kLiveStructureObjects objects explored
// in its subtree.
bool may_be_live_structure(const GraphNode &node, uint32_t subtree) {
    return subtree >= kLiveStructureObjects && (node.flags & NODE_EXPANDED) && node.unexplained > 0 &&
           !(node.flags & NODE_BY_HOLDER) && !PyCode_Check(node.op);
}

// Whether a node of a recorded structure's reach is kept as a structure of
// its own: not a code object, for the same reason.
bool may_be_reach_node(const GraphNode &node) { return !(node.flags & NODE_BY_HOLDER) && !PyCode_Check(node.op); }

}  // namespace

// A node's subtree: itself, the nodes it discovered, theirs, and so on, with
// the objects explored as part of each (every node was discovered by an
// earlier one, so one backward sweep sums them).
void record_live_structures(Pass &pass) {
    const HeapGraph &g = pass.graph;
    size_t n = g.nodes.size();
    if (g.explored() < kLiveStructureObjects || g.budget_exhausted || pass.discoverer.size() != n ||
        !pass.subtree.assign_bytes(n, 0) || !pass.reach_edges.assign_bytes(n, 0)) {
        return;
    }
    PodArray<uint32_t> &subtree = pass.subtree;
    PodArray<uint32_t> &structure_of = pass.discoverer;  // rewritten in place, front to back
    for (size_t i = n; i-- > 0;) {
        subtree[i] += 1 + pass.merged_into[i];
        if (structure_of[i] != HeapGraph::kNone) {
            subtree[structure_of[i]] += subtree[i];
        }
    }
    // Each node's topmost recordable ancestor (itself included), or kNone:
    // its discoverer's entry already holds the discoverer's.
    PodArray<uint32_t> &recorded = pass.stack;  // free after propagate_liveness
    recorded.clear();
    for (size_t i = 0; i < n; i++) {
        uint32_t d = structure_of[i];
        uint32_t top = d != HeapGraph::kNone ? structure_of[d] : HeapGraph::kNone;
        if (top == HeapGraph::kNone && may_be_live_structure(g.nodes[i], subtree[i])) {
            top = static_cast<uint32_t>(i);
            if (!recorded.push(top)) {
                return;
            }
        }
        structure_of[i] = top;
    }
    if (recorded.size() > LiveStructures::kMax) {  // the largest ones
        std::partial_sort(&recorded[0], &recorded[0] + LiveStructures::kMax, &recorded[0] + recorded.size(),
                          [&](uint32_t a, uint32_t b) { return subtree[a] > subtree[b]; });
    }
    size_t count = std::min(recorded.size(), LiveStructures::kMax);
    // The references into each from everything it reaches, by a search over
    // the graph from it; stamps in structure_of (no longer needed), the
    // search's stack in pass.deferred (explore_and_count is over).
    for (size_t i = 0; i < n; i++) {
        structure_of[i] = HeapGraph::kNone;
    }
    // The searches together visit at most about a quarter of the graph: in
    // a pass over a heap of millions of objects, recording costs a small
    // share of what exploring did.
    size_t work_left = n / 4 + 4 * kLiveStructureObjects;
    for (size_t r = 0; r < count; r++) {
        uint32_t x = recorded[r];
        LiveStructure s{g.nodes[x].op, Py_TYPE(g.nodes[x].op), 0, subtree[x]};
        size_t reached = 0;
        size_t limit = std::min(2 * static_cast<size_t>(subtree[x]) + 64, work_left);
        bool known = true;  // every node it reaches expanded, and not too many
        PodArray<uint32_t> &stack = pass.deferred;
        stack.clear();
        structure_of[x] = static_cast<uint32_t>(r);
        if (!stack.push(x)) {
            return;
        }
        PodArray<uint32_t> &reach = pass.reach;
        reach.clear();
        while (known && !stack.empty()) {
            uint32_t node = stack.pop();
            if (!reach.push(node)) {
                return;
            }
            if (!(g.nodes[node].flags & NODE_EXPANDED) || ++reached > limit) {
                known = false;
                break;
            }
            uint32_t into_x = 0;
            for (uint32_t e = g.nodes[node].first_edge; e != HeapGraph::kNone; e = g.edges[e].next) {
                uint32_t target = g.edges[e].target;
                into_x += target == x;
                pass.reach_edges[target]++;
                if (structure_of[target] != r) {
                    structure_of[target] = static_cast<uint32_t>(r);
                    if (!stack.push(target)) {
                        return;
                    }
                }
            }
            s.back_references += into_x;
            if (into_x != 0 && s.referrer_count < LiveStructure::kMaxReferrers) {
                s.referrers[s.referrer_count++] = LiveStructure::Referrer{g.nodes[node].op, into_x, 0};
                s.referrer_filter |= LiveStructures::bit(g.nodes[node].op);
            }
        }
        work_left -= std::min(work_left, reached);
        if (known) {
            pass.live_structures.add(s);
        }
        // Every node of the reach, as a structure of its own (ReachNode);
        // then the counts back to 0 for the next search.
        for (size_t k = 0; k < reach.size(); k++) {
            uint32_t v = reach[k];
            const GraphNode &node = g.nodes[v];
            if (known && v != x && may_be_reach_node(node)) {
                pass.live_structures.add_reach_node(node.op, Py_TYPE(node.op), pass.reach_edges[v]);
            }
        }
        for (size_t k = 0; k < reach.size(); k++) {
            for (uint32_t e = g.nodes[reach[k]].first_edge; e != HeapGraph::kNone; e = g.edges[e].next) {
                pass.reach_edges[g.edges[e].target] = 0;
            }
        }
    }
}

}  // namespace coextra::detail
