// collector.cpp -- one collector pass: explore, find roots, propagate, act.
#include "collector.h"

#include "ephemeron_map.h"
#include "heap_graph.h"
#include "holder.h"
#include "registry.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <pthread.h>
#include <vector>

namespace coextra::detail {

namespace {

// What a pass is for: it decides which holders seed it and whether the
// generations age after it (registry.h).
enum class PassKind {
    kAll,    // coextra.collect(): every holder; all survivors become old
    kSlice,  // a range of holders (automatic collection's passes); no ageing
};

// A code node with a holder outside the graph's holder index (a young pass
// reaching an older holder's code).
struct CodeWithHolder {
    uint32_t node;
    Holder *holder;  // borrowed: attached, owned by the registry (nothing runs during analysis)
};

// A virtual edge key -> entry: `entry` is live exactly when node `source` is
// (the key's node, or the node the key was explored as part of).
struct EphemeronEdge {
    uint32_t source;
    EphemeronEntry *entry;  // borrowed: in its map's table (nothing runs during analysis)
};

// A reference found by a traversal, not yet looked at: `child` is held by node
// `source` (directly, or through objects merged into it).
struct Pending {
    PyObject *child;  // borrowed: analysis runs no code (heap_graph.h)
    uint32_t source;
};

// Seeds are added a chunk at a time, each chunk explored before the next is
// added: a code object is then expanded soon after it was added, and so is
// what its cache leads to, while their cache lines are still in the CPU cache.
// Adding every seed first (plain breadth first) would read each code object
// twice from memory once the heap outgrows the caches. The order of
// exploration does not change the graph a pass builds, only (when the budget
// runs out) which part of it.
constexpr size_t kSeedChunk = 256;

// The codes of the current chunk of seeds, with their holders and nodes. A
// pass asks two things of nearly every seed: which node is this code (when a
// function's reference to it is found) and which is its holder (when it is
// traversed). co_extra answers both, but through the code's co_extra line
// and its extras array: two more lines per holder, cold once the heap
// outgrows the CPU caches. This table (12 KiB, cache resident) answers them
// for the current chunk; a code it does not have (an older chunk's, or no
// seed) is asked of co_extra.
// Each entry carries the chunk it was added in and entries of other chunks
// count as empty, so a new chunk clears nothing.
class ChunkSeeds {
public:
    struct Seed {
        PyObject *code;  // borrowed, like its holder: analysis runs no code (heap_graph.h)
        Holder *holder;  // attached, owned by the registry
        uint32_t node;
        uint32_t chunk;
    };

    void start_chunk() {
        if (++chunk_ == 0) {  // wrapped around: entries left from chunk 0 would look current
            std::memset(static_cast<void *>(slots_), 0, sizeof slots_);
            chunk_ = 1;
        }
    }

    // At most kSeedChunk adds per chunk, so half the slots stay empty and
    // every probe ends.
    void add(PyObject *code, Holder *holder, uint32_t node) {
        size_t i = slot_of(code);
        while (slots_[i].chunk == chunk_ && slots_[i].code != code) {
            i = (i + 1) & (kSlots - 1);
        }
        slots_[i] = Seed{code, holder, node, chunk_};
    }

    const Seed *find(PyObject *code) const {
        for (size_t i = slot_of(code);; i = (i + 1) & (kSlots - 1)) {
            const Seed &seed = slots_[i];
            if (seed.chunk != chunk_) {
                return nullptr;
            }
            if (seed.code == code) {
                return &seed;
            }
        }
    }

private:
    static constexpr int kBits = 9;
    static constexpr size_t kSlots = size_t{1} << kBits;
    static_assert(kSlots >= 2 * kSeedChunk, "the table must stay at most half full");

    static size_t slot_of(PyObject *code) {
        return static_cast<size_t>((reinterpret_cast<uintptr_t>(code) >> 4) * 0x9E3779B97F4A7C15ull >>
                                   (64 - kBits));
    }

    Seed slots_[kSlots] = {};
    uint32_t chunk_ = 1;  // the zeroed slots belong to chunk 0: empty
};

// Structures a pass found live, large ones, which automatic passes leave
// unexplored when they meet them again: a slice whose few holders reach a
// structure of many objects (a model every product shares) would otherwise
// explore all of it, each slice again.
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
    // a recorded structure's.
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
    void add(const LiveStructure &s) {
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

    void remove(PyObject *op) {
        for (size_t i = 0; i < count_; i++) {
            if (items_[i].op == op) {
                items_[i] = items_[--count_];
                refilter();
                return;
            }
        }
    }

    void clear() {
        count_ = 0;
        filter_ = 0;
    }

private:
    // One bit per address class: most nodes a pass adds are rejected by one test.
    static uint64_t bit(PyObject *op) { return uint64_t{1} << ((reinterpret_cast<uintptr_t>(op) >> 4) & 63); }

    void refilter() {
        filter_ = 0;
        for (size_t i = 0; i < count_; i++) {
            filter_ |= bit(items_[i].op);
        }
    }

    LiveStructure items_[kMax] = {};
    size_t count_ = 0;
    uint64_t filter_ = 0;
};

// A pass's scratch memory. Every array is touched fresh by a full pass (their
// memory goes back when it ends), and every fresh page faults: hence the
// compact nodes, edges and indexes, and the room made up front (HeapGraph::expect;
// docs/collector.md).
struct Pass {
    HeapGraph graph{0};
    PodArray<CodeWithHolder> other_cached_codes;  // code nodes whose holder is not indexed
    PodArray<EphemeronEdge> ephemeron_edges;      // every key -> entry edge followed
    PodArray<Pending> pending;   // references queued by the traversal callback
    PodArray<Pending> merged;    // single-reference objects to explore as part of `source`
    PodArray<uint32_t> stack;    // liveness propagation
    // Per node, the node whose references led to it (kNone for a seed),
    // which is always an earlier node; record_live_structures turns it into
    // each node's recorded structure.
    PodArray<uint32_t> discoverer;
    PodArray<uint32_t> merged_into;  // per node, the objects explored as part of it
    PodArray<uint32_t> subtree;   // record_live_structures
    PodArray<uint32_t> deferred;  // nodes left unexpanded as live structures
    ChunkSeeds seeds;            // the current chunk of seeds (explore)
    uint32_t current = 0;        // the node whose references are being queued
    size_t next_node = 0;        // the next node to expand (explore)
    size_t next_seed = 0;        // the next holder slot to seed (explore)
    bool defer = false;          // whether live structures are left unexplored
    LiveStructures live_structures;  // kept from pass to pass

