// heap_graph.h -- the part of the heap one collector pass (or one explain())
// has explored: nodes, the edges between them, and the indexes that find them.
//
// Everything here is filled from tp_traverse callbacks, that is from C frames
// a C++ exception must not cross, and while no Python code may run
// (docs/design.md, invariant 5). So: plain malloc'd arrays that report allocation failure
// instead of throwing, borrowed PyObject pointers only, no Python allocation.
//
// The pointers stay valid for the whole analysis because nothing can free an
// object while it runs: no Python code runs and no reference is dropped.
#pragma once

#include "compat.h"
#include "ephemeron_map.h"
#include "holder.h"
#include "registry.h"
#include "system_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <type_traits>

namespace coextra::detail {

// A growable array of trivially copyable values; push() returns false when
// memory is exhausted (the array is then unchanged). Its block comes from
// system_memory.h, so that release() gives a large one back to the system.
template <typename T>
class PodArray {
    static_assert(std::is_trivially_copyable<T>::value, "PodArray holds plain values");

public:
    PodArray() = default;
    PodArray(const PodArray &) = delete;
    PodArray &operator=(const PodArray &) = delete;
    ~PodArray() { release(); }

    bool reserve(size_t wanted) {
        if (wanted <= capacity_) {
            return true;
        }
        size_t capacity = capacity_ ? capacity_ : 16;
        while (capacity < wanted) {
            capacity *= 2;
        }
        void *grown = system_memory::resize(data_, capacity_ * sizeof(T), capacity * sizeof(T));
        if (grown == nullptr) {
            return false;
        }
        data_ = static_cast<T *>(grown);
        capacity_ = capacity;
        return true;
    }
    bool push(const T &value) {
        if (size_ == capacity_ && !reserve(size_ + 1)) {
            return false;
        }
        data_[size_++] = value;
        return true;
    }
    // Makes the array n values whose every byte is `byte` (for the indexes).
    bool assign_bytes(size_t n, unsigned char byte) {
        if (!reserve(n)) {
            return false;
        }
        if (n != 0) {  // data_ may still be NULL, and memset(NULL, 0, 0) is undefined
            std::memset(static_cast<void *>(data_), byte, n * sizeof(T));
        }
        size_ = n;
        return true;
    }
    bool assign_zeroed(size_t n) { return assign_bytes(n, 0); }
    void swap(PodArray &other) {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(capacity_, other.capacity_);
    }
    T pop() { return data_[--size_]; }
    void clear() { size_ = 0; }
    // Gives the memory back (clear() keeps it for the next pass).
    void release() {
        system_memory::release(data_, capacity_ * sizeof(T));
        data_ = nullptr;
        size_ = capacity_ = 0;
    }
    T &operator[](size_t i) { return data_[i]; }
    const T &operator[](size_t i) const { return data_[i]; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

private:
    T *data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

enum NodeFlags : uint32_t {
    NODE_EXPANDED = 1,  // its references were visited and counted
    NODE_LIVE = 2,      // reachable from a root
    NODE_BY_HOLDER = 4, // indexed by its holder's registry slot, not in the address index
    NODE_DEFERRED = 8,  // a structure a recent pass found live: left unexpanded unless
                        // this pass's counts say it may have died (collector.cpp)
};

// A node's unexplained count has kCountBits bits, so that a node is 16 bytes:
// the node array is among the largest of a pass, and a large pass touches its
// pages fresh (see Pass in collector.cpp). A reference count above kMaxCount
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
    uint32_t first_edge;      // its latest out-edge (edges[]), kNone when it has none
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
    uint32_t next;  // the source's previous out-edge, kNone at the end
};

// Nodes in discovery order, their out-edges (explain() adds none), and two
// indexes from object to node:
//   - code objects with a holder (every seed of a pass, and most of its code
//     nodes) by their holder's registry slot, when expect() sized that index:
//     the holder is at hand (a seed is found from it, and expanding a code
//     object reads its holder anyway), and the array is small and filled in
//     registry order;
//   - every other object by address, in an open-addressing hash table.
// The address index then holds fewer nodes, and the commonest lookups of a
// pass (a seed, and a function's reference to its code) skip it: the index's
// cold slots are the largest cost of a pass once it outgrows the CPU caches
// (measured side by side in bench/bench_collector.py; figures in
// docs/collector.md).
class HeapGraph {
public:
    static constexpr uint32_t kNone = UINT32_MAX;

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
        slots_.clear();
        by_holder_.clear();
        table_count_ = 0;
        merged = 0;
        budget_exhausted = out_of_memory = false;
        mask_ = 0;
        shift_ = 64;
        limit_ = limit;
    }

    void release_memory() {
        nodes.release();
        edges.release();
        slots_.release();
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
        size_t capacity = 256;
        while (!within_load(expected, capacity)) {
            capacity *= 2;
        }
        if (!slots_.assign_zeroed(capacity) || !by_holder_.assign_bytes(holder_slots, 0xFF)) {
            return false;  // 0xFF bytes: every entry kNone
        }
        // Room for a few nodes and edges per expected index node, as a hint:
        // a large pass's arrays then start as mapped blocks, whose growth
        // touches no page twice (system_memory.h), instead of being copied
        // through every smaller size on the way. Untouched room costs no
        // memory; without it (the mapping refused) the arrays grow as they fill.
        (void)(nodes.reserve(expected * kNodesPerExpected) && edges.reserve(expected * kEdgesPerExpected));
        set_capacity(capacity);
        return true;
    }

