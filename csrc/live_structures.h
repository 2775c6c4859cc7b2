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

class LiveStructures {
public:
    static constexpr size_t kMax = 16;

    bool empty() const { return count_ == 0; }

    // The entry of op, alive and in a pass's graph: its address and type are
    // a recorded structure's. Inline: a pass asks it of every node it adds.
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

    // Adds or replaces the entry of s.op; when full, s replaces the smallest
    // entry if it is larger.
    void add(const LiveStructure &s);

    // A pass begins: no reference into a structure explained yet.
    void begin_pass();

    // The pass under way found an edge from the node of `source` into the
    // structure `target` (left unexpanded): one reference from a recorded
    // referrer explained, up to the edges recorded from it.
    void explain_reference(PyObject *target, PyObject *source);

    void remove(PyObject *op);

    void clear() {
        count_ = 0;
        filter_ = 0;
    }

    // One bit per address class: most nodes a pass adds are rejected by one test.
    static uint64_t bit(PyObject *op) { return uint64_t{1} << ((reinterpret_cast<uintptr_t>(op) >> 4) & 63); }

private:

    void refilter();

    LiveStructure items_[kMax] = {};
    size_t count_ = 0;
    uint64_t filter_ = 0;
};

// Records the largest structures the pass found live in
// pass.live_structures: the topmost nodes that may be recorded
// (may_be_live_structure, live_structures.cpp), each with the edges into it
// from everything it reaches -- unless it reaches a node left
// unexpanded, or more than twice its subtree (too entangled to be worth the
// search). Runs after liveness is propagated, before anything is detached;
// reuses pass.stack and pass.deferred and rewrites pass.discoverer.
void record_live_structures(Pass &pass);

}  // namespace coextra::detail