    void reset(size_t limit) {
        graph.reset(limit);
        seeds.start_chunk();  // the previous pass's last chunk names nodes of its graph
        other_cached_codes.clear();
        ephemeron_edges.clear();
        pending.clear();
        merged.clear();
        stack.clear();
        discoverer.clear();
        merged_into.clear();
        deferred.clear();
    }

    void release_memory() {
        graph.release_memory();
        other_cached_codes.release();
        ephemeron_edges.release();
        pending.release();
        merged.release();
        stack.release();
        discoverer.release();
        merged_into.release();
        subtree.release();
        deferred.release();
    }
};

// With Scratch::kReleaseLarge, a pass seeded with at most this many holders
// and map keys (every young pass) keeps its scratch memory for the next one;
// a larger one -- such as a map scan slice or a generation slice seeding
// many map entries -- gives it back.
constexpr size_t kRetainedSeeds = 2048;

// The __dict__ of every module in sys.modules, sorted by address: a pass never
// expands them (a module's globals are live while it is imported, and large).
// Rebuilt before every collect(), when automatic collection asks
// (collector_relist_module_dicts) and whenever sys.modules changed size, never
// during an analysis. A stale entry is harmless: a dict wrongly taken for a
// module's is only treated as live, and a missed one is only explored.
struct ModuleDicts {
    std::vector<PyObject *> sorted;  // borrowed; compared by address only, never dereferenced
    Py_ssize_t modules_seen = -1;    // len(sys.modules) when built
    // The two latest elements of `sorted` found (or NULL), compared only. The
    // functions of one module share its globals and, since 3.10, the builtins
    // dict: a function's two lookups alternate between them, so one entry
    // missed every time: a binary search per function.
    PyObject *recent[2] = {nullptr, nullptr};

    bool contains(PyObject *dict) {
        if (dict == recent[0] || dict == recent[1]) {
            return true;
        }
        if (!std::binary_search(sorted.begin(), sorted.end(), dict)) {
            return false;
        }
        recent[1] = recent[0];
        recent[0] = dict;
        return true;
    }

    void forget_recent() { recent[0] = recent[1] = nullptr; }

