/* module.c -- example_backend, a complete native backend on coextra's C API,
 * in C and in two files: this one defines the module and imports the C API
 * table, cache.c uses it (example_backend.h makes it one table for both).
 * It is the example of docs/c-api.md; it builds from coextra's installed
 * headers alone (coextra.get_include(); nothing to link), with setup.py or
 * CMakeLists.txt next to it.
 *
 *   remember(f, key, value)   cache (key, value) on f's code
 *   recall(f, key)            the value cached for key, or None
 *   keys(f)                   every cached key, most recently used first
 *   forget(f, key)            remove the entry for key; True if there was one
 *   clear(f)                  remove every entry
 *   detach(f)                 detach f's holder; True if there was one
 *   size(f)                   how many entries f's code has
 *   import_again()            call coextra_import() again (returns None)
 *
 * f is a function or a code object.
 */
#include "example_backend.h"

static PyObject *import_again(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    if (coextra_import() < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"remember", example_remember, METH_VARARGS, "remember(f, key, value): cache (key, value) on f's code."},
    {"recall", example_recall, METH_VARARGS, "recall(f, key): the value cached for key, or None."},
    {"keys", example_keys, METH_O, "keys(f): cached keys, most recently used first."},
    {"forget", example_forget, METH_VARARGS, "forget(f, key): remove key's entry; True if there was one."},
    {"clear", example_clear, METH_O, "clear(f): remove every entry."},
    {"detach", example_detach, METH_O, "detach(f): detach f's holder; True if there was one."},
    {"size", example_size, METH_O, "size(f): how many entries f's code has."},
    {"import_again", import_again, METH_NOARGS, "import_again(): coextra_import() again."},
    {NULL, NULL, 0, NULL},
};

/* Multi-phase init, so that the module is made in the interpreter that
 * imports it, where coextra_import() refuses any but the main one (from
 * 3.12 the slot below also has CPython refuse isolated subinterpreters
 * first). A single-phase module (PyModule_Create) is made once and handed to
 * legacy subinterpreters too, whose code objects' co_extra slots belong to
 * other users. */
static int exec_module(PyObject *module) {
    (void)module;
    /* ImportError when coextra is missing or of another C API version. */
    return coextra_import();
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "example_backend",
    .m_doc = "A native backend on coextra's C API.",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC PyInit_example_backend(void) { return PyModuleDef_Init(&module); }
