// capi.cpp -- the C API table: thin adapters from coextra.h's PyObject*
// signatures to the core's Holder/Entry functions.
#include "capi.h"

#include "collector.h"
#include "ephemeron_map.h"

#include "holder.h"
#include "registry.h"

namespace coextra::detail {

namespace {

Holder *as_holder(PyObject *holder) { return reinterpret_cast<Holder *>(holder); }
Entry *as_entry(PyObject *entry) { return reinterpret_cast<Entry *>(entry); }

// The per-frame functions read the slot with the registry's co_extra index
// directly instead of going through registry_holder_of: one call less on the
// hottest path (see bench/bench_evalframe.py). Same answer: a non-NULL slot
// always points to an attached holder, because every detach, teardown
// included, clears it. The index is set before the capsule exists and never
// changes (registry.h).
//
// This file's state: the table, made once (capi_capsule), and a copy of its
// co_extra index, which the table's functions (reachable only through it)
// read.
const coextra_CAPI *made_table = nullptr;
Py_ssize_t slot_index = -1;
// The interpreter whose co_extra slots hold holders (registry.h): in any
// other one the slot at slot_index is another co_extra user's.
PyInterpreterState *main_interpreter = nullptr;

Holder *read_slot(PyObject *code) {
    void *value = nullptr;
    Py_ssize_t index = slot_index;
    if (index < 0 || code == nullptr || compat::code_get_extra(code, index, &value) < 0) {
        if (index >= 0) {
            PyErr_Clear();  // only fails for a non-code object
        }
        return nullptr;
    }
    // A single-phase extension can call from a legacy subinterpreter
    // (docs/c-api.md); checked on hits only, a miss is right anywhere.
    if (value != nullptr && PyInterpreterState_Get() != main_interpreter) {
        return nullptr;
    }
    return static_cast<Holder *>(value);
}

PyObject *api_holder_of(PyObject *code) { return reinterpret_cast<PyObject *>(read_slot(code)); }

PyObject *api_ensure(PyObject *code) {
    if (code == nullptr || !PyCode_Check(code)) {
        PyErr_Format(PyExc_TypeError, "coextra: ensure() takes a code object (a function's __code__), not %s%.200s%s",
                     code ? "a '" : "", code ? Py_TYPE(code)->tp_name : "NULL", code ? "' object" : "");
        return nullptr;
    }
    // Our own reference for the call (target.h's code_ref says why). If it
    // is the last one when we are done, the caller's reference went away
    // while we allocated: the code object dies now, and with it the holder,
    // so there is nothing valid to return.
    Ref held = Ref::borrow(code);
    Holder *h = registry_ensure(code);
    if (h != nullptr && Py_REFCNT(code) == 1) {
        h = nullptr;
        PyErr_SetString(PyExc_RuntimeError,
                        "coextra: ensure(): the code object lost its last reference during the call");
    }
    return reinterpret_cast<PyObject *>(h);
}

// Functions that can run Python code (an allocation's GC pass on 3.10/3.11, a
// guard, a visit) hold their own reference to the holder meanwhile (`keep`):
// callers pass borrowed holders, and that code may detach the holder,
// dropping what may be its only other reference.

PyObject *api_add(PyObject *holder, PyObject *product, PyObject *guard) {
    if (entry_check_guard(guard, "COEXTRA_API->add()") < 0) {
        return nullptr;
    }
    Ref keep = Ref::borrow(holder);
    return reinterpret_cast<PyObject *>(holder_add(as_holder(holder), product, guard));
}

PyObject *api_entry_product(PyObject *entry) { return as_entry(entry)->product; }

PyObject *api_entry_guard(PyObject *entry) { return as_entry(entry)->guard; }

// Adapts a native guard on products to the core's matcher on entries.
struct NativeGuard {
    coextra_guard match;
    void *context;
};

int match_native_guard(Entry *entry, void *context) {
    auto *guard = static_cast<NativeGuard *>(context);
    if (entry->product == nullptr) {
        return 0;  // cleared by the GC: the entry is garbage and answers nothing
    }
    return guard->match(entry->product, guard->context);
}

// No guard runs no Python code: the front entry is the answer, already at the
// front. This is the path of a backend whose entries always apply.
PyObject *api_front(PyObject *holder) {
    Holder *h = as_holder(holder);
    if (h->size == 0) {
        return nullptr;
    }
    PyObject *front = holder_items(h)[0];
    as_entry(front)->hits++;
    return front;
}

int api_lookup(PyObject *holder, coextra_guard match, void *context, PyObject **found) {
    if (match == nullptr) {
        *found = Py_XNewRef(api_front(holder));
        return *found != nullptr ? 1 : 0;
    }
    Holder *h = as_holder(holder);
    Ref keep = Ref::borrow(holder);
    NativeGuard guard{match, context};
    Entry *entry = nullptr;
    int result = holder_lookup(h, match_native_guard, &guard, &entry);
    *found = reinterpret_cast<PyObject *>(entry);
    return result;
}

int api_find(PyObject *code, coextra_guard match, void *context, PyObject **found) {
    Holder *h = read_slot(code);
    if (h == nullptr) {
        *found = nullptr;
        return 0;
    }
    return api_lookup(reinterpret_cast<PyObject *>(h), match, context, found);
}

int api_for_each(PyObject *holder, coextra_visit visit, void *context) {
    Ref keep = Ref::borrow(holder);
    // A snapshot with its own references: visit may add, remove or clear.
    Ref entries = Ref::steal(holder_entries(as_holder(holder)));
    if (!entries) {
        return -1;
    }
    int result = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries.get()) && result == 0; i++) {
        PyObject *entry = PyList_GET_ITEM(entries.get(), i);
        PyObject *product = as_entry(entry)->product;
        if (product != nullptr) {
            result = visit(entry, product, context);
        }
    }
    return result < 0 ? -1 : result;
}

