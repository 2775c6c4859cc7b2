// ephemeron_map.cpp -- the EphemeronMap and EphemeronEntry types (ephemeron_map.h).
#include "ephemeron_map.h"

#include "fastcall_args.h"
#include "internals.h"

#include <algorithm>
#include <new>

namespace coextra::detail {

namespace {

// This file's part of internals (internals.h).
constexpr EphemeronState &state = internals.ephemeron;

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

EphemeronMap *map_of(const EphemeronEntry *entry) {
    PyObject *callback = entry->ref.wr_callback;  // NULL while CPython calls it
    return callback != nullptr ? reinterpret_cast<KeyDeath *>(callback)->map : nullptr;
}

// ---------------------------------------------------------------------------
// The table: open addressing on the key's address, linear probing,
// backward-shift deletion.

size_t ideal_slot(const EphemeronMap *m, uintptr_t key_address) {
    // Fibonacci hashing: addresses differ in their middle bits.
    uint64_t h = static_cast<uint64_t>(key_address >> 4) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 32) & m->mask;
}

// `e` when it is an entry with a live key, else NULL. Not live: a key whose
// reference count reached 0 keeps its weak references until its type's
// dealloc clears them, and code run meanwhile (its __dict__'s finalizers, a GC
// pass on 3.10/3.11) must neither resurrect it nor let the collector explore
// it; and the GC may clear an entry (tp_clear) of a map that is garbage too
// before it clears the map.
EphemeronEntry *usable(EphemeronEntry *e) {
    if (e == nullptr || e->value == nullptr) {
        return nullptr;
    }
    PyObject *key = e->ref.wr_object;
    return key != Py_None && Py_REFCNT(key) > 0 ? e : nullptr;
}

constexpr size_t kNoSlot = SIZE_MAX;

// The slot of the first entry in the probe run of `address` that `matches`,
// or kNoSlot. Runs no code.
template <typename Match>
size_t probe(const EphemeronMap *m, uintptr_t address, Match matches) {
    if (m->slots == nullptr) {
        return kNoSlot;
    }
    for (size_t i = ideal_slot(m, address);; i = (i + 1) & m->mask) {
        EphemeronEntry *e = m->slots[i];
        if (e == nullptr) {
            return kNoSlot;
        }
        if (matches(e)) {
            return i;
        }
    }
}

// The entry found at `slot` (a probe's result), or NULL.
EphemeronEntry *at(const EphemeronMap *m, size_t slot) {
    return slot != kNoSlot ? m->slots[slot] : nullptr;
}

// The entry of `key`, or NULL. Runs no code.
EphemeronEntry *find(const EphemeronMap *m, PyObject *key) {
    // The weak reference, not key_address: the address alone could name a
    // dead key whose callback is still pending (its reference is cleared by
    // then).
    return at(m, probe(m, reinterpret_cast<uintptr_t>(key), [key](const EphemeronEntry *e) {
        return e->ref.wr_object == key && e->value != nullptr;
    }));
}

// The entry whose live key is at `address`, or NULL. Runs no code.
EphemeronEntry *find_by_address(const EphemeronMap *m, uintptr_t address) {
    return at(m, probe(m, address, [address](EphemeronEntry *e) {
        return e->key_address == address && usable(e) != nullptr;
    }));
}

// Moves the table to `capacity` slots (a power of two). -1 with MemoryError.
int resize(EphemeronMap *m, size_t capacity) {
    auto **fresh = static_cast<EphemeronEntry **>(PyMem_Calloc(capacity, sizeof(EphemeronEntry *)));
    if (fresh == nullptr) {
        PyErr_NoMemory();
        return -1;
    }
    EphemeronEntry **old = m->slots;
    size_t old_capacity = old ? m->mask + 1 : 0;
    m->slots = fresh;
    m->mask = capacity - 1;
    for (size_t i = 0; i < old_capacity; i++) {
        if (EphemeronEntry *e = old[i]) {
            size_t j = ideal_slot(m, e->key_address);
            while (fresh[j] != nullptr) {
                j = (j + 1) & m->mask;
            }
            fresh[j] = e;
        }
    }
    PyMem_Free(old);
    return 0;
}

// Puts a new entry (its reference moves to the table). The table has room.
void insert(EphemeronMap *m, EphemeronEntry *entry) {
    size_t i = ideal_slot(m, entry->key_address);
    while (m->slots[i] != nullptr) {
        i = (i + 1) & m->mask;
    }
    m->slots[i] = entry;
    m->size++;
    state.entries++;
    state.added_total++;
}

// Takes `entry` out of the table and returns the table's reference, or NULL
// when the table does not hold it: clear_table releases entries that are no
// longer in any table, and their keys' callbacks may run meanwhile. Runs no
// code.
EphemeronEntry *take(EphemeronMap *m, EphemeronEntry *entry) {
    size_t i = probe(m, entry->key_address, [entry](const EphemeronEntry *e) { return e == entry; });
    if (i == kNoSlot) {
        return nullptr;
    }
    // Backward shift: pull later entries of the probe run into the hole when
    // their ideal slot does not lie between the hole and themselves.
    for (size_t j = (i + 1) & m->mask; m->slots[j] != nullptr; j = (j + 1) & m->mask) {
        size_t k = ideal_slot(m, m->slots[j]->key_address);
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i] = nullptr;
    m->size--;
    state.entries--;
    return entry;
}

// Takes `entry` out of m's table and returns its value (the reference the
// entry held), or NULL when the table does not hold it (clear_table is
// releasing it, and drops its value). The table's reference to the entry is
// dropped: the caller holds another one, or this may free the entry (which
// runs no code, its value gone).
PyObject *take_value(EphemeronMap *m, EphemeronEntry *entry) {
    if (take(m, entry) == nullptr) {
        return nullptr;
    }
    PyObject *value = entry->value;
    entry->value = nullptr;
    Py_DECREF(entry);
    return value;
}

// Removes `entry` if m's table holds it; the value is released after the
// table is consistent (it may run any code).
void remove(EphemeronMap *m, EphemeronEntry *entry) {
    Py_XDECREF(take_value(m, entry));
}

// Gives an entry in the table a new value; the old one is released after.
void replace_value(EphemeronEntry *e, PyObject *value) {
    PyObject *old = e->value;
    e->value = Py_NewRef(value);
    Py_DECREF(old);
}

// ---------------------------------------------------------------------------
// Generations (EntryGenerations in ephemeron_map.h).

constexpr size_t kCompactMin = 64;
constexpr size_t kListMin = 64;

void forget(EntryGeneration &generation) {
    state.listed -= generation.listed.size();
    std::vector<uintptr_t>().swap(generation.listed);  // its memory too
    if (generation.whole) {
        state.whole--;
        generation.whole = false;
    }
}

void set_whole(EntryGeneration &generation) {
    forget(generation);
    generation.whole = true;
    state.whole++;
}

// Drops the stale and repeated addresses of m's young list.
void compact_young(EphemeronMap *m) {
    std::vector<uintptr_t> &young = m->generations->young.listed;
    std::sort(young.begin(), young.end());
    size_t kept = 0;
    for (size_t i = 0; i < young.size(); i++) {
        bool repeated = i > 0 && young[i] == young[i - 1];
        if (!repeated && find_by_address(m, young[i]) != nullptr) {
            young[kept++] = young[i];
        }
    }
    state.listed -= young.size() - kept;
    young.resize(kept);
    m->generations->compact_at = std::max(kCompactMin, 2 * kept);
}

// Lists a new entry's key address as young; false when out of memory. The
// young list is compacted whenever it has doubled since it last was, so it
// stays within twice the map's entries (plus kCompactMin) however many
// entries come and go between two generation passes; past a quarter of the
// map it gives way to the whole map.
bool list_young(EphemeronMap *m, uintptr_t address) {
    try {
        if (m->generations == nullptr) {
            m->generations = new EntryGenerations{{}, {}, {}, kCompactMin};
        }
        EntryGeneration &young = m->generations->young;
        if (young.whole) {
            return true;
        }
        if (young.listed.size() >= m->generations->compact_at) {
            compact_young(m);
        }
        if (young.listed.size() >= std::max(kListMin, m->size / 4)) {
            set_whole(young);
            return true;
        }
        young.listed.push_back(address);
    } catch (const std::bad_alloc &) {
        return false;
    }
    state.listed++;
    return true;
}

// Forgets m's generations (its table is empty, or the map is going).
void unlist_all(EphemeronMap *m) {
    if (EntryGenerations *g = m->generations) {
        forget(g->young);
        forget(g->examined);
        forget(g->middle);
    }
}

// Empties the table; every entry and value is released afterwards, in the
// entries' address order: the table's order is a hash, and freeing a large
// map in it would touch memory at random (entries, values and keys lie
// roughly in the order they were made).
void clear_table(EphemeronMap *m) {
    EphemeronEntry **slots = m->slots;
    size_t capacity = slots ? m->mask + 1 : 0;
    size_t count = 0;
    for (size_t i = 0; i < capacity; i++) {
        if (slots[i] != nullptr) {
            slots[count++] = slots[i];
        }
    }
    state.entries -= m->size;
    unlist_all(m);
    m->slots = nullptr;
    m->mask = 0;
    m->size = 0;
    std::sort(slots, slots + count);
    for (size_t i = 0; i < count; i++) {
        EphemeronEntry *e = slots[i];
        PyObject *value = e->value;
        e->value = nullptr;
        Py_DECREF(e);
        Py_XDECREF(value);  // NULL when the GC cleared the entry first
    }
    PyMem_Free(slots);
}

int check_key(PyObject *key) {
    if (!compat::supports_weakrefs(Py_TYPE(key))) {
        PyErr_Format(PyExc_TypeError,
                     "coextra: EphemeronMap keys must support weak references, not %.200s",
                     Py_TYPE(key)->tp_name);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------
// KeyDeath's call: the key of `entry` died; remove the entry if its map still
// has it.

PyObject *key_death_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *) {
    EphemeronMap *m = reinterpret_cast<KeyDeath *>(self)->map;
    if (PyVectorcall_NARGS(nargsf) == 1 && m != nullptr && Py_IS_TYPE(args[0], &EphemeronEntryType)) {
        auto *entry = reinterpret_cast<EphemeronEntry *>(args[0]);
        if (entry->value != nullptr) {
            remove(m, entry);
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
    PyObject *value = reinterpret_cast<EphemeronEntry *>(self)->value;
    // Off the key's list before any code runs: code that lists the key's weak
    // references must not find (and resurrect) a dying entry.
    _PyWeakref_RefType.tp_dealloc(self);
    internals.live.ephemeron_entries--;
    Py_XDECREF(value);
}

// A new entry for key (value not yet set), or NULL with an exception. Runs
// an allocation, so any code may run meanwhile. weakref.ref's own __new__
// makes it: Python code cannot (the type disallows instantiation), so every
// entry is counted and has a map.
EphemeronEntry *new_entry(EphemeronMap *m, PyObject *key) {
    PyObject *args = PyTuple_Pack(2, key, m->key_death);
    if (args == nullptr) {
        return nullptr;
    }
    PyObject *made = _PyWeakref_RefType.tp_new(&EphemeronEntryType, args, nullptr);
    Py_DECREF(args);
    if (made == nullptr) {
        return nullptr;
    }
    internals.live.ephemeron_entries++;
    auto *entry = reinterpret_cast<EphemeronEntry *>(made);
    entry->key_address = reinterpret_cast<uintptr_t>(key);
    return entry;
}

// ---------------------------------------------------------------------------
// EphemeronMap. GC contract: owns its entries (one reference each, in the
// table) and its KeyDeath object (not a GC object); traverses the entries.
// Owned by whoever holds it. The collector never follows a map's references
// (heap_graph.h): it sees them as the virtual edges key -> entry.

int map_traverse(PyObject *self, visitproc visit, void *arg) {
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    for (size_t i = 0; m->slots != nullptr && i <= m->mask; i++) {
        Py_VISIT(reinterpret_cast<PyObject *>(m->slots[i]));
    }
    return 0;
}

int map_tp_clear(PyObject *self) {
    clear_table(reinterpret_cast<EphemeronMap *>(self));
    return 0;
}

void unregister(EphemeronMap *m) {
    EphemeronMap *last = state.maps.back();
    state.maps[m->registered_slot] = last;
    last->registered_slot = m->registered_slot;
    state.maps.pop_back();
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
    unregister(m);
    reinterpret_cast<KeyDeath *>(m->key_death)->map = nullptr;
    clear_table(m);
    delete m->generations;
    Py_DECREF(m->key_death);
    PyObject_GC_Del(self);
    Py_TRASHCAN_END
}

PyObject *map_alloc_new(PyTypeObject *type) {
    auto *death = PyObject_New(KeyDeath, &KeyDeathType);
    if (death == nullptr) {
        return nullptr;
    }
    death->vectorcall = key_death_call;
    death->map = nullptr;
    auto *m = PyObject_GC_New(EphemeronMap, type);
    if (m == nullptr) {
        Py_DECREF(death);
        return nullptr;
    }
    m->slots = nullptr;
    m->mask = 0;
    m->size = 0;
    m->key_death = reinterpret_cast<PyObject *>(death);
    m->weakreflist = nullptr;
    m->generations = nullptr;
    try {
        state.maps.push_back(m);
    } catch (const std::bad_alloc &) {
        m->registered_slot = SIZE_MAX;
        death->map = nullptr;
        Py_DECREF(death);
        PyObject_GC_Del(m);
        return PyErr_NoMemory();
    }
    m->registered_slot = state.maps.size() - 1;
    death->map = m;
    PyObject_GC_Track(m);
    return reinterpret_cast<PyObject *>(m);
}

PyObject *map_new(PyTypeObject *type, PyObject *, PyObject *) { return map_alloc_new(type); }

// ---------------------------------------------------------------------------
// The operations.

// The value of key (borrowed), or NULL when it is missing; *bad_key says
// whether that is because the key cannot be weakly referenced (TypeError set).
PyObject *lookup(EphemeronMap *m, PyObject *key, bool *bad_key) {
    *bad_key = false;
    if (EphemeronEntry *e = find(m, key)) {
        return e->value;
    }
    if (check_key(key) < 0) {
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
    return static_cast<Py_ssize_t>(reinterpret_cast<EphemeronMap *>(self)->size);
}

// `key in map`: False for a key that cannot be weakly referenced, as
// weakref.WeakKeyDictionary answers.
int map_contains(PyObject *self, PyObject *key) {
    return find(reinterpret_cast<EphemeronMap *>(self), key) != nullptr;
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
    if (EphemeronEntry *e = find(m, args[0])) {
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
    EphemeronEntry *e = find(m, args[0]);
    if (e == nullptr) {
        if (check_key(args[0]) < 0) {
            return nullptr;
        }
        if (nargs == 2) {
            return Py_NewRef(args[1]);
        }
        PyErr_SetObject(PyExc_KeyError, args[0]);
        return nullptr;
    }
    return take_value(m, e);  // found in the table: never NULL
}

// popitem() -> (key, value), any entry
PyObject *map_popitem(PyObject *self, PyObject *) {
    auto *m = reinterpret_cast<EphemeronMap *>(self);
    EphemeronEntry *e = nullptr;
    for (size_t i = 0; e == nullptr && m->slots != nullptr && i <= m->mask; i++) {
        e = usable(m->slots[i]);
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
        remove(m, e);
    }
    Py_DECREF(e);
    Py_DECREF(key);
    Py_DECREF(value);
    return pair;
}

PyObject *map_clear(PyObject *self, PyObject *) {
    clear_table(reinterpret_cast<EphemeronMap *>(self));
    Py_RETURN_NONE;
}

enum class Snapshot { kKeys, kItems };

// A new list of the keys or (key, value) pairs of the entries in the table
// now.
PyObject *snapshot(EphemeronMap *m, Snapshot what) {
    // Building the list allocates, which may run code that changes the
    // table: first take a reference to every key and value, which runs none.
    size_t n = m->size;
    auto **held = static_cast<PyObject **>(PyMem_Malloc((2 * n + 1) * sizeof(PyObject *)));
    if (held == nullptr) {
        return PyErr_NoMemory();
    }
    size_t count = 0;
    for (size_t i = 0; m->slots != nullptr && i <= m->mask; i++) {
        if (EphemeronEntry *e = usable(m->slots[i])) {
            held[2 * count] = Py_NewRef(e->ref.wr_object);
            held[2 * count + 1] = Py_NewRef(e->value);
            count++;
        }
    }
    PyObject *list = PyList_New(static_cast<Py_ssize_t>(count));
    for (size_t j = 0; list != nullptr && j < count; j++) {
        PyObject *key = held[2 * j];
        PyObject *value = held[2 * j + 1];
        PyObject *item = what == Snapshot::kKeys ? Py_NewRef(key) : PyTuple_Pack(2, key, value);
        if (item == nullptr) {
            Py_CLEAR(list);
        } else {
            PyList_SET_ITEM(list, static_cast<Py_ssize_t>(j), item);
        }
    }
    for (size_t j = 0; j < 2 * count; j++) {
        Py_DECREF(held[j]);
    }
    PyMem_Free(held);
    return list;
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

// keys(), values() and items() return the views of collections.abc, as
// Mapping's own methods do: the map is registered as a MutableMapping, so
// code typed against Mapping may use set operations on keys() and items().
// They are live, as dict's views are, and iterate over a snapshot of the
// keys (map_iter), which keeps those keys alive until the iteration ends.
PyObject *abc_view(PyObject *self, const char *view_name) {
    PyObject *view_type = abc_attribute(view_name);
    if (view_type == nullptr) {
        return nullptr;
    }
    PyObject *view = PyObject_CallOneArg(view_type, self);
    Py_DECREF(view_type);
    return view;
}

PyObject *map_keys(PyObject *self, PyObject *) { return abc_view(self, "KeysView"); }
PyObject *map_values(PyObject *self, PyObject *) { return abc_view(self, "ValuesView"); }
PyObject *map_items(PyObject *self, PyObject *) { return abc_view(self, "ItemsView"); }

PyObject *map_iter(PyObject *self) {
    PyObject *keys = snapshot(reinterpret_cast<EphemeronMap *>(self), Snapshot::kKeys);
    if (keys == nullptr) {
        return nullptr;
    }
    PyObject *iterator = PyObject_GetIter(keys);
    Py_DECREF(keys);
    return iterator;
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
        PyObject *items = snapshot(reinterpret_cast<EphemeronMap *>(other), Snapshot::kItems);
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
    PyObject *copy = map_alloc_new(&EphemeronMapType);
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
    int equal = PyList_GET_SIZE(items) == static_cast<Py_ssize_t>(m->size);
    for (Py_ssize_t i = 0; equal == 1 && i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = as_pair(PyList_GET_ITEM(items, i), "EphemeronMap.__eq__");
        if (pair == nullptr) {
            equal = -1;
            break;
        }
        // The comparison may run code that changes m: hold the value.
        EphemeronEntry *e = find(m, PyTuple_GET_ITEM(pair, 0));
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
     "popitem($self, /)\n--\n\nRemoves and returns some (key, value) pair; KeyError when empty."},
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
PyTypeObject EphemeronEntryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

void ephemeron_visit_entries(PyObject *key, visitproc visit, void *arg) {
    for (PyWeakReference *ref = compat::weakrefs_of(key); ref != nullptr; ref = ref->wr_next) {
        if (Py_IS_TYPE(reinterpret_cast<PyObject *>(ref), &EphemeronEntryType) &&
            reinterpret_cast<EphemeronEntry *>(ref)->value != nullptr) {
            visit(reinterpret_cast<PyObject *>(ref), arg);
        }
    }
}

EphemeronEntry *ephemeron_find_entry(EphemeronMap *map, PyObject *key) { return find(map, key); }

PyObject *ephemeron_entry_key(EphemeronEntry *entry) {
    return usable(entry) ? entry->ref.wr_object : nullptr;
}

bool ephemeron_generations_pending() { return state.listed != 0 || state.whole != 0; }

void ephemeron_begin_generation_pass() {
    for (EphemeronMap *m : state.maps) {
        EntryGenerations *g = m->generations;
        if (g == nullptr) {
            continue;
        }
        // `examined` is empty unless a pass was abandoned: its entries join.
        // Without memory for both lists, the whole map is examined.
        std::vector<uintptr_t> &examined = g->examined.listed;
        bool whole = g->young.whole || g->examined.whole;
        if (!whole && examined.empty()) {
            examined.swap(g->young.listed);
        } else if (!whole) {
            try {
                examined.insert(examined.end(), g->young.listed.begin(), g->young.listed.end());
                std::vector<uintptr_t>().swap(g->young.listed);  // moved: still counted as listed
            } catch (const std::bad_alloc &) {
                whole = true;
            }
        }
        if (whole) {
            set_whole(g->examined);
        }
        forget(g->young);  // what is left of it: nothing, or a list the whole map covers
        g->compact_at = kCompactMin;
    }
}

void ephemeron_age_generations(bool straight_to_old) {
    for (EphemeronMap *m : state.maps) {
        if (EntryGenerations *g = m->generations) {
            forget(g->middle);
            if (straight_to_old) {
                forget(g->examined);
            } else {
                std::swap(g->middle, g->examined);
            }
        }
    }
}

void ephemeron_all_old() {
    for (EphemeronMap *m : state.maps) {
        unlist_all(m);
    }
}

bool ephemeron_generation_whole(const EphemeronMap *m) {
    const EntryGenerations *g = m->generations;
    return g != nullptr && (g->middle.whole || g->examined.whole);
}

size_t ephemeron_generation_seeds(const EphemeronMap *m) {
    const EntryGenerations *g = m->generations;
    return g != nullptr ? g->middle.listed.size() + g->examined.listed.size() : 0;
}

PyObject *ephemeron_generation_key(const EphemeronMap *m, size_t i) {
    const EntryGenerations *g = m->generations;
    size_t middle = g->middle.listed.size();
    uintptr_t address = i < middle ? g->middle.listed[i] : g->examined.listed[i - middle];
    EphemeronEntry *e = find_by_address(m, address);
    return e != nullptr ? e->ref.wr_object : nullptr;
}

PyObject *ephemeron_detach(EphemeronEntry *entry) {
    EphemeronMap *m = map_of(entry);
    if (m == nullptr || entry->value == nullptr) {
        return nullptr;  // removed already, or its key is dying and the callback will
    }
    return take_value(m, entry);  // the caller's reference keeps the entry
}

int ephemeron_get(EphemeronMap *m, PyObject *key, PyObject **value) {
    bool bad_key;
    PyObject *found = lookup(m, key, &bad_key);
    *value = found != nullptr ? Py_NewRef(found) : nullptr;
    return found != nullptr ? 1 : bad_key ? -1 : 0;
}

int ephemeron_set(EphemeronMap *m, PyObject *key, PyObject *value) {
    if (EphemeronEntry *e = find(m, key)) {
        replace_value(e, value);
        return 0;
    }
    if (check_key(key) < 0) {
        return -1;
    }
    EphemeronEntry *entry = new_entry(m, key);
    if (entry == nullptr) {
        return -1;
    }
    // Making the entry may have run code that set this key meanwhile.
    if (EphemeronEntry *e = find(m, key)) {
        Py_DECREF(entry);
        replace_value(e, value);
        return 0;
    }
    size_t capacity = m->slots ? m->mask + 1 : 0;
    if ((m->size + 1) * 3 > capacity * 2 && resize(m, capacity ? capacity * 2 : 8) < 0) {
        Py_DECREF(entry);
        return -1;
    }
    if (!list_young(m, entry->key_address)) {
        Py_DECREF(entry);
        PyErr_NoMemory();
        return -1;
    }
    entry->value = Py_NewRef(value);
    insert(m, entry);
    return 0;
}

int ephemeron_delete(EphemeronMap *m, PyObject *key) {
    if (EphemeronEntry *e = find(m, key)) {
        remove(m, e);
        return 1;
    }
    return check_key(key) < 0 ? -1 : 0;
}

EphemeronMap *ephemeron_new() {
    return reinterpret_cast<EphemeronMap *>(map_alloc_new(&EphemeronMapType));
}

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

    EphemeronEntryType.tp_name = "coextra._EphemeronEntry";
    EphemeronEntryType.tp_doc = "One EphemeronMap entry: a weak reference to its key that owns the value.";
    EphemeronEntryType.tp_base = &_PyWeakref_RefType;
    EphemeronEntryType.tp_basicsize = sizeof(EphemeronEntry);
    EphemeronEntryType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
    EphemeronEntryType.tp_traverse = entry_traverse;
    EphemeronEntryType.tp_clear = entry_tp_clear;
    EphemeronEntryType.tp_dealloc = entry_dealloc;

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
    if (PyType_Ready(&KeyDeathType) < 0 || PyType_Ready(&EphemeronEntryType) < 0) {
        return -1;
    }
    return PyType_Ready(&EphemeronMapType);
}

}  // namespace coextra::detail
