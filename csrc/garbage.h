// garbage.h -- carrying out a pass's decision (docs/design.md, "The
// collector", step 5): detaching the holders of the code objects it found
// unreachable and removing the ephemeron entries of the keys it found so.
//
// Reads the finished analysis in a Pass (collector_pass.h) and owns nothing
// past the call: the references it takes to what it detaches are its own and
// dropped before it returns.
#pragma once

#include "collector_pass.h"
#include "compat.h"
#include "holder.h"
#include "registry.h"

namespace coextra::detail {

struct Garbage {
    Py_ssize_t holders = 0;  // detached
    Py_ssize_t entries = 0;  // map entries removed
};

// Detaches the holders of the code nodes and removes the entries of the
// key -> entry edges of `pass` that are not live; `holders` is the
// registry's table, unchanged since the analysis (a holder index node names
// its holder by slot). First every one of them is detached while we hold a
// strong reference to it, so no detach can free anything and no Python code
// runs until all decisions are carried out; then our references are dropped,
// which frees entries and products and may run arbitrary code (which may
// attach, detach, change a map or collect: all of that is safe). Returns
// what it found, or -1 holders with MemoryError.
Garbage detach_garbage(Pass &pass, const HolderTable &holders);

}  // namespace coextra::detail
