// ephemeron_map_iterator.cpp -- iterating over an EphemeronMap's keys,
// values or items (ephemeron_map.h): over the entries the map held when the
// iteration began, in insertion order.
#include "ephemeron_map.h"
#include "include/coextra/ref.hpp"

namespace coextra::detail {

namespace {

// The iterator walks the table's positions that were in use when it began,
// with the table pinned (ephemeron_table.h: entries stay at their positions,
// and those inserted since lie past them), so it holds no reference to the
// entries, keys or values: an entry that leaves the map meanwhile (its key
// died, it was deleted) is passed over, and an entry gives the value it has
// when it is reached, as a dict's iterator would; so the loop's body may
// change the map. A clear() ends the walk (every entry it began with has
// left). The only allocation per item is the pair, and that is reused while
// the loop has dropped the last one (as dict's items iterator does).
struct EntryIterator {
    PyObject_HEAD
    EphemeronMap *map;  // owned, its table pinned; NULL once exhausted
    size_t next;        // the position to read next
    size_t end;         // the table's end() when the walk began
    uint64_t releases;  // the table's releases() when the walk began
    EntryPart part;
    PyObject *pair;     // the last pair returned, owned, or NULL
};

PyTypeObject EntryIteratorType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// Unpins the table and drops the map: the walk is over.
void finish(EntryIterator *it) {
    if (EphemeronMap *m = it->map) {
        m->table.unpin();
        it->map = nullptr;
        Py_DECREF(reinterpret_cast<PyObject *>(m));
    }
}

// GC contract: owns its map (while walking) and its last pair; traverses
// both. Clear ends the walk.
int iterator_traverse(PyObject *self, visitproc visit, void *arg) {
    auto *it = reinterpret_cast<EntryIterator *>(self);
    Py_VISIT(reinterpret_cast<PyObject *>(it->map));
    Py_VISIT(it->pair);
    return 0;
}

int iterator_clear(PyObject *self) {
    auto *it = reinterpret_cast<EntryIterator *>(self);
    finish(it);
    Py_CLEAR(it->pair);
    return 0;
}

void iterator_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    iterator_clear(self);
    PyObject_GC_Del(self);
}

// A pair of key and value, whose references move to it.
PyObject *make_pair(EntryIterator *it, Ref key, Ref value) {
    PyObject *pair = it->pair;
    if (pair != nullptr && Py_REFCNT(pair) == 1) {
        // The pair's old items are released last (the key first), when the
        // pair is consistent: their release may run code.
        Ref old_value = Ref::steal(PyTuple_GET_ITEM(pair, 1));
        Ref old_key = Ref::steal(PyTuple_GET_ITEM(pair, 0));
        PyTuple_SET_ITEM(pair, 0, key.release());
        PyTuple_SET_ITEM(pair, 1, value.release());
        // The GC untracks a tuple of untracked items; the new items may be tracked.
        if (!PyObject_GC_IsTracked(pair)) {
            PyObject_GC_Track(pair);
        }
        return Py_NewRef(pair);
    }
    pair = PyTuple_New(2);
    if (pair == nullptr) {
        return nullptr;
    }
    PyTuple_SET_ITEM(pair, 0, key.release());
    PyTuple_SET_ITEM(pair, 1, value.release());
    Py_XSETREF(it->pair, Py_NewRef(pair));
    return pair;
}

// The entries lie in the order they were made, and so, usually, do their
// keys: the entry kPrefetch positions ahead is prefetched, and the key of the
// one half as far ahead (its entry came in meanwhile).
constexpr size_t kPrefetch = 16;

void prefetch_ahead(const EntryTable &table, size_t next, size_t end) {
    if (next + kPrefetch < end) {
        __builtin_prefetch(table.at(next + kPrefetch));
    }
    if (next + kPrefetch / 2 < end) {
        if (const EphemeronEntry *e = table.at(next + kPrefetch / 2)) {
            __builtin_prefetch(e->ref.wr_object);
        }
    }
}

PyObject *iterator_next(PyObject *self) {
    auto *it = reinterpret_cast<EntryIterator *>(self);
    while (it->map != nullptr) {
        const EntryTable &table = it->map->table;
        size_t end = it->end < table.end() ? it->end : table.end();
        if (table.releases() != it->releases || it->next >= end) {
            break;
        }
        prefetch_ahead(table, it->next, end);
        EphemeronEntry *e = ephemeron_usable(table.at(it->next++));
        if (e == nullptr) {
            continue;  // a hole, or its key is dying
        }
        switch (it->part) {
            case EntryPart::kKeys:
                return Py_NewRef(e->ref.wr_object);
            case EntryPart::kValues:
                return Py_NewRef(e->value);
            case EntryPart::kItems:
                break;
        }
        return make_pair(it, Ref::borrow(e->ref.wr_object), Ref::borrow(e->value));
    }
    finish(it);
    return nullptr;
}

}  // namespace

PyObject *ephemeron_iterate_entries(EphemeronMap *m, EntryPart part) {
    auto *it = PyObject_GC_New(EntryIterator, &EntryIteratorType);
    if (it == nullptr) {
        return nullptr;
    }
    // Nothing runs from here on: the walk begins with the table as it is.
    m->table.pin();
    it->map = reinterpret_cast<EphemeronMap *>(Py_NewRef(reinterpret_cast<PyObject *>(m)));
    it->next = 0;
    it->end = m->table.end();
    it->releases = m->table.releases();
    it->part = part;
    it->pair = nullptr;
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