    // Brings op's first index slot into the cache ahead of intern(op).
    void prefetch(PyObject *op) const {
        if (slots_.size() != 0) {
            __builtin_prefetch(&slots_[slot_of(op)]);
        }
    }

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
        if (!within_load(table_count_ + 1, slots_.size()) && !grow()) {
            out_of_memory = true;
            return kNone;
        }
        size_t i = slot_of(op);
        uint32_t tag = tag_of(op);
        for (;; i = (i + 1) & mask_) {
            const Slot &slot = slots_[i];
            if (slot.node_plus_one == 0) {
                break;
            }
            if (slot.tag == tag && nodes[slot.node_plus_one - 1].op == op) {
                return slot.node_plus_one - 1;
            }
        }
        uint32_t node = add_node(op, 0, added);
        if (node != kNone) {
            slots_[i] = Slot{tag, node + 1};
            table_count_++;
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

    // The address index holds at most three nodes per four slots. Its slots
    // are tagged, so a fuller index costs few node reads, and a smaller one
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

    // Page-local hashing: the 4 KiB page an object lives on picks a random
    // run of 256 slots (Fibonacci hashing of the page number), and its place
    // on the page (objects are 16-byte aligned) its slot in that run. A pass
    // meets objects roughly in the order they were allocated, so its lookups
    // stay within a few pages of the index instead of one random page each,
    // which matters once the index outgrows the caches and the TLB. Linear
    // probing absorbs the runs of different pages that overlap.
    size_t slot_of(PyObject *op) const {
        uintptr_t address = reinterpret_cast<uintptr_t>(op);
        uint64_t page = (address >> 12) * 0x9E3779B97F4A7C15ull;
        return (static_cast<size_t>(page >> shift_) + ((address >> 4) & 255)) & mask_;
    }

    bool grow() {
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
    size_t table_count_ = 0;        // nodes in slots_
    PodArray<uint32_t> by_holder_;  // registry slot - holder_base_ -> node (kNone: none)
    size_t holder_base_ = 0;
    size_t mask_ = 0;
    int shift_ = 64;
    size_t limit_;
    size_t max_edges_;
};

// True while some ephemeron map holds an entry: only then do keys have
// virtual edges to follow (one load per expanded object otherwise).
inline bool ephemeron_entries_exist() { return ephemeron_entry_count() != 0; }

// Whether op may be the key of an ephemeron entry: it has weak references.
inline bool may_be_ephemeron_key(PyObject *op) {
    return ephemeron_entries_exist() && compat::weakrefs_of(op) != nullptr;
}

// Whether op may become a node. Leaves that cannot hold references (str, int:
// not GC objects) and objects the collector always treats as live are never
// nodes, so they cost nothing: a reference they hold is simply unexplained on
// its target, which can only make the target live.
//   - code objects are nodes although they are not GC containers (the point);
//   - module objects and static types stay unexpanded (cheap, never garbage;
//     the exact type check only: PyModule_Check's subtype walk is a
//     measurable share of a pass, and an instance of a module subclass is
//     merely explored), except a module that may be an ephemeron key: a
//     module made at run time can be garbage kept by its own entry;
//   - immortal objects (3.12+) have meaningless reference counts;
//   - the Registry is never a node: its references to holders are already
//     counted as the virtual edges code -> holder. (An ephemeron map is a
//     node, which may be garbage or a key itself, but its references to its
//     entries are likewise the edges key -> entry: visit_referents skips them.)
inline bool is_node_candidate(PyObject *op) {
    if (PyCode_Check(op)) {
        return !compat::is_immortal(op);
    }
    if (!compat::is_gc_object(op) || Py_IS_TYPE(op, &RegistryType)) {
        return false;
    }
    if (PyModule_CheckExact(op) && !may_be_ephemeron_key(op)) {
        return false;
    }
    return !compat::is_immortal(op);
}

// Visits what a code object references for the collector: its co_consts
// (nested code lives there) and, when it has a holder h, the virtual edge to h.
inline void visit_code_referents(PyObject *code, Holder *h, visitproc visit, void *arg) {
    visit(compat::code_consts(code), arg);
    if (h != nullptr) {
        visit(reinterpret_cast<PyObject *>(h), arg);
    }
}

// Visits the virtual edges op -> each ephemeron entry op is the key of; only
// a load while no map holds an entry.
inline void visit_entry_edges(PyObject *op, visitproc visit_entry, void *arg) {
    if (ephemeron_entries_exist()) {
        ephemeron_visit_entries(op, visit_entry, arg);
    }
}

// Visits every reference op holds that the collector knows of: tp_traverse for
// GC objects but an ephemeron map (it references nothing but its entries),
// visit_code_referents for a code object, and the virtual edges to the
// ephemeron entries op is the key of (given to visit_entry). Returns the
// holder of a code object, else NULL.
inline Holder *visit_referents(PyObject *op, visitproc visit, void *arg, visitproc visit_entry) {
    Holder *h = nullptr;
    if (PyCode_Check(op)) {
        h = registry_holder_of(op);
        visit_code_referents(op, h, visit, arg);
    } else if (!Py_IS_TYPE(op, &EphemeronMapType)) {
        Py_TYPE(op)->tp_traverse(op, visit, arg);
    }
    visit_entry_edges(op, visit_entry, arg);
    return h;
}

inline Holder *visit_referents(PyObject *op, visitproc visit, void *arg) {
    return visit_referents(op, visit, arg, visit);
}

}  // namespace coextra::detail
