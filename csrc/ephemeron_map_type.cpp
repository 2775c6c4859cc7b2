// ephemeron_map_type.cpp -- coextra.EphemeronMap, the Python type: the dict
// protocol over the map's operations (ephemeron_map.cpp).
#include "ephemeron_map.h"

#include <cstddef>

namespace coextra::detail {

namespace {

// ---------------------------------------------------------------------------
// EphemeronMap. GC contract: owns its entries (one reference each, in the
// table) and its KeyDeath object (not a GC object); traverses the entries.
// Owned by whoever holds it. The collector never follows a map's references
// (heap_graph.h): it sees them as the virtual edges key -> entry.

int map_traverse(PyObject *self, visitproc visit, void *arg) {
    const EntryTable &t = reinterpret_cast<EphemeronMap *>(self)->table;
    for (size_t i = 0; i < t.end(); i++) {
        Py_VISIT(reinterpret_cast<PyObject *>(t.at(i)));
    }
    return 0;
}

int map_tp_clear(PyObject *self) {
    ephemeron_clear(reinterpret_cast<EphemeronMap *>(self));
    return 0;
}

void map_dealloc(PyObject *self) {
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    PyObject_GC_UnTrack(self);
    // Maps nested through their values free each other recursively: the
    // trashcan defers the deep levels, as for lists and dicts.
    Py_TRASHCAN_BEGIN(self, map_dealloc)
    if (m->weakreflist != nullptr) {
        PyObject_ClearWeakRefs(self);
    }
    ephemeron_dealloc(m);
    PyObject_GC_Del(self);
    Py_TRASHCAN_END
}

PyObject *map_new(PyTypeObject *type, PyObject *, PyObject *) { return ephemeron_alloc(type); }

// ---------------------------------------------------------------------------
// The operations.

// The value of key (borrowed), or NULL when it is missing; *bad_key says
// whether that is because the key cannot be weakly referenced (TypeError set).
PyObject *lookup(EphemeronMap *m, PyObject *key, bool *bad_key) {
    *bad_key = false;
    if (EphemeronEntry *e = m->table.find(key)) {
        return e->value;
    }
    if (ephemeron_check_key(key) < 0) {
        *bad_key = true;
    }
    return nullptr;
}

PyObject *map_subscript(PyObject *self, PyObject *key) {
    bool bad_key;
    PyObject *value = lookup(reinterpret_cast<EphemeronMap *>(self), key, &bad_key);
    if (value != nullptr) {
        return Py_NewRef(value);
    }
    if (!bad_key) {
        PyErr_SetObject(PyExc_KeyError, key);
    }
    return nullptr;
}

int map_ass_subscript(PyObject *self, PyObject *key, PyObject *value) {
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    if (value != nullptr) {
        return ephemeron_set(m, key, value);
    }
    int removed = ephemeron_delete(m, key);
    if (removed == 0) {
        PyErr_SetObject(PyExc_KeyError, key);
        return -1;
    }
    return removed < 0 ? -1 : 0;
}

Py_ssize_t map_length(PyObject *self) {
    return static_cast<Py_ssize_t>(reinterpret_cast<EphemeronMap *>(self)->table.size());
}

// `key in map`: False for a key that cannot be weakly referenced, as
// weakref.WeakKeyDictionary answers.
int map_contains(PyObject *self, PyObject *key) {
    return reinterpret_cast<EphemeronMap *>(self)->table.find(key) != nullptr;
}

// get(key, default=None)
PyObject *map_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "coextra: EphemeronMap.get() takes 1 or 2 arguments (%zd given)", nargs);
        return nullptr;
    }
    bool bad_key;
    PyObject *value = lookup(reinterpret_cast<EphemeronMap *>(self), args[0], &bad_key);
    if (value == nullptr) {
        if (bad_key) {
            return nullptr;
        }
        value = nargs == 2 ? args[1] : Py_None;
    }
    return Py_NewRef(value);
}

// setdefault(key, default=None)
PyObject *map_setdefault(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "coextra: EphemeronMap.setdefault() takes 1 or 2 arguments (%zd given)", nargs);
        return nullptr;
    }
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    PyObject *value = nargs == 2 ? args[1] : Py_None;
    if (EphemeronEntry *e = m->table.find(args[0])) {
        return Py_NewRef(e->value);
    }
    // Our own reference: setting may run code that replaces the value at once.
    Py_INCREF(value);
    if (ephemeron_set(m, args[0], value) < 0) {
        Py_DECREF(value);
        return nullptr;
    }
    return value;
}

