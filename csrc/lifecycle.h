// lifecycle.h -- coextra's process-wide state, and the one start-up and the
// one shutdown that order it.
//
// coextra runs in the main interpreter only (registry.h), so its state is per
// process. Each piece is private to the file of the concept it belongs to:
//
//   registry.cpp      the Registry (owner of every attached holder), its
//                     co_extra index, the interpreter it belongs to
//   capi.cpp          the C API table (const, filled once before the capsule
//                     is exported) and its copy of the co_extra index
//   collector.cpp     the running flag, the node budget, the young-pass mark,
//                     a young pass's retained scratch arrays, the module-dict
//                     index, the collector's statistics
//   auto_collect.cpp  the gc.callbacks entry, the sweep's cursor and pace, the
//                     young passes' pace, their statistics
//   evalframe.cpp     the installed hook, the backend's callback, the
//                     evaluator underneath, statistics; one thread-local flag
//   live_counts.h     holders and entries alive (for the leak tests)
//
// Start-up (lifecycle_start, from the module's init): the registry, automatic
// collection in gc.callbacks, a fork handler, and one atexit callback.
//
// Shutdown (that atexit callback: atexit runs first in Py_FinalizeEx, while
// every object still works), in this order:
//   1. the evalframe backend off, handing frames back to the evaluator
//      underneath and releasing the backend's callback while it can still run;
//   2. the registry closed (no attachment after this point) and every holder
//      detached, including those of deep-frozen code, which CPython never frees
//      (3.11, 3.12); automatic collection then finds nothing to do.
// What remains (the registry object, the callback in gc.callbacks) goes with
// the module during finalization.
//
// fork(): the child forgets a collector pass or an evalframe compile that
// another thread of the parent had in progress (collector.h, evalframe.h).
#pragma once

#include "compat.h"

namespace coextra::detail {

// Returns a new reference to the registry, for the module to own, or NULL
// with an exception. The fork handler and the atexit callback are registered
// once per process, whatever the number of calls.
PyObject *lifecycle_start();

// The shutdown above. Idempotent; safe before any start-up.
void lifecycle_shutdown();

}  // namespace coextra::detail
