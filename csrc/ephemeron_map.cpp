// ephemeron_map.cpp -- an EphemeronMap's operations (ephemeron_map.h): making
// and ending a map, getting, setting and removing entries, for the C API, the
// Python type (ephemeron_map_type.cpp) and the collector; and the callback
// that removes an entry whose key died (KeyDeath).
#include "ephemeron_map.h"

#include "include/coextra/ref.hpp"

#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace coextra::detail {

namespace {

// The maps' state, per process, touched with the GIL held; read elsewhere
// through ephemeron_map.h's functions.
struct EphemeronState {
    // Every live map, borrowed: a map removes itself when it is freed. The
    // collector seeds passes with their entries.
    std::vector<EphemeronMap *> maps;
    size_t entries = 0;        // in the tables of all maps
    uint64_t added_total = 0;  // entries ever added
};

EphemeronState state;

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

// A new KeyDeath for m, and unhooking it from a map that is going (entries
// whose keys die later still call it).
PyObject *new_key_death(EphemeronMap *m) {
    auto *death = PyObject_New(KeyDeath, &KeyDeathType);
    if (death != nullptr) {
        death->vectorcall = key_death_call;
        death->map = m;
    }
    return reinterpret_cast<PyObject *>(death);
}

void key_death_forget(PyObject *key_death) { reinterpret_cast<KeyDeath *>(key_death)->map = nullptr; }

// The map an entry belongs to, NULL when the map is gone or the key's
// callback is running.
EphemeronMap *map_of(const EphemeronEntry *entry) {
    PyObject *callback = entry->ref.wr_callback;  // NULL while CPython calls it
    return callback != nullptr ? reinterpret_cast<KeyDeath *>(callback)->map : nullptr;
}

}  // namespace

const std::vector<EphemeronMap *> &ephemeron_maps() { return state.maps; }

size_t ephemeron_entry_count() { return state.entries; }

namespace {

// Gives an entry in the table a new value; the old one is released after.
void replace_value(EphemeronEntry *e, PyObject *value) {
    Ref old = Ref::steal(std::exchange(e->value, Py_NewRef(value)));
}

void unregister(EphemeronMap *m) {
    EphemeronMap *last = state.maps.back();
    state.maps[m->registered_slot] = last;
    last->registered_slot = m->registered_slot;
    state.maps.pop_back();
}

}  // namespace

int ephemeron_check_key(PyObject *key) {
    if (!compat::supports_weakrefs(Py_TYPE(key))) {
        PyErr_Format(PyExc_TypeError,
                     "coextra: EphemeronMap keys must support weak references, not %.200s",
                     Py_TYPE(key)->tp_name);
        return -1;
    }
    return 0;
}

PyObject *ephemeron_take_value(EphemeronMap *m, EphemeronEntry *entry) {
    if (!m->table.take(entry)) {
        return nullptr;  // ephemeron_clear is releasing it, and drops its value
    }
    state.entries--;
    // The table's reference, dropped last: its value gone, freeing it runs no code.
    Ref taken = Ref::steal(reinterpret_cast<PyObject *>(entry));
    return std::exchange(entry->value, nullptr);
}

void ephemeron_remove(EphemeronMap *m, EphemeronEntry *entry) {
    Ref value = Ref::steal(ephemeron_take_value(m, entry));  // released with the table consistent
}

// In the table's order, which is the order the entries (and values, and
// usually keys) were made in, so freeing a large map walks memory in order.
void ephemeron_clear(EphemeronMap *m) {
    state.entries -= m->table.size();
    size_t count;
    EphemeronEntry **entries = m->table.release(&count);
    for (size_t i = 0; i < count; i++) {
        if (EphemeronEntry *e = entries[i]) {
            // The entry goes first (without its value it runs no code), then
            // the value (NULL when the GC cleared the entry first).
            Ref value = Ref::steal(std::exchange(e->value, nullptr));
            Ref table_ref = Ref::steal(reinterpret_cast<PyObject *>(e));
        }
    }
    PyMem_Free(entries);
}

