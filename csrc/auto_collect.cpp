// auto_collect.cpp -- the gc.callbacks entry point and its policy (auto_collect.h).
#include "auto_collect.h"

#include "collector.h"
#include "ephemeron_map.h"
#include "generation_pass.h"
#include "include/coextra/ref.hpp"
#include "registry.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace coextra::detail {

namespace {

using Clock = AutoCollectState::Clock;
using Sweep = AutoCollectState::Sweep;
using GenerationPass = AutoCollectState::GenerationPass;

// This concept's state (auto_collect.h): per process, touched with the GIL
// held; and four of its members.
AutoCollectState state;
constexpr AutoCollectState::MapScan &map_scan = state.map_scan;
constexpr AutoCollectStats &stats = state.stats;
constexpr Sweep &sweep = state.sweep;
constexpr GenerationPass &generation = state.generation;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// The dead caches (or map entries) the bound allows beside `live` live ones.
double dead_allowance(size_t live) {
    return std::max(kBoundFloor, kBoundFraction * static_cast<double>(live));
}

// How long to wait between two sweeps (rule 2) that take `duration`:
// kSweepPace times it, or less while they find caches that died old -- as
// long as the dead ones, at the rate the previous sweep found them, take to
// fill half the allowance beside `live` -- but never below kSweepBusyPace
// times it.
double sweep_wait(double duration, double found_per_second, size_t live) {
    double wait = kSweepPace * duration;
    if (found_per_second > 0.0) {
        double fill = 0.5 * dead_allowance(live) / found_per_second;
        wait = std::max(kSweepBusyPace * duration, std::min(fill, wait));
    }
    return wait;
}

// Rule 1: the walk over the young and middle ephemeron entries that a
// generation pass's slices seed beside its holders; an empty one (done) when
// there are none.
MapScanCursor generation_map_walk() {
    bool pending = ephemeron_entry_count() != 0 && ephemeron_generations_pending();
    return pending ? start_map_walk(MapSeeds::kGenerations) : MapScanCursor{};
}

bool map_walk_left(const MapScanCursor &walk) { return !collector_map_scan_done(walk); }

// How many items (holders, or table positions) a slice may take to last
// about `share` of kSliceSeconds at `seconds_per_item` (0 before any was
// measured): never fewer than `minimum`.
size_t slice_items(double seconds_per_item, double share = 1.0, Py_ssize_t minimum = kSliceMinSeeds) {
    size_t items = static_cast<size_t>(minimum);
    if (seconds_per_item > 0.0) {
        items = std::max(items, static_cast<size_t>(share * kSliceSeconds / seconds_per_item));
    }
    return items;
}

// The first slot of the slice that ends at `end`, seeded with `share` of a
// slice's worth of holders: slices go down, never below `bottom`.
size_t slice_first(size_t bottom, size_t end, double share = 1.0) {
    return end - std::min(end - bottom, slice_items(state.seconds_per_holder, share));
}

// Learns a slice's time per holder and per map position from one that
// seeded `holders` holders and walked `positions` positions in `seconds`:
// a slice of one kind measures it; a slice of both scales the two as its
// time says (their ratio is the one measured apart).
void learn_slice_time(double seconds, size_t holders, size_t positions) {
    double &per_holder = state.seconds_per_holder;
    double &per_position = state.seconds_per_position;
    if (holders == 0 || positions == 0) {
        if (holders != 0) {
            per_holder = seconds / static_cast<double>(holders);
        } else if (positions != 0) {
            per_position = seconds / static_cast<double>(positions);
        }
        return;
    }
    double predicted =
        per_holder * static_cast<double>(holders) + per_position * static_cast<double>(positions);
    if (per_holder > 0.0 && per_position > 0.0 && predicted > 0.0) {
        per_holder *= seconds / predicted;
        per_position *= seconds / predicted;
    } else {
        per_holder = per_position = seconds / static_cast<double>(holders + positions);
    }
}

// What a slice found: what collector_collect_slice returned (holders
// detached plus map entries removed, or -1 with an exception), and of it the
// holders, which the rules go by (docs/design.md, "Map entries and map scans"),
// and how many map positions it walked.
struct SliceFound {
    Py_ssize_t found;
    uint64_t holders;
    size_t positions;
};

// Runs one pass over holders[first, end) and the next `positions` map
// positions of `maps` (none when NULL), for a slice of a generation pass, a
// sweep or a map scan, and learns its time per item.
SliceFound run_slice(size_t first, size_t end, Py_ssize_t node_budget, MapScanCursor *maps, size_t positions,
                     Scratch scratch) {
    uint64_t holders_before = collector_stats().auto_detached;
    Py_ssize_t found = collector_collect_slice(first, end, node_budget, maps, positions, scratch);
    size_t walked = maps != nullptr && positions != 0 ? maps->visited : 0;
    learn_slice_time(collector_stats().last_seconds, end - first, walked);
    return SliceFound{found, collector_stats().auto_detached - holders_before, walked};
}

// Whether the program's caches die: a pass of the collector has detached a
// holder since the program started (the question adaptive tenuring asks,
// auto_collect_passes_to_old). Not whether one did lately: code dropped
// after a quiet spell lies below the code compiled since, and a first
// all-live slice of those would leave it unexamined.
bool caches_die() { return auto_collect_passes_to_old() == 2; }

// The same question of map entries: the collector has removed one.
bool map_entries_die() { return auto_collect_entry_passes_to_old() == 2; }

// Whether what the generation pass in progress leaves unexamined, holders
// below slot `first` and the entries its walk has not reached, is within
// the dead allowance of each kind whose members die in this program. In a
// program whose caches die, no entry may be left: a holder examined in this
// collection was found live through every reference the slices did not
// explore, and a key left unwalked may be the only seed that reaches the
// garbage referencing its code (a namespace that a dropped function and a
// map value both reach); unwalked keys would leave that holder attached
// beside the unexamined ones, past the allowance.
bool unexamined_within_allowance(const Registry *r, size_t first) {
    bool entries_left = map_walk_left(generation.maps);
    size_t holders = std::min(first, r->generations.pass_end) - std::min(first, r->generations.old_end);
    if (caches_die() &&
        (entries_left || static_cast<double>(holders) > dead_allowance(r->holders.size() - holders))) {
        return false;
    }
    size_t in_pass = ephemeron_generation_seed_count();
    size_t entries = entries_left ? in_pass - std::min(in_pass, generation.positions_walked) : 0;
    size_t others = ephemeron_entry_count() - std::min(entries, ephemeron_entry_count());
    return !map_entries_die() || static_cast<double>(entries) <= dead_allowance(others);
}

void begin_generation_pass(Registry *r, const MapScanCursor &maps) {
    collector_relist_module_dicts();
    collector_forget_live_structures();
    generations_begin_pass();
    generation = GenerationPass{true, r->generations.pass_end, maps, 0, 0};
}

// Slices of the generation pass in progress, from the top of
// [old_end, pass_end) down, each seeded with about kSliceSeconds' worth of
// holders and map entries (half of each while both are left: the entries'
// generations are walked from the youngest down too) and given the whole
// node budget. More follow in the same GC pass while they detach a holder:
// a pass that finds garbage goes on until it has found it all, and only one
// that finds everything live leaves the rest for the next GC passes.
// Youngest first, as the garbage a program just dropped is. In a
// generation-2 collection (`keep_bound`), slices also go on while what they
// leave unexamined is past the dead allowance
// (unexamined_within_allowance): dead caches below younger live ones are
// then within the bound when the collection ends.
//
// Going down keeps every holder of the runs in view: a detach moves holders
// only to lower slots and never out of their run (registry.h), so a holder
// not yet examined stays below the cursor, and the runs' bounds are re-read
// at every slice.
//
// `age` false leaves a pass that has examined its last slice unaged (still
// active, its cursor at the bottom), for the second look at the end of the
// collection (auto_collect_after_gc).
Py_ssize_t run_generation_slices(bool keep_bound, bool age = true) {
    Py_ssize_t detached = 0;
    for (;;) {
        // Re-read: code run by the previous slice's detaches may have
        // detached or attached holders, run collect() or torn everything down.
        Registry *r = registry_current();
        if (r == nullptr || r->closed) {
            generation.active = false;
            return detached;
        }
        const Generations &runs = r->generations;
        size_t end = std::max(std::min(generation.cursor, runs.pass_end), runs.old_end);
        bool maps_left = map_walk_left(generation.maps);
        if (end == runs.old_end && !maps_left) {
            if (!age) {
                return detached;
            }
            // Adaptive tenuring (auto_collect.h, rule 1), of each kind apart.
            generations_age(auto_collect_passes_to_old() == 1, auto_collect_entry_passes_to_old() == 1);
            generation.active = false;
            stats.generation_passes++;
            stats.last_generation_detached = generation.detached;
            return detached;
        }
        double share = maps_left && end != runs.old_end ? 0.5 : 1.0;
        size_t first = slice_first(runs.old_end, end, share);
        bool holders_done = first == runs.old_end;  // read now: the slice may run code that frees r
        size_t positions = maps_left ? slice_items(state.seconds_per_position, share) : 0;
        SliceFound slice =
            run_slice(first, end, collector_budget(), &generation.maps, positions, Scratch::kKeep);
        stats.generation_slices++;
        if (slice.found < 0) {
            return slice.found;  // still in progress: the next GC pass resumes it
        }
        detached += slice.found;
        generation.detached += slice.holders;
        generation.cursor = first;
        generation.positions_walked += slice.positions;
        bool last = holders_done && !map_walk_left(generation.maps);
        if (last) {
            collector_release_pass_memory();
        }
        if (slice.holders == 0 && !last) {
            r = registry_current();  // as at the top: the slice may have run code
            if (r == nullptr || r->closed) {
                continue;
            }
            if (!keep_bound || unexamined_within_allowance(r, first)) {
                return detached;
            }
        }
    }
}

// Rule 2: the sweep of every holder, one slice at a time.
bool sweep_slice_due(const Registry *r) {
    if (sweep.active) {
        return Clock::now() >= sweep.next_slice;
    }
    double predicted = state.seconds_per_holder * static_cast<double>(r->holders.size());
    return seconds_since(sweep.ended) >= sweep_wait(predicted, sweep.found_per_second, r->holders.size());
}

// A sweep goes from the last slot down. A detach fills its hole from the
// end of a generation (registry.h), that is from a higher slot: one this
// sweep has examined already, so none is skipped.
Py_ssize_t run_sweep_slice(const Registry *r) {
    if (!sweep.active) {
        collector_relist_module_dicts();
        sweep.active = true;
        sweep.cursor = r->holders.size();
        sweep.detached = 0;
    }
    size_t end = std::min(sweep.cursor, r->holders.size());
    size_t first = slice_first(0, end);
    Py_ssize_t budget = kYoungNodesPerHolder * static_cast<Py_ssize_t>(end - first) + kYoungBaseNodes;
    SliceFound slice = run_slice(first, end, budget, nullptr, 0, Scratch::kReleaseLarge);
    double seconds = collector_stats().last_seconds;
    stats.sweep_slices++;
    stats.sweep_detached += slice.holders;
    sweep.detached += slice.holders;
    sweep.cursor = first;
    if (first == 0) {
        sweep.active = false;
        // Found per second since the previous sweep ended (about nothing
        // before the first: its end is the clock's epoch).
        sweep.found_per_second = static_cast<double>(sweep.detached) / seconds_since(sweep.ended);
        sweep.ended = Clock::now();
        stats.sweeps++;
        stats.last_sweep_detached = sweep.detached;
    } else {
        sweep.next_slice = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(kSliceSpacing * seconds));
    }
    return slice.found;
}

