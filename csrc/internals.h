// internals.h -- the start-up and the shutdown that order coextra's
// process-wide state, and the state of the concepts that share one struct.
//
// coextra runs in the main interpreter only (registry.h), so its state is per
// process. The registry, holders, entries, ephemeron maps, the C API table
// and the evalframe backend keep theirs in their own files, behind their
// headers' functions. The collector and automatic collection keep theirs in
// the one Internals object below: each member is the state of one concept,
// declared in that concept's header and written by its .cpp file only.
// Nothing else in the core lives beyond a call, except: the types' static
// PyTypeObjects; in evalframe.cpp, one thread-local flag of the hook and that
// file's copy of the public header's table pointer (coextra_api), which the
// header's inline functions read, as in any client of the C API. Everything
// is touched with the GIL held.
//
// Start-up (internals_start, from the module's init): the registry (which
// requests the co_extra index), automatic collection in gc.callbacks, a fork
// handler, and one atexit callback. The C API table is made (const) when the
// module first asks for the capsule, right after, and never changes.
//
// Shutdown (that atexit callback: atexit runs first in Py_FinalizeEx, while
// every object still works), in this order:
//   1. the evalframe backend off, handing frames back to the evaluator
//      underneath and releasing the backend's callback while it can still run;
//   2. the registry closed (no attachment after this point) and every holder
//      detached, including those of deep-frozen code, which CPython never frees
//      (3.11, 3.12); automatic collection then finds nothing to do;
//   3. the collector's scratch memory freed.
// What remains (the registry object, the callback in gc.callbacks) goes with
// the module during finalization; the co_extra index stays reserved (CPython
// never releases one).
//
// fork(): the child forgets a collector pass or an evalframe compile that
// another thread of the parent had in progress (collector.h, evalframe.h).
#pragma once

#include "auto_collect.h"
#include "capi.h"
#include "collector.h"
#include "compat.h"
#include "ephemeron_map.h"
#include "evalframe.h"
#include "registry.h"

namespace coextra::detail {

struct Internals {
    CollectorState collector;          // collector.cpp
    AutoCollectState auto_collect;     // auto_collect.cpp
    bool process_hooks = false;        // internals.cpp: fork handler and atexit registered
};

// The one instance (static storage: it outlives the interpreter).
extern Internals internals;

// Returns a new reference to the registry, for the module to own, or NULL
// with an exception. The fork handler and the atexit callback are registered
// once per process, whatever the number of calls.
PyObject *internals_start();

// The shutdown above. Idempotent; safe before any start-up.
void internals_shutdown();

}  // namespace coextra::detail
