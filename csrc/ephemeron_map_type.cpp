// ephemeron_map_type.cpp -- coextra.EphemeronMap, the Python type: the dict
// protocol over the map's operations (ephemeron_map.cpp).
#include "ephemeron_map.h"
#include "include/coextra/ref.hpp"

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
    if (EphemeronEntry *e = ephemeron_find_entry(m, key)) {
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
    return ephemeron_find_entry(reinterpret_cast<EphemeronMap *>(self), key) != nullptr;
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
    if (EphemeronEntry *e = ephemeron_find_entry(m, args[0])) {
        return Py_NewRef(e->value);
    }
    // Our own reference: setting may run code that replaces the value at once.
    Ref held = Ref::borrow(value);
    if (ephemeron_set(m, args[0], value) < 0) {
        return nullptr;
    }
    return held.release();
}

// pop(key[, default])
PyObject *map_pop(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "coextra: EphemeronMap.pop() takes 1 or 2 arguments (%zd given)", nargs);
        return nullptr;
    }
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    EphemeronEntry *e = ephemeron_find_entry(m, args[0]);
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
    Ref key = Ref::borrow(e->ref.wr_object);
    Ref value = Ref::borrow(e->value);
    Ref entry = Ref::borrow(reinterpret_cast<PyObject *>(e));
    PyObject *pair = PyTuple_Pack(2, key.get(), value.get());
    if (pair != nullptr && e->value != nullptr) {
        ephemeron_remove(m, e);
    }
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
Ref items_list(EphemeronMap *m) {
    for (;;) {
        auto n = static_cast<Py_ssize_t>(m->table.size());
        Ref list = Ref::steal(PyList_New(n));
        for (Py_ssize_t i = 0; list && i < n; i++) {
            PyObject *pair = PyTuple_New(2);
            if (pair == nullptr) {
                list.reset();
            } else {
                PyList_SET_ITEM(list.get(), i, pair);
            }
        }
        if (!list) {
            return list;
        }
        if (static_cast<Py_ssize_t>(m->table.size()) > n) {
            continue;  // entries came meanwhile: again, with room for them
        }
        const EntryTable &t = m->table;
        Py_ssize_t count = 0;
        for (size_t p = 0; p < t.end(); p++) {
            EphemeronEntry *e = ephemeron_usable(t.at(p));
            if (e == nullptr) {
                continue;
            }
            PyObject *pair = PyList_GET_ITEM(list.get(), count++);
            PyTuple_SET_ITEM(pair, 0, Py_NewRef(e->ref.wr_object));
            PyTuple_SET_ITEM(pair, 1, Py_NewRef(e->value));
        }
        // Fewer entries than allocated for (some left, or their keys are
        // dying): the list ends at the last one filled.
        PyObject **items = reinterpret_cast<PyListObject *>(list.get())->ob_item;
        for (Py_ssize_t i = count; i < n; i++) {
            Py_CLEAR(items[i]);  // an empty pair
        }
        Py_SET_SIZE(list.get(), count);
        return list;
    }
}

// collections.abc.<name>, or empty with an exception.
Ref abc_attribute(const char *name) {
    Ref abc = Ref::steal(PyImport_ImportModule("collections.abc"));
    return abc ? Ref::steal(PyObject_GetAttrString(abc.get(), name)) : Ref();
}

// 1 when obj is a map or a collections.abc.Mapping, 0 when not, -1 with an
// exception: what == and | (either way round) accept on the other side.
int is_mapping(PyObject *obj) {
    if (Py_IS_TYPE(obj, &EphemeronMapType)) {
        return 1;
    }
    Ref abc_mapping = abc_attribute("Mapping");
    return abc_mapping ? PyObject_IsInstance(obj, abc_mapping.get()) : -1;
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
    Ref mapping = Ref::steal(PyObject_GetAttrString(view, "_mapping"));
    if (!mapping) {
        return nullptr;
    }
    if (PyObject_TypeCheck(mapping.get(), &EphemeronMapType)) {
        return ephemeron_iterate_entries(reinterpret_cast<EphemeronMap *>(mapping.get()), kind.part);
    }
    Ref base = abc_attribute(kind.abc_name);
    Ref base_iter = base ? Ref::steal(PyObject_GetAttrString(base.get(), "__iter__")) : Ref();
    return base_iter ? PyObject_CallOneArg(base_iter.get(), view) : nullptr;
}

PyObject *keys_view_iter(PyObject *, PyObject *view) { return view_iter(view, view_kinds[0]); }
PyObject *values_view_iter(PyObject *, PyObject *view) { return view_iter(view, view_kinds[1]); }
PyObject *items_view_iter(PyObject *, PyObject *view) { return view_iter(view, view_kinds[2]); }