// Rule 2: the map scan, one slice at a time. Not run more often while it
// finds entries, as the sweep is: map entries say nothing of the bound on
// holders (docs/design.md, "Map entries and map scans").
bool map_scan_slice_due() {
    if (map_scan.active) {
        return Clock::now() >= map_scan.next_slice;
    }
    const MapScans &scans = collector_map_scans();
    return ephemeron_entry_count() != 0 && seconds_since(scans.ended) >= kSweepPace * scans.seconds;
}

Py_ssize_t run_map_scan_slice() {
    if (!map_scan.active) {
        map_scan.active = true;
        map_scan.cursor = collector_map_scan_start();
        map_scan.seconds = 0.0;
    }
    // Per position walked (run_slice): the last slice of a scan walks fewer than it was given.
    size_t positions = slice_items(state.seconds_per_position, 1.0, kMapScanMinPositions);
    Py_ssize_t found =
        run_slice(0, 0, collector_budget(), &map_scan.cursor, positions, Scratch::kReleaseLarge).found;
    double seconds = collector_stats().last_seconds;
    map_scan.seconds += seconds;
    if (collector_map_scan_done(map_scan.cursor)) {
        map_scan.active = false;
        collector_record_map_scan(map_scan.seconds);
    } else {
        map_scan.next_slice = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(kSliceSpacing * seconds));
    }
    return found;
}

