// registry.h -- Registry: the one owner of every attached holder.
//
// There is one Registry per interpreter (coextra loads in the main interpreter
// only; see registry_init). It is a GC-tracked Python object owned by the
// extension module, and it holds one strong reference to every attached holder.
// A code object's co_extra slot holds only a non-owning pointer to its holder
// (the "weak proxy"), so lookup from C is one co_extra read.
//
// Detach (docs/design.md, invariant 3) is one operation with one order, used by code
// deallocation, detach(), reset(), the cycle collector and interpreter teardown:
//   1. mark the holder detached (holder->code = NULL),
//   2. clear the co_extra slot (unless the code object is being freed),
//   3. drop the registry's reference.
// Step 3 may run arbitrary Python code (a product's __del__), so the registry
// is consistent before it happens.
#pragma once

#include "compat.h"
#include "generations.h"
#include "holder.h"
#include "system_memory.h"

#include <cstdint>
#include <vector>

namespace coextra::detail {

// The registry's table of attached holders, by registry slot. Its blocks
// come from system_memory.h: a table of a million holders leaves none of
// the smaller blocks it grew through resident.
using HolderTable = std::vector<Holder *, system_memory::Allocator<Holder *>>;

// Generations. `holders` is kept in the runs of `generations` (old, middle,
// young examined by the generation pass in progress, young attached since;
// generations.h, and docs/design.md, "Generations", for the policy). An
// attachment appends to the last run; a detach fills the hole as
// Generations::remove says, so the runs stay contiguous whatever is
// detached, a holder never changes runs that way, and every holder it moves
// goes to a lower slot. Generations only decide what automatic collection
// examines when; any set of seeds gives a sound pass.
struct Registry {
    PyObject_HEAD
    HolderTable holders;           // owned references; holders[h->registry_slot] == h
    Generations generations;       // over holders; see "Generations"
    bool closed;                   // teardown ran: no new attachments
    uint64_t attached_total;       // holders ever attached
    uint64_t detached_total;       // holders ever detached, for any reason
};

extern PyTypeObject RegistryType;

// The live registry, borrowed, or NULL (no exception) when there is none:
// before registry_init and once the registry object is gone. Valid until
// Python code runs (a detach may run any).
Registry *registry_current();

// coextra's co_extra index: requested once per process, by the first
// registry_init, and never changed (CPython never releases one); -1 before.
Py_ssize_t registry_extra_index();

// Readies the types, requests the co_extra index and creates the registry
// (lifecycle_start calls it). Returns a new reference to the registry, or
// NULL with an exception (ImportError outside the main interpreter).
PyObject *registry_init();

// The live registry, or NULL with RuntimeError once it has been destroyed.
Registry *registry_get();

// The holder attached to `code` (a code object), borrowed, or NULL without an
// exception when there is none. Valid until the holder is detached.
Holder *registry_holder_of(PyObject *code);

// The holder of `code`, created and attached if missing. Borrowed (the registry
// owns it); NULL with an exception on failure or after teardown.
Holder *registry_ensure(PyObject *code);

// Detaches h. Returns 1 if it was attached, 0 if it was already detached.
int registry_detach(Holder *h);

// Checks the registry's table, after its generations' bounds moved: the
// bounds in order, and every slot holding an attached holder that knows its
// slot. Linear in the holders, so only in builds with assertions.
void registry_validate(const Registry *r);

// Detaches every holder attached when the call starts; returns how many.
// Returns -1 with an exception when memory for the snapshot is exhausted.
Py_ssize_t registry_reset();

// Interpreter teardown (lifecycle_shutdown): refuses new attachments, then
// detaches everything, including holders on deep-frozen stdlib code whose
// free function CPython never calls (3.11, 3.12). Idempotent.
void registry_teardown();

// A new list of every attached holder, or NULL with an exception.
PyObject *registry_holders();

// The co_extra free function coextra registered (exposed for the C++ tests,
// which call it the way CPython does: with NULL and with detached holders).
freefunc registry_free_function();

}  // namespace coextra::detail