PyObject *ephemeron_alloc(PyTypeObject *type) {
    auto *m = PyObject_GC_New(EphemeronMap, type);
    if (m == nullptr) {
        return nullptr;
    }
    new (&m->table) EntryTable();
    m->weakreflist = nullptr;
    m->registered_slot = SIZE_MAX;
    Ref key_death = Ref::steal(new_key_death(m));
    if (!key_death) {
        PyObject_GC_Del(m);
        return nullptr;
    }
    try {
        state.maps.push_back(m);
    } catch (const std::bad_alloc &) {
        key_death_forget(key_death.get());
        PyObject_GC_Del(m);
        return PyErr_NoMemory();
    }
    m->key_death = key_death.release();
    m->registered_slot = state.maps.size() - 1;
    PyObject_GC_Track(m);
    return reinterpret_cast<PyObject *>(m);
}

// The caller untracked m and cleared its weak references.
void ephemeron_dealloc(EphemeronMap *m) {
    unregister(m);
    key_death_forget(m->key_death);
    ephemeron_clear(m);
    m->table.free_arrays();
    m->table.~EntryTable();
    Py_DECREF(m->key_death);
}

PyObject *ephemeron_detach(EphemeronEntry *entry) {
    EphemeronMap *m = map_of(entry);
    if (m == nullptr || entry->value == nullptr) {
        return nullptr;  // removed already, or its key is dying and the callback will
    }
    return ephemeron_take_value(m, entry);  // the caller's reference keeps the entry
}

int ephemeron_get(EphemeronMap *m, PyObject *key, PyObject **value) {
    if (EphemeronEntry *e = ephemeron_find_entry(m, key)) {
        *value = Py_NewRef(e->value);
        return 1;
    }
    *value = nullptr;
    return ephemeron_check_key(key) < 0 ? -1 : 0;
}

int ephemeron_set(EphemeronMap *m, PyObject *key, PyObject *value) {
    if (EphemeronEntry *e = ephemeron_find_entry(m, key)) {
        replace_value(e, value);
        return 0;
    }
    if (ephemeron_check_key(key) < 0) {
        return -1;
    }
    // The index slot the new entry goes to, a miss to memory in a large
    // table, is read while the entry is made.
    m->table.prefetch_insert(key);
    uint64_t insertions = m->table.insertions();
    EphemeronEntry *entry = ephemeron_new_entry(key, m->key_death);
    Ref made = Ref::steal(reinterpret_cast<PyObject *>(entry));
    if (!made) {
        return -1;
    }
    // Making the entry may have run code that set this key meanwhile (and
    // then inserted some entry).
    EphemeronEntry *e = m->table.insertions() != insertions ? ephemeron_find_entry(m, key) : nullptr;
    if (e != nullptr) {
        made.reset();
        replace_value(e, value);
        return 0;
    }
    if (!m->table.grow()) {
        made.reset();
        PyErr_NoMemory();
        return -1;
    }
    entry->value = Py_NewRef(value);
    m->table.insert(entry);
    made.release();  // the table's reference now
    state.entries++;
    state.added_total++;
    return 0;
}

int ephemeron_delete(EphemeronMap *m, PyObject *key) {
    if (EphemeronEntry *e = ephemeron_find_entry(m, key)) {
        ephemeron_remove(m, e);
        return 1;
    }
    return ephemeron_check_key(key) < 0 ? -1 : 0;
}

EphemeronMap *ephemeron_new() { return reinterpret_cast<EphemeronMap *>(ephemeron_alloc(&EphemeronMapType)); }

int ephemeron_types_ready() {
    if (EphemeronMapType.tp_flags & Py_TPFLAGS_READY) {
        return 0;
    }
    KeyDeathType.tp_name = "coextra._KeyDeath";
    KeyDeathType.tp_doc = "Removes an EphemeronMap entry whose key died (a weak reference callback).";
    KeyDeathType.tp_basicsize = sizeof(KeyDeath);
    KeyDeathType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    KeyDeathType.tp_vectorcall_offset = offsetof(KeyDeath, vectorcall);
    KeyDeathType.tp_call = PyVectorcall_Call;
    KeyDeathType.tp_dealloc = key_death_dealloc;
    if (PyType_Ready(&KeyDeathType) < 0 || ephemeron_entry_type_ready() < 0 || ephemeron_iterator_type_ready() < 0) {
        return -1;
    }
    return ephemeron_map_type_ready();
}

}  // namespace coextra::detail