// Rule 3: young passes on every interval-th GC pass.
Py_ssize_t run_young_pass_if_due() {
    AutoCollectState::YoungPace &pace = state.young_pace;
    if (collector_stats().auto_detached != pace.auto_detached_seen) {
        pace.auto_detached_seen = collector_stats().auto_detached;  // a generation or sweep slice found a cache dead
        pace.interval = std::min(pace.interval, kYoungResumeInterval);
    }
    if (++pace.waited < pace.interval) {
        return 0;
    }
    pace.waited = 0;
    Py_ssize_t young = collector_young_count();
    if (young == 0) {
        return 0;
    }
    Py_ssize_t seeds = young < kYoungMaxSeeds ? young : kYoungMaxSeeds;
    Py_ssize_t detached = collector_collect_young(seeds, kYoungNodesPerHolder * seeds + kYoungBaseNodes);
    bool found_holders = collector_stats().auto_detached != pace.auto_detached_seen;
    pace.auto_detached_seen = collector_stats().auto_detached;
    pace.interval = found_holders                      ? 1
                    : pace.interval < kYoungMaxInterval ? pace.interval * 2
                                                        : kYoungMaxInterval;
    return detached;
}

}  // namespace

Py_ssize_t auto_collect_run(Registry *r, long gc_generation) {
    generation.second_look_due = false;  // a collection whose "stop" never came
    // The rules of auto_collect.h, in their order.
    if (gc_generation >= 2) {
        Py_ssize_t detached = 0;
        // The rest of a generation pass still in progress first, all of it:
        // each holder is examined while it is middle, and again while young.
        while (generation.active) {
            Py_ssize_t found = run_generation_slices(false);
            if (found < 0) {
                return found;
            }
            detached += found;
        }
        r = registry_current();  // the rest's detaches may have run code
        if (r == nullptr || r->closed) {
            return detached;
        }
        MapScanCursor maps = generation_map_walk();
        if (r->generations.pending(r->holders.size()) || map_walk_left(maps)) {
            begin_generation_pass(r, maps);
            generation.second_look_due = true;
            Py_ssize_t found = run_generation_slices(true, false);
            if (found < 0) {
                return found;
            }
            detached += found;
        }
        // Then one due slice of a map scan or else of the sweep, as any GC
        // pass runs: a program whose only GC passes are generation-2
        // collections (one that calls gc.collect() and allocates little)
        // still finds what died old.
        Py_ssize_t found = 0;
        r = registry_current();  // the pass's detaches may have run code
        if (map_scan_slice_due()) {
            found = run_map_scan_slice();
        } else if (r != nullptr && !r->closed && !r->holders.empty() && sweep_slice_due(r)) {
            found = run_sweep_slice(r);
        }
        return found < 0 ? found : detached + found;
    }
    if (generation.active) {
        return run_generation_slices(false);
    }
    if (map_scan_slice_due()) {
        return run_map_scan_slice();
    }
    if (!r->holders.empty() && sweep_slice_due(r)) {
        return run_sweep_slice(r);
    }
    return run_young_pass_if_due();
}

