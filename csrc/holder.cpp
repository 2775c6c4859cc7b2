// holder.cpp -- the Holder type: list operations and the Python methods.
#include "holder.h"

#include "fastcall_args.h"
#include "include/coextra/ref.hpp"

#include <cstring>
#include <limits>

namespace coextra::detail {

// ---------------------------------------------------------------------------
// Storage. The entries are a plain array: holders usually have one or a few
// entries, so an array is the smallest layout (and for one entry, no separate
// block at all: see Holder::items) and the fastest to scan; moving a hit to the
// front is a short memmove.

static int reserve(Holder *h, uint32_t wanted) {
    if (wanted <= h->capacity) {
        return 0;
    }
    if (wanted == 1) {
        h->capacity = 1;  // the inline slot
        return 0;
    }
    uint32_t capacity = h->capacity > 1 ? h->capacity * 2 : 2;
    while (capacity < wanted) {
        capacity *= 2;
    }
    PyObject **many;
    if (h->capacity > 1) {
        many = static_cast<PyObject **>(PyMem_Realloc(h->items.many, capacity * sizeof(PyObject *)));
    } else {
        many = static_cast<PyObject **>(PyMem_Malloc(capacity * sizeof(PyObject *)));
        if (many != nullptr && h->size == 1) {
            many[0] = h->items.one;
        }
    }
    if (many == nullptr) {
        PyErr_NoMemory();
        return -1;
    }
    h->items.many = many;
    h->capacity = capacity;
    return 0;
}

// This file's counts (holder_live_count, holder_attached_entries).
static int64_t live_holders = 0;
static uint64_t attached_entries = 0;

int64_t holder_live_count() { return live_holders; }

uint64_t holder_attached_entries() { return attached_entries; }

static void count_entries(const Holder *h, int64_t delta) {
    if (holder_attached(h)) {
        attached_entries += static_cast<uint64_t>(delta);
    }
}

void holder_mark_attached(Holder *h, PyObject *code) {
    h->code = code;
    count_entries(h, h->size);
}

void holder_mark_detached(Holder *h) {
    count_entries(h, -static_cast<int64_t>(h->size));
    h->code = nullptr;
}

static Py_ssize_t index_of(Holder *h, const Entry *entry) {
    PyObject **items = holder_items(h);
    for (uint32_t i = 0; i < h->size; i++) {
        if (items[i] == reinterpret_cast<const PyObject *>(entry)) {
            return i;
        }
    }
    return -1;
}

// Takes items[i] out of the array and returns the reference the array held.
static Ref take_at(Holder *h, uint32_t i) {
    PyObject **items = holder_items(h);
    Ref taken = Ref::steal(items[i]);
    std::memmove(&items[i], &items[i + 1], (h->size - i - 1) * sizeof(PyObject *));
    h->size--;
    count_entries(h, -1);
    return taken;
}

// Evicts from the LRU end. Each entry is unlinked before its reference is
// dropped, so a __del__ that runs during the drop sees a consistent holder (and
// whatever it adds is bounded by the same loop).
static void evict_beyond_bound(Holder *h) {
    while (h->max_entries != 0 && h->size > h->max_entries) {
        Ref evicted = take_at(h, h->size - 1);
    }
}

Holder *holder_new() {
    Holder *h = PyObject_GC_New(Holder, &HolderType);
    if (h == nullptr) {
        return nullptr;
    }
    h->code = nullptr;
    h->items.many = nullptr;
    h->size = 0;
    h->capacity = 0;
    h->max_entries = 0;
    h->registry_slot = 0;
    live_holders++;
    PyObject_GC_Track(h);
    return h;
}

Entry *holder_add(Holder *h, PyObject *product, PyObject *guard) {
    Ref entry = Ref::steal(reinterpret_cast<PyObject *>(entry_new(product, guard)));
    if (!entry || reserve(h, h->size + 1) < 0) {
        return nullptr;
    }
    PyObject **items = holder_items(h);
    std::memmove(&items[1], &items[0], h->size * sizeof(PyObject *));
    items[0] = Py_NewRef(entry.get());
    h->size++;
    count_entries(h, 1);
    evict_beyond_bound(h);
    return reinterpret_cast<Entry *>(entry.release());
}

int holder_lookup(Holder *h, EntryMatcher match, void *context, Entry **found) {
    *found = nullptr;
    const uint32_t n = h->size;
    if (n == 0) {
        return 0;
    }
    // A matcher may run Python code that adds, removes, clears or detaches; walk
    // a private snapshot holding its own references instead of the live array.
    PyObject *inline_snapshot[8];
    PyObject **snapshot = inline_snapshot;
    if (n > 8) {
        snapshot = static_cast<PyObject **>(PyMem_Malloc(n * sizeof(PyObject *)));
        if (snapshot == nullptr) {
            PyErr_NoMemory();
            return -1;
        }
    }
    PyObject **items = holder_items(h);
    for (uint32_t i = 0; i < n; i++) {
        snapshot[i] = Py_NewRef(items[i]);
    }
    int result = 0;
    for (uint32_t i = 0; i < n && result == 0; i++) {
        Entry *entry = reinterpret_cast<Entry *>(snapshot[i]);
        result = match(entry, context);
        if (result > 0) {
            *found = reinterpret_cast<Entry *>(Py_NewRef(entry));
        }
    }
    if (result > 0) {
        Entry *hit = *found;
        hit->hits++;
        // The hit may have moved, or left the holder, while matchers ran.
        Py_ssize_t at = index_of(h, hit);
        if (at > 0) {
            PyObject **now = holder_items(h);
            std::memmove(&now[1], &now[0], at * sizeof(PyObject *));
            now[0] = reinterpret_cast<PyObject *>(hit);
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        Py_DECREF(snapshot[i]);
    }
    if (snapshot != inline_snapshot) {
        PyMem_Free(snapshot);
    }
    return result < 0 ? -1 : result;
}

int holder_remove(Holder *h, Entry *entry) {
    Py_ssize_t at = index_of(h, entry);
    if (at < 0) {
        return 0;
    }
    take_at(h, static_cast<uint32_t>(at)).reset();
    return 1;
}

void holder_clear(Holder *h) {
    // Detach the whole array first: dropping the references may run __del__
    // methods that use this holder again, and they must find it empty.
    PyObject *one = h->items.one;
    bool on_heap = h->capacity > 1;
    PyObject **items = on_heap ? h->items.many : &one;
    uint32_t size = h->size;
    count_entries(h, -static_cast<int64_t>(size));
    h->items.many = nullptr;
    h->size = 0;
    h->capacity = 0;
    for (uint32_t i = 0; i < size; i++) {
        Py_DECREF(items[i]);
    }
    if (on_heap) {
        PyMem_Free(items);
    }
}

void holder_set_max_entries(Holder *h, uint32_t max_entries) {
    h->max_entries = max_entries;
    evict_beyond_bound(h);
}

PyObject *holder_entries(Holder *h) {
    PyObject *list = PyList_New(h->size);
    if (list == nullptr) {
        return nullptr;
    }
    PyObject **items = holder_items(h);
    for (uint32_t i = 0; i < h->size; i++) {
        PyList_SET_ITEM(list, i, Py_NewRef(items[i]));
    }
    return list;
}

// ---------------------------------------------------------------------------
// GC contract of Holder.
//   Owns:     one strong reference to every Entry in items.
//   Borrows:  `code` (see holder.h: valid while non-NULL). Not visited: a code
//             object is not a GC container, and the holder does not own it.
//   Owned by: the Registry while attached (one reference), plus whoever holds
//             the holder from Python or C. co_extra holds only a non-owning
//             pointer, so the code object is never an owner.
//   Traverse: visits every entry, which is everything it owns.
//   Clear:    drops every entry (holder_clear). It never detaches: attachment is
//             the registry's to undo, and an attached holder cannot be cyclic
//             garbage while the registry that owns it is alive.

static int holder_traverse(PyObject *op, visitproc visit, void *arg) {
    Holder *h = reinterpret_cast<Holder *>(op);
    PyObject **items = holder_items(h);
    for (uint32_t i = 0; i < h->size; i++) {
        Py_VISIT(items[i]);
    }
    return 0;
}

static int holder_tp_clear(PyObject *op) {
    holder_clear(reinterpret_cast<Holder *>(op));
    return 0;
}

static void holder_dealloc(PyObject *op) {
    Holder *h = reinterpret_cast<Holder *>(op);
    // The registry holds a reference while attached, so a dying holder is detached.
    assert(!holder_attached(h));
    PyObject_GC_UnTrack(op);
    Py_TRASHCAN_BEGIN(op, holder_dealloc)
    holder_clear(h);
    live_holders--;
    PyObject_GC_Del(op);
    Py_TRASHCAN_END
}

// ---------------------------------------------------------------------------
// Python methods.

static PyObject *holder_py_add(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames) {
    static const char *const names[] = {"product", "guard"};
    PyObject *values[2] = {nullptr, Py_None};
    if (!parse_fastcall_args("Holder.add", names, 2, args, nargs, kwnames, values) ||
        entry_check_guard(values[1], "Holder.add()") < 0) {
        return nullptr;
    }
    return reinterpret_cast<PyObject *>(
        holder_add(reinterpret_cast<Holder *>(op), values[0], values[1]));
}

// The arguments of a Python-level lookup, passed on to every guard unchanged.
// Borrowed from the caller's vectorcall, which outlives the lookup.
struct GuardCall {
    PyObject *const *args;
    size_t nargsf;
    PyObject *kwnames;
};

static int match_python_guard(Entry *entry, void *context) {
    if (entry->guard == nullptr) {
        return 1;  // no guard: always matches
    }
    auto *call = static_cast<GuardCall *>(context);
    Ref verdict = Ref::steal(PyObject_Vectorcall(entry->guard, call->args, call->nargsf, call->kwnames));
    return verdict ? PyObject_IsTrue(verdict.get()) : -1;
}

static PyObject *holder_py_lookup(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    GuardCall call{args, static_cast<size_t>(nargs), kwnames};
    Entry *found = nullptr;
    if (holder_lookup(reinterpret_cast<Holder *>(op), match_python_guard, &call, &found) < 0) {
        return nullptr;
    }
    return found ? reinterpret_cast<PyObject *>(found) : Py_NewRef(Py_None);
}

static PyObject *holder_py_remove(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    static const char *const names[] = {"entry"};
    PyObject *entry = nullptr;
    if (!parse_fastcall_args("Holder.remove", names, 1, args, nargs, kwnames, &entry)) {
        return nullptr;
    }
    if (!entry_check(entry)) {
        PyErr_Format(PyExc_TypeError, "coextra: Holder.remove(): entry must be a coextra.Entry, not %.200s",
                     Py_TYPE(entry)->tp_name);
        return nullptr;
    }
    if (!holder_remove(reinterpret_cast<Holder *>(op), reinterpret_cast<Entry *>(entry))) {
        PyErr_SetString(PyExc_ValueError, "coextra: Holder.remove(): the entry is not in this holder");
        return nullptr;
    }
    Py_RETURN_NONE;
}

static PyObject *holder_py_clear(PyObject *op, PyObject *) {
    holder_clear(reinterpret_cast<Holder *>(op));
    Py_RETURN_NONE;
}

static PyObject *holder_get_code(PyObject *op, void *) {
    PyObject *code = reinterpret_cast<Holder *>(op)->code;
    return Py_NewRef(code ? code : Py_None);
}

static PyObject *holder_get_entries(PyObject *op, void *) {
    return holder_entries(reinterpret_cast<Holder *>(op));
}

static PyObject *holder_get_max_entries(PyObject *op, void *) {
    uint32_t bound = reinterpret_cast<Holder *>(op)->max_entries;
    return bound ? PyLong_FromUnsignedLong(bound) : Py_NewRef(Py_None);
}

static int holder_set_max_entries_py(PyObject *op, PyObject *value, void *) {
    if (value == nullptr) {
        PyErr_SetString(PyExc_AttributeError, "coextra: max_entries cannot be deleted (set it to None for no bound)");
        return -1;
    }
    uint32_t bound = 0;
    if (value != Py_None) {
        long long requested = 0;
        if (!int_argument(value, "max_entries", 1, std::numeric_limits<uint32_t>::max(), &requested,
                          /*or_none=*/true)) {
            return -1;
        }
        bound = static_cast<uint32_t>(requested);
    }
    holder_set_max_entries(reinterpret_cast<Holder *>(op), bound);
    return 0;
}

static Py_ssize_t holder_length(PyObject *op) { return reinterpret_cast<Holder *>(op)->size; }

static PyObject *holder_iter(PyObject *op) {
    // Iterate over a snapshot: the loop body may change the holder.
    Ref entries = Ref::steal(holder_entries(reinterpret_cast<Holder *>(op)));
    return entries ? PyObject_GetIter(entries.get()) : nullptr;
}

static PyObject *holder_repr(PyObject *op) {
    Holder *h = reinterpret_cast<Holder *>(op);
    if (!holder_attached(h)) {
        return PyUnicode_FromFormat("<coextra.Holder detached entries=%u>", h->size);
    }
    return PyUnicode_FromFormat("<coextra.Holder code=%R entries=%u>", h->code, h->size);
}

static PyMethodDef holder_methods[] = {
    {"add", as_method(holder_py_add),
     METH_FASTCALL | METH_KEYWORDS,
     "add($self, /, product, guard=None)\n--\n\n"
     "add(product, guard=None) -> Entry\n\nInsert a new entry at the front; evict beyond "
     "max_entries."},
    {"lookup", as_method(holder_py_lookup),
     METH_FASTCALL | METH_KEYWORDS,
     "lookup($self, /, *args, **kwargs)\n--\n\n"
     "lookup(*args, **kwargs) -> Entry | None\n\nThe first entry whose guard returns true for "
     "these arguments (an entry without a guard always matches); the hit moves to the front."},
    {"remove", as_method(holder_py_remove),
     METH_FASTCALL | METH_KEYWORDS,
     "remove($self, /, entry)\n--\n\n"
     "remove(entry)\n\nRemove entry; ValueError if it is not in this holder, TypeError if it is "
     "not an Entry."},
    {"clear", holder_py_clear, METH_NOARGS, "clear($self, /)\n--\n\nRemove every entry."},
    {nullptr, nullptr, 0, nullptr},
};

static PyGetSetDef holder_getset[] = {
    {"code", holder_get_code, nullptr, "The code object, or None once detached.", nullptr},
    {"entries", holder_get_entries, nullptr, "A list of the entries, most recently used first.",
     nullptr},
    {"max_entries", holder_get_max_entries, holder_set_max_entries_py,
     "None (unbounded) or the most entries kept; the least recently used are evicted.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

static PySequenceMethods holder_as_sequence = {};

PyTypeObject HolderType = {PyVarObject_HEAD_INIT(nullptr, 0)};

int holder_type_ready() {
    if (HolderType.tp_flags & Py_TPFLAGS_READY) {
        return 0;
    }
    holder_as_sequence.sq_length = holder_length;
    HolderType.tp_name = "coextra.Holder";
    HolderType.tp_doc = "The cache of one code object: entries, most recently used first.";
    HolderType.tp_basicsize = sizeof(Holder);
    HolderType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    HolderType.tp_dealloc = holder_dealloc;
    HolderType.tp_traverse = holder_traverse;
    HolderType.tp_clear = holder_tp_clear;
    HolderType.tp_repr = holder_repr;
    HolderType.tp_iter = holder_iter;
    HolderType.tp_as_sequence = &holder_as_sequence;
    HolderType.tp_methods = holder_methods;
    HolderType.tp_getset = holder_getset;
    // tp_new stays NULL: holders are made by coextra.holder(obj, create=True).
    return PyType_Ready(&HolderType);
}

}  // namespace coextra::detail
