// registry.cpp -- the Registry type, attachment and the single detach operation.
#include "registry.h"

#include <cassert>
#include <new>

namespace coextra::detail {

// The registry concept's state: per process, touched with the GIL held.
struct RegistryState {
    // Borrowed: set by registry_init, cleared by the registry's own dealloc,
    // so it is valid whenever it is non-NULL.
    Registry *registry = nullptr;
    // The interpreter the registry belongs to. CPython may hand a
    // subinterpreter a copy of this module's functions without running its
    // init (3.13 does, for an extension already loaded in the main
    // interpreter), so every entry point checks it: co_extra indices are per
    // interpreter.
    PyInterpreterState *home_interpreter = nullptr;
    // coextra's co_extra index. CPython never releases one, so it is requested
    // once per process, even if the registry is recreated, and never changes.
    Py_ssize_t extra_index = -1;
};

static RegistryState state;

Registry *registry_current() { return state.registry; }

Py_ssize_t registry_extra_index() { return state.extra_index; }

static bool in_home_interpreter() { return PyInterpreterState_Get() == state.home_interpreter; }

Registry *registry_get() {
    if (state.registry == nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "coextra: the registry has been destroyed");
    } else if (!in_home_interpreter()) {
        PyErr_SetString(PyExc_RuntimeError,
                        "coextra supports the main interpreter only, not subinterpreters");
        return nullptr;
    }
    return state.registry;
}

// Checks the table where the generations' bounds change, as gc.c's
// validate_list does (registry.h); a detach checks the slots it wrote.
#ifdef NDEBUG
static void validate_slot(const Registry *, size_t) {}
void registry_validate(const Registry *) {}
#else
static void validate_slot(const Registry *r, size_t slot) {
    const Holder *h = r->holders[slot];
    assert(holder_attached(h) && "a detached holder in the registry");
    assert(h->registry_slot == slot && "a holder that does not know its slot");
    assert(registry_holder_of(h->code) == h && "a code object whose co_extra is not its holder");
}

void registry_validate(const Registry *r) {
    r->generations.validate(r->holders.size());
    for (size_t slot = 0; slot < r->holders.size(); slot++) {
        validate_slot(r, slot);
    }
}
#endif

static void place(Registry *r, Holder *h, size_t slot) {
    r->holders[slot] = h;
    h->registry_slot = static_cast<uint32_t>(slot);
}

// Removes holders[slot], keeping the generations contiguous
// (Generations::remove). A hole already at the end of a run (that run's
// last holder was removed, or the run is empty) moves without copying: the
// slot holds a stale pointer then, until the last slot goes.
static void remove_slot(Registry *r, size_t slot) {
    r->generations.remove(slot, r->holders.size(), [r](size_t from, size_t to) {
        place(r, r->holders[from], to);
        validate_slot(r, to);
    });
    r->holders.pop_back();
}

// The one detach operation (see registry.h for the order and why).
static void detach(Registry *r, Holder *h, bool clear_slot) {
    PyObject *code = h->code;
    holder_mark_detached(h);
    if (clear_slot) {
        // CPython calls our free function with the old value; it sees a
        // detached holder and returns. Writing NULL to an existing slot of a
        // valid index cannot fail.
        compat::code_set_extra(code, state.extra_index, nullptr);
    }
    remove_slot(r, h->registry_slot);
    r->detached_total++;
    Py_DECREF(h);
}

// The co_extra free function. CPython calls it for every slot of a code object
// being freed, set or not, and with the old value when a slot is overwritten.
static void free_extra(void *value) {
    Holder *h = static_cast<Holder *>(value);
    if (h == nullptr || !holder_attached(h)) {
        return;  // unset slot, or a detach clearing the slot itself
    }
    // Attached implies the registry is alive (it owns h). The code object is
    // being freed: its slots are going away, so leave them alone.
    detach(state.registry, h, /*clear_slot=*/false);
}

freefunc registry_free_function() { return free_extra; }

Holder *registry_holder_of(PyObject *code) {
    if (state.registry == nullptr || !in_home_interpreter()) {
        return nullptr;
    }
    void *value = nullptr;
    if (compat::code_get_extra(code, state.extra_index, &value) < 0) {
        PyErr_Clear();  // only fails for a non-code object; callers pass code
        return nullptr;
    }
    return static_cast<Holder *>(value);
}

Holder *registry_ensure(PyObject *code) {
    Registry *r = registry_get();
    if (r == nullptr) {
        return nullptr;
    }
    if (Holder *existing = registry_holder_of(code)) {
        return existing;
    }
    if (r->closed) {
        PyErr_SetString(PyExc_RuntimeError,
                        "coextra: the interpreter is shutting down; no new holders are attached");
        return nullptr;
    }
    Holder *h = holder_new();
    if (h == nullptr) {
        return nullptr;
    }
    // The allocation may have run a GC pass (3.10/3.11) and callbacks that
    // attached a holder to this very code object: use theirs.
    if (Holder *existing = registry_holder_of(code)) {
        Py_DECREF(h);
        return existing;
    }
    try {
        r->holders.push_back(h);  // the registry now owns our reference
    } catch (const std::bad_alloc &) {
        Py_DECREF(h);
        PyErr_NoMemory();
        return nullptr;
    }
    h->registry_slot = static_cast<uint32_t>(r->holders.size() - 1);
    holder_mark_attached(h, code);
    if (compat::code_set_extra(code, state.extra_index, h) < 0) {
        holder_mark_detached(h);
        r->holders.pop_back();
        Py_DECREF(h);
        return nullptr;
    }
    r->attached_total++;
    return h;
}