Py_ssize_t auto_collect_after_gc(Py_ssize_t collected) {
    if (!generation.second_look_due) {
        return 0;
    }
    generation.second_look_due = false;
    Registry *r = registry_current();
    if (!generation.active || r == nullptr || r->closed) {
        return 0;
    }
    if (collected > 0) {
        // From the top again, holders and map entries.
        generation.cursor = r->generations.pass_end;
        generation.maps = generation_map_walk();
        generation.positions_walked = 0;
        return run_generation_slices(true);
    }
    // Nothing freed, nothing to see again: a pass examined to the bottom ages.
    bool examined = generation.cursor <= r->generations.old_end && !map_walk_left(generation.maps);
    return examined ? run_generation_slices(false) : 0;
}

namespace {

// The integer `key` of a gc.callbacks info dict, or `fallback`.
long info_field(PyObject *info, const char *key, long fallback) {
    long result = fallback;
    if (PyDict_Check(info)) {
        PyObject *value = PyDict_GetItemString(info, key);  // borrowed
        if (value != nullptr && PyLong_Check(value)) {
            result = PyLong_AsLong(value);
        }
    }
    PyErr_Clear();
    return result;
}

// gc.callbacks calls this with (phase, info) around every GC pass. Both
// phases are safe places to run code and free objects: CPython does not start
// a nested collection from there, and on 3.10/3.11 they can be reached from
// any GC allocation, including those inside coextra's own functions (all
// reentrant).
PyObject *on_gc(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0])) {
        Py_RETURN_NONE;
    }
    bool start = PyUnicode_CompareWithASCIIString(args[0], "start") == 0;
    if (!start && PyUnicode_CompareWithASCIIString(args[0], "stop") != 0) {
        Py_RETURN_NONE;
    }
    Registry *r = registry_get();
    if (r == nullptr) {
        PyErr_Clear();  // torn down: nothing to collect
        Py_RETURN_NONE;
    }
    if (r->closed || compat::interpreter_finalizing() || collector_running() ||
        (r->holders.empty() && ephemeron_entry_count() == 0)) {
        Py_RETURN_NONE;
    }
    Py_ssize_t detached = start ? auto_collect_run(r, info_field(args[1], "generation", 2))
                                : auto_collect_after_gc(info_field(args[1], "collected", 0));
    if (detached < 0) {
        // A callback must not fail the GC pass that called it.
        PyErr_WriteUnraisable(nullptr);
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

PyMethodDef on_gc_def = {
    "_coextra_auto_collect", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(on_gc)),
    METH_FASTCALL, "coextra's automatic collection (in gc.callbacks)."};