    // false when out of memory (nothing is then pruned: still sound).
    bool refresh(bool force) {
        PyObject *modules = PyImport_GetModuleDict();  // borrowed, owned by the interpreter
        if (modules == nullptr || !PyDict_Check(modules)) {
            sorted.clear();
            forget_recent();
            return true;
        }
        if (!force && PyDict_GET_SIZE(modules) == modules_seen) {
            return true;
        }
        sorted.clear();
        modules_seen = -1;
        forget_recent();
        try {
            Py_ssize_t pos = 0;
            PyObject *key, *module;
            while (PyDict_Next(modules, &pos, &key, &module)) {
                if (PyModule_Check(module)) {
                    sorted.push_back(PyModule_GetDict(module));  // borrowed, never NULL
                }
            }
            std::sort(sorted.begin(), sorted.end());
        } catch (const std::bad_alloc &) {
            sorted.clear();
            return false;
        }
        modules_seen = PyDict_GET_SIZE(modules);
        return true;
    }
};

}  // namespace

// What passes reuse: the arrays of the previous young pass (only one pass runs
// at a time; a large pass gives its memory back when it ends, see run_pass)
// and the module dicts.
struct CollectorScratch {
    Pass pass;
    ModuleDicts module_dicts;
};

namespace {

// This concept's state (collector.h): per process, touched with the GIL held.
CollectorState state;

// The traversal callback: queues the reference without touching the child, so
// that process_pending can look at a whole batch with its memory accesses
// overlapping (prefetched) instead of stalling on each in turn.
int queue_child(PyObject *child, void *arg) {
    Pass &pass = *static_cast<Pass *>(arg);
    if (child != nullptr && !pass.pending.push(Pending{child, pass.current})) {
        pass.graph.out_of_memory = true;
        return -1;
    }
    return 0;
}

// The visitor of key -> entry edges: remembers the edge, then queues it.
int queue_entry(PyObject *entry, void *arg) {
    Pass &pass = *static_cast<Pass *>(arg);
    if (!pass.ephemeron_edges.push(EphemeronEdge{pass.current, reinterpret_cast<EphemeronEntry *>(entry)})) {
        pass.graph.out_of_memory = true;
        return -1;
    }
    return queue_child(entry, arg);
}

// Whether a node candidate referenced by the node being expanded is explored
// as part of that node instead of as a node of its own (process_pending).
bool explored_as_part(PyObject *child) {
    return Py_REFCNT(child) == 1 && !PyCode_Check(child) && !may_be_ephemeron_key(child);
}

// Explores `child` as part of the node being expanded, its references given
// to `visit`, when explored_as_part() says so (true); else false, and it is
// left to the queue.
bool explore_as_part(Pass &pass, PyObject *child, visitproc visit) {
    if (child == nullptr || !is_node_candidate(child) || !explored_as_part(child)) {
        return false;
    }
    if (pass.graph.charge_merged()) {  // past the budget it stays unexplored: live
        pass.merged_into[pass.current]++;
        visit_referents(child, visit, &pass, queue_entry);
    }
    return true;
}

// The visitor of a seed's holder: its entries (see traverse_seed).
int explore_entry(PyObject *entry, void *arg) {
    Pass &pass = *static_cast<Pass *>(arg);
    if (explore_as_part(pass, entry, queue_child)) {
        return pass.graph.out_of_memory ? -1 : 0;
    }
    return queue_child(entry, arg);
}

// How far ahead of its use a child (or its index slot) is prefetched. Looking
// at a child is cheap next to a miss to memory, so the prefetch must be
// issued many children ahead to cover such a miss once the heap no longer
// fits the caches; much farther, and a batch asks for more lines than the cache keeps
// until they are used. The distance was chosen by bench/bench_collector.py
// (docs/collector.md).
constexpr size_t kPrefetchDistance = 64;

// Records who discovered a new node, and marks it deferred when it is a
// live structure (LiveStructures). False when out of memory.
bool note_new_node(Pass &pass, uint32_t node, uint32_t discoverer) {
    if (!pass.discoverer.push(discoverer) || !pass.merged_into.push(0)) {
        return false;
    }
    GraphNode &n = pass.graph.nodes[node];
    if (pass.defer && !pass.live_structures.empty() && !(n.flags & NODE_BY_HOLDER) &&
        pass.live_structures.find(n.op) != nullptr) {
        n.flags |= NODE_DEFERRED;
        return pass.deferred.push(node);
    }
    return true;
}

// Turns queued references into edges.
//
// A child whose reference count is 1 has no referrer but the one that queued
// it: it is live exactly when that node is, so it needs no node of its own. It
// is explored as part of the node (its references become the node's edges),
// which spares the index lookups that dominate a pass: entries, most products
// and their private lists, tuples and dicts are such objects. Code objects
// and ephemeron keys are always nodes: they are what a pass decides about,
// and a pass may have made one a node already (a seed), which a second
// exploration as part of another node would count twice.
void process_pending(Pass &pass) {
    ModuleDicts &module_dicts = state.scratch->module_dicts;
    HeapGraph &g = pass.graph;
    PodArray<Pending> &pending = pass.pending;
    size_t n = pending.size();
    for (size_t i = 0; i < n && i < kPrefetchDistance; i++) {
        __builtin_prefetch(pending[i].child);
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + kPrefetchDistance < n) {
            __builtin_prefetch(pending[i + kPrefetchDistance].child);
        }
        Pending p = pending[i];
        if (!is_node_candidate(p.child)) {
            continue;
        }
        if (explored_as_part(p.child)) {
            // Past the budget it stays unexplored, so what it references is live.
            if (g.charge_merged()) {
                if (!pass.merged.push(p)) {
                    g.out_of_memory = true;
                    return;
                }
                pass.merged_into[p.source]++;
            }
            continue;
        }
        if (PyDict_CheckExact(p.child) && module_dicts.contains(p.child)) {
            continue;  // a module's globals: live, never a node
        }
        pending[kept++] = p;
    }
    for (size_t i = 0; i < kept && i < kPrefetchDistance; i++) {
        g.prefetch(pending[i].child);
    }
    for (size_t i = 0; i < kept; i++) {
        if (i + kPrefetchDistance < kept) {
            g.prefetch(pending[i + kPrefetchDistance].child);
        }
        PyObject *child = pending[i].child;
        const ChunkSeeds::Seed *seed = PyCode_Check(child) ? pass.seeds.find(child) : nullptr;
        bool added = false;
        uint32_t node = seed != nullptr ? seed->node : g.intern(child, &added);
        if (node == HeapGraph::kNone) {
            if (g.out_of_memory) {
                return;
            }
            continue;  // past the budget: not a node, so live
        }
        if (added && !note_new_node(pass, node, pending[i].source)) {
            g.out_of_memory = true;
            return;
        }
        if (!g.add_edge(pending[i].source, node)) {
            g.out_of_memory = true;
            return;
        }
    }
    pending.clear();
    for (size_t i = 0; i < pass.merged.size() && !g.out_of_memory; i++) {
        pass.current = pass.merged[i].source;
        visit_referents(pass.merged[i].child, queue_child, &pass, queue_entry);
    }
    pass.merged.clear();
}

// Adds the codes of up to kSeedChunk holders from holders[*next_seed] on
// (before `end`), and advances *next_seed (to `end` once the budget is
// spent). False when out of memory.
bool add_seeds(Pass &pass, const std::vector<Holder *> &holders, size_t *next_seed, size_t end) {
    HeapGraph &g = pass.graph;
    size_t chunk_end = std::min(*next_seed + kSeedChunk, end);
    pass.seeds.start_chunk();
    for (size_t i = *next_seed; i < chunk_end; i++) {
        Holder *h = holders[i];  // attached: h->code is valid
        // Not is_node_candidate(h->code): it would stall on the code object,
        // which explore() reads later with a prefetch, and there leaves an
        // immortal code unexpanded (a root, so live) -- as if skipped here.
        bool added = false;
        uint32_t node = g.intern_code_of(h, &added);
        if (node == HeapGraph::kNone) {
            if (g.out_of_memory) {
                return false;
            }
            *next_seed = end;  // budget spent: the rest stay unexplored
            return true;
        }
        if (added && !note_new_node(pass, node, HeapGraph::kNone)) {
            return false;
        }
        pass.seeds.add(h->code, h, node);
        if (h->size != 0) {
            __builtin_prefetch(holder_items(h)[0]);  // for traverse_seed
        }
    }
    *next_seed = chunk_end;
    return true;
}

// Where seeding from the ephemeron maps goes on: the maps of
// ephemeron_maps() not finished, from the last down (the current one is
// maps[maps_left - 1]; MapScanCursor says why down), and a position of its
// table (MapSeeds::kAll) or an index of its generations' seeds
// (MapSeeds::kGenerations).
struct MapCursor {
    MapSeeds seeds = MapSeeds::kNo;
    size_t maps_left = 0;
    size_t slot = 0;
    size_t positions_left = SIZE_MAX;  // what a slice of a map scan may still visit
};

bool more_map_seeds(const MapCursor &cursor) { return cursor.maps_left != 0 && cursor.positions_left != 0; }

// Position `slot` of m's table (kAll, or kGenerations when a generation is
// the whole map) or its generations' seed `slot` (kGenerations): the key to
// seed, or NULL when there is none. Past the end: false.
bool map_seed_key(const EphemeronMap *m, MapSeeds seeds, size_t slot, PyObject **key) {
    if (seeds == MapSeeds::kGenerations && !ephemeron_generation_whole(m)) {
        if (slot >= ephemeron_generation_seeds(m)) {
            return false;
        }
        *key = ephemeron_generation_key(m, slot);
        return true;
    }
    return ephemeron_position_key(m, slot, key);
}

// Adds the keys of up to kSeedChunk ephemeron entries from *cursor on
// (visiting at most cursor->positions_left positions) and advances it; sets it past
// the last map once every key is added or the budget is spent. False when
// out of memory.
bool add_map_seeds(Pass &pass, MapCursor *cursor) {
    HeapGraph &g = pass.graph;
    const std::vector<EphemeronMap *> &maps = ephemeron_maps();
    size_t added = 0;
    while (added < kSeedChunk && more_map_seeds(*cursor)) {
        PyObject *key = nullptr;
        if (!map_seed_key(maps[cursor->maps_left - 1], cursor->seeds, cursor->slot, &key)) {
            cursor->maps_left--;
            cursor->slot = 0;
            continue;
        }
        cursor->slot++;
        cursor->positions_left--;
        if (key == nullptr || !is_node_candidate(key)) {
            continue;  // a key that is never a node is live: so is its entry
        }
        bool fresh = false;
        uint32_t node = g.intern(key, &fresh);
        if (node == HeapGraph::kNone) {
            if (g.out_of_memory) {
                return false;
            }
            cursor->maps_left = 0;  // budget spent: the rest stay unexplored
            return true;
        }
        if (fresh && !note_new_node(pass, node, HeapGraph::kNone)) {
            return false;
        }
        added++;
    }
    return true;
}

// A node's object is prefetched this many nodes before it is traversed: the
// lines a traversal reads first (a function's fields span three; a seed's code
// object has not been read at all yet).
constexpr size_t kNodePrefetch = 16;

void prefetch_for_traversal(const GraphNode &node) {
    const char *op = reinterpret_cast<const char *>(node.op);
    __builtin_prefetch(op);
    __builtin_prefetch(op + 64);
    __builtin_prefetch(op + 128);
}

// Queues what a seed's code references, as visit_referents does, but
// explores its holder and the holder's entries at once when they are
// explored as part of the code's node, as they nearly always are (the
// registry's reference is the virtual edge, and an entry belongs to its
// holder alone): that saves two rounds through the queue per seed, whose
// lines add_seeds already read (the holder) or prefetched (its first entry).
// The graph is the one process_pending would have built.
void traverse_seed(Pass &pass, PyObject *code, Holder *h) {
    queue_child(compat::code_consts(code), &pass);
    if (!explore_as_part(pass, reinterpret_cast<PyObject *>(h), explore_entry)) {
        queue_child(reinterpret_cast<PyObject *>(h), &pass);
    }
    visit_entry_edges(code, queue_entry, &pass);
}

// Queues the references of `node` (pass.current), and for a code object
// returns its holder (NULL if none). A seed's holder comes from pass.seeds.
Holder *traverse_node(Pass &pass, const GraphNode &node) {
    if (node.flags & NODE_BY_HOLDER) {
        if (const ChunkSeeds::Seed *seed = pass.seeds.find(node.op)) {
            traverse_seed(pass, node.op, seed->holder);
            return seed->holder;
        }
    }
    return visit_referents(node.op, queue_child, &pass, queue_entry);
}

// Readies a node of the holder index for its traversal (see GraphNode's
// `unexplained`); false for an immortal code, which stays unexpanded.
bool ready_holder_node(GraphNode &node) {
    if (compat::is_immortal(node.op)) {
        return false;
    }
    node.unexplained = saturated_count(Py_REFCNT(node.op));
    return true;
}

// Explores from the codes of holders[pass.next_seed, end), then from the
// keys of the ephemeron entries `map_cursor` says: nodes are traversed in
// order from pass.next_node, their references queued, and the queue
// processed in batches (which adds the nodes traversed next); a new chunk of
// seeds once all is explored. Deferred nodes stay unexpanded.
constexpr size_t kBatch = 512;

bool explore(Pass &pass, const std::vector<Holder *> &holders, size_t end, MapCursor &map_cursor) {
    HeapGraph &g = pass.graph;
    size_t &next = pass.next_node;
    size_t &next_seed = pass.next_seed;
    for (;;) {
        while (next < g.nodes.size() && pass.pending.size() < kBatch && !g.out_of_memory) {
            if (next + kNodePrefetch < g.nodes.size()) {
                prefetch_for_traversal(g.nodes[next + kNodePrefetch]);
            }
            if ((g.nodes[next].flags & (NODE_BY_HOLDER | NODE_DEFERRED)) &&
                ((g.nodes[next].flags & NODE_DEFERRED) || !ready_holder_node(g.nodes[next]))) {
                next++;
                continue;
            }
            pass.current = static_cast<uint32_t>(next);
            Holder *h = traverse_node(pass, g.nodes[next]);
            if (h != nullptr && !(g.nodes[next].flags & NODE_BY_HOLDER) &&
                !pass.other_cached_codes.push(CodeWithHolder{pass.current, h})) {
                return false;
            }
            g.nodes[next].flags |= NODE_EXPANDED;
            next++;
        }
        if (g.out_of_memory) {
            return false;
        }
        if (!pass.pending.empty()) {
            process_pending(pass);
        } else if (next >= g.nodes.size()) {
            if (next_seed < end) {
                if (!add_seeds(pass, holders, &next_seed, end)) {
                    return false;
                }
            } else if (more_map_seeds(map_cursor)) {
                if (!add_map_seeds(pass, &map_cursor)) {
                    return false;
                }
            } else {
                break;
            }
        }
    }
    return true;
}

// Every edge from `*counted` on is a reference from an explored node: it is
// not an outside one.
void count_internal_references(HeapGraph &g, size_t *counted) {
    for (size_t e = *counted; e < g.edges.size(); e++) {
        g.nodes[g.edges[e].target].unexplained--;
    }
    *counted = g.edges.size();
}

// Explores (explore), then settles the deferred nodes (LiveStructures): one
// whose references the graph leaves unexplained number no more than those
// its unexplored part may hold may have died, so it is expanded now, and
// exploration goes on from it -- which can explain references of other
// deferred nodes, so all are looked at again until none is expanded. Counts
// the internal references on the way. False when out of memory.
bool explore_and_count(Pass &pass, const std::vector<Holder *> &holders, size_t end, MapCursor &map_cursor) {
    HeapGraph &g = pass.graph;
    size_t counted = 0;
    for (;;) {
        if (!explore(pass, holders, end, map_cursor)) {
            return false;
        }
        count_internal_references(g, &counted);
        bool expanded = false;
        for (size_t i = 0; i < pass.deferred.size(); i++) {
            uint32_t d = pass.deferred[i];
            GraphNode &node = g.nodes[d];
            if (!(node.flags & NODE_DEFERRED)) {
                continue;
            }
            const LiveStructure *s = pass.live_structures.find(node.op);
            if (s != nullptr && node.unexplained > static_cast<int32_t>(s->back_references)) {
                continue;  // live as when recorded: stays unexplored
            }
            pass.live_structures.remove(node.op);  // this pass records it again if still live
            node.flags &= ~NODE_DEFERRED;
            pass.current = d;
            traverse_node(pass, node);  // not a code object (never recorded)
            node.flags |= NODE_EXPANDED;
            expanded = true;
        }
        if (!expanded) {
            return true;
        }
    }
}

// Roots are nodes referenced from outside the graph or never expanded; every
// node reachable from a root, along real and virtual edges, is live. The
// internal references are counted already (explore_and_count).
bool propagate_liveness(HeapGraph &g, PodArray<uint32_t> &stack) {
    // Each root is drained before the next is looked at, so the stack holds
    // one search's frontier, not every root at once.
    for (size_t i = 0; i < g.nodes.size(); i++) {
        GraphNode &root = g.nodes[i];
        if ((root.flags & NODE_LIVE) || (root.unexplained <= 0 && (root.flags & NODE_EXPANDED))) {
            continue;
        }
        root.flags |= NODE_LIVE;
        if (!stack.push(static_cast<uint32_t>(i))) {
            return false;
        }
        while (!stack.empty()) {
            uint32_t node = stack.pop();
            for (uint32_t e = g.nodes[node].first_edge; e != HeapGraph::kNone; e = g.edges[e].next) {
                uint32_t target = g.edges[e].target;
                if (!(g.nodes[target].flags & NODE_LIVE)) {
                    g.nodes[target].flags |= NODE_LIVE;
                    if (!stack.push(target)) {
                        return false;
                    }
                }
            }
        }
    }
    return true;
}

// Whether node i of a finished analysis may be recorded as a live structure:
// expanded, referenced from outside the graph, not a code object (what
// passes decide about), with at least kLiveStructureObjects objects explored
// in its subtree.
bool may_be_live_structure(const GraphNode &node, uint32_t subtree) {
    return subtree >= kLiveStructureObjects && (node.flags & NODE_EXPANDED) && node.unexplained > 0 &&
           !(node.flags & NODE_BY_HOLDER) && !PyCode_Check(node.op);
}

// Records the largest structures the pass found live (LiveStructures): the
// topmost nodes that may_be_live_structure, each with the edges into it
// from everything it reaches -- unless it reaches a node left unexpanded,
// or more than twice its subtree (too entangled to be worth the search). A node's subtree: itself, the nodes it discovered, theirs,
// and so on, with the objects explored as part of each (every node was
// discovered by an earlier one, so one backward sweep sums them). Runs after propagate_liveness, before anything is detached.
void record_live_structures(Pass &pass) {
    const HeapGraph &g = pass.graph;
    size_t n = g.nodes.size();
    if (g.explored() < kLiveStructureObjects || g.budget_exhausted || pass.discoverer.size() != n ||
        !pass.subtree.assign_bytes(n, 0)) {
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
        uint32_t back_references = 0;
        size_t reached = 0;
        size_t limit = std::min(2 * static_cast<size_t>(subtree[x]) + 64, work_left);
        bool known = true;  // every node it reaches expanded, and not too many
        PodArray<uint32_t> &stack = pass.deferred;
        stack.clear();
        structure_of[x] = static_cast<uint32_t>(r);
        if (!stack.push(x)) {
            return;
        }
        while (known && !stack.empty()) {
            uint32_t node = stack.pop();
            if (!(g.nodes[node].flags & NODE_EXPANDED) || ++reached > limit) {
                known = false;
                break;
            }
            for (uint32_t e = g.nodes[node].first_edge; e != HeapGraph::kNone; e = g.edges[e].next) {
                uint32_t target = g.edges[e].target;
                back_references += target == x;
                if (structure_of[target] != r) {
                    structure_of[target] = static_cast<uint32_t>(r);
                    if (!stack.push(target)) {
                        return;
                    }
                }
            }
        }
        work_left -= std::min(work_left, reached);
        if (known) {
            PyObject *op = g.nodes[x].op;
            pass.live_structures.add(LiveStructure{op, Py_TYPE(op), back_references, subtree[x]});
        }
    }
}

// Detaches the holders of unreachable codes and removes the ephemeron entries
// of unreachable keys. First every one of them is detached while we hold a
// strong reference to it, so no detach can free anything and no Python code
// runs until all decisions are carried out; then our references are dropped,
// which frees entries and products and may run arbitrary code (which may
// attach, detach, change a map or collect: all of that is safe).
struct Garbage {
    Py_ssize_t holders = 0;  // detached
    Py_ssize_t entries = 0;  // map entries removed
};
// The garbage found, or -1 holders with MemoryError.
Garbage detach_garbage(Pass &pass, const std::vector<Holder *> &holders) {
    const HeapGraph &g = pass.graph;
    PodArray<Holder *> garbage;
    // An entry, and once it is removed the value it held: both are dropped last.
    struct RemovedEntry {
        EphemeronEntry *entry;
        PyObject *value;
    };
    PodArray<RemovedEntry> garbage_entries;
    bool ok = true;
    // Every code node in the holder index has a holder; an unexpanded node is
    // a root, so not being live is the whole test.
    g.for_each_holder_node([&](size_t slot, uint32_t node) {
        if (ok && !(g.nodes[node].flags & NODE_LIVE)) {
            ok = garbage.push(holders[slot]);  // the registry is unchanged since the analysis
        }
    });
    for (size_t i = 0; ok && i < pass.other_cached_codes.size(); i++) {
        const CodeWithHolder &c = pass.other_cached_codes[i];
        if (!(g.nodes[c.node].flags & NODE_LIVE)) {
            ok = garbage.push(c.holder);
        }
    }
    for (size_t i = 0; ok && i < pass.ephemeron_edges.size(); i++) {
        const EphemeronEdge &edge = pass.ephemeron_edges[i];
        if (!(g.nodes[edge.source].flags & NODE_LIVE)) {
            ok = garbage_entries.push(RemovedEntry{edge.entry, nullptr});
        }
    }
    if (!ok) {
        PyErr_NoMemory();
        return Garbage{-1, 0};
    }
    // In address order, as a map frees its entries (ephemeron_map.cpp): the
    // order they were found in follows the maps' hashed tables.
    if (garbage_entries.size() > 1) {
        std::sort(&garbage_entries[0], &garbage_entries[0] + garbage_entries.size(),
                  [](const RemovedEntry &a, const RemovedEntry &b) { return a.entry < b.entry; });
    }
    for (size_t i = 0; i < garbage.size(); i++) {
        Py_INCREF(garbage[i]);
    }
    for (size_t i = 0; i < garbage_entries.size(); i++) {
        Py_INCREF(garbage_entries[i].entry);
    }
    Garbage found;
    for (size_t i = 0; i < garbage.size(); i++) {
        found.holders += registry_detach(garbage[i]);
    }
    for (size_t i = 0; i < garbage_entries.size(); i++) {
        garbage_entries[i].value = ephemeron_detach(garbage_entries[i].entry);
        found.entries += garbage_entries[i].value != nullptr;
    }
    for (size_t i = 0; i < garbage.size(); i++) {
        Py_DECREF(garbage[i]);
    }
    for (size_t i = 0; i < garbage_entries.size(); i++) {
        Py_DECREF(garbage_entries[i].entry);
        Py_XDECREF(garbage_entries[i].value);
    }
    return found;
}

// Where a slice of a map scan begins: where the previous one ended; at the
// first position of that map's table when another map came to its index;
// at the same share of the table when the table squeezed its holes out
// meanwhile (MapScanCursor).
MapCursor resume_map_scan(const MapScanCursor &scan, size_t positions) {
    const std::vector<EphemeronMap *> &maps = ephemeron_maps();
    MapCursor cursor{MapSeeds::kAll, std::min(scan.maps_left, maps.size()), scan.position, positions};
    if (cursor.maps_left != 0) {
        const EphemeronMap *m = maps[cursor.maps_left - 1];
        const EntryTable &t = m->table;
        if (cursor.maps_left != scan.maps_left || m != scan.map) {
            cursor.slot = 0;  // another map came to this index
        } else if (t.end() != scan.end + (t.insertions() - scan.insertions)) {
            // Only inserts append positions; any other change of end()
            // squeezed holes out, moving entries down. An entry moved across
            // the cursor is seen twice or waits for the next scan; starting
            // over instead would never end a scan of a table that squeezes
            // between most slices.
            cursor.slot = scan.end == 0 ? 0 : cursor.slot * t.end() / scan.end;
        }
    }
    return cursor;
}

void save_map_scan(const MapCursor &cursor, size_t positions, MapScanCursor *scan) {
    *scan = MapScanCursor{cursor.maps_left, cursor.slot, nullptr, 0, 0, positions - cursor.positions_left};
    if (cursor.maps_left != 0) {
        const EphemeronMap *m = ephemeron_maps()[cursor.maps_left - 1];
        scan->map = m;
        scan->end = m->table.end();
        scan->insertions = m->table.insertions();
    }
}

// One pass seeded with the codes of registry->holders[first, end) and the
// ephemeron keys `maps` says -- or, for a slice of a map scan (`scan` not
// NULL), with the keys of the next `scan_positions` table positions from *scan on
// (which it advances) -- then the generations aged as `kind` says. -1 with
// an exception.
Py_ssize_t run_pass(PassKind kind, MapSeeds maps, size_t first, size_t end, size_t node_budget,
                    Scratch scratch, MapScanCursor *scan = nullptr, size_t scan_positions = 0) {
    if (state.running) {
        return 0;
    }
    Registry *r = registry_get();
    if (r == nullptr) {
        return -1;
    }
    if (state.scratch == nullptr) {
        state.scratch = new (std::nothrow) CollectorScratch();
        if (state.scratch == nullptr) {
            PyErr_NoMemory();
            return -1;
        }
    }
    auto started = std::chrono::steady_clock::now();
    state.running = true;
    state.running_thread = pthread_self();
    end = std::min(end, r->holders.size());
    first = std::min(first, end);

    Pass &pass = state.scratch->pass;
    pass.reset(node_budget);
    // About one node in the address index per seed holder: its function
    // (holder, entry and a private product are merged into the code's node,
    // which the holder index holds).
    size_t seeds = end - first;
    MapCursor map_cursor{maps, ephemeron_maps().size(), 0, SIZE_MAX};
    if (scan != nullptr) {
        map_cursor = resume_map_scan(*scan, scan_positions);
        seeds += std::min(scan_positions, ephemeron_entry_count());
    } else if (maps == MapSeeds::kAll) {
        seeds += ephemeron_entry_count();
    } else if (maps == MapSeeds::kGenerations) {
        seeds += ephemeron_listed_count();
    } else {
        map_cursor.maps_left = 0;
    }
    bool large = kind != PassKind::kSlice || seeds > kRetainedSeeds;
    bool release = scratch == Scratch::kRelease || (large && scratch == Scratch::kReleaseLarge);
    state.scratch->module_dicts.refresh(/*force=*/kind == PassKind::kAll || state.relist_module_dicts);
    state.relist_module_dicts = false;
    bool ok = pass.graph.expect(seeds < node_budget ? seeds : node_budget, first, end);
    // Analysis: from here to detach_garbage nothing runs Python code, nothing
    // allocates a Python object, and no reference count changes.
    pass.next_node = 0;
    pass.next_seed = first;
    pass.defer = kind == PassKind::kSlice;  // collect() explores everything
    ok = ok && explore_and_count(pass, r->holders, end, map_cursor) && propagate_liveness(pass.graph, pass.stack);
    if (ok) {
        record_live_structures(pass);
    }
    if (scan != nullptr) {
        save_map_scan(map_cursor, scan_positions, scan);  // before detaching, which may free maps
    }
    Garbage found{-1, 0};
    if (ok) {
        // The survivors are known: age them now, so that holders attached by
        // code run while detaching start young. Ageing moves only the
        // generations' bounds, not the holders detach_garbage finds by slot.
        if (kind == PassKind::kAll) {
            generations_all_old();
        }
        found = detach_garbage(pass, r->holders);
    } else {
        PyErr_NoMemory();
    }

    bool automatic = kind != PassKind::kAll;
    state.stats.collections++;
    if (pass.graph.budget_exhausted) {
        state.stats.budget_exhausted++;
    }
    // Holders and map entries are counted apart: each kind's figures, and
    // automatic collection's policy, are about that kind alone.
    uint64_t holders = found.holders > 0 ? static_cast<uint64_t>(found.holders) : 0;
    uint64_t entries = static_cast<uint64_t>(found.entries);
    state.stats.detached_by_collector += holders;
    state.stats.entries_removed_by_collector += entries;
    state.stats.last_nodes = pass.graph.explored();
    // The arrays of a pass over many holders are sized for all of them;
    // keeping them would add to what every holder costs (bench/bench_memory.py).
    // Young passes are small and frequent: they keep theirs, and so does a
    // slice that another slice follows at once (Scratch::kKeep).
    if (release) {
        pass.release_memory();  // the large blocks go back to the system (system_memory.h)
    }
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - started;
    state.stats.last_seconds = elapsed.count();
    if (automatic) {
        state.stats.auto_collections++;
        state.stats.auto_seconds += elapsed.count();
        state.stats.auto_detached += holders;
        state.stats.auto_entries_removed += entries;
        state.stats.auto_max_pause = std::max(state.stats.auto_max_pause, elapsed.count());
    }
    if (maps == MapSeeds::kAll && ok && scan == nullptr) {
        state.map_scans.record(elapsed.count());
    }
    Registry *still = registry_get();
    if (still == nullptr) {
        PyErr_Clear();  // torn down by code run while detaching: nothing to remember
    } else {
        state.attached_mark = still->attached_total;
    }
    state.running = false;
    return found.holders < 0 ? -1 : found.holders + found.entries;
}

}  // namespace

