/* The C file of _capi_two_files that never calls coextra_import() (init.c
 * says why). The functions use the results as a caller that trusts "never
 * sets an exception" would. */
#include <coextra/coextra.h>

PyObject *unimported_ensure(PyObject *self, PyObject *code) {
    PyObject *holder = COEXTRA_API->ensure(code);
    return holder ? PyBool_FromLong(1) : NULL;
}

PyObject *unimported_holder_of(PyObject *self, PyObject *code) {
    return PyBool_FromLong(COEXTRA_API->holder_of(code) != NULL);
}

PyObject *unimported_inline_holder_of(PyObject *self, PyObject *code) {
    return PyBool_FromLong(coextra_holder_of(code) != NULL);
}
