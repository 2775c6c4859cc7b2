// live_structures.h -- LiveStructures: the large structures recent passes
// found live, which automatic passes leave unexplored when they meet them
// again (docs/design.md, "Large structures found live").
//
// Owned by the collector's scratch (CollectorScratch, collector.cpp), kept
// from pass to pass and emptied by collector_forget_live_structures
// (collector.h); a pass consults it through Pass::live_structures, and
// record_live_structures fills it at the end of a pass. It holds no pointer
// it dereferences: a structure's address and type are compared only, since
// the object may have died since it was recorded.
#pragma once

#include "compat.h"
#include "pod_array.h"

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

struct Pass;

// A slice whose few holders reach a structure of many objects (a model every
// product shares) would otherwise explore all of it, each slice again.
//
// A structure is a node X that a pass found referenced from outside its
// graph, with many objects in its subtree (the nodes it discovered first,
// theirs, and so on). Leaving X unexpanded makes X a root and what its
// unexplored part references roots too: never less live than exploring it,
// so always sound. It is also what the full pass would decide as long as X
// has a reference from outside everything it reaches, and a later pass
// checks that from its own counts. X's references not explained by that
// pass's graph are the outside ones plus those from the part of X's reach
// the pass has not expanded; on the same heap, the latter come from the
// `referrers` recorded with X (the nodes of its reach with an edge into X)
// that this pass has not expanded itself, at most unexplored_back_references()
// of them. So when X's unexplained count exceeds that, X is left unexpanded;
// otherwise it is expanded then and there, in the same pass. A referrer the
// pass has expanded is known by its address only: if the recorded object has
// died and another took its place, the recorded references died with it, so
// counting them as explained is still right.
//
// Every node of X's reach is recorded too (ReachNode, below).
//
// On a heap changed since the recording -- a new reference into X from its
// own part -- a dead X could pass for live: the set is emptied when a
// generation pass begins (collector_forget_live_structures), so the first
// pass to meet X from then on explores it again; the ones after it, until
// the next generation pass, stop at X.
struct LiveStructure {
    // The nodes of X's reach with edges into X, as many as fit; the others'
    // edges count as never explained.
    static constexpr size_t kMaxReferrers = 16;
    struct Referrer {
        PyObject *op;        // compared only, never dereferenced
        uint32_t edges;      // into X when recorded
        uint32_t explained;  // of those, the edges into X the pass under way has found from op
    };

    PyObject *op;        // compared only, never dereferenced: it may have died since
    PyTypeObject *type;  // compared only, with the type of the object found at op
    uint32_t back_references;  // edges into X from everything X reached
    uint32_t objects;    // explored in its subtree when recorded (which ones are kept)
    uint32_t referrer_count = 0;
    Referrer referrers[kMaxReferrers] = {};
    // One bit per address class of the referrers (LiveStructures::bit): an
    // edge from any other node into X, such as an instance's into its class,
    // is passed over with one test.
    uint64_t referrer_filter = 0;

    // The references into X that may come from the part of its reach the
    // pass under way has not expanded: back_references less the edges
    // from recorded referrers that the pass has found.
    uint32_t unexplored_back_references() const {
        uint32_t explained = 0;
        for (uint32_t i = 0; i < referrer_count; i++) {
            explained += referrers[i].explained;
        }
        return back_references - explained;
    }
};

// Structures whose subtree has fewer objects are not recorded: leaving them
// unexplored would save less than a pass's fixed costs.
constexpr size_t kLiveStructureObjects = 8192;

// A node of a recorded structure's reach. Every such node is a structure of
// its own: its reach lies within the recorded one (a reach is closed under
// references), so the edges into it from the recorded reach bound those
// from its own, and the test above holds with that count. A pass that meets
// a structure by another way in than the node it was recorded from, as a
// class every product's object is an instance of, stops there too.
struct ReachNode {
    PyObject *op;              // compared only, never dereferenced; NULL: a free slot
    uint32_t type_bits;        // of the type's address (type_bits()), compared only
    uint32_t back_references;  // edges into it from the reach it was recorded in
};

class LiveStructures {
public:
    static constexpr size_t kMax = 16;
    // The most reach nodes kept; the table has twice as many slots.
    static constexpr size_t kMaxReachNodes = size_t{1} << 18;

    bool empty() const { return count_ == 0 && reach_count_ == 0; }