const CollectorStats &collector_stats() { return state.stats; }

CollectorState &collector_state() { return state; }

void MapScans::record(double duration) {
    seconds = duration;
    ended = Clock::now();
    scans++;
}

Py_ssize_t collector_collect_all() {
    return run_pass(PassKind::kAll, MapSeeds::kAll, 0, SIZE_MAX, static_cast<size_t>(state.budget),
                    Scratch::kReleaseLarge);
}

Py_ssize_t collector_collect_slice(size_t first, size_t end, Py_ssize_t node_budget, MapSeeds maps,
                                   Scratch scratch) {
    Py_ssize_t budget = std::max<Py_ssize_t>(1, std::min(node_budget, state.budget));
    return run_pass(PassKind::kSlice, maps, first, end, static_cast<size_t>(budget), scratch);
}

Py_ssize_t collector_collect_map_slice(MapScanCursor *cursor, size_t positions, Scratch scratch) {
    return run_pass(PassKind::kSlice, MapSeeds::kAll, 0, 0, static_cast<size_t>(state.budget), scratch, cursor,
                    std::max<size_t>(positions, 1));
}

MapScanCursor collector_map_scan_start() { return MapScanCursor{ephemeron_maps().size(), 0, nullptr, 0, 0, 0}; }

bool collector_map_scan_done(const MapScanCursor &cursor) { return cursor.maps_left == 0; }

