/* example_backend.c -- a complete native backend on coextra's C API, in C.
 *
 * It is the example of docs/c-api.md and is built by CMake from the
 * public header alone (it does not link against coextra), exactly as a
 * third-party extension is; tests/python/test_capi.py imports and uses it.
 *
 * It caches (key, value) pairs on a function's code object and finds them
 * again with a native guard that compares keys, with no Python-level call:
 *
 *   remember(f, key, value)   cache (key, value) on f's code
 *   recall(f, key)            the value cached for key, or None
 *   keys(f)                   every cached key, most recently used first
 *   forget(f, key)            remove the entry for key; True if there was one
 *   clear(f)                  remove every entry
 *   detach(f)                 detach f's holder; True if there was one
 *   size(f)                   how many entries f's code has
 *   import_again()            call coextra_import() again (returns None)
 */
#include <coextra/coextra.h>

/* f's code object, borrowed from f, or NULL with TypeError. */
static PyObject *code_of(PyObject *f) {
    if (PyCode_Check(f)) {
        return f;
    }
    if (PyFunction_Check(f)) {
        return PyFunction_GetCode(f);
    }
    PyErr_SetString(PyExc_TypeError, "expected a function or a code object");
    return NULL;
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

static PyObject *remember(PyObject *self, PyObject *args) {
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

static PyObject *recall(PyObject *self, PyObject *args) {
    PyObject *f, *key, *entry;
    if (!PyArg_ParseTuple(args, "OO", &f, &key)) {
        return NULL;
    }
    PyObject *code = code_of(f);
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

static PyObject *keys(PyObject *self, PyObject *f) {
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

static PyObject *forget(PyObject *self, PyObject *args) {
    PyObject *f, *key, *entry;
    if (!PyArg_ParseTuple(args, "OO", &f, &key)) {
        return NULL;
    }
    PyObject *code = code_of(f);
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

static PyObject *clear(PyObject *self, PyObject *f) {
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

static PyObject *detach(PyObject *self, PyObject *f) {
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->holder_of(code);
    return PyBool_FromLong(holder != NULL && COEXTRA_API->detach(holder));
}

static PyObject *size(PyObject *self, PyObject *f) {
    PyObject *code = code_of(f);
    if (code == NULL) {
        return NULL;
    }
    PyObject *holder = COEXTRA_API->holder_of(code);
    return PyLong_FromSsize_t(holder ? COEXTRA_API->size(holder) : 0);
}

static PyObject *import_again(PyObject *self, PyObject *unused) {
    if (coextra_import() < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"remember", remember, METH_VARARGS, "remember(f, key, value): cache (key, value) on f's code."},
    {"recall", recall, METH_VARARGS, "recall(f, key): the value cached for key, or None."},
    {"keys", keys, METH_O, "keys(f): cached keys, most recently used first."},
    {"forget", forget, METH_VARARGS, "forget(f, key): remove key's entry; True if there was one."},
    {"clear", clear, METH_O, "clear(f): remove every entry."},
    {"detach", detach, METH_O, "detach(f): detach f's holder; True if there was one."},
    {"size", size, METH_O, "size(f): how many entries f's code has."},
    {"import_again", import_again, METH_NOARGS, "import_again(): coextra_import() again."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_capi_example", "A native backend on coextra's C API.", -1, methods,
};

PyMODINIT_FUNC PyInit__capi_example(void) {
    if (coextra_import() < 0) {
        return NULL;
    }
    return PyModule_Create(&module);
}
