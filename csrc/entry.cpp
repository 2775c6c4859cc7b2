// entry.cpp -- the Entry type.
#include "entry.h"

#include <cstddef>

namespace coextra::detail {

// Entry objects in existence (entry_live_count).
static int64_t live_entries = 0;

int64_t entry_live_count() { return live_entries; }

int entry_check_guard(PyObject *guard, const char *caller) {
    if (guard != nullptr && guard != Py_None && !PyCallable_Check(guard)) {
        PyErr_Format(PyExc_TypeError, "coextra: %s: guard must be callable or None, not %.200s", caller,
                     Py_TYPE(guard)->tp_name);
        return -1;
    }
    return 0;
}

Entry *entry_new(PyObject *product, PyObject *guard) {
    if (guard == Py_None) {
        guard = nullptr;
    }
    Entry *self = PyObject_GC_New(Entry, &EntryType);
    if (self == nullptr) {
        return nullptr;
    }
    self->product = Py_NewRef(product);
    self->guard = guard ? Py_NewRef(guard) : nullptr;
    self->hits = 0;
    live_entries++;
    PyObject_GC_Track(self);
    return self;
}

// GC contract of Entry.
//   Owns:     product and guard (one strong reference each).
//   Owned by: the Holder whose list contains it, plus any Python or C code that
//             holds the entry itself (lookup results, iteration).
//   Traverse: visits product and guard, which is everything it owns.
//   Clear:    drops both; the entry stays a valid object whose product reads as
//             None. It is only reached by the GC when the entry is garbage.
static int entry_traverse(PyObject *op, visitproc visit, void *arg) {
    Entry *self = reinterpret_cast<Entry *>(op);
    Py_VISIT(self->product);
    Py_VISIT(self->guard);
    return 0;
}

static int entry_clear(PyObject *op) {
    Entry *self = reinterpret_cast<Entry *>(op);
    Py_CLEAR(self->product);
    Py_CLEAR(self->guard);
    return 0;
}

static void entry_dealloc(PyObject *op) {
    PyObject_GC_UnTrack(op);
    // Trashcan: long product chains (entry -> product -> holder -> entry ...)
    // must not overflow the C stack when they are freed.
    Py_TRASHCAN_BEGIN(op, entry_dealloc)
    entry_clear(op);
    live_entries--;
    PyObject_GC_Del(op);
    Py_TRASHCAN_END
}

static PyObject *none_if_null(PyObject *value) { return Py_NewRef(value ? value : Py_None); }

static PyObject *entry_get_product(PyObject *op, void *) {
    return none_if_null(reinterpret_cast<Entry *>(op)->product);
}

static PyObject *entry_get_guard(PyObject *op, void *) {
    return none_if_null(reinterpret_cast<Entry *>(op)->guard);
}

static PyObject *entry_get_hits(PyObject *op, void *) {
    return PyLong_FromUnsignedLongLong(reinterpret_cast<Entry *>(op)->hits);
}

static PyObject *entry_repr(PyObject *op) {
    Entry *self = reinterpret_cast<Entry *>(op);
    PyObject *product = self->product ? self->product : Py_None;
    // Type names only: a repr of the product or guard could run any code.
    return PyUnicode_FromFormat("<coextra.Entry product=%.100s hits=%llu guard=%.100s>",
                                Py_TYPE(product)->tp_name,
                                static_cast<unsigned long long>(self->hits),
                                self->guard ? Py_TYPE(self->guard)->tp_name : "None");
}

static PyGetSetDef entry_getset[] = {
    {"product", entry_get_product, nullptr, "The cached product.", nullptr},
    {"guard", entry_get_guard, nullptr, "The guard callable, or None.", nullptr},
    {"hits", entry_get_hits, nullptr, "How many lookups this entry answered.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject EntryType = {PyVarObject_HEAD_INIT(nullptr, 0)};

int entry_type_ready() {
    if (EntryType.tp_flags & Py_TPFLAGS_READY) {
        return 0;
    }
    EntryType.tp_name = "coextra.Entry";
    EntryType.tp_doc = "A cached product with its guard and hit count (created by Holder.add).";
    EntryType.tp_basicsize = sizeof(Entry);
    EntryType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    EntryType.tp_dealloc = entry_dealloc;
    EntryType.tp_traverse = entry_traverse;
    EntryType.tp_clear = entry_clear;
    EntryType.tp_repr = entry_repr;
    EntryType.tp_getset = entry_getset;
    // tp_new stays NULL: entries are made by Holder.add, never by calling the type.
    return PyType_Ready(&EntryType);
}

}  // namespace coextra::detail