void collector_record_map_scan(double seconds) { state.map_scans.record(seconds); }

const MapScans &collector_map_scans() { return state.map_scans; }

Py_ssize_t collector_young_count() {
    Registry *r = registry_get();
    if (r == nullptr) {
        PyErr_Clear();
        return 0;
    }
    uint64_t attached_since = r->attached_total - state.attached_mark;
    size_t size = r->holders.size();
    return static_cast<Py_ssize_t>(attached_since < size ? attached_since : size);
}

Py_ssize_t collector_collect_young(Py_ssize_t max_seeds, Py_ssize_t node_budget) {
    Registry *r = registry_get();
    if (r == nullptr) {
        return -1;
    }
    Py_ssize_t young = collector_young_count();
    size_t seeds = static_cast<size_t>(young < max_seeds ? young : max_seeds);
    size_t first = r->holders.size() - seeds;  // the newest: the likeliest to die young
    return collector_collect_slice(first, r->holders.size(), node_budget, MapSeeds::kNo,
                                   Scratch::kReleaseLarge);
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

void collector_relist_module_dicts() { state.relist_module_dicts = true; }

void collector_forget_live_structures() {
    if (state.scratch != nullptr) {
        state.scratch->pass.live_structures.clear();
    }
}

void collector_release_scratch() {
    if (!state.running) {
        delete state.scratch;
        state.scratch = nullptr;
    }
}

void collector_after_fork_child() {
    // A pass of the forking thread itself (a __del__ that forks) goes on and
    // ends normally in the child.
    if (state.running && !pthread_equal(state.running_thread, pthread_self())) {
        state.running = false;
    }
}

}  // namespace coextra::detail
