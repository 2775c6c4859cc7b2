// evalframe.h -- a PEP 523 frame-evaluation backend built on the C API.
//
// While the backend is on and its hook is the interpreter's evaluator, every
// Python frame about to run is looked up in coextra through the same C API a
// third-party backend gets (capi.h: the header's inline coextra_holder_of(),
// then the table's front()). A frame whose code has an entry is a hit.
// Otherwise the Python callback is called with the code object, with the
// backend switched off on every thread for the duration of the call (so
// neither the callback's own frames nor other threads' frames recurse into
// it) and, unless asked otherwise, with sys.settrace/sys.setprofile (and
// sys.monitoring, 3.12+) suspended on its thread: a backend's compile step is
// not the user's program. A result other than None is stored as an entry for
// that code. Either way the frame then runs with the evaluator that was
// installed before the backend; an exception raised by the callback is raised
// inside the frame that triggered it and propagates out of it.
//
// Other PEP 523 users. The interpreter has one evaluator; another user may
// install its own over the hook and later put back whatever it saved
// (PyTorch Dynamo puts back, at the end of a compiled region, the evaluator it
// found when the region began: CPython's default for a region entered before
// the hook was installed), which unhooks the backend without telling it. So nothing here
// trusts a remembered "installed" flag: is_enabled() and enable() compare
// with the interpreter's current evaluator. An evaluator that sits on top and
// calls the hook underneath is supported, including the loop that appears
// when the backend is then installed over it (the hook recognises the frame
// it is already passing down and runs it with CPython's default evaluator).
// While the callback runs (unless `trace`), an evaluator on top is set aside
// and the hook is the interpreter's evaluator, so the callback's frames never
// reach it; it is put back afterwards if it is still the hook that is current
// (evalframe.cpp, set_aside_evaluator_above, says what that costs other
// threads). The functions below treat the set-aside evaluator as current.
//
// State is per process (internals.h; coextra runs in the main interpreter
// only) and only touched with the GIL held.
#pragma once

#include "compat.h"

#include <cstdint>
#include <pthread.h>

namespace coextra::detail {

struct EvalFrameStats {
    uint64_t frames;       // frames looked up (hits + misses)
    uint64_t hits;         // ... whose code had an entry
    uint64_t compiles;     // callback calls (one per miss)
    uint64_t stored;       // callback results stored as entries (not None)
    uint64_t passthrough;  // frames run untouched: a compile was in progress,
                           // the backend was off but still in another
                           // evaluator's chain, or the frame was entered to throw
};

// The backend's part of internals (internals.h).
struct EvalFrameState {
    // Owned (one reference) while enabled, NULL when disabled.
    PyObject *callback = nullptr;
    // The evaluator underneath: frames always run with it. Set whenever the
    // hook is installed and never cleared, so a call that reaches the hook
    // after disable (another evaluator's chain) still finds it.
    compat::EvalFrameFunction previous = nullptr;
    // What `previous` becomes when disable() hands the interpreter back to
    // it: the evaluator the hook ran frames with before it was installed over
    // `previous`. If `previous` is an evaluator that had been installed over
    // the hook (and so calls it), frames then flow previous -> hook ->
    // underneath, and again hook -> underneath once that evaluator puts the
    // hook back as it leaves: never into an evaluator that has left.
    compat::EvalFrameFunction underneath = nullptr;
    bool enabled = false;
    bool trace = false;  // enable's `trace`: leave tracing on in the callback
    // A callback is in progress (on any thread). While set, every frame passes
    // through. At most one at a time: a compile starts only while none is in
    // progress, and the GIL serialises the hook.
    bool compiling = false;
    pthread_t compiling_thread{};  // valid while compiling
    // enabled && !compiling.
    bool active = false;
    // active && previous is CPython's default evaluator: the one flag the
    // hook tests per frame on its common path (update_active keeps it).
    bool direct = false;
    // While a callback runs: the evaluator that was the interpreter's when
    // the hook was reached through it, set aside for the callback (the hook is
    // the interpreter's evaluator meanwhile); NULL otherwise.
    compat::EvalFrameFunction above = nullptr;
    // Frames looked up that were not hits (frames = hits + misses).
    uint64_t misses = 0;
    EvalFrameStats stats{};
};

// Turns the backend on with `callback` (called as callback(code)). The hook is
// (re)installed whenever it is not the interpreter's current evaluator, over
// whatever evaluator is current then; when it is already current, only the
// callback (and `trace`) change. `trace`: let tracers and profilers see the
// callback's frames (for debugging a backend). `callback` must be callable:
// the Python functions check it with their arguments.
void evalframe_enable(PyObject *callback, bool trace);

// Switches the backend off and drops the callback. When the hook is the
// current evaluator, the one it runs frames with is restored; when another
// evaluator is current, it is left alone (if it calls the hook, frames pass
// through). A callback running at the time finishes normally and its result
// is still stored. No-op when off.
void evalframe_disable();

// True when the backend is on and its hook is the interpreter's evaluator.
bool evalframe_is_enabled();

// The current callback, borrowed (owned by the backend until disable or the
// next enable), or NULL when disabled.
PyObject *evalframe_callback();

// Whether the callback runs with tracing and profiling on (enable's `trace`).
bool evalframe_traces_callback();

EvalFrameStats evalframe_stats();
void evalframe_reset_stats();

// In a child process after fork(): a compile that another thread of the
// parent had in progress will never finish here, so it is forgotten and the
// evaluator it set aside is put back (as the compile would have done).
void evalframe_after_fork_child();

}  // namespace coextra::detail
