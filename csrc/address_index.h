// address_index.h -- AddressIndex: the heap graph's index from an object's
// address to its node, an open-addressing hash table hashed by page
// (page_local_hash.h).
//
// Owned by its HeapGraph (heap_graph.h), which holds the nodes: the index
// stores node numbers only and reads the graph's node array, which its
// callers pass in, to confirm a match and to rehash. Its slot array is a
// PodArray: no exceptions, no Python allocation (invariant 5 of
// docs/design.md).
#pragma once

#include "compat.h"
#include "graph_node.h"
#include "page_local_hash.h"
#include "pod_array.h"

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

class AddressIndex {
public:
    // Empties the index, keeping its memory (HeapGraph::reset).
    void clear() {
        slots_.clear();
        count_ = 0;
        mask_ = 0;
        shift_ = 64;
    }

    void release_memory() { slots_.release(); }

    // Sizes an empty index for about `expected` nodes (saves rehashing);
    // false when out of memory.
    bool expect(size_t expected) {
        size_t capacity = 256;
        while (!within_load(expected, capacity)) {
            capacity *= 2;
        }
        if (!slots_.assign_zeroed(capacity)) {
            return false;
        }
        set_capacity(capacity);
        return true;
    }

    // Brings op's first slot into the cache ahead of find(op).
    void prefetch(PyObject *op) const {
        if (slots_.size() != 0) {
            __builtin_prefetch(&slots_[slot_of(op)]);
        }
    }

    // Makes room for one more node (rehashing `nodes`, those not
    // NODE_BY_HOLDER, into a larger table when needed); false when out of
    // memory. Call before find() when an insert may follow: the slot find()
    // returns is one of this table.
    bool make_room(const PodArray<GraphNode> &nodes) {
        return within_load(count_ + 1, slots_.size()) || grow(nodes);
    }

    // The node of op, or kNoNode with *slot the empty slot where op goes.
    uint32_t find(PyObject *op, const PodArray<GraphNode> &nodes, size_t *slot) const {
        size_t i = slot_of(op);
        uint32_t tag = tag_of(op);
        for (;; i = (i + 1) & mask_) {
            const Slot &s = slots_[i];
            if (s.node_plus_one == 0) {
                break;
            }
            if (s.tag == tag && nodes[s.node_plus_one - 1].op == op) {
                return s.node_plus_one - 1;
            }
        }
        *slot = i;
        return kNoNode;
    }

    // Records `node` for op at the slot find() returned.
    void insert(size_t slot, PyObject *op, uint32_t node) {
        slots_[slot] = Slot{tag_of(op), node + 1};
        count_++;
    }

private:
    // The index holds at most three nodes per four slots. Its slots are
    // tagged, so a fuller index costs few node reads, and a smaller one
    // fewer fresh pages (its size is a power of two: between 3/8 and 3/4
    // full after expect()).
    static bool within_load(size_t count, size_t capacity) { return count * 4 <= capacity * 3; }

    // 8 bytes, half a pointer-keyed slot (the index is the largest array of a
    // pass). The tag (32 bits of the address) settles almost every comparison;
    // a matching tag is confirmed against the node's address.
    struct Slot {
        uint32_t tag;
        uint32_t node_plus_one;  // 0: empty, so a zeroed array is empty
    };

    static uint32_t tag_of(PyObject *op) {
        return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(op) >> 4);
    }

    size_t slot_of(PyObject *op) const { return page_local_slot(reinterpret_cast<uintptr_t>(op), shift_, mask_); }

    bool grow(const PodArray<GraphNode> &nodes) {
        size_t capacity = slots_.size() ? slots_.size() * 2 : 256;
        PodArray<Slot> fresh;
        if (!fresh.assign_zeroed(capacity)) {
            return false;
        }
        set_capacity(capacity);
        for (size_t n = 0; n < nodes.size(); n++) {
            if (nodes[n].flags & NODE_BY_HOLDER) {
                continue;
            }
            size_t i = slot_of(nodes[n].op);
            while (fresh[i].node_plus_one != 0) {
                i = (i + 1) & mask_;
            }
            fresh[i] = Slot{tag_of(nodes[n].op), static_cast<uint32_t>(n + 1)};
        }
        slots_.swap(fresh);
        return true;
    }

    void set_capacity(size_t capacity) {
        int bits = 0;
        while ((size_t{1} << bits) < capacity) {
            bits++;
        }
        mask_ = capacity - 1;
        shift_ = 64 - bits;
    }

    PodArray<Slot> slots_;
    size_t count_ = 0;  // nodes in slots_
    size_t mask_ = 0;
    int shift_ = 64;
};

}  // namespace coextra::detail
