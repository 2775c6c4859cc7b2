// auto_collect.h -- automatic collection, driven by gc.callbacks.
//
// Policy. At the "start" of every CPython GC pass, at most one of these runs:
//
//   1. Generation pass. A generation-2 collection begins one when the middle
//      or young generation (registry.h) is not empty: it examines those two
//      generations as they are at that moment, in slices taken from the
//      youngest down, each seeded with about kSliceSeconds' worth of holders
//      (measured by the previous slice) and free to explore the whole node
//      budget. The first slice runs in that collection, and so does every
//      next one while the previous detached something, or -- in a program
//      whose caches die (an automatic pass detached something since the
//      previous generation pass began) -- while the holders left unexamined
//      exceed the dead allowance, max(kBoundFloor, kBoundFraction times the
//      others). The rest run one per GC pass, before anything else. When the
//      last has run, its holders age: middle to old, young to middle -- or
//      young straight to old in a program none of whose caches has died
//      (no pass of the collector has found one dead yet: adaptive
//      tenuring, below). Holders attached meanwhile stay young. A
//      generation-2 collection that finds a pass still in progress first
//      runs all of its rest.
//
//      The second look (auto_collect_after_gc). At the "start", what the
//      collection is about to free still references what it did, such as a
//      dropped function (in a cycle with its namespace) its code: that code
//      is referenced from outside its cache until the collection ends. So at
//      the "stop" of a generation-2 collection that freed objects, the pass
//      begun at its start examines its holders again, from the top, by the
//      same rules, and they age only after that.
//
//      This is the bound. A holder becomes old only by being found live by
//      generation passes (or by coextra.collect()), so when a generation-2
//      collection ends, the dead caches outside the old generation are at
//      most the allowance in a program whose caches die (within the node
//      budget); in one whose caches all live the collection stops at the
//      first all-live slice, so its pause stays about kSliceSeconds. What a
//      program has just dropped is among the youngest holders, in the first
//      slices, which go on while they find garbage. A cache dies old only if
//      it lived through two generation passes (one, before any cache of the
//      program had died): the sweep (rule 2) finds it.
//
//      The cost follows growth, not size: every holder is examined by two
//      generation passes, as CPython's own young generations do -- by one
//      until a cache of the program is first found dead, since the second
//      examination is for caches that die after a first found them live,
//      and only doubles the cost of a program that keeps all it caches
//      (one warming up). The first cache found dead brings the second
//      examination back for good, from the holders of the pass in progress
//      on: whether caches died in the last few passes says little about
//      whether the ones just examined will, and a program whose caches
//      died once keeps its bound for what it drops later. (A full
//      pass per fixed fraction of growth would examine each holder about
//      1/fraction times.) What was attached between two generation-2
//      collections can be a quarter of the heap, which CPython examines in
//      one pause; slices split it into pauses of about kSliceSeconds, spread
//      over the GC passes that follow, whatever the number of holders.
//      Short slices also cost less: a slice's scratch memory grows with its
//      holders and each slice hands its own to the next, so only the pages
//      of a pass's largest slice are touched fresh (each a page fault), and
//      a short slice's arrays stay in the CPU's caches. Past a few thousand
//      holders a slice's fixed costs are small (the module dicts are listed
//      once per pass, collector_relist_module_dicts).
//
//      Ephemeron map entries have generations too (EntryGenerations in
//      ephemeron_map.h): the first slice of a generation pass also seeds the
//      keys of the young and middle entries, which age with the pass (a
//      generation pass begins for them alone when no holder is young or
//      middle). The keys that died old are the map scan's (rule 2).
//
//   2. Map scan slice, or else sweep slice. A map scan examines every
//      map entry's key, in slices of consecutive table positions, each sized
//      like a generation pass's slices (by the previous slice's time per
//      position) and followed by at least kSliceSpacing times its duration
//      without a slice; it finds the entries whose keys died old. One
//      starts once kSweepPace times the previous one's duration (the sum of
//      its slices) has gone by since it ended. A generation-2 collection
//      runs a due slice too, after its generation pass's slices.
//
//      Every holder is swept in slices of consecutive holders,
//      each sized like a generation pass's slices and followed by at least
//      kSliceSpacing times its duration without a slice. A sweep starts once
//      sweep_wait() has gone by since the previous one ended: kSweepPace times
//      its predicted duration (time per holder times the holders attached),
//      or, while sweeps find caches that died old, the time those would take
//      at the previous sweep's rate to fill half the dead allowance, but not
//      less than kSweepBusyPace times the predicted duration. This finds the
//      caches that died old, and dead caches of any generation in a program
//      that seldom reaches a generation-2 collection, at a cost of about
//      1/kSweepPace of the program's time (up to about 1/kSweepBusyPace
//      while it finds them) and with no pause longer than a slice.
//
//   3. Young pass. Otherwise: a pass seeded with the holders
//      attached since the previous pass, with a small node budget
//      (kYoungNodesPerHolder per seed plus kYoungBaseNodes), so that caches
//      that die young are dropped at the rhythm of the GC itself. Young
//      passes back off while they find nothing (a program whose caches stay
//      live): after each empty one the next waits for twice as many GC
//      passes, up to kYoungMaxInterval, and is seeded with the newest
//      kYoungMaxSeeds holders only (the rest wait for the generation pass).
//      One that detaches something resets the pace. So does, to at most
//      kYoungResumeInterval, a generation or sweep slice that detaches
//      something: caches die again, young or not (a program that drops its
//      code just before a gc.collect() has its caches found by the
//      generation pass, and its young passes find nothing). So a long
//      spell of live caches can slow young passes down far: they only
//      shorten the time a dead cache waits, and the generation passes keep
//      the bound whatever their pace.
//
// Holders and map entries. The rules measure holders: a slice goes on while
// it detaches holders, the dead allowance, the sweep's rate and the young
// passes' pace count holders, and a holder's tenuring (passes to old) turns
// to 2 when the collector first detaches a holder. Map entries found dead on
// the way (by the map scan, or reached from a holder's product) are removed
// and counted apart: every young and middle entry is examined by the first
// slice of a generation pass, so they are no reason to go on with holders,
// and a map entry's death says nothing about whether code caches die (a map
// keyed by short-lived objects beside long-lived code). Map entries have
// their own adaptive tenuring instead: one generation pass makes an entry old
// until the collector first removes a map entry, two from then on
// (auto_collect_entry_passes_to_old).
//
// Never during interpreter teardown (registry closed or finalizing), never
// nested inside a running pass. Figures: docs/collector.md (make bench).
#pragma once

