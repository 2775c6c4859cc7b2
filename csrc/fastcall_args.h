// fastcall_args.h -- argument parsing for the METH_FASTCALL | METH_KEYWORDS
// functions (the per-call paths that skip pybind11's dispatch).
//
// Every parameter is positional-or-keyword, as in a def: the stubs
// (_coextra.pyi) and the runtime must agree, so holder(obj=f) works like
// holder(f). Values are borrowed from the caller's argument array.
#pragma once

#include "compat.h"

namespace coextra::detail {

// Fills values[0, count) from args/kwnames by position or by names[i].
// values[i] keeps its initial value (a default, or NULL for "required") when
// not given. Returns false with TypeError for too many arguments, an unknown
// or repeated keyword, or a missing required one.
inline bool parse_fastcall_args(const char *function, const char *const *names, int count,
                                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                PyObject **values) {
    if (nargs > count) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", function,
                     count, nargs);
        return false;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        values[i] = args[i];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int slot = -1;
        for (int j = 0; j < count && slot < 0; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                slot = j;
            }
        }
        if (slot < 0 || slot < nargs) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected or repeated argument '%U'",
                         function, key);
            return false;
        }
        values[slot] = args[nargs + k];
    }
    for (int j = 0; j < count; j++) {
        if (values[j] == nullptr) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", function, names[j]);
            return false;
        }
    }
    return true;
}

}  // namespace coextra::detail
