// ephemeron_entry.cpp -- an EphemeronMap's entry (EphemeronEntry, a weak
// reference to its key that owns the value) and the callback that removes an
// entry whose key died (KeyDeath).
#include "ephemeron_map.h"
#include "include/coextra/ref.hpp"

namespace coextra::detail {

// EphemeronEntry objects in existence (ephemeron_entry_live_count).
static int64_t live_entries = 0;

int64_t ephemeron_entry_live_count() { return live_entries; }

namespace {

// ---------------------------------------------------------------------------
// KeyDeath: the callback of every entry of one map. Not a GC object (it holds
// no reference), so the collector never makes it a node.

struct KeyDeath {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    // Borrowed: the map clears it before it is freed.
    EphemeronMap *map;
};

PyTypeObject KeyDeathType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// The key of `entry` died: remove the entry if its map still has it.
PyObject *key_death_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *) {
    EphemeronMap *m = reinterpret_cast<KeyDeath *>(self)->map;
    if (PyVectorcall_NARGS(nargsf) == 1 && m != nullptr && Py_IS_TYPE(args[0], &EphemeronEntryType)) {
        auto *entry = reinterpret_cast<EphemeronEntry *>(args[0]);
        if (entry->value != nullptr) {
            ephemeron_remove(m, entry);
        }
    }
    Py_RETURN_NONE;
}

void key_death_dealloc(PyObject *self) { PyObject_Free(self); }

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

EphemeronMap *ephemeron_map_of(const EphemeronEntry *entry) {
    PyObject *callback = entry->ref.wr_callback;  // NULL while CPython calls it
    return callback != nullptr ? reinterpret_cast<KeyDeath *>(callback)->map : nullptr;
}

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
EphemeronEntry *ephemeron_new_entry(EphemeronMap *m, PyObject *key) {
    Ref args = Ref::steal(PyTuple_Pack(2, key, m->key_death));
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

PyObject *ephemeron_new_key_death(EphemeronMap *m) {
    auto *death = PyObject_New(KeyDeath, &KeyDeathType);
    if (death != nullptr) {
        death->vectorcall = key_death_call;
        death->map = m;
    }
    return reinterpret_cast<PyObject *>(death);
}

void ephemeron_key_death_forget(PyObject *key_death) { reinterpret_cast<KeyDeath *>(key_death)->map = nullptr; }

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

int ephemeron_entry_types_ready() {
    KeyDeathType.tp_name = "coextra._KeyDeath";
    KeyDeathType.tp_doc = "Removes an EphemeronMap entry whose key died (a weak reference callback).";
    KeyDeathType.tp_basicsize = sizeof(KeyDeath);
    KeyDeathType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    KeyDeathType.tp_vectorcall_offset = offsetof(KeyDeath, vectorcall);
    KeyDeathType.tp_call = PyVectorcall_Call;
    KeyDeathType.tp_dealloc = key_death_dealloc;

    EphemeronEntryType.tp_name = "coextra._EphemeronEntry";
    EphemeronEntryType.tp_doc = "One EphemeronMap entry: a weak reference to its key that owns the value.";
    EphemeronEntryType.tp_base = &_PyWeakref_RefType;
    EphemeronEntryType.tp_basicsize = sizeof(EphemeronEntry);
    EphemeronEntryType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    EphemeronEntryType.tp_traverse = entry_traverse;
    EphemeronEntryType.tp_clear = entry_tp_clear;
    EphemeronEntryType.tp_dealloc = entry_dealloc;
    if (PyType_Ready(&KeyDeathType) < 0) {
        return -1;
    }
    return PyType_Ready(&EphemeronEntryType);
}

}  // namespace coextra::detail