#include "collector.h"
#include "compat.h"

#include <chrono>
#include <cstdint>

namespace coextra::detail {

constexpr double kSliceSeconds = 0.0005;
constexpr double kSliceSpacing = 4.0;
constexpr double kSweepPace = 40.0;
constexpr double kSweepBusyPace = 15.0;
constexpr double kBoundFloor = 2000.0;
constexpr double kBoundFraction = 0.1;
constexpr Py_ssize_t kSliceMinSeeds = 256;
constexpr Py_ssize_t kYoungNodesPerHolder = 64;
constexpr Py_ssize_t kYoungBaseNodes = 4096;
constexpr int kYoungMaxInterval = 1024;
constexpr int kYoungResumeInterval = 64;
constexpr Py_ssize_t kYoungMaxSeeds = 1024;

struct AutoCollectStats {
    uint64_t generation_passes = 0;         // rule 1 passes completed
    uint64_t generation_slices = 0;         // their slices, of completed passes or not
    uint64_t last_generation_detached = 0;  // holders the latest completed one detached (no map entries)
    uint64_t sweeps = 0;                    // sweeps completed
    uint64_t sweep_slices = 0;              // slices run, of completed sweeps or not
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
    // registry slots [old_end, min(cursor, pass_end)) (registry.h).
    struct GenerationPass {
        bool active = false;
        size_t cursor = 0;                 // the first slot of the previous slice
        MapSeeds maps = MapSeeds::kNo;     // the ephemeron keys the next slice also seeds
        uint64_t detached = 0;             // by this pass's slices so far
        // CollectorStats::auto_detached when this pass began, and when the
        // previous one did.
        uint64_t auto_detached_at_begin = 0;
        uint64_t auto_detached_before = 0;
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
    // become old (adaptive tenuring, rule 1).
    uint64_t detached_at_program_start = 0;
    // The same for map entries: CollectorStats::entries_removed_by_collector.
    uint64_t entries_removed_at_program_start = 0;
    double seconds_per_holder = 0.0;  // of the latest slice (rules 1 and 2); 0 before any
    YoungPace young_pace;
    // Rule 2: the map scan in progress.
    struct MapScan {
        bool active = false;
        MapScanCursor cursor;
        double seconds = 0.0;               // this scan's slices so far
        double seconds_per_position = 0.0;  // of the latest slice; 0 before any
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
// objects (rule 1): what it detached, or -1 with an exception.
Py_ssize_t auto_collect_after_gc(Py_ssize_t collected);

// 1 when coextra's callback is in gc.callbacks, 0 when not, -1 with an exception.
int auto_collect_get();

// How many generation passes must find a holder live before it is old: 1
// until a pass of the collector has first found a cache dead, then 2
// (adaptive tenuring, rule 1).
int auto_collect_passes_to_old();
// The same for ephemeron map entries: 1 until a pass of the collector has
// first removed a map entry, then 2.
int auto_collect_entry_passes_to_old();

}  // namespace coextra::detail
