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
// State is per process (evalframe.cpp; coextra runs in the main interpreter
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
