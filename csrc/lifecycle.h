// lifecycle.h -- the order of coextra's start-up, shutdown and fork.
//
// coextra runs in the main interpreter only (registry.h), so its state is per
// process, and each concept keeps its own in its own files, behind its
// header's functions. This file only orders them. Nothing else in the core
// lives beyond a call, except: the types' static PyTypeObjects; in
// evalframe.cpp, one thread-local flag of the hook and that file's copy of the
// public header's table pointer (coextra_api), which the header's inline
// functions read, as in any client of the C API. Everything is touched with
// the GIL held.
//
// Start-up (lifecycle_start, from the module's init): the registry (which
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

#include "compat.h"

namespace coextra::detail {

// Returns a new reference to the registry, for the module to own, or NULL
// with an exception. The fork handler and the atexit callback are registered
// once per process, whatever the number of calls.
PyObject *lifecycle_start();

// The shutdown above. Idempotent; safe before any start-up.
void lifecycle_shutdown();

}  // namespace coextra::detail