// pop(key[, default])
PyObject *map_pop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "coextra: EphemeronMap.pop() takes 1 or 2 arguments (%zd given)", nargs);
        return nullptr;
    }
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    EphemeronEntry *e = m->table.find(args[0]);
    if (e == nullptr) {
        if (ephemeron_check_key(args[0]) < 0) {
            return nullptr;
        }
        if (nargs == 2) {
            return Py_NewRef(args[1]);
        }
        PyErr_SetObject(PyExc_KeyError, args[0]);
        return nullptr;
    }
    return ephemeron_take_value(m, e);  // found in the table: never NULL
}

// popitem() -> (key, value), the last entry added, as dict.popitem
PyObject *map_popitem(PyObject *self, PyObject *) {
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    EphemeronEntry *e = nullptr;
    for (size_t i = m->table.end(); e == nullptr && i > 0; i--) {
        e = ephemeron_usable(m->table.at(i - 1));
    }
    if (e == nullptr) {
        PyErr_SetString(PyExc_KeyError, "coextra: EphemeronMap.popitem(): the map is empty");
        return nullptr;
    }
    // The key is alive: its entry is still in the table (a dying key's
    // callback removes the entry before the key is freed). Packing may run
    // code that removes the entry: hold it, and remove it only if it is
    // still in the table.
    Py_INCREF(e);
    PyObject *key = Py_NewRef(e->ref.wr_object);
    PyObject *value = Py_NewRef(e->value);
    PyObject *pair = PyTuple_Pack(2, key, value);
    if (pair != nullptr && e->value != nullptr) {
        ephemeron_remove(m, e);
    }
    Py_DECREF(e);
    Py_DECREF(key);
    Py_DECREF(value);
    return pair;
}

PyObject *map_clear(PyObject *self, PyObject *) {
    ephemeron_clear(reinterpret_cast<EphemeronMap *>(self));
    Py_RETURN_NONE;
}

// A new list of the (key, value) pairs of the entries in the table, in
// insertion order. Allocating may run code that changes the table, so every
// pair is allocated first, empty, and then filled from the table, which runs
// no code; one reference is taken per key and value.
PyObject *items_list(EphemeronMap *m) {
    for (;;) {
        auto n = static_cast<Py_ssize_t>(m->table.size());
        PyObject *list = PyList_New(n);
        for (Py_ssize_t i = 0; list != nullptr && i < n; i++) {
            PyObject *pair = PyTuple_New(2);
            if (pair == nullptr) {
                Py_CLEAR(list);
            } else {
                PyList_SET_ITEM(list, i, pair);
            }
        }
        if (list == nullptr) {
            return nullptr;
        }
        if (static_cast<Py_ssize_t>(m->table.size()) > n) {
            Py_DECREF(list);  // entries came meanwhile: again, with room for them
            continue;
        }
        const EntryTable &t = m->table;
        Py_ssize_t count = 0;
        for (size_t p = 0; p < t.end(); p++) {
            EphemeronEntry *e = ephemeron_usable(t.at(p));
            if (e == nullptr) {
                continue;
            }
            PyObject *pair = PyList_GET_ITEM(list, count++);
            PyTuple_SET_ITEM(pair, 0, Py_NewRef(e->ref.wr_object));
            PyTuple_SET_ITEM(pair, 1, Py_NewRef(e->value));
        }
        // Fewer entries than allocated for (some left, or their keys are
        // dying): the list ends at the last one filled.
        PyObject **items = reinterpret_cast<PyListObject *>(list)->ob_item;
        for (Py_ssize_t i = count; i < n; i++) {
            Py_CLEAR(items[i]);  // an empty pair
        }
        Py_SET_SIZE(list, count);
        return list;
    }
}

// A new reference to collections.abc.<name>, or NULL with an exception.
PyObject *abc_attribute(const char *name) {
    PyObject *abc = PyImport_ImportModule("collections.abc");
    if (abc == nullptr) {
        return nullptr;
    }
    PyObject *attribute = PyObject_GetAttrString(abc, name);
    Py_DECREF(abc);
    return attribute;
}

// keys(), values() and items() return views of collections.abc, as
// Mapping's own methods do: the map is registered as a MutableMapping, so
// code typed against Mapping may use set operations on keys() and items().
// They are live, as dict's views are. Each is a subclass of its abc view
// whose __iter__ is the map's own (ephemeron_iterate_entries):
// the abc's would look every key up again from Python code.
struct ViewKind {
    const char *abc_name;
    const char *name;
    EntryPart part;
    PyObject *type;  // made on first use; the main interpreter's only (module.cpp)
};