int registry_detach(Holder *h) {
    if (!holder_attached(h)) {
        return 0;
    }
    detach(state.registry, h, /*clear_slot=*/true);
    return 1;
}

Py_ssize_t registry_reset() {
    Registry *r = registry_get();
    if (r == nullptr) {
        return -1;
    }
    // Snapshot with our own references: each detach may run __del__ methods
    // that attach or detach other holders. Holders attached meanwhile stay.
    HolderTable snapshot;
    try {
        snapshot = r->holders;
    } catch (const std::bad_alloc &) {
        PyErr_NoMemory();
        return -1;
    }
    for (Holder *h : snapshot) {
        Py_INCREF(h);
    }
    Py_ssize_t detached = 0;
    for (Holder *h : snapshot) {
        detached += registry_detach(h);
        Py_DECREF(h);
    }
    return detached;
}

static void detach_all(Registry *r) {
    while (!r->holders.empty()) {
        detach(r, r->holders.back(), /*clear_slot=*/true);
    }
}

void registry_teardown() {
    if (state.registry == nullptr) {
        return;
    }
    state.registry->closed = true;  // no attachment can start after this point
    detach_all(state.registry);
}

PyObject *registry_holders() {
    Registry *r = registry_get();
    if (r == nullptr) {
        return nullptr;
    }
    PyObject *list = PyList_New(static_cast<Py_ssize_t>(r->holders.size()));
    if (list == nullptr) {
        return nullptr;
    }
    for (size_t i = 0; i < r->holders.size(); i++) {
        PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i),
                        Py_NewRef(reinterpret_cast<PyObject *>(r->holders[i])));
    }
    return list;
}

// ---------------------------------------------------------------------------
// GC contract of Registry.
//   Owns:     one strong reference to every attached holder (holders).
//   Owned by: the coextra._coextra module (attribute _registry); state.registry
//             (RegistryState) is a borrowed alias cleared in dealloc.
//   Traverse: visits every attached holder, so gc.get_referrers(holder) shows
//             a real owner and the GC sees the path module -> holder -> entry.
//   Clear:    detaches every holder. The GC only calls it when the registry
//             itself is garbage, that is while the interpreter tears down.

static int registry_traverse(PyObject *op, visitproc visit, void *arg) {
    Registry *r = reinterpret_cast<Registry *>(op);
    for (Holder *h : r->holders) {
        Py_VISIT(reinterpret_cast<PyObject *>(h));
    }
    return 0;
}

static int registry_clear(PyObject *op) {
    Registry *r = reinterpret_cast<Registry *>(op);
    r->closed = true;
    detach_all(r);
    return 0;
}

static void registry_dealloc(PyObject *op) {
    Registry *r = reinterpret_cast<Registry *>(op);
    PyObject_GC_UnTrack(op);
    registry_clear(op);
    if (state.registry == r) {
        state.registry = nullptr;
    }
    r->holders.~HolderTable();
    PyObject_GC_Del(op);
}

PyTypeObject RegistryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

static int registry_type_ready() {
    if (RegistryType.tp_flags & Py_TPFLAGS_READY) {
        return 0;
    }
    RegistryType.tp_name = "coextra.Registry";
    RegistryType.tp_doc = "Owner of every attached coextra holder (one per interpreter).";
    RegistryType.tp_basicsize = sizeof(Registry);
    RegistryType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    RegistryType.tp_dealloc = registry_dealloc;
    RegistryType.tp_traverse = registry_traverse;
    RegistryType.tp_clear = registry_clear;
    return PyType_Ready(&RegistryType);
}

PyObject *registry_init() {
    if (state.registry != nullptr) {
        return Py_NewRef(reinterpret_cast<PyObject *>(state.registry));
    }
    if (PyInterpreterState_Get() != PyInterpreterState_Main()) {
        PyErr_SetString(PyExc_ImportError,
                        "coextra supports the main interpreter only, not subinterpreters");
        return nullptr;
    }
    state.home_interpreter = PyInterpreterState_Get();
    if (entry_type_ready() < 0 || holder_type_ready() < 0 || registry_type_ready() < 0) {
        return nullptr;
    }
    if (state.extra_index < 0) {
        state.extra_index = compat::request_code_extra_index(free_extra);
        if (state.extra_index < 0) {
            PyErr_SetString(PyExc_ImportError, "coextra: no co_extra index left in this interpreter");
            return nullptr;
        }
    }
    Registry *r = PyObject_GC_New(Registry, &RegistryType);
    if (r == nullptr) {
        return nullptr;
    }
    new (&r->holders) HolderTable();
    new (&r->generations) Generations();
    r->closed = false;
    r->attached_total = 0;
    r->detached_total = 0;
    PyObject_GC_Track(r);
    state.registry = r;
    return reinterpret_cast<PyObject *>(r);
}

}  // namespace coextra::detail
