// capi.h -- the C API table (csrc/include/coextra/coextra.h) filled from the core.
//
// The extension module exports the table through the capsule
// coextra._coextra._C_API; the evalframe backend uses the same table, so it
// exercises exactly the functions a third-party backend gets.
#pragma once

#include "compat.h"

#include "include/coextra/coextra.h"
#include "include/coextra/ref.hpp"

namespace coextra::detail {

// The table of this build, const once made: the first capi_capsule() makes it
// (the module does, at import, after registry_init), NULL before. Static
// storage: valid for the life of the process, which outlives the capsule.
const coextra_CAPI *capi_table();

// A new capsule named COEXTRA_CAPSULE_NAME around the table (made on the
// first call), or NULL with an exception (RuntimeError when there is no
// registry).
PyObject *capi_capsule();

}  // namespace coextra::detail