ViewKind view_kinds[] = {
    {"KeysView", "_EphemeronMapKeys", EntryPart::kKeys, nullptr},
    {"ValuesView", "_EphemeronMapValues", EntryPart::kValues, nullptr},
    {"ItemsView", "_EphemeronMapItems", EntryPart::kItems, nullptr},
};

// __iter__ of a view of kind `kind`: over the entries of its map, or, for a
// view someone made over another mapping, as the abc view iterates.
PyObject *view_iter(PyObject *view, const ViewKind &kind) {
    PyObject *mapping = PyObject_GetAttrString(view, "_mapping");
    if (mapping == nullptr) {
        return nullptr;
    }
    PyObject *iterator = nullptr;
    if (PyObject_TypeCheck(mapping, &EphemeronMapType)) {
        iterator = ephemeron_iterate_entries(reinterpret_cast<EphemeronMap *>(mapping), kind.part);
    } else if (PyObject *base = abc_attribute(kind.abc_name)) {
        PyObject *base_iter = PyObject_GetAttrString(base, "__iter__");
        iterator = base_iter != nullptr ? PyObject_CallOneArg(base_iter, view) : nullptr;
        Py_XDECREF(base_iter);
        Py_DECREF(base);
    }
    Py_DECREF(mapping);
    return iterator;
}

PyObject *keys_view_iter(PyObject *, PyObject *view) { return view_iter(view, view_kinds[0]); }
PyObject *values_view_iter(PyObject *, PyObject *view) { return view_iter(view, view_kinds[1]); }
PyObject *items_view_iter(PyObject *, PyObject *view) { return view_iter(view, view_kinds[2]); }

PyMethodDef view_iter_defs[] = {
    {"__iter__", keys_view_iter, METH_O, nullptr},
    {"__iter__", values_view_iter, METH_O, nullptr},
    {"__iter__", items_view_iter, METH_O, nullptr},
};

// The view type of `kind` (borrowed), made on first use: class
// <name>(collections.abc.<abc_name>) with __slots__ = () and a C __iter__
// (an instance method, so that it binds to the view).
PyObject *view_type(size_t kind) {
    ViewKind &k = view_kinds[kind];
    if (k.type != nullptr) {
        return k.type;
    }
    PyObject *base = abc_attribute(k.abc_name);
    if (base == nullptr) {
        return nullptr;
    }
    PyObject *function = PyCFunction_New(&view_iter_defs[kind], nullptr);
    PyObject *method = function != nullptr ? PyInstanceMethod_New(function) : nullptr;
    PyObject *slots = PyTuple_New(0);
    PyObject *ns = method != nullptr && slots != nullptr
                       ? Py_BuildValue("{s:O,s:O,s:s}", "__iter__", method, "__slots__", slots, "__module__", "coextra")
                       : nullptr;
    PyObject *made = ns != nullptr ? PyObject_CallFunction(reinterpret_cast<PyObject *>(Py_TYPE(base)), "s(O)O",
                                                           k.name, base, ns)
                                   : nullptr;
    Py_XDECREF(ns);
    Py_XDECREF(slots);
    Py_XDECREF(method);
    Py_XDECREF(function);
    Py_DECREF(base);
    k.type = made;  // kept for the process, as the map type itself
    return made;
}

PyObject *new_view(PyObject *self, size_t kind) {
    PyObject *type = view_type(kind);
    return type != nullptr ? PyObject_CallOneArg(type, self) : nullptr;
}

PyObject *map_keys(PyObject *self, PyObject *) { return new_view(self, 0); }
PyObject *map_values(PyObject *self, PyObject *) { return new_view(self, 1); }
PyObject *map_items(PyObject *self, PyObject *) { return new_view(self, 2); }

PyObject *map_iter(PyObject *self) {
    return ephemeron_iterate_entries(reinterpret_cast<EphemeronMap *>(self), EntryPart::kKeys);
}

// `item` as a (key, value) tuple (a new reference), or NULL with an
// exception: any sequence of two items, as dict.update takes.
PyObject *as_pair(PyObject *item, const char *operation) {
    PyObject *pair = PySequence_Tuple(item);
    if (pair != nullptr && PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_ValueError,
                     "coextra: %s() needs (key, value) pairs, not a sequence of %zd items", operation,
                     PyTuple_GET_SIZE(pair));
        Py_CLEAR(pair);
    }
    return pair;
}

