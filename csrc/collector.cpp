// collector.cpp -- the collector (collector.h): one pass, its steps in their
// order (run_pass), and the entry points that run passes. The steps:
// exploration.h (explore, prune, count), propagate_liveness below (roots and
// liveness), garbage.h (act); a pass's state: collector_pass.h.
#include "collector.h"

#include "collector_pass.h"
#include "ephemeron_map.h"
#include "exploration.h"
#include "garbage.h"
#include "generation_pass.h"
#include "heap_graph.h"
#include "holder.h"
#include "live_structures.h"
#include "map_seeds.h"
#include "module_dicts.h"
#include "registry.h"
#include "system_memory.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <new>
#include <pthread.h>
#include <vector>

namespace coextra::detail {

// What passes reuse: the arrays of the previous young pass (only one pass runs
// at a time; a large pass gives its memory back when it ends, see run_pass)
// and the prune lists, which the pass refers to.
struct CollectorScratch {
    ModuleDicts module_dicts;
    LiveStructures live_structures;
    Pass pass{module_dicts, live_structures};
};

namespace {

// What a pass is for: it decides which holders seed it and whether the
// generations age after it (registry.h).
enum class PassKind {
    kAll,    // coextra.collect(): every holder; all survivors become old
    kSlice,  // a range of holders (automatic collection's passes); no ageing
};

// With Scratch::kReleaseLarge, a pass seeded with at most this many holders
// and map keys (every young pass) keeps its scratch memory for the next one;
// a larger one -- such as a map scan slice or a generation slice seeding
// many map entries -- gives it back.
constexpr size_t kRetainedSeeds = 2048;

// This concept's state (collector.h): per process, touched with the GIL held.
CollectorState state;

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

// One pass seeded with the codes of registry->holders[first, end) and the
// ephemeron entries `maps` says -- or, for a slice of a map scan (`scan` not
// NULL), with the entries of the next `scan_positions` table positions from *scan on
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
    system_memory::HugePages huge_pages(kind == PassKind::kAll);  // system_memory.h says why
    state.scratch->live_structures.begin_pass();
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
        seeds += ephemeron_generation_seed_count();
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
    if (ok && pass.defer) {
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

Py_ssize_t collector_collect_slice(size_t first, size_t end, Py_ssize_t node_budget, MapScanCursor *maps,
                                   size_t positions, Scratch scratch) {
    Py_ssize_t budget = std::max<Py_ssize_t>(1, std::min(node_budget, state.budget));
    if (maps == nullptr || positions == 0) {
        return run_pass(PassKind::kSlice, MapSeeds::kNo, first, end, static_cast<size_t>(budget), scratch);
    }
    return run_pass(PassKind::kSlice, maps->seeds, first, end, static_cast<size_t>(budget), scratch, maps,
                    positions);
}

Py_ssize_t collector_collect_map_slice(MapScanCursor *cursor, size_t positions, Scratch scratch) {
    return collector_collect_slice(0, 0, state.budget, cursor, std::max<size_t>(positions, 1), scratch);
}

MapScanCursor collector_map_scan_start() { return start_map_walk(MapSeeds::kAll); }

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
    return collector_collect_slice(first, r->holders.size(), node_budget, nullptr, 0, Scratch::kReleaseLarge);
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
        state.scratch->live_structures.clear();
    }
}

void collector_release_scratch() {
    if (!state.running) {
        delete state.scratch;
        state.scratch = nullptr;
    }
}

void collector_release_pass_memory() {
    if (!state.running && state.scratch != nullptr) {
        state.scratch->pass.release_memory();
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

