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
// has a reference from outside, and a later pass checks that from its own
// counts: X's references not explained by that pass's graph are the outside
// ones plus those from X's unexplored part, which is reached from X, so on
// the same heap they are at most `back_references`, the edges into X from
// everything X reached when it was recorded. So when X's unexplained count
// exceeds back_references, X is left unexpanded; otherwise it is expanded
// then and there, in the same pass. On a heap changed since the recording -- a new
// reference into X from its own part -- a dead X could pass for live: the
// set is emptied when a generation pass begins
// (collector_forget_live_structures), so the first pass to meet X from then
// on explores it again; the ones after it, until the next generation pass,
// stop at X.
struct LiveStructure {
    PyObject *op;        // compared only, never dereferenced: it may have died since
    PyTypeObject *type;  // compared only, with the type of the object found at op
    uint32_t back_references;
    uint32_t objects;    // explored in its subtree when recorded (which ones are kept)
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

    void remove(PyObject *op);

    void clear() {
        count_ = 0;
        filter_ = 0;
    }

private:
    // One bit per address class: most nodes a pass adds are rejected by one test.
    static uint64_t bit(PyObject *op) { return uint64_t{1} << ((reinterpret_cast<uintptr_t>(op) >> 4) & 63); }

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