PyMethodDef view_iter_defs[] = {
    {"__iter__", keys_view_iter, METH_O, nullptr},
    {"__iter__", values_view_iter, METH_O, nullptr},
    {"__iter__", items_view_iter, METH_O, nullptr},
};

// Whether m holds the item `pair`, a (key, value) tuple: its key is (the
// very object) a key of m whose value is or equals value. 1, 0, or -1 with
// the comparison's exception.
int has_item(EphemeronMap *m, PyObject *pair) {
    EphemeronEntry *e = ephemeron_find_entry(m, PyTuple_GET_ITEM(pair, 0));
    // The comparison may run code that changes the map: hold the value.
    Ref value = e != nullptr ? Ref::borrow(e->value) : Ref();
    return value ? PyObject_RichCompareBool(value.get(), PyTuple_GET_ITEM(pair, 1), Py_EQ) : 0;
}

// __contains__ of the items view: `item in m.items()` answers as dict's
// items view does, False for what is not a (key, value) tuple or has a key
// the map cannot hold (without weak references: the abc's would raise
// m[key]'s TypeError), else whether m's value for key is or equals value.
// For a view someone made over another mapping, the abc's answer.
PyObject *items_view_contains(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "coextra: __contains__() takes exactly one argument");
        return nullptr;
    }
    PyObject *view = args[0], *item = args[1];
    Ref mapping = Ref::steal(PyObject_GetAttrString(view, "_mapping"));
    if (!mapping) {
        return nullptr;
    }
    if (!PyObject_TypeCheck(mapping.get(), &EphemeronMapType)) {
        Ref base = abc_attribute("ItemsView");
        Ref base_contains = base ? Ref::steal(PyObject_GetAttrString(base.get(), "__contains__")) : Ref();
        return base_contains ? PyObject_CallFunctionObjArgs(base_contains.get(), view, item, nullptr) : nullptr;
    }
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
        Py_RETURN_FALSE;
    }
    int held = has_item(reinterpret_cast<EphemeronMap *>(mapping.get()), item);
    return held < 0 ? nullptr : PyBool_FromLong(held);
}

PyMethodDef items_view_contains_def = {
    "__contains__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(items_view_contains)),
    METH_FASTCALL, nullptr};

// An instance method (so that it binds to the view) of a C function.
Ref view_method(PyMethodDef *def) {
    Ref function = Ref::steal(PyCFunction_New(def, nullptr));
    return function ? Ref::steal(PyInstanceMethod_New(function.get())) : Ref();
}

