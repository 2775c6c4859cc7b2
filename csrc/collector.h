// collector.h -- the cycle collector: detaches holders whose code object is
// reachable only through its own cache (docs/design.md, "The collector").
//
// Each attached code object C is treated as a container with one extra, virtual
// edge C -> holder(C); the registry's reference to the holder *is* that edge.
// A pass explores the heap reachable from a set of holders' codes, counts for
// every node the references that come from explored nodes, marks as live every
// node with a reference from outside (Py_REFCNT greater than that count) or
// left unexpanded, propagates liveness along real and virtual edges, and then
// detaches the holders of the codes that stayed unreachable.
//
// Plain CPython C API; every function needs the GIL. Reentrant: a collection
// requested while one runs (from a __del__ run by a detach, or from a GC pass
// that a detach triggers) returns 0 at once.
#pragma once

#include "compat.h"
#include "map_seeds.h"  // MapSeeds and MapScanCursor, in the calls below

#include <chrono>
#include <cstdint>
#include <pthread.h>

namespace coextra::detail {

// The most nodes one pass adds to its graph (module dicts it prunes excluded).
constexpr Py_ssize_t kDefaultBudget = 8'000'000;
constexpr Py_ssize_t kMaxBudget = 0x7FFFFFFF;

struct CollectorStats {
    uint64_t collections = 0;            // passes run (explicit and automatic)
    uint64_t auto_collections = 0;       // of which started from gc.callbacks
    // Holders and map entries apart (docs/design.md, "Map entries and map scans").
    uint64_t detached_by_collector = 0;  // holders detached, cumulative
    uint64_t entries_removed_by_collector = 0;  // ephemeron map entries removed, cumulative
    uint64_t budget_exhausted = 0;       // passes that stopped adding nodes at the budget
    uint64_t last_nodes = 0;             // objects the last pass explored (nodes and
                                         // single-reference objects merged into them)
    double last_seconds = 0.0;           // duration of the last pass (analysis and detach)
    double auto_seconds = 0.0;           // time spent in automatic passes, cumulative
    uint64_t auto_detached = 0;          // holders detached by automatic passes, cumulative
    uint64_t auto_entries_removed = 0;   // map entries removed by automatic passes, cumulative
    double auto_max_pause = 0.0;         // the longest automatic pass, in seconds
};

const CollectorStats &collector_stats();

// The collector's state itself, for the C++ tests, which read and set it.
struct CollectorState;
CollectorState &collector_state();

// Map scans, which examine every ephemeron key: collect(), and automatic
// collection's sliced ones (auto_collect.h, collector_collect_map_slice).
struct MapScans {
    using Clock = std::chrono::steady_clock;
    uint64_t scans = 0;
    double seconds = 0.0;      // duration of the latest (the sum of its slices)
    Clock::time_point ended{};

    void record(double duration);
};

// What passes reuse from one to the next: a pass's arrays and the prune
// lists (collector.cpp).
struct CollectorScratch;

// The collector's state (collector.cpp).
struct CollectorState {
    bool running = false;
    pthread_t running_thread{};  // valid while running
    Py_ssize_t budget = kDefaultBudget;
    // registry->attached_total when the previous pass ended. Holders are
    // appended at the back, so the holders attached since then are about the
    // last (attached_total - attached_mark) of the vector -- about: a detach
    // can move the newest holder to the front of the young generation (it
    // then waits for the generation pass) and, once the young generation is
    // shorter than that, older ones are in the tail (explored once more).
    // Both only change the cost, never soundness: any set of seeds gives a
    // sound answer.
    uint64_t attached_mark = 0;
    bool relist_module_dicts = false;  // collector_relist_module_dicts() was called
    CollectorStats stats;
    MapScans map_scans;
    // Owned; made by the first pass, freed by lifecycle_shutdown (or by the
    // process's end, if a pass runs after it).
    CollectorScratch *scratch = nullptr;
};

// Runs the collector over every attached holder and every ephemeron map
// entry; the surviving holders become the old generation (registry.h).
// Returns the number of holders detached and entries removed, or -1 with an
// exception (MemoryError; RuntimeError once the registry is gone). Returns 0
// when a collection is already running.
Py_ssize_t collector_collect_all();

// What a pass does with its scratch memory when it ends: gives it back
// (kRelease), so that it does not add to what every holder costs; gives it
// back if the pass seeded more than a few thousand holders (kReleaseLarge);
// or keeps it for a slice that follows at once (kKeep).
enum class Scratch { kRelease, kReleaseLarge, kKeep };

// The passes of automatic collection (auto_collect.h), each returning what
// collector_collect_all returns; the generations stay as they are:
//   - over registry->holders[first, end) (clamped), and the entries of the
//     next `positions` map positions from *maps on (which it advances; none
//     when NULL), adding at most `node_budget` nodes;
//   - over the newest of the holders attached since the previous pass (at
//     most max_seeds of them; the others wait for the generation pass), at
//     most `node_budget` nodes.
// Never more nodes than the global budget.
Py_ssize_t collector_collect_slice(size_t first, size_t end, Py_ssize_t node_budget, MapScanCursor *maps,
                                   size_t positions, Scratch scratch);
Py_ssize_t collector_collect_young(Py_ssize_t max_seeds, Py_ssize_t node_budget);

// One slice of a map scan: a pass seeded with the entries of the next
// `positions` table positions from *cursor on, which it advances. What
// collector_collect_all returns. The scan is over when
// collector_map_scan_done(*cursor); the caller then records it
// (collector_record_map_scan).
MapScanCursor collector_map_scan_start();
Py_ssize_t collector_collect_map_slice(MapScanCursor *cursor, size_t positions, Scratch scratch);
bool collector_map_scan_done(const MapScanCursor &cursor);
void collector_record_map_scan(double seconds);

const MapScans &collector_map_scans();

// Holders attached since the previous pass (the seeds of collector_collect_young).
Py_ssize_t collector_young_count();

Py_ssize_t collector_budget();
// 0, or -1 with ValueError when nodes is below 1 or above kMaxBudget.
int collector_set_budget(Py_ssize_t nodes);

// True while a pass runs (exposed for tests of reentrancy).
bool collector_running();

// In a child process after fork(): a pass that another thread of the parent
// was running (in a __del__ that released the GIL) never ends here, so the
// child forgets it; otherwise every later pass would return 0 at once.
void collector_after_fork_child();

// A pass never expands the __dict__ of a module in sys.modules, and lists
// them anew before every collect(), before the next pass after this call, and
// otherwise only when sys.modules has changed size (module_dicts.h). Automatic
// collection calls it when a generation pass or a sweep begins, not for each
// of its slices: listing walks sys.modules, which in a large program costs a
// good share of a slice.
void collector_relist_module_dicts();

// Automatic passes leave the large structures a recent pass found live
// unexplored, as long as their reference counts say they are still live
// (live_structures.h). This forgets them: the next pass to meet
// one explores it again. Automatic collection calls it when a generation
// pass begins, so that a structure that died in a way the counts cannot
// tell is explored by the next pass to meet it from then on: the
// generation pass's bound holds, and a sweep that follows finds the caches
// that died old with it.
void collector_forget_live_structures();

// Frees the scratch memory (lifecycle_shutdown); a later pass makes it again.
// No-op while a pass runs.
void collector_release_scratch();

// Gives back the arrays of the latest pass, as Scratch::kRelease would have
// (for the last slice of a walk whose end shows only once it has run).
void collector_release_pass_memory();

}  // namespace coextra::detail