// Sets every pair of `iterable` (of (key, value) pairs) in m. 0, or -1 with
// an exception.
int set_pairs(EphemeronMap *m, PyObject *iterable) {
    PyObject *iterator = PyObject_GetIter(iterable);
    if (iterator == nullptr) {
        return -1;
    }
    int result = 0;
    PyObject *item;
    while (result == 0 && (item = PyIter_Next(iterator)) != nullptr) {
        PyObject *pair = as_pair(item, "EphemeronMap.update");
        result = pair != nullptr ? ephemeron_set(m, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) : -1;
        Py_XDECREF(pair);
        Py_DECREF(item);
    }
    Py_DECREF(iterator);
    return result == 0 && PyErr_Occurred() ? -1 : result;
}

// Sets other[key] for every key of `keys` in m. 0, or -1 with an exception.
int set_keys_of(EphemeronMap *m, PyObject *other, PyObject *keys) {
    PyObject *iterator = PyObject_GetIter(keys);
    if (iterator == nullptr) {
        return -1;
    }
    int result = 0;
    PyObject *key;
    while (result == 0 && (key = PyIter_Next(iterator)) != nullptr) {
        PyObject *value = PyObject_GetItem(other, key);
        result = value != nullptr ? ephemeron_set(m, key, value) : -1;
        Py_XDECREF(value);
        Py_DECREF(key);
    }
    Py_DECREF(iterator);
    return result == 0 && PyErr_Occurred() ? -1 : result;
}

// update(other=(), /): as dict.update: from a mapping (anything with a keys
// attribute; an exception raised by keys() itself propagates) or else an
// iterable of pairs. Keyword arguments would be str keys, which cannot be
// weakly referenced, so there are none.
int update_from(EphemeronMap *m, PyObject *other) {
    if (Py_IS_TYPE(other, &EphemeronMapType)) {
        PyObject *items = items_list(reinterpret_cast<EphemeronMap *>(other));
        int result = items != nullptr ? set_pairs(m, items) : -1;
        Py_XDECREF(items);
        return result;
    }
    PyObject *keys_method = PyObject_GetAttrString(other, "keys");
    if (keys_method == nullptr) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return set_pairs(m, other);
    }
    PyObject *keys = PyObject_CallNoArgs(keys_method);
    Py_DECREF(keys_method);
    int result = keys != nullptr ? set_keys_of(m, other, keys) : -1;
    Py_XDECREF(keys);
    return result;
}

PyObject *map_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "coextra: EphemeronMap.update() takes at most 1 argument (%zd given)", nargs);
        return nullptr;
    }
    if (nargs == 1 && update_from(reinterpret_cast<EphemeronMap *>(self), args[0]) < 0) {
        return nullptr;
    }
    Py_RETURN_NONE;
}

// copy(): a new map with the same entries (a shallow copy, as dict.copy).
PyObject *map_copy(PyObject *self, PyObject *) {
    PyObject *copy = ephemeron_alloc(&EphemeronMapType);
    if (copy != nullptr && update_from(reinterpret_cast<EphemeronMap *>(copy), self) < 0) {
        Py_CLEAR(copy);
    }
    return copy;
}

int map_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *other = nullptr;
    if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "coextra: EphemeronMap() takes no keyword arguments (keys must support weak references, so str keys cannot be)");
        return -1;
    }
    if (!PyArg_UnpackTuple(args, "EphemeronMap", 0, 1, &other)) {
        return -1;
    }
    return other != nullptr ? update_from(reinterpret_cast<EphemeronMap *>(self), other) : 0;
}

// m == other as Mapping.__eq__ answers, with m's keys compared by identity:
// other has as many items, and each of its keys is (the very object) a key
// of m whose value is equal to other's. As the lengths match and m's keys
// are distinct objects, that is every entry of m. 1, 0, or -1 with an
// exception.
int map_equal(EphemeronMap *m, PyObject *other) {
    if (other == reinterpret_cast<PyObject *>(m)) {
        return 1;
    }
    PyObject *items = PyMapping_Items(other);
    if (items == nullptr) {
        return -1;
    }
    int equal = PyList_GET_SIZE(items) == static_cast<Py_ssize_t>(m->table.size());
    for (Py_ssize_t i = 0; equal == 1 && i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = as_pair(PyList_GET_ITEM(items, i), "EphemeronMap.__eq__");
        if (pair == nullptr) {
            equal = -1;
            break;
        }
        // The comparison may run code that changes m: hold the value.
        EphemeronEntry *e = m->table.find(PyTuple_GET_ITEM(pair, 0));
        PyObject *mine = e != nullptr ? Py_NewRef(e->value) : nullptr;
        equal = mine != nullptr ? PyObject_RichCompareBool(mine, PyTuple_GET_ITEM(pair, 1), Py_EQ) : 0;
        Py_XDECREF(mine);
        Py_DECREF(pair);
    }
    Py_DECREF(items);
    return equal;
}