Py_ssize_t api_size(PyObject *holder) { return as_holder(holder)->size; }

int api_remove(PyObject *holder, PyObject *entry) {
    return holder_remove(as_holder(holder), as_entry(entry));
}

void api_clear(PyObject *holder) { holder_clear(as_holder(holder)); }

int api_detach(PyObject *holder) { return registry_detach(as_holder(holder)); }

PyObject *api_holder_code(PyObject *holder) { return as_holder(holder)->code; }

int api_set_max_entries(PyObject *holder, Py_ssize_t max_entries) {
    if (max_entries < 0 || static_cast<size_t>(max_entries) > UINT32_MAX) {
        PyErr_Format(PyExc_ValueError,
                     "coextra: set_max_entries(): max_entries must be 0 (no bound) or from 1 to %lu, not %zd",
                     static_cast<unsigned long>(UINT32_MAX), max_entries);
        return -1;
    }
    Ref keep = Ref::borrow(holder);  // eviction frees products, which may run any code
    holder_set_max_entries(as_holder(holder), static_cast<uint32_t>(max_entries));
    return 0;
}

Py_ssize_t api_max_entries(PyObject *holder) { return as_holder(holder)->max_entries; }

int api_closed() {
    // registry_get() raises when the registry is gone; keep whatever exception
    // the caller may have pending, since closed() promises not to touch it.
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    Registry *r = registry_get();
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    return (r == nullptr || r->closed) ? 1 : 0;  // destroyed: as closed as it gets
}

// Revision 2: ephemeron maps. These check their arguments: a map is a
// Python object a backend may get from anywhere.
EphemeronMap *as_map(PyObject *map) {
    if (map == nullptr || !Py_IS_TYPE(map, &EphemeronMapType)) {
        PyErr_Format(PyExc_TypeError, "coextra: expected a coextra.EphemeronMap, not %.200s",
                     map ? Py_TYPE(map)->tp_name : "NULL");
        return nullptr;
    }
    return reinterpret_cast<EphemeronMap *>(map);
}

PyObject *api_map_new() { return reinterpret_cast<PyObject *>(ephemeron_new()); }

int api_map_get(PyObject *map, PyObject *key, PyObject **value) {
    *value = nullptr;
    EphemeronMap *m = as_map(map);
    return m ? ephemeron_get(m, key, value) : -1;
}

int api_map_set(PyObject *map, PyObject *key, PyObject *value) {
    EphemeronMap *m = as_map(map);
    if (m != nullptr && value == nullptr) {
        PyErr_SetString(PyExc_TypeError, "coextra: map_set needs a value (NULL given)");
        return -1;
    }
    return m ? ephemeron_set(m, key, value) : -1;
}

int api_map_delete(PyObject *map, PyObject *key) {
    EphemeronMap *m = as_map(map);
    return m ? ephemeron_delete(m, key) : -1;
}

Py_ssize_t api_map_size(PyObject *map) {
    EphemeronMap *m = as_map(map);
    return m ? static_cast<Py_ssize_t>(m->table.size()) : -1;
}

}  // namespace

const coextra_CAPI *capi_table() { return made_table; }

PyObject *capi_capsule() {
    Registry *r = registry_get();
    if (r == nullptr) {
        return nullptr;
    }
    // Made once, when the capsule is first asked for (after registry_init: the
    // co_extra index is part of it), and never changed after.
    if (made_table == nullptr) {
        static const coextra_CAPI table = {
            COEXTRA_CAPI_VERSION,
            sizeof(coextra_CAPI),
            registry_extra_index(),
            api_holder_of,
            api_ensure,
            api_add,
            api_entry_product,
            api_entry_guard,
            api_lookup,
            api_front,
            api_find,
            api_for_each,
            api_size,
            api_remove,
            api_clear,
            api_detach,
            api_holder_code,
            api_closed,
            collector_collect_all,
            api_map_new,
            api_map_get,
            api_map_set,
            api_map_delete,
            api_map_size,
            api_set_max_entries,
            api_max_entries,
        };
        made_table = &table;
        slot_index = table.extra_index;
        main_interpreter = PyInterpreterState_Main();
    }
    return PyCapsule_New(const_cast<coextra_CAPI *>(made_table), COEXTRA_CAPSULE_NAME, nullptr);
}

}  // namespace coextra::detail
