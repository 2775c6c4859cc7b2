// exploration.cpp -- steps 1 and 2 of a pass (docs/design.md, "The
// collector"): exploring the heap from the seeds, pruning on the way, and
// counting the references explored nodes account for (exploration.h).
//
// Everything but explore_and_count is internal to this translation unit: the
// functions below run per reference and per node, and the compiler can then
// inline them into one another. The two it would leave out of line, each
// called from two places, are marked always_inline: a call per
// node is a measurable share of an automatic pass.
#include "exploration.h"

#include "chunk_seeds.h"
#include "ephemeron_map.h"
#include "heap_graph.h"
#include "live_structures.h"
#include "module_dicts.h"
#include "node_rules.h"
#include "registry.h"

#include <algorithm>

namespace coextra::detail {

namespace {

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
        if (pass.defer) {
            pass.merged_into[pass.current]++;
        }
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
// (docs/benchmarks.md).
constexpr size_t kPrefetchDistance = 64;

// In an automatic pass (`defer`): records who discovered a new node, and
// marks it deferred when it is a live structure (LiveStructures). False when
// out of memory.
[[gnu::always_inline]] inline bool note_new_node(Pass &pass, uint32_t node, uint32_t discoverer) {
    if (!pass.defer) {
        return true;
    }
    if (!pass.discoverer.push(discoverer) || !pass.merged_into.push(0)) {
        return false;
    }
    GraphNode &n = pass.graph.nodes[node];
    if (!pass.live_structures.empty() && !(n.flags & NODE_BY_HOLDER) && !PyCode_Check(n.op) &&
        pass.live_structures.recorded(n.op)) {
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
    ModuleDicts &module_dicts = pass.module_dicts;
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
        if (!pass.defer && p.child == g.nodes[p.source].op) {
            // A reference of a node's own object (or of what is explored as
            // part of it) to that object, as a map value's to its key: it is
            // explained, and a node that references itself is live exactly
            // when it would be without. So no index lookup and no edge. Not
            // in passes that may record live structures, which count such
            // references as edges (live_structures.h).
            g.nodes[p.source].unexplained--;
            continue;
        }
        if (explored_as_part(p.child)) {
            // Past the budget it stays unexplored, so what it references is live.
            if (g.charge_merged()) {
                if (!pass.merged.push(p)) {
                    g.out_of_memory = true;
                    return;
                }
                if (pass.defer) {
                    pass.merged_into[p.source]++;
                }
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
        if (g.nodes[node].flags & NODE_DEFERRED) {
            pass.live_structures.explain_reference(child, g.nodes[pending[i].source].op);
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
bool add_seeds(Pass &pass, const HolderTable &holders, size_t *next_seed, size_t end) {
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

// What to seed for `slot` (ephemeron_position_seed: NULL when nothing; a
// shared value instead of the key in an automatic pass): position `slot` of
// m's table (kAll), or the slot-th of the positions the generation pass in
// progress examines, from the youngest down (kGenerations). Past the end:
// false.
bool map_seed(const EphemeronMap *m, MapSeeds seeds, size_t slot, bool shared_values, PyObject **seed) {
    if (seeds == MapSeeds::kGenerations) {
        const Generations &g = m->table.generations();
        if (slot >= g.in_pass()) {
            return false;
        }
        slot = g.pass_end - 1 - slot;
    }
    return ephemeron_position_seed(m, slot, shared_values, seed);
}

// Adds the seeds of up to kSeedChunk ephemeron entries (map_seed) from
// *cursor on (visiting at most cursor->positions_left positions) and advances
// it; sets it past the last map once every seed is added or the budget is
// spent. False when out of memory.
//
// In two rounds: the chunk's seeds are read first, each one's address index
// slot prefetched, then interned. Seeds, unlike holders' codes, go to the
// address index, which they reach at random: one miss to memory per seed
// when interned as read, misses that overlap when prefetched a chunk ahead.
// A value shared by entries in a row is read once.
bool add_map_seeds(Pass &pass, MapCursor *cursor) {
    HeapGraph &g = pass.graph;
    const std::vector<EphemeronMap *> &maps = ephemeron_maps();
    PyObject *seeds[kSeedChunk];
    size_t count = 0;
    while (count < kSeedChunk && more_map_seeds(*cursor)) {
        PyObject *seed = nullptr;
        if (!map_seed(maps[cursor->maps_left - 1], cursor->seeds, cursor->slot, pass.defer, &seed)) {
            cursor->maps_left--;
            cursor->slot = 0;
            continue;
        }
        cursor->slot++;
        cursor->positions_left--;
        if (seed == nullptr || (count != 0 && seeds[count - 1] == seed) || !is_node_candidate(seed)) {
            // Nothing to seed, the value the entry before shares (seeded
            // already), or never a node, so live: a key, and with it its
            // entry; a value (a module, an immortal), and every key it reaches.
            continue;
        }
        g.prefetch(seed);
        seeds[count++] = seed;
    }
    for (size_t i = 0; i < count; i++) {
        bool fresh = false;
        uint32_t node = g.intern(seeds[i], &fresh);
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
[[gnu::always_inline]] inline Holder *traverse_node(Pass &pass, const GraphNode &node) {
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
// seeds of the ephemeron entries `map_cursor` says: nodes are traversed in
// order from pass.next_node, their references queued, and the queue
// processed in batches (which adds the nodes traversed next); a new chunk of
// seeds once all is explored. Deferred nodes stay unexpanded.
constexpr size_t kBatch = 512;

bool explore(Pass &pass, const HolderTable &holders, size_t end, MapCursor &map_cursor) {
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
// not an outside one. A deferred node whose count falls is looked at again
// (pass.recheck).
bool count_internal_references(Pass &pass, size_t *counted) {
    HeapGraph &g = pass.graph;
    for (size_t e = *counted; e < g.edges.size(); e++) {
        uint32_t target = g.edges[e].target;
        GraphNode &node = g.nodes[target];
        node.unexplained--;
        if ((node.flags & NODE_DEFERRED) && !pass.recheck.push(target)) {
            return false;
        }
    }
    *counted = g.edges.size();
    return true;
}

// Expands deferred node d when its record no longer shows it live; true
// when it did.
bool settle_deferred(Pass &pass, uint32_t d) {
    GraphNode &node = pass.graph.nodes[d];
    if (!(node.flags & NODE_DEFERRED) || pass.live_structures.still_live(node.op, node.unexplained)) {
        return false;  // expanded already, or live as when recorded: stays unexplored
    }
    pass.live_structures.forget(node.op);  // this pass records it again if still live
    node.flags &= ~NODE_DEFERRED;
    pass.current = d;
    traverse_node(pass, node);  // not a code object (never recorded)
    node.flags |= NODE_EXPANDED;
    return true;
}

}  // namespace

// Counts the internal references after each round of exploring
// (exploration.h). Each deferred node is looked at when it is added and
// again whenever its count falls, not at every round: a pass may leave
// thousands unexpanded.
bool explore_and_count(Pass &pass, const HolderTable &holders, size_t end, MapCursor &map_cursor) {
    size_t counted = 0;
    size_t looked_at = 0;  // pass.deferred[0, looked_at) was
    for (;;) {
        if (!explore(pass, holders, end, map_cursor) || !count_internal_references(pass, &counted)) {
            return false;
        }
        bool expanded = false;
        for (; looked_at < pass.deferred.size(); looked_at++) {
            expanded |= settle_deferred(pass, pass.deferred[looked_at]);
        }
        // The nodes whose counts fell, or every deferred node when that is
        // fewer (edges into a deferred class from each of its instances).
        const PodArray<uint32_t> &again = pass.recheck.size() < pass.deferred.size() ? pass.recheck : pass.deferred;
        for (size_t i = 0; i < again.size(); i++) {
            expanded |= settle_deferred(pass, again[i]);
        }
        pass.recheck.clear();
        if (!expanded) {
            return true;
        }
    }
}

}  // namespace coextra::detail
