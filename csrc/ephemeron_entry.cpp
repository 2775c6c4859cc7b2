// ephemeron_entry.cpp -- an EphemeronMap's entry (EphemeronEntry, a weak
// reference to its key that owns the value).
#include "ephemeron_entry.h"
#include "include/coextra/ref.hpp"

namespace coextra::detail {

// EphemeronEntry objects in existence (ephemeron_entry_live_count).
static int64_t live_entries = 0;

int64_t ephemeron_entry_live_count() { return live_entries; }

namespace {

// ---------------------------------------------------------------------------
// EphemeronEntry. GC contract: owns `value` and (through its weak-reference
// base) the callback; traverses both. Owned by its map's table (one
// reference). Its key is referenced weakly. tp_clear drops the value, which
// only the GC calls, on an entry whose map is garbage too.

int entry_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(reinterpret_cast<EphemeronEntry *>(self)->value);
    return _PyWeakref_RefType.tp_traverse(self, visit, arg);
}

int entry_tp_clear(PyObject *self) {
    Py_CLEAR(reinterpret_cast<EphemeronEntry *>(self)->value);
    return _PyWeakref_RefType.tp_clear(self);
}

void entry_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    // The value is released last, with the entry off the key's list: code
    // that lists the key's weak references must not find (and resurrect) a
    // dying entry.
    Ref value = Ref::steal(reinterpret_cast<EphemeronEntry *>(self)->value);
    _PyWeakref_RefType.tp_dealloc(self);
    live_entries--;
}

}  // namespace

PyTypeObject EphemeronEntryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Not live: a key whose reference count reached 0 keeps its weak references
// until its type's dealloc clears them, and code run meanwhile (its
// __dict__'s finalizers, a GC pass on 3.10/3.11) must neither resurrect it
// nor let the collector explore it; and the GC may clear an entry (tp_clear)
// of a map that is garbage too before it clears the map.
EphemeronEntry *ephemeron_usable(EphemeronEntry *e) {
    if (e == nullptr || e->value == nullptr) {
        return nullptr;
    }
    PyObject *key = e->ref.wr_object;
    return key != Py_None && Py_REFCNT(key) > 0 ? e : nullptr;
}

// weakref.ref's own __new__ makes the entry: Python code cannot (the type
// disallows instantiation), so every entry is counted and has a map.
EphemeronEntry *ephemeron_new_entry(PyObject *key, PyObject *callback) {
    Ref args = Ref::steal(PyTuple_Pack(2, key, callback));
    if (!args) {
        return nullptr;
    }
    PyObject *made = _PyWeakref_RefType.tp_new(&EphemeronEntryType, args.get(), nullptr);
    if (made == nullptr) {
        return nullptr;
    }
    live_entries++;
    auto *entry = reinterpret_cast<EphemeronEntry *>(made);
    entry->position = kNoPosition;  // in no table yet
    return entry;
}

PyObject *ephemeron_entry_key(EphemeronEntry *entry) {
    return ephemeron_usable(entry) ? entry->ref.wr_object : nullptr;
}

void ephemeron_visit_entries(PyObject *key, visitproc visit, void *arg) {
    for (PyWeakReference *ref = compat::weakrefs_of(key); ref != nullptr; ref = ref->wr_next) {
        if (Py_IS_TYPE(reinterpret_cast<PyObject *>(ref), &EphemeronEntryType) &&
            reinterpret_cast<EphemeronEntry *>(ref)->value != nullptr) {
            visit(reinterpret_cast<PyObject *>(ref), arg);
        }
    }
}

int ephemeron_entry_type_ready() {
    EphemeronEntryType.tp_name = "coextra._EphemeronEntry";
    EphemeronEntryType.tp_doc = "One EphemeronMap entry: a weak reference to its key that owns the value.";
    EphemeronEntryType.tp_base = &_PyWeakref_RefType;
    EphemeronEntryType.tp_basicsize = sizeof(EphemeronEntry);
    EphemeronEntryType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    EphemeronEntryType.tp_traverse = entry_traverse;
    EphemeronEntryType.tp_clear = entry_tp_clear;
    EphemeronEntryType.tp_dealloc = entry_dealloc;
    return PyType_Ready(&EphemeronEntryType);
}

}  // namespace coextra::detail
