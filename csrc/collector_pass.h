// collector_pass.h -- Pass: what one collector pass works on, shared by the
// parts of a pass: exploration (exploration.h), recording live structures
// (live_structures.h), detaching the garbage (garbage.h) and run_pass
// (collector.cpp), which drives them (docs/design.md, "The collector").
//
// Owned by the collector's scratch (CollectorScratch, collector.cpp), which
// keeps it from pass to pass, so that a pass reuses the previous one's arrays
// (reset), until a large pass gives them back (release_memory). Every object
// pointer in it is borrowed and valid during the analysis only: from the
// first node added to the end of detach_garbage's decisions, no Python code
// runs and no reference is dropped (invariant 5), and the next pass starts
// with reset(), forgetting them. The prune lists it consults are the
// scratch's too, next to it: Pass refers to them and owns neither.
#pragma once

#include "chunk_seeds.h"
#include "compat.h"
#include "heap_graph.h"
#include "holder.h"
#include "pod_array.h"

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

struct EphemeronEntry;
struct ModuleDicts;     // module_dicts.h
class LiveStructures;   // live_structures.h

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

// A pass's scratch memory. Every array is touched fresh by a full pass (their
// memory goes back when it ends), and every fresh page faults: hence the
// compact nodes, edges and indexes, and the room made up front (HeapGraph::expect;
// figures in docs/benchmarks.md, "bench_collector.py").
struct Pass {
    Pass(ModuleDicts &module_dicts, LiveStructures &live_structures)
        : module_dicts(module_dicts), live_structures(live_structures) {}
    Pass(const Pass &) = delete;
    Pass &operator=(const Pass &) = delete;

    HeapGraph graph{0};
    PodArray<CodeWithHolder> other_cached_codes;  // code nodes whose holder is not indexed
    PodArray<EphemeronEdge> ephemeron_edges;      // every key -> entry edge followed
    PodArray<Pending> pending;   // references queued by the traversal callback
    PodArray<Pending> merged;    // single-reference objects to explore as part of `source`
    PodArray<uint32_t> stack;    // liveness propagation
    // Per node, the node whose references led to it (kNone for a seed),
    // which is always an earlier node; record_live_structures turns it into
    // each node's recorded structure. Kept by automatic passes only.
    PodArray<uint32_t> discoverer;
    PodArray<uint32_t> merged_into;  // per node, the objects explored as part of it (likewise)
    PodArray<uint32_t> deferred;  // nodes left unexpanded as live structures
    PodArray<uint32_t> recheck;   // deferred nodes whose counts fell since they were looked at
    // record_live_structures: per node its subtree's size; a structure's
    // reach; per node the edges into it from that reach.
    PodArray<uint32_t> subtree;
    PodArray<uint32_t> reach;
    PodArray<uint32_t> reach_edges;
    ChunkSeeds seeds;            // the current chunk of seeds (explore)
    uint32_t current = 0;        // the node whose references are being queued
    size_t next_node = 0;        // the next node to expand (explore)
    size_t next_seed = 0;        // the next holder slot to seed (explore)
    // An automatic pass: it leaves the recorded live structures unexplored
    // and records those it finds (collect() explores everything and records
    // nothing, so it spends no memory per node on them).
    bool defer = false;
    // The prune lists, kept from pass to pass by the collector's scratch
    // (borrowed: the scratch owns them and this pass together).
    ModuleDicts &module_dicts;       // never expanded
    LiveStructures &live_structures;  // left unexpanded while `defer`

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
        recheck.clear();
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
        recheck.release();
        reach.release();
        reach_edges.release();
    }
};

}  // namespace coextra::detail
