// auto_collect.h -- automatic collection, driven by gc.callbacks.
//
// Policy. At the "start" of every CPython GC pass, at most one of these runs:
//
//   1. Generation pass. On a generation-2 collection, when the middle and
//      young generations (registry.h) are not empty: a pass over those two
//      generations. Survivors move up one generation.
//
//      This is the bound. A holder becomes old only by being found live by two
//      generation passes (or by coextra.collect()), so after any generation-2
//      collection no dead cache is left outside the old generation (within
//      the node budget). A cache dies old only if it lived through two
//      generation-2 collections: a program that drops generated code in waves
//      and collects between them never lets one.
//
//      The cost follows growth, not size: every holder is examined by at most
//      two generation passes, as CPython's own young generations do. (A full
//      pass per fixed fraction of growth would examine each holder about
//      1/fraction times.) Its pause is the time to examine what was attached
//      between the last two generation-2 collections, which CPython spaces by
//      the growth of the whole heap, so it stays a fraction of the pause of
//      the collection it runs in. It cannot be sliced over later GC passes
//      without losing the bound.
//
//      Ephemeron map entries (ephemeron_map.h) have no generations: their
//      keys join the generation pass (a generation pass runs for them alone
//      when no holder is young or middle) whenever a map scan is due: an
//      entry was added since the previous scan, fewer than two scans ran
//      since the latest addition (as a holder is examined twice before it
//      is old), or kSweepPace times the previous scan's duration has gone
//      by (the entries whose key died old). A scan examines every entry.
//
//   2. Sweep slice. Every holder is swept in slices of consecutive holders,
//      each sized from the previous slice's time per holder to take about
//      kSliceSeconds, each followed by at least kSliceSpacing times its
//      duration without a slice. A sweep starts when kSweepPace times its
//      predicted duration (time per holder times the holders attached) has
//      gone by since the previous one ended. This finds the caches that died
//      old, and dead caches of any generation in a program that seldom
//      reaches a generation-2 collection, at a cost of about 1/kSweepPace of
//      the program's time and with no pause longer than a slice.
//
//   3. Young pass. Otherwise: a pass seeded with the holders
//      attached since the previous pass, with a small node budget
//      (kYoungNodesPerHolder per seed plus kYoungBaseNodes), so that caches
//      that die young are dropped at the rhythm of the GC itself. Young
//      passes back off while they find nothing (a program whose caches stay
//      live): after each empty one the next waits for twice as many GC
//      passes, up to kYoungMaxInterval, and is seeded with the newest
//      kYoungMaxSeeds holders only (the rest wait for the generation pass).
//      One that detaches something resets the pace.
//
// Never during interpreter teardown (registry closed or finalizing), never
// nested inside a running pass. Figures: docs/collector.md (make bench).
#pragma once

#include "compat.h"

#include <chrono>
#include <cstdint>

namespace coextra::detail {

constexpr double kSliceSeconds = 0.004;
constexpr double kSliceSpacing = 4.0;
constexpr double kSweepPace = 40.0;
constexpr Py_ssize_t kSliceMinSeeds = 256;
constexpr Py_ssize_t kYoungNodesPerHolder = 64;
constexpr Py_ssize_t kYoungBaseNodes = 4096;
constexpr int kYoungMaxInterval = 64;
constexpr Py_ssize_t kYoungMaxSeeds = 1024;

struct AutoCollectStats {
    uint64_t generation_passes = 0;         // rule 1 passes run
    uint64_t last_generation_detached = 0;  // holders the latest one detached
    uint64_t sweeps = 0;                    // sweeps completed
    uint64_t sweep_slices = 0;              // slices run, of completed sweeps or not
    uint64_t last_sweep_detached = 0;       // holders the latest completed sweep detached
};

// Automatic collection's part of internals (internals.h).
struct AutoCollectState {
    using Clock = std::chrono::steady_clock;
    // Rule 2: the sweep in progress, or the previous one.
    struct Sweep {
        bool active = false;
        size_t cursor = 0;                // the slot after the next slice's last
        uint64_t detached = 0;            // by this sweep's slices so far
        Clock::time_point next_slice{};   // no slice before this
        Clock::time_point ended{};        // when the previous sweep ended
        double seconds_per_holder = 0.0;  // of the latest slice; 0 before any
    };
    // Rule 3: a young pass runs on every interval-th GC pass.
    struct YoungPace {
        int interval = 1;
        int waited = 0;
    };
    // The callback object in gc.callbacks. Owned; created once and kept for
    // the life of the process, so identity checks against gc.callbacks stay
    // meaningful.
    PyObject *callback = nullptr;
    Sweep sweep;
    YoungPace young_pace;
    AutoCollectStats stats;
};

const AutoCollectStats &auto_collect_stats();

// Adds (enabled) or removes (disabled) coextra's callback in gc.callbacks.
// 0, or -1 with an exception.
int auto_collect_set(bool enabled);

// 1 when coextra's callback is in gc.callbacks, 0 when not, -1 with an exception.
int auto_collect_get();

}  // namespace coextra::detail
