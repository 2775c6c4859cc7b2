// capi.h -- the C API table (csrc/include/coextra/coextra.h) filled from the core.
//
// The extension module exports the table through the capsule
// coextra._coextra._C_API; the evalframe backend uses the same table, so it
// exercises exactly the functions a third-party backend gets.
#pragma once

#include "compat.h"

#include "include/coextra/coextra.h"

namespace coextra::detail {

// The table of this build. Static storage: valid for the life of the process,
// which outlives the capsule that points at it. Call it after registry_init()
// (the table learns the registry's co_extra index on the first call made
// while a registry exists).
const coextra_CAPI *capi_table();

// A new capsule named COEXTRA_CAPSULE_NAME around capi_table(), or NULL with
// an exception (RuntimeError when there is no registry).
PyObject *capi_capsule();

}  // namespace coextra::detail
