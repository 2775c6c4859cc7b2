// ephemeron_map_iterator.cpp -- iterating over an EphemeronMap's keys,
// values or items (ephemeron_map.h): over the entries the map held when the
// iteration began, in insertion order.
#include "ephemeron_map.h"

namespace coextra::detail {

namespace {

// The entries are held, not their keys or values: an entry that leaves the
// map meanwhile (its key died, it was deleted) is passed over, and an entry
// gives the value it has when it is reached, as a dict's iterator would; so
// the loop's body may change the map. The only allocation per item is the
// pair, and that is reused while the loop has dropped the last one (as
// dict's items iterator does).
struct EntryIterator {
    PyObject_HEAD
    PyObject *entries;  // a list of entries, owned; NULL once exhausted
    Py_ssize_t next;
    EntryPart part;
    PyObject *pair;     // the last pair returned, owned, or NULL
};

PyTypeObject EntryIteratorType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// GC contract: owns its list of entries and its last pair; traverses both.
int iterator_traverse(PyObject *self, visitproc visit, void *arg) {
    auto *it = reinterpret_cast<EntryIterator *>(self);
    Py_VISIT(it->entries);
    Py_VISIT(it->pair);
    return 0;
}

int iterator_clear(PyObject *self) {
    auto *it = reinterpret_cast<EntryIterator *>(self);
    Py_CLEAR(it->entries);
    Py_CLEAR(it->pair);
    return 0;
}

void iterator_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    iterator_clear(self);
    PyObject_GC_Del(self);
}

// `key` and `value` are new references, which move to the pair.
PyObject *make_pair(EntryIterator *it, PyObject *key, PyObject *value) {
    PyObject *pair = it->pair;
    if (pair != nullptr && Py_REFCNT(pair) == 1) {
        PyObject *old_key = PyTuple_GET_ITEM(pair, 0);
        PyObject *old_value = PyTuple_GET_ITEM(pair, 1);
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        // The GC untracks a tuple of untracked items; the new items may be tracked.
        if (!PyObject_GC_IsTracked(pair)) {
            PyObject_GC_Track(pair);
        }
        Py_INCREF(pair);
        Py_DECREF(old_key);  // may run code: the pair is consistent
        Py_DECREF(old_value);
        return pair;
    }
    pair = PyTuple_New(2);
    if (pair == nullptr) {
        Py_DECREF(key);
        Py_DECREF(value);
        return nullptr;
    }
    PyTuple_SET_ITEM(pair, 0, key);
    PyTuple_SET_ITEM(pair, 1, value);
    Py_XSETREF(it->pair, Py_NewRef(pair));
    return pair;
}

// The entries lie in the order they were made, and so, usually, do their
// keys: the entry kPrefetch items ahead is prefetched, and the key of the one
// half as far ahead (its entry came in meanwhile).
constexpr Py_ssize_t kPrefetch = 16;

void prefetch_ahead(PyObject *entries, Py_ssize_t next) {
    Py_ssize_t size = PyList_GET_SIZE(entries);
    if (next + kPrefetch < size) {
        __builtin_prefetch(PyList_GET_ITEM(entries, next + kPrefetch));
    }
    if (next + kPrefetch / 2 < size) {
        __builtin_prefetch(reinterpret_cast<EphemeronEntry *>(PyList_GET_ITEM(entries, next + kPrefetch / 2))
                               ->ref.wr_object);
    }
}

PyObject *iterator_next(PyObject *self) {
    auto *it = reinterpret_cast<EntryIterator *>(self);
    while (it->entries != nullptr && it->next < PyList_GET_SIZE(it->entries)) {
        prefetch_ahead(it->entries, it->next);
        auto *e = reinterpret_cast<EphemeronEntry *>(PyList_GET_ITEM(it->entries, it->next++));
        if (ephemeron_usable(e) == nullptr || ephemeron_map_of(e) == nullptr) {
            continue;  // left its map, or its key is dying
        }
        switch (it->part) {
            case EntryPart::kKeys:
                return Py_NewRef(e->ref.wr_object);
            case EntryPart::kValues:
                return Py_NewRef(e->value);
            case EntryPart::kItems:
                break;
        }
        return make_pair(it, Py_NewRef(e->ref.wr_object), Py_NewRef(e->value));
    }
    Py_CLEAR(it->entries);
    return nullptr;
}

}  // namespace

PyObject *ephemeron_iterate_entries(EphemeronMap *m, EntryPart part) {
    auto *it = PyObject_GC_New(EntryIterator, &EntryIteratorType);
    if (it == nullptr) {
        return nullptr;
    }
    it->entries = nullptr;
    it->next = 0;
    it->part = part;
    it->pair = nullptr;
    // Allocating the list may run code that changes the table; filling it
    // runs none.
    for (;;) {
        auto n = static_cast<Py_ssize_t>(m->table.size());
        PyObject *list = PyList_New(n);
        if (list == nullptr) {
            Py_DECREF(it);
            return nullptr;
        }
        if (static_cast<Py_ssize_t>(m->table.size()) > n) {
            Py_DECREF(list);
            continue;
        }
        Py_ssize_t count = 0;
        for (size_t p = 0; p < m->table.end(); p++) {
            if (EphemeronEntry *e = m->table.at(p)) {
                PyList_SET_ITEM(list, count++, Py_NewRef(reinterpret_cast<PyObject *>(e)));
            }
        }
        Py_SET_SIZE(list, count);  // fewer when some left meanwhile
        it->entries = list;
        break;
    }
    PyObject_GC_Track(it);
    return reinterpret_cast<PyObject *>(it);
}

int ephemeron_iterator_type_ready() {
    EntryIteratorType.tp_name = "coextra._EphemeronMapIterator";
    EntryIteratorType.tp_doc = "Iterates over an EphemeronMap's keys, values or items.";
    EntryIteratorType.tp_basicsize = sizeof(EntryIterator);
    EntryIteratorType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    EntryIteratorType.tp_traverse = iterator_traverse;
    EntryIteratorType.tp_clear = iterator_clear;
    EntryIteratorType.tp_dealloc = iterator_dealloc;
    EntryIteratorType.tp_iter = PyObject_SelfIter;
    EntryIteratorType.tp_iternext = iterator_next;
    return PyType_Ready(&EntryIteratorType);
}

}  // namespace coextra::detail