// A new reference to gc.callbacks, or NULL with an exception.
Ref gc_callbacks() {
    Ref gc = Ref::steal(PyImport_ImportModule("gc"));
    Ref callbacks = gc ? Ref::steal(PyObject_GetAttrString(gc.get(), "callbacks")) : Ref();
    if (callbacks && !PyList_Check(callbacks.get())) {
        PyErr_SetString(PyExc_TypeError, "coextra: gc.callbacks is not a list");
        return Ref();
    }
    return callbacks;
}

}  // namespace

const AutoCollectStats &auto_collect_stats() { return stats; }

AutoCollectState &auto_collect_state() { return state; }

int auto_collect_passes_to_old() {
    return collector_stats().detached_by_collector == state.detached_at_program_start ? 1 : 2;
}

int auto_collect_entry_passes_to_old() {
    return collector_stats().entries_removed_by_collector == state.entries_removed_at_program_start ? 1 : 2;
}

int auto_collect_get() {
    if (state.callback == nullptr) {
        return 0;
    }
    Ref callbacks = gc_callbacks();
    if (!callbacks) {
        return -1;
    }
    int found = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(callbacks.get()); i++) {
        found |= PyList_GET_ITEM(callbacks.get(), i) == state.callback;
    }
    return found;
}

int auto_collect_set(bool enabled) {
    if (state.callback == nullptr) {
        state.callback = PyCFunction_New(&on_gc_def, nullptr);
        if (state.callback == nullptr) {
            return -1;
        }
    }
    Ref callbacks = gc_callbacks();
    if (!callbacks) {
        return -1;
    }
    int result = 0;
    bool present = false;
    // Walk backwards so removals do not skip items.
    for (Py_ssize_t i = PyList_GET_SIZE(callbacks.get()) - 1; i >= 0 && result == 0; i--) {
        if (PyList_GET_ITEM(callbacks.get(), i) != state.callback) {
            continue;
        }
        present = true;
        if (!enabled) {
            result = PyList_SetSlice(callbacks.get(), i, i + 1, nullptr);
        }
    }
    if (enabled && !present && result == 0) {
        result = PyList_Append(callbacks.get(), state.callback);
    }
    return result;
}

}  // namespace coextra::detail
