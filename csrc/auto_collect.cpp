// auto_collect.cpp -- the gc.callbacks entry point and its policy (auto_collect.h).
#include "auto_collect.h"

#include "collector.h"
#include "registry.h"

#include <chrono>
#include <cstdint>

namespace coextra::detail {

namespace {

using Clock = std::chrono::steady_clock;

// Bookkeeping for the generation-2 rules, updated after every automatic full pass.
struct FullPassMarks {
    uint64_t attached_total = 0;  // registry->attached_total after it
    size_t holders = 0;           // holders attached after it
    Clock::time_point ended{};    // when it ended
    double seconds_per_holder = 0.0;  // its duration over the holders it started with
};

FullPassMarks last_full;

// Young passes run on every interval-th GC pass (see auto_collect.h).
struct YoungPace {
    int interval = 1;
    int waited = 0;
};

YoungPace young_pace;

// Rule (a) of auto_collect.h: enough attachments since the last full pass
// that its dead ones could exceed the bound.
bool attachment_rule(const Registry *r) {
    uint64_t attached_since = r->attached_total - last_full.attached_total;
    uint64_t threshold = last_full.holders / kLiveDivisor;
    if (threshold < static_cast<uint64_t>(kFullPassMinAttached)) {
        threshold = kFullPassMinAttached;
    }
    return attached_since >= threshold;
}

// Rule (b): enough time since the last full pass for another to cost at
// most 1/kFullPassPause of it.
bool time_rule(const Registry *r) {
    double predicted = last_full.seconds_per_holder * static_cast<double>(r->holders.size());
    std::chrono::duration<double> since = Clock::now() - last_full.ended;
    return since.count() >= kFullPassPause * predicted;
}

// A full pass, and the marks of both rules. -1 with the pass's exception set.
Py_ssize_t run_full_pass(const Registry *r) {
    size_t examined = r->holders.size();
    Py_ssize_t detached = collector_collect_auto_full();
    if (detached >= 0) {  // else keep the pass's exception for on_gc to report
        if (Registry *now = registry_get()) {
            last_full.attached_total = now->attached_total;
            last_full.holders = now->holders.size();
        } else {
            PyErr_Clear();  // torn down by code run while detaching
        }
    }
    last_full.ended = Clock::now();
    const CollectorStats &stats = collector_stats();
    last_full.seconds_per_holder =
        examined != 0 ? stats.last_seconds / static_cast<double>(examined) : 0.0;
    return detached;
}

Py_ssize_t run_young_pass_if_due() {
    if (++young_pace.waited < young_pace.interval) {
        return 0;
    }
    young_pace.waited = 0;
    Py_ssize_t young = collector_young_count();
    if (young == 0) {
        return 0;
    }
    Py_ssize_t seeds = young < kYoungMaxSeeds ? young : kYoungMaxSeeds;
    Py_ssize_t detached = collector_collect_young(seeds, kYoungNodesPerHolder * seeds + kYoungBaseNodes);
    young_pace.interval = detached != 0                           ? 1
                          : young_pace.interval < kYoungMaxInterval ? young_pace.interval * 2
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
        r->holders.empty()) {
        Py_RETURN_NONE;
    }
    Py_ssize_t detached = (generation_of(args[1]) >= 2 && (attachment_rule(r) || time_rule(r)))
                              ? run_full_pass(r)
                              : run_young_pass_if_due();
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

// The callback object; created once and kept forever (a static reference) so
// identity checks against gc.callbacks stay meaningful.
PyObject *the_callback = nullptr;

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

int auto_collect_get() {
    if (the_callback == nullptr) {
        return 0;
    }
    PyObject *callbacks = gc_callbacks();
    if (callbacks == nullptr) {
        return -1;
    }
    int found = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(callbacks); i++) {
        found |= PyList_GET_ITEM(callbacks, i) == the_callback;
    }
    Py_DECREF(callbacks);
    return found;
}

int auto_collect_set(bool enabled) {
    if (the_callback == nullptr) {
        the_callback = PyCFunction_New(&on_gc_def, nullptr);
        if (the_callback == nullptr) {
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
        if (PyList_GET_ITEM(callbacks, i) != the_callback) {
            continue;
        }
        present = true;
        if (!enabled) {
            result = PyList_SetSlice(callbacks, i, i + 1, nullptr);
        }
    }
    if (enabled && !present && result == 0) {
        result = PyList_Append(callbacks, the_callback);
    }
    Py_DECREF(callbacks);
    return result;
}

}  // namespace coextra::detail