// == and != against any collections.abc.Mapping (map_equal); other
// comparisons and other types: NotImplemented, as Mapping.__eq__.
PyObject *map_richcompare(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int mapping = 1;
    if (!Py_IS_TYPE(other, &EphemeronMapType)) {
        PyObject *abc_mapping = abc_attribute("Mapping");
        mapping = abc_mapping != nullptr ? PyObject_IsInstance(other, abc_mapping) : -1;
        Py_XDECREF(abc_mapping);
    }
    if (mapping <= 0) {
        return mapping < 0 ? nullptr : Py_NewRef(Py_NotImplemented);
    }
    int equal = map_equal(reinterpret_cast<EphemeronMap *>(self), other);
    if (equal < 0) {
        return nullptr;
    }
    return PyBool_FromLong((op == Py_EQ) == (equal == 1));
}

PyObject *map_repr(PyObject *self) {
    Py_ssize_t n = map_length(self);
    return PyUnicode_FromFormat("<coextra.EphemeronMap with %zd entr%s>", n, n == 1 ? "y" : "ies");
}

PyMethodDef map_methods[] = {
    {"get", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(map_get)), METH_FASTCALL,
     "get(key, default=None, /)\n--\n\nThe value of key, or default."},
    {"setdefault", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(map_setdefault)),
     METH_FASTCALL,
     "setdefault(key, default=None, /)\n--\n\nThe value of key; sets it to default first when missing."},
    {"pop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(map_pop)), METH_FASTCALL,
     "pop(key, default=<missing>, /)\n--\n\nRemoves key and returns its value (or default; KeyError\n"
     "without one)."},
    {"popitem", map_popitem, METH_NOARGS,
     "popitem($self, /)\n--\n\nRemoves and returns the last (key, value) pair added; KeyError when empty."},
    {"clear", map_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemoves every entry."},
    {"keys", map_keys, METH_NOARGS, "keys($self, /)\n--\n\nA collections.abc.KeysView of the map."},
    {"values", map_values, METH_NOARGS, "values($self, /)\n--\n\nA collections.abc.ValuesView of the map."},
    {"items", map_items, METH_NOARGS, "items($self, /)\n--\n\nA collections.abc.ItemsView of the map."},
    {"copy", map_copy, METH_NOARGS, "copy($self, /)\n--\n\nA new EphemeronMap with the same entries."},
    {"update", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(map_update)), METH_FASTCALL,
     "update(other=(), /)\n--\n\nSets every pair of a mapping or an iterable of (key, value) pairs."},
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS,
     "EphemeronMap[K, V] in annotations, as dict[K, V]."},
    {nullptr, nullptr, 0, nullptr},
};

PyMappingMethods map_as_mapping = {map_length, map_subscript, map_ass_subscript};
PySequenceMethods map_as_sequence = {};

}  // namespace

PyTypeObject EphemeronMapType = {PyVarObject_HEAD_INIT(nullptr, 0)};

int ephemeron_map_type_ready() {
    map_as_sequence.sq_contains = map_contains;
    EphemeronMapType.tp_name = "coextra.EphemeronMap";
    EphemeronMapType.tp_doc =
        "EphemeronMap(other=(), /)\n--\n\n"
        "A mapping from weakly referenceable keys, compared by identity, to values.\n"
        "An entry lives exactly as long as its key is reachable from outside the\n"
        "values of ephemeron entries and code caches: a value that references its\n"
        "own key does not keep it alive.";
    EphemeronMapType.tp_basicsize = sizeof(EphemeronMap);
    EphemeronMapType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    EphemeronMapType.tp_new = map_new;
    EphemeronMapType.tp_init = map_init;
    EphemeronMapType.tp_dealloc = map_dealloc;
    EphemeronMapType.tp_traverse = map_traverse;
    EphemeronMapType.tp_clear = map_tp_clear;
    EphemeronMapType.tp_repr = map_repr;
    // Equal maps must hash alike, and a map's items change: unhashable, as dict.
    EphemeronMapType.tp_richcompare = map_richcompare;
    EphemeronMapType.tp_hash = PyObject_HashNotImplemented;
    EphemeronMapType.tp_iter = map_iter;
    EphemeronMapType.tp_as_mapping = &map_as_mapping;
    EphemeronMapType.tp_as_sequence = &map_as_sequence;
    EphemeronMapType.tp_methods = map_methods;
    EphemeronMapType.tp_weaklistoffset = offsetof(EphemeronMap, weakreflist);
    return PyType_Ready(&EphemeronMapType);
}

}  // namespace coextra::detail
