// capi.h -- the C API table (csrc/include/coextra/coextra.h) filled from the core.
//
// The extension module exports the table through the capsule
// coextra._coextra._C_API; the evalframe backend uses the same table, so it
// exercises exactly the functions a third-party backend gets.
#pragma once

#include "compat.h"

#include "include/coextra/coextra.h"

namespace coextra {

// The table of this build. Static storage: valid for the life of the process,
// which outlives the capsule that points at it.
const coextra_CAPI *capi_table();

// A new capsule named COEXTRA_CAPSULE_NAME around capi_table(), or NULL with
// an exception.
PyObject *capi_capsule();

}  // namespace coextra