// The view type of `kind` (borrowed), made on first use: class
// <name>(collections.abc.<abc_name>) with __slots__ = (), a C __iter__ and,
// for items, a C __contains__.
PyObject *view_type(size_t kind) {
    ViewKind &k = view_kinds[kind];
    if (k.type != nullptr) {
        return k.type;
    }
    Ref base = abc_attribute(k.abc_name);
    if (!base) {
        return nullptr;
    }
    Ref method = view_method(&view_iter_defs[kind]);
    Ref slots = Ref::steal(PyTuple_New(0));
    Ref ns = method && slots ? Ref::steal(Py_BuildValue("{s:O,s:O,s:s}", "__iter__", method.get(), "__slots__",
                                                        slots.get(), "__module__", "coextra"))
                             : Ref();
    if (ns && k.part == EntryPart::kItems) {
        Ref contains = view_method(&items_view_contains_def);
        if (!contains || PyDict_SetItemString(ns.get(), "__contains__", contains.get()) < 0) {
            ns.reset();
        }
    }
    Ref made = ns ? Ref::steal(PyObject_CallFunction(reinterpret_cast<PyObject *>(Py_TYPE(base.get())), "s(O)O",
                                                     k.name, base.get(), ns.get()))
                  : Ref();
    k.type = made.release();  // kept for the process, as the map type itself
    return k.type;
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

// `item` as a (key, value) tuple, or empty with an exception: any sequence
// of two items, as dict.update takes.
Ref as_pair(PyObject *item, const char *operation) {
    Ref pair = Ref::steal(PySequence_Tuple(item));
    if (pair && PyTuple_GET_SIZE(pair.get()) != 2) {
        PyErr_Format(PyExc_ValueError,
                     "coextra: %s() needs (key, value) pairs, not a sequence of %zd items", operation,
                     PyTuple_GET_SIZE(pair.get()));
        return Ref();
    }
    return pair;
}

// Sets every pair of `iterable` (of (key, value) pairs) in m. 0, or -1 with
// an exception.
int set_pairs(EphemeronMap *m, PyObject *iterable) {
    Ref iterator = Ref::steal(PyObject_GetIter(iterable));
    if (!iterator) {
        return -1;
    }
    int result = 0;
    while (result == 0) {
        Ref item = Ref::steal(PyIter_Next(iterator.get()));
        if (!item) {
            break;
        }
        Ref pair = as_pair(item.get(), "EphemeronMap.update");
        result = pair ? ephemeron_set(m, PyTuple_GET_ITEM(pair.get(), 0), PyTuple_GET_ITEM(pair.get(), 1)) : -1;
    }
    return result == 0 && PyErr_Occurred() ? -1 : result;
}

// Sets other[key] for every key of `keys` in m. 0, or -1 with an exception.
int set_keys_of(EphemeronMap *m, PyObject *other, PyObject *keys) {
    Ref iterator = Ref::steal(PyObject_GetIter(keys));
    if (!iterator) {
        return -1;
    }
    int result = 0;
    while (result == 0) {
        Ref key = Ref::steal(PyIter_Next(iterator.get()));
        if (!key) {
            break;
        }
        Ref value = Ref::steal(PyObject_GetItem(other, key.get()));
        result = value ? ephemeron_set(m, key.get(), value.get()) : -1;
    }
    return result == 0 && PyErr_Occurred() ? -1 : result;
}

// update(other=(), /): as dict.update: from a mapping (anything with a keys
// attribute; an exception raised by keys() itself propagates) or else an
// iterable of pairs. Keyword arguments would be str keys, which cannot be
// weakly referenced, so there are none.
int update_from(EphemeronMap *m, PyObject *other) {
    if (Py_IS_TYPE(other, &EphemeronMapType)) {
        Ref items = items_list(reinterpret_cast<EphemeronMap *>(other));
        return items ? set_pairs(m, items.get()) : -1;
    }
    Ref keys_method = Ref::steal(PyObject_GetAttrString(other, "keys"));
    if (!keys_method) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return set_pairs(m, other);
    }
    Ref keys = Ref::steal(PyObject_CallNoArgs(keys_method.get()));
    keys_method.reset();
    return keys ? set_keys_of(m, other, keys.get()) : -1;
}

// dict's constructor and update() take key=value pairs; keys given so are
// str, which cannot be weakly referenced, so both refuse them with this.
constexpr const char *kNoKeywordKeys = "coextra: EphemeronMap%s takes no keyword arguments (keys must support weak references, so str keys cannot be)";

PyObject *map_update(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_Format(PyExc_TypeError, kNoKeywordKeys, ".update()");
        return nullptr;
    }
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
    Ref copy = Ref::steal(ephemeron_alloc(&EphemeronMapType));
    if (copy && update_from(reinterpret_cast<EphemeronMap *>(copy.get()), self) < 0) {
        return nullptr;
    }
    return copy.release();
}

// __deepcopy__(memo): a new map with the same keys (compared by identity,
// never copied) and deep copies of the values, as WeakKeyDictionary's. The
// new map is in memo before any value is copied, so a value that references
// the map references its copy.
PyObject *map_deepcopy(PyObject *self, PyObject *memo) {
    Ref copy_module = Ref::steal(PyImport_ImportModule("copy"));
    Ref deepcopy = copy_module ? Ref::steal(PyObject_GetAttrString(copy_module.get(), "deepcopy")) : Ref();
    Ref copy = deepcopy ? Ref::steal(ephemeron_alloc(&EphemeronMapType)) : Ref();
    Ref id = copy ? Ref::steal(PyLong_FromVoidPtr(self)) : Ref();
    if (!id || (memo != Py_None && PyObject_SetItem(memo, id.get(), copy.get()) < 0)) {
        return nullptr;
    }
    Ref items = items_list(reinterpret_cast<EphemeronMap *>(self));
    if (!items) {
        return nullptr;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.get()); i++) {
        PyObject *pair = PyList_GET_ITEM(items.get(), i);
        PyObject *call[] = {PyTuple_GET_ITEM(pair, 1), memo};
        Ref value = Ref::steal(PyObject_Vectorcall(deepcopy.get(), call, 2, nullptr));
        if (!value || ephemeron_set(reinterpret_cast<EphemeronMap *>(copy.get()), PyTuple_GET_ITEM(pair, 0),
                                    value.get()) < 0) {
            return nullptr;
        }
    }
    return copy.release();
}

