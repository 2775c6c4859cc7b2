// auto_collect.cpp -- the gc.callbacks entry point and its policy (auto_collect.h).
#include "auto_collect.h"

#include "collector.h"
#include "internals.h"
#include "registry.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace coextra::detail {

namespace {

using Clock = AutoCollectState::Clock;
using Sweep = AutoCollectState::Sweep;

// This file's part of internals (internals.h), and two of its members.
constexpr AutoCollectState &state = internals.auto_collect;
constexpr AutoCollectStats &stats = internals.auto_collect.stats;
constexpr Sweep &sweep = internals.auto_collect.sweep;

// Rule 1: the generation pass, with the ephemeron map entries when a map scan is due.
bool map_scan_due() {
    if (internals.ephemeron.entries == 0) {
        return false;
    }
    const MapScans &scans = collector_map_scans();
    if (scans.added_mark != internals.ephemeron.added_total || scans.quiet < 2) {
        return true;
    }
    double since = std::chrono::duration<double>(Clock::now() - scans.ended).count();
    return since >= kSweepPace * scans.seconds;
}

Py_ssize_t run_generation_pass(bool with_maps) {
    Py_ssize_t detached = collector_collect_generations(with_maps);
    stats.generation_passes++;
    stats.last_generation_detached = detached > 0 ? static_cast<uint64_t>(detached) : 0;
    return detached;
}

// Rule 2: the sweep of every holder, one slice at a time.
double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

bool sweep_slice_due(const Registry *r) {
    if (sweep.active) {
        return Clock::now() >= sweep.next_slice;
    }
    double predicted = sweep.seconds_per_holder * static_cast<double>(r->holders.size());
    return seconds_since(sweep.ended) >= kSweepPace * predicted;
}

// A sweep goes from the last slot down. A detach fills its hole from the
// end of a generation (registry.h), that is from a higher slot: one this
// sweep has examined already, so none is skipped.
Py_ssize_t run_sweep_slice(const Registry *r) {
    if (!sweep.active) {
        sweep = Sweep{true, r->holders.size(), 0, {}, {}, sweep.seconds_per_holder};
    }
    size_t seeds = static_cast<size_t>(kSliceMinSeeds);
    if (sweep.seconds_per_holder > 0.0) {
        seeds = std::max(seeds, static_cast<size_t>(kSliceSeconds / sweep.seconds_per_holder));
    }
    size_t end = std::min(sweep.cursor, r->holders.size());
    size_t first = end > seeds ? end - seeds : 0;
    seeds = end - first;
    Py_ssize_t budget = kYoungNodesPerHolder * static_cast<Py_ssize_t>(seeds) + kYoungBaseNodes;
    Py_ssize_t detached = collector_collect_slice(first, end, budget);
    double seconds = collector_stats().last_seconds;
    stats.sweep_slices++;
    if (seeds != 0) {
        sweep.seconds_per_holder = seconds / static_cast<double>(seeds);
    }
    sweep.detached += detached > 0 ? static_cast<uint64_t>(detached) : 0;
    sweep.cursor = first;
    if (first == 0) {
        sweep.active = false;
        sweep.ended = Clock::now();
        stats.sweeps++;
        stats.last_sweep_detached = sweep.detached;
    } else {
        sweep.next_slice = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(kSliceSpacing * seconds));
    }
    return detached;
}

// Rule 3: young passes on every interval-th GC pass.
Py_ssize_t run_young_pass_if_due() {
    AutoCollectState::YoungPace &pace = state.young_pace;
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
    pace.interval = detached != 0                      ? 1
                    : pace.interval < kYoungMaxInterval ? pace.interval * 2
                                                        : kYoungMaxInterval;
    return detached;
}

long generation_of(PyObject *info) {
    long generation = 2;
    if (PyDict_Check(info)) {
        PyObject *value = PyDict_GetItemString(info, "generation");  // borrowed
        if (value != nullptr && PyLong_Check(value)) {
            generation = PyLong_AsLong(value);
        }
    }
    PyErr_Clear();
    return generation;
}

// gc.callbacks calls this with (phase, info) around every GC pass. The "start"
// phase is a safe place to run code and free objects: CPython does not start a
// nested collection from there, and on 3.10/3.11 it can be reached from any GC
// allocation, including those inside coextra's own functions (all reentrant).
PyObject *on_gc(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyUnicode_Check(args[0]) ||
        PyUnicode_CompareWithASCIIString(args[0], "start") != 0) {
        Py_RETURN_NONE;
    }
    Registry *r = registry_get();
    if (r == nullptr) {
        PyErr_Clear();  // torn down: nothing to collect
        Py_RETURN_NONE;
    }
    if (r->closed || compat::interpreter_finalizing() || collector_running() ||
        (r->holders.empty() && internals.ephemeron.entries == 0)) {
        Py_RETURN_NONE;
    }
    // The rules of auto_collect.h, in their order.
    Py_ssize_t detached;
    bool full_collection = generation_of(args[1]) >= 2;
    bool maps_due = full_collection && map_scan_due();
    if (full_collection && (r->old_end < r->holders.size() || maps_due)) {
        detached = run_generation_pass(maps_due);
    } else if (!r->holders.empty() && sweep_slice_due(r)) {
        detached = run_sweep_slice(r);
    } else {
        detached = run_young_pass_if_due();
    }
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
PyObject *gc_callbacks() {
    PyObject *gc = PyImport_ImportModule("gc");
    if (gc == nullptr) {
        return nullptr;
    }
    PyObject *callbacks = PyObject_GetAttrString(gc, "callbacks");
    Py_DECREF(gc);
    if (callbacks != nullptr && !PyList_Check(callbacks)) {
        PyErr_SetString(PyExc_TypeError, "coextra: gc.callbacks is not a list");
        Py_CLEAR(callbacks);
    }
    return callbacks;
}

}  // namespace

const AutoCollectStats &auto_collect_stats() { return stats; }

int auto_collect_get() {
    if (state.callback == nullptr) {
        return 0;
    }
    PyObject *callbacks = gc_callbacks();
    if (callbacks == nullptr) {
        return -1;
    }
    int found = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(callbacks); i++) {
        found |= PyList_GET_ITEM(callbacks, i) == state.callback;
    }
    Py_DECREF(callbacks);
    return found;
}

int auto_collect_set(bool enabled) {
    if (state.callback == nullptr) {
        state.callback = PyCFunction_New(&on_gc_def, nullptr);
        if (state.callback == nullptr) {
            return -1;
        }
    }
    PyObject *callbacks = gc_callbacks();
    if (callbacks == nullptr) {
        return -1;
    }
    int result = 0;
    bool present = false;
    // Walk backwards so removals do not skip items.
    for (Py_ssize_t i = PyList_GET_SIZE(callbacks) - 1; i >= 0 && result == 0; i--) {
        if (PyList_GET_ITEM(callbacks, i) != state.callback) {
            continue;
        }
        present = true;
        if (!enabled) {
            result = PyList_SetSlice(callbacks, i, i + 1, nullptr);
        }
    }
    if (enabled && !present && result == 0) {
        result = PyList_Append(callbacks, state.callback);
    }
    Py_DECREF(callbacks);
    return result;
}

}  // namespace coextra::detail
