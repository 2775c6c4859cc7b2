// evalframe.h -- a PEP 523 frame-evaluation backend built on the C API.
//
// While enabled, every Python frame about to run is looked up in coextra
// through the same C API a third-party backend gets (capi.h: the header's
// inline coextra_holder_of(), then the table's front()). A frame
// whose code has an entry is a hit. Otherwise the Python callback is called
// with the code object, with the backend switched off on every thread for the
// duration of the call (so neither the callback's own frames nor other
// threads' frames recurse into it), and a result other than None is stored as
// an entry for that code. Either way the frame then runs with the evaluator
// that was installed before the backend, so program behaviour is unchanged; an
// exception raised by the callback is raised inside the frame that triggered
// it and propagates out of it.
//
// State is per process (coextra runs in the main interpreter only) and only
// touched with the GIL held.
#pragma once

#include "compat.h"

#include <cstdint>

namespace coextra {

struct EvalFrameStats {
    uint64_t frames;       // frames looked up (hits + misses)
    uint64_t hits;         // ... whose code had an entry
    uint64_t compiles;     // callback calls (one per miss)
    uint64_t stored;       // callback results stored as entries (not None)
    uint64_t passthrough;  // frames run untouched: a compile was in progress,
                           // the backend was disabled underneath another
                           // evaluator, or the frame was entered to throw
};

// Installs the backend with `callback` (called as callback(code)). When it is
// already enabled, only the callback is replaced: the evaluator underneath
// stays the one found by the first enable. Returns 0, or -1 with TypeError
// when callback is not callable.
int evalframe_enable(PyObject *callback);

// Switches the backend off and drops the callback. When the backend is still
// the installed evaluator, the one found at enable is restored; when another
// PEP 523 user installed itself on top since then (and so calls the backend
// underneath), the backend stays in that chain as a pass-through. A callback
// running at the time finishes normally and its result is still stored.
// No-op when disabled.
void evalframe_disable();

bool evalframe_is_enabled();

// The current callback, borrowed (owned by the backend until disable or the
// next enable), or NULL when disabled.
PyObject *evalframe_callback();

EvalFrameStats evalframe_stats();
void evalframe_reset_stats();

}  // namespace coextra