    // Whether op, alive and in a pass's graph, is a recorded structure or a
    // node of one's reach (its address and type are). Inline: a pass asks
    // it of every node it adds.
    bool recorded(PyObject *op) const { return find(op) != nullptr || find_reach_node(op) != nullptr; }

    // Whether op, recorded and left unexpanded with `unexplained` references
    // not explained by the pass's graph, is still live by its record.
    bool still_live(PyObject *op, int32_t unexplained) const {
        if (const LiveStructure *s = find(op)) {
            return unexplained > static_cast<int32_t>(s->unexplored_back_references());
        }
        const ReachNode *n = find_reach_node(op);
        return n != nullptr && unexplained > static_cast<int32_t>(n->back_references);
    }

    // Adds or replaces the entry of s.op; when full, s replaces the smallest
    // entry if it is larger.
    void add(const LiveStructure &s);

    // Adds or replaces op as a node of a recorded structure's reach, unless
    // kMaxReachNodes are kept already or memory is short.
    void add_reach_node(PyObject *op, PyTypeObject *type, uint32_t back_references);

    // A pass begins: no reference into a structure explained yet.
    void begin_pass();

    // The pass under way found an edge from the node of `source` into the
    // structure `target` (left unexpanded): one reference from a recorded
    // referrer explained, up to the edges recorded from it.
    void explain_reference(PyObject *target, PyObject *source);

    // Forgets op, as a structure and as a reach node.
    void forget(PyObject *op);

    // Forgets everything, and gives the reach nodes' memory back.
    void clear() {
        count_ = 0;
        filter_ = 0;
        reach_.release();
        reach_count_ = 0;
        reach_mask_ = 0;
    }

    // One bit per address class: most nodes a pass adds are rejected by one test.
    static uint64_t bit(PyObject *op) { return uint64_t{1} << ((reinterpret_cast<uintptr_t>(op) >> 4) & 63); }

private:
    const LiveStructure *find(PyObject *op) const {
        if (!(filter_ & bit(op))) {
            return nullptr;
        }
        for (size_t i = 0; i < count_; i++) {
            if (items_[i].op == op && items_[i].type == Py_TYPE(op)) {
                return &items_[i];
            }
        }
        return nullptr;
    }

    // The type's address, as a reach node keeps it: the 32 bits above its
    // alignment. Like the full type a structure keeps, it only tells most
    // objects that took a recorded node's address from it: an address taken
    // by another object is one of the heap changes the records are
    // forgotten for (above).
    static uint32_t type_bits(PyTypeObject *type) {
        return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(type) >> 4);
    }

    // Open addressing with linear probing over a power-of-two table, hashed
    // by address (Fibonacci hashing of the 16-byte granule).
    size_t reach_slot(PyObject *op) const {
        return static_cast<size_t>(((reinterpret_cast<uintptr_t>(op) >> 4) * 0x9E3779B97F4A7C15ull) >> 24) &
               reach_mask_;
    }

    const ReachNode *find_reach_node(PyObject *op) const {
        if (reach_count_ == 0) {
            return nullptr;
        }
        for (size_t i = reach_slot(op);; i = (i + 1) & reach_mask_) {
            const ReachNode &slot = reach_[i];
            if (slot.op == op) {
                return slot.type_bits == type_bits(Py_TYPE(op)) && slot.back_references != kForgotten ? &slot
                                                                                                      : nullptr;
            }
            if (slot.op == nullptr) {
                return nullptr;
            }
        }
    }

    // A forgotten reach node keeps its slot, so that the probes past it
    // still find theirs.
    static constexpr uint32_t kForgotten = UINT32_MAX;

    bool grow_reach();
    void remove(PyObject *op);
    void refilter();

    LiveStructure items_[kMax] = {};
    size_t count_ = 0;
    uint64_t filter_ = 0;
    PodArray<ReachNode> reach_;  // empty until a reach is recorded
    size_t reach_count_ = 0;     // slots in use, forgotten ones included
    size_t reach_mask_ = 0;
};

// Records the largest structures the pass found live in
// pass.live_structures: the topmost nodes that may be recorded
// (may_be_live_structure, live_structures.cpp), each with the edges into it
// from everything it reaches and every node of that reach with the edges
// into it from the reach -- unless it reaches a node left unexpanded, or
// more than twice its subtree (too entangled to be worth the search). Runs
// after liveness is propagated, before anything is detached; reuses
// pass.stack and pass.deferred and rewrites pass.discoverer.
void record_live_structures(Pass &pass);

}  // namespace coextra::detail
