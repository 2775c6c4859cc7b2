/* cache.c -- the cache of example_backend: (key, value) pairs on a code
 * object, found again by a native guard that compares keys, with no
 * Python-level call per entry. It uses the C API table that module.c
 * imported (COEXTRA_NO_IMPORT: example_backend.h shares one table). */
#define COEXTRA_NO_IMPORT
#include "example_backend.h"

/* f's code object, borrowed from f, or NULL with TypeError. The C API takes
 * code objects only, so a function is unwrapped here, once per call. */
static PyObject *code_of(PyObject *f) {
    if (PyCode_Check(f)) {
        return f;
    }
    if (PyFunction_Check(f)) {
        return PyFunction_GetCode(f);
    }
    PyErr_Format(PyExc_TypeError, "example_backend: expected a function or a code object, not '%.200s'",
                 Py_TYPE(f)->tp_name);
    return NULL;
}

/* The arguments (f, key): f's code object, borrowed, with *key borrowed from
 * args; or NULL with an exception. */
static PyObject *code_and_key(PyObject *args, PyObject **key) {
    PyObject *f;
    if (!PyArg_ParseTuple(args, "OO", &f, key)) {
        return NULL;
    }
    return code_of(f);
}

/* Ours are (key, value) pairs; other code may cache other things on the same
 * code object, so skip what is not ours. */
static int is_pair(PyObject *product) {
    return PyTuple_Check(product) && PyTuple_GET_SIZE(product) == 2;
}

/* The native guard: is this product ours, with a key equal to *context? */
static int key_equals(PyObject *product, void *context) {
    if (!is_pair(product)) {
        return 0;
    }
    return PyObject_RichCompareBool(PyTuple_GET_ITEM(product, 0), (PyObject *)context, Py_EQ);
}

PyObject *example_remember(PyObject *self, PyObject *args) {
    PyObject *f, *key, *value;
    if (!PyArg_ParseTuple(args, "OOO", &f, &key, &value)) {
        return NULL;
    }
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->ensure(code); /* borrowed */
    if (holder == NULL) {
        return NULL;
    }
    /* Our own reference while we allocate: an allocation may run a GC pass
     * (3.10/3.11) whose callbacks may detach the holder. */
    Py_INCREF(holder);
    PyObject *product = PyTuple_Pack(2, key, value);
    PyObject *entry = product ? COEXTRA_API->add(holder, product, NULL) : NULL; /* new ref */
    Py_XDECREF(product);
    Py_DECREF(holder);
    if (entry == NULL) {
        return NULL;
    }
    Py_DECREF(entry);
    Py_RETURN_NONE;
}

PyObject *example_recall(PyObject *self, PyObject *args) {
    PyObject *key, *entry;
    PyObject *code = code_and_key(args, &key);
    if (code == NULL) {
        return NULL;
    }
    int found = COEXTRA_API->find(code, key_equals, key, &entry);
    if (found < 0) {
        return NULL; /* the guard raised */
    }
    if (found == 0) {
        Py_RETURN_NONE;
    }
    PyObject *value = PyTuple_GET_ITEM(COEXTRA_API->entry_product(entry), 1);
    Py_INCREF(value);
    Py_DECREF(entry);
    return value;
}

static int append_key(PyObject *entry, PyObject *product, void *context) {
    if (!is_pair(product)) {
        return 0;
    }
    return PyList_Append((PyObject *)context, PyTuple_GET_ITEM(product, 0));
}

PyObject *example_keys(PyObject *self, PyObject *f) {
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *list = PyList_New(0);
    PyObject *holder = COEXTRA_API->holder_of(code);
    if (list != NULL && holder != NULL && COEXTRA_API->for_each(holder, append_key, list) < 0) {
        Py_CLEAR(list);
    }
    return list;
}

PyObject *example_forget(PyObject *self, PyObject *args) {
    PyObject *key, *entry;
    PyObject *code = code_and_key(args, &key);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->holder_of(code);
    if (holder == NULL) {
        Py_RETURN_FALSE;
    }
    /* Our own reference: the guard runs Python code (__eq__), which may
     * detach the holder and so drop the registry's reference. */
    Py_INCREF(holder);
    int found = COEXTRA_API->lookup(holder, key_equals, key, &entry);
    int removed = found > 0 ? COEXTRA_API->remove(holder, entry) : 0;
    Py_XDECREF(entry);
    Py_DECREF(holder);
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(removed);
}

PyObject *example_clear(PyObject *self, PyObject *f) {
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->holder_of(code);
    if (holder != NULL) {
        COEXTRA_API->clear(holder);
    }
    Py_RETURN_NONE;
}

PyObject *example_detach(PyObject *self, PyObject *f) {
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->holder_of(code);
    return PyBool_FromLong(holder != NULL && COEXTRA_API->detach(holder));
}

PyObject *example_size(PyObject *self, PyObject *f) {
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->holder_of(code);
    return PyLong_FromSsize_t(holder ? COEXTRA_API->size(holder) : 0);
}