// m | other and other | m, as WeakKeyDictionary's (dict's, with any
// collections.abc.Mapping on the other side): a new map with the left
// operand's entries, then the right one's. Anything else: NotImplemented.
PyObject *map_or(PyObject *left, PyObject *right) {
    for (PyObject *operand : {left, right}) {
        int mapping = is_mapping(operand);
        if (mapping <= 0) {
            return mapping < 0 ? nullptr : Py_NewRef(Py_NotImplemented);
        }
    }
    Ref result = Ref::steal(ephemeron_alloc(&EphemeronMapType));
    auto *m = reinterpret_cast<EphemeronMap *>(result.get());
    if (!result || update_from(m, left) < 0 || update_from(m, right) < 0) {
        return nullptr;
    }
    return result.release();
}

// m |= other: m.update(other), as dict's: a mapping or an iterable of pairs.
PyObject *map_inplace_or(PyObject *self, PyObject *other) {
    if (update_from(reinterpret_cast<EphemeronMap *>(self), other) < 0) {
        return nullptr;
    }
    return Py_NewRef(self);
}

int map_init(PyObject *self, PyObject *args, PyObject *kwargs) {
    PyObject *other = nullptr;
    if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_Format(PyExc_TypeError, kNoKeywordKeys, "()");
        return -1;
    }
    if (!PyArg_UnpackTuple(args, "EphemeronMap", 0, 1, &other)) {
        return -1;
    }
    return other != nullptr ? update_from(reinterpret_cast<EphemeronMap *>(self), other) : 0;
}

// The entries of m whose key is alive: len(m) less those whose key is dying
// (its weak reference cleared, its callback yet to remove the entry), which
// iteration passes over too.
Py_ssize_t usable_entries(const EphemeronMap *m) {
    Py_ssize_t count = 0;
    for (size_t p = 0; p < m->table.end(); p++) {
        count += ephemeron_usable(m->table.at(p)) != nullptr;
    }
    return count;
}

// m == other as Mapping.__eq__ answers, with m's keys compared by identity:
// other has as many items as m has usable entries, and each of its keys is
// (the very object) a key of m whose value is equal to other's. As the
// counts match and m's keys are distinct objects, that is every usable
// entry of m. 1, 0, or -1 with an exception.
int map_equal(EphemeronMap *m, PyObject *other) {
    if (other == reinterpret_cast<PyObject *>(m)) {
        return 1;
    }
    Ref items = Ref::steal(PyMapping_Items(other));
    if (!items) {
        return -1;
    }
    int equal = PyList_GET_SIZE(items.get()) == usable_entries(m);
    for (Py_ssize_t i = 0; equal == 1 && i < PyList_GET_SIZE(items.get()); i++) {
        Ref pair = as_pair(PyList_GET_ITEM(items.get(), i), "EphemeronMap.__eq__");
        if (!pair) {
            return -1;
        }
        equal = has_item(m, pair.get());
    }
    return equal;
}

// == and != against any collections.abc.Mapping (map_equal); other
// comparisons and other types: NotImplemented, as Mapping.__eq__.
PyObject *map_richcompare(PyObject *self, PyObject *other, int op) {
    if (op != Py_EQ && op != Py_NE) {
        Py_RETURN_NOTIMPLEMENTED;
    }
    int mapping = is_mapping(other);
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
    {"__copy__", map_copy, METH_NOARGS, "__copy__($self, /)\n--\n\ncopy.copy(m): m.copy()."},
    {"__deepcopy__", map_deepcopy, METH_O,
     "__deepcopy__($self, memo, /)\n--\n\ncopy.deepcopy(m): the same keys, deep copies of the values."},
    {"update", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(map_update)), METH_FASTCALL | METH_KEYWORDS,
     "update(other=(), /)\n--\n\nSets every pair of a mapping or an iterable of (key, value) pairs."},
    {"__class_getitem__", Py_GenericAlias, METH_O | METH_CLASS,
     "EphemeronMap[K, V] in annotations, as dict[K, V]."},
    {nullptr, nullptr, 0, nullptr},
};

PyMappingMethods map_as_mapping = {map_length, map_subscript, map_ass_subscript};
PyNumberMethods map_as_number = {};
PySequenceMethods map_as_sequence = {};

}  // namespace

PyTypeObject EphemeronMapType = {PyVarObject_HEAD_INIT(nullptr, 0)};

int ephemeron_map_type_ready() {
    map_as_sequence.sq_contains = map_contains;
    map_as_number.nb_or = map_or;
    map_as_number.nb_inplace_or = map_inplace_or;
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
    EphemeronMapType.tp_as_number = &map_as_number;
    EphemeronMapType.tp_methods = map_methods;
    EphemeronMapType.tp_weaklistoffset = offsetof(EphemeronMap, weakreflist);
    return PyType_Ready(&EphemeronMapType);
}

}  // namespace coextra::detail
