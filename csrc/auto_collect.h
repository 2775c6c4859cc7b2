// auto_collect.h -- automatic collection: coextra's callback in gc.callbacks.
//
// At the "start" of every CPython GC pass the callback runs auto_collect_run,
// which runs at most one of three rules (1: the slices of a generation pass;
// 2: a map scan slice, or else a sweep slice; 3: a young pass; a
// generation-2 collection runs rule 1 and then a due slice of rule 2), and at
// the "stop" auto_collect_after_gc (the generation pass's second look). What runs
// when, and why that keeps the bound: docs/design.md, "Automatic collection"
// (sections "Rule 1" to "Rule 3", "The bound", "Adaptive tenuring", "Map
// entries and map scans"); the constants below are its table "Constants".
//
// The contract. After a generation-2 collection, in a program whose caches
// die, at most max(kBoundFloor, kBoundFraction x the live holders) dead
// caches are attached outside the old generation (within the node budget).
// Nothing runs during interpreter teardown (registry closed or finalizing)
// or nested inside a running pass of the collector. Figures:
// docs/benchmarks.md (make bench).
#pragma once

#include "collector.h"
#include "compat.h"

#include <chrono>
#include <cstdint>

namespace coextra::detail {

// A slice's target duration, in seconds (generation passes, sweeps, map scans).
constexpr double kSliceSeconds = 0.0005;
// A sweep or map scan slice is followed by at least this many times its duration without one.
constexpr double kSliceSpacing = 4.0;
// Between sweeps, and between map scans: this many times their duration.
constexpr double kSweepPace = 40.0;
// The shortest wait between sweeps that find caches that died old, in sweep durations.
constexpr double kSweepBusyPace = 15.0;
// The dead allowance: max(kBoundFloor, kBoundFraction x the other holders).
constexpr double kBoundFloor = 2000.0;
constexpr double kBoundFraction = 0.1;
// The fewest holders a generation or sweep slice seeds.
constexpr Py_ssize_t kSliceMinSeeds = 256;
// The fewest positions a map scan slice walks: fewer, since a scan slice may
// explore the whole node budget from each key, and keys whose values reach
// large structures of their own would otherwise make every slice last many
// times kSliceSeconds.
constexpr Py_ssize_t kMapScanMinPositions = 16;
// The node budget of young passes and sweep slices: this much per seed, plus kYoungBaseNodes.
constexpr Py_ssize_t kYoungNodesPerHolder = 64;
constexpr Py_ssize_t kYoungBaseNodes = 4096;
// Young passes that find nothing back off to every kYoungMaxInterval-th GC pass at most,
// and come back to at least every kYoungResumeInterval-th once a generation or sweep slice
// detaches a holder.
constexpr int kYoungMaxInterval = 1024;
constexpr int kYoungResumeInterval = 64;
// The most holders a young pass seeds (the newest; the rest wait for the generation pass).
constexpr Py_ssize_t kYoungMaxSeeds = 1024;

struct AutoCollectStats {
    uint64_t generation_passes = 0;         // rule 1 passes completed
    uint64_t generation_slices = 0;         // their slices, of completed passes or not
    uint64_t last_generation_detached = 0;  // holders the latest completed one detached (no map entries)
    uint64_t sweeps = 0;                    // sweeps completed
    uint64_t sweep_slices = 0;              // slices run, of completed sweeps or not
    uint64_t sweep_detached = 0;            // holders those slices detached
    uint64_t last_sweep_detached = 0;       // holders the latest completed sweep detached
};

// Automatic collection's state (auto_collect.cpp).
struct AutoCollectState {
    using Clock = std::chrono::steady_clock;
    // Rule 2: the sweep in progress, or the previous one.
    struct Sweep {
        bool active = false;
        size_t cursor = 0;                // the slot after the next slice's last
        uint64_t detached = 0;            // by this sweep's slices so far
        Clock::time_point next_slice{};   // no slice before this
        Clock::time_point ended{};        // when the previous sweep ended
        double found_per_second = 0.0;    // what the previous sweep detached, per
                                          // second since the one before it ended
    };
    // Rule 1: the generation pass in progress. It examines the holders of
    // registry slots [old_end, min(cursor, pass_end)) (generations.h), and
    // the map entries `maps` has not walked yet.
    struct GenerationPass {
        bool active = false;
        size_t cursor = 0;                 // the first slot of the previous slice
        MapScanCursor maps;                // the walk over the entries' generations; done at maps_left 0
        size_t positions_walked = 0;       // by `maps` so far
        uint64_t detached = 0;             // by this pass's slices so far
        // Begun at the "start" of the GC pass under way: its "stop" looks again.
        bool second_look_due = false;
    };
    // Rule 3: a young pass runs on every interval-th GC pass.
    struct YoungPace {
        int interval = 1;
        int waited = 0;
        uint64_t auto_detached_seen = 0;  // CollectorStats::auto_detached after the previous young pass
    };
    // The callback object in gc.callbacks. Owned; created once and kept for
    // the life of the process, so identity checks against gc.callbacks stay
    // meaningful.
    PyObject *callback = nullptr;
    GenerationPass generation;
    Sweep sweep;
    // CollectorStats::detached_by_collector at the program's start: 0 (the
    // C++ tests set it to begin a program afresh). Any more since: a cache
    // of this program has died, so holders need two generation passes to
    // become old (docs/design.md, "Adaptive tenuring").
    uint64_t detached_at_program_start = 0;
    // The same for map entries: CollectorStats::entries_removed_by_collector.
    uint64_t entries_removed_at_program_start = 0;
    // A slice's time per holder seeded and per map position walked (rules 1
    // and 2), as the latest slices measured; 0 before any.
    double seconds_per_holder = 0.0;
    double seconds_per_position = 0.0;
    YoungPace young_pace;
    // Rule 2: the map scan in progress.
    struct MapScan {
        bool active = false;
        MapScanCursor cursor;
        double seconds = 0.0;  // this scan's slices so far
        Clock::time_point next_slice{};
    };
    MapScan map_scan;
    AutoCollectStats stats;
};

const AutoCollectStats &auto_collect_stats();

// The state itself, for the C++ tests, which read and set it.
AutoCollectState &auto_collect_state();

// Adds (enabled) or removes (disabled) coextra's callback in gc.callbacks.
// 0, or -1 with an exception.
int auto_collect_set(bool enabled);

// The policy, for the "start" of a GC pass of gc_generation (what the
// callback runs, and the C++ tests): what the passes it ran detached, or -1
// with an exception. `r` is the live registry, not closed.
struct Registry;
Py_ssize_t auto_collect_run(Registry *r, long gc_generation);

// The second look, for the "stop" of a GC pass that freed `collected`
// objects (docs/design.md, "Rule 1"): what it detached, or -1 with an
// exception.
Py_ssize_t auto_collect_after_gc(Py_ssize_t collected);

// 1 when coextra's callback is in gc.callbacks, 0 when not, -1 with an exception.
int auto_collect_get();

// How many generation passes must find a holder live before it is old: 1
// until a pass of the collector has first found a cache dead, then 2
// (docs/design.md, "Adaptive tenuring").
int auto_collect_passes_to_old();
// The same for ephemeron map entries: 1 until a pass of the collector has
// first removed a map entry, then 2.
int auto_collect_entry_passes_to_old();

}  // namespace coextra::detail
