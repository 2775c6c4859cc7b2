/* _capi_two_files: a C API client of two files (three with the C++ one) that
 * share no table, the mistake coextra.h must make loud. This file calls
 * coextra_import(); unimported.c and unimported.cpp include the header with
 * neither COEXTRA_API_UNIQUE_SYMBOL nor COEXTRA_NO_IMPORT and never import,
 * so their table is the one of a file that has not imported. Each of their
 * calls must raise a Python exception that names coextra_import(), never
 * dereference NULL. tests/python/test_capi.py runs them in a subprocess.
 *
 *   ensure(code)             COEXTRA_API->ensure(code) is not None
 *   holder_of(code)          COEXTRA_API->holder_of(code) is not None
 *   inline_holder_of(code)   coextra_holder_of(code) is not None
 *   cpp_ensure(code)         bool(coextra::Holder::ensure(code))
 *   imported_ensure(code)    ensure() from this file, which imported
 *   imported_holder_of(code) COEXTRA_API->holder_of(code) from this file
 *   imported_find(code)      COEXTRA_API->find(code, NULL, NULL, NULL)'s entry, from this file
 *
 * A single-phase module, so that from 3.13 a subinterpreter's import runs
 * its init (and coextra_import()) in the main interpreter
 * (tests/python/test_interpreters.py).
 */
#include <coextra/coextra.h>

PyObject *unimported_ensure(PyObject *self, PyObject *code);
PyObject *unimported_holder_of(PyObject *self, PyObject *code);
PyObject *unimported_inline_holder_of(PyObject *self, PyObject *code);
PyObject *unimported_cpp_ensure(PyObject *self, PyObject *code);

static PyObject *imported_ensure(PyObject *self, PyObject *code) {
    PyObject *holder = COEXTRA_API->ensure(code);
    return holder ? PyBool_FromLong(1) : NULL;
}

static PyObject *imported_holder_of(PyObject *self, PyObject *code) {
    PyObject *holder = COEXTRA_API->holder_of(code);  /* borrowed */
    return Py_NewRef(holder != NULL ? holder : Py_None);
}

static PyObject *imported_find(PyObject *self, PyObject *code) {
    PyObject *entry = NULL;
    if (COEXTRA_API->find(code, NULL, NULL, &entry) < 0) {
        return NULL;
    }
    return entry != NULL ? entry : Py_NewRef(Py_None);  /* find() gives a new reference */
}

static PyMethodDef methods[] = {
    {"ensure", unimported_ensure, METH_O, NULL},
    {"holder_of", unimported_holder_of, METH_O, NULL},
    {"inline_holder_of", unimported_inline_holder_of, METH_O, NULL},
    {"cpp_ensure", unimported_cpp_ensure, METH_O, NULL},
    {"imported_ensure", imported_ensure, METH_O, NULL},
    {"imported_holder_of", imported_holder_of, METH_O, NULL},
    {"imported_find", imported_find, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_capi_two_files", "A C API client whose files share no table.", -1,
    methods,
};

PyMODINIT_FUNC PyInit__capi_two_files(void) {
    if (coextra_import() < 0) {
        return NULL;
    }
    return PyModule_Create(&module);
}
