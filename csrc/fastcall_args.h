// fastcall_args.h -- argument parsing for coextra's Python-facing functions,
// which are raw METH_FASTCALL | METH_KEYWORDS functions: one error style for
// every bad call, a __text_signature__ for inspect and help(), and no generic
// dispatch on the per-call paths.
//
// Every parameter is positional-or-keyword, as in a def: the stubs
// (_coextra.pyi) and the runtime must agree, so holder(obj=f) works like
// holder(f). Values are borrowed from the caller's argument array.
#pragma once

#include "compat.h"

#include <limits>

namespace coextra::detail {

// Fills values[0, count) from args/kwnames by position or by names[i].
// values[i] keeps its initial value (a default, or NULL for "required") when
// not given. Returns false with TypeError for too many arguments, an unknown
// or repeated keyword, or a missing required one.
inline bool parse_fastcall_args(const char *function, const char *const *names, int count,
                                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                PyObject **values) {
    if (nargs > count) {
        PyErr_Format(PyExc_TypeError, "coextra: %s() takes at most %d arguments (%zd given)",
                     function, count, nargs);
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
            PyErr_Format(PyExc_TypeError, "coextra: %s() got an unexpected or repeated argument '%U'",
                         function, key);
            return false;
        }
        values[slot] = args[nargs + k];
    }
    for (int j = 0; j < count; j++) {
        if (values[j] == nullptr) {
            PyErr_Format(PyExc_TypeError, "coextra: %s() missing required argument '%s'", function,
                         names[j]);
            return false;
        }
    }
    return true;
}

// An int argument from `low` to `high` (or_none: None is accepted too, and
// left for the caller to test first). Returns false with TypeError when value
// is not an int (bool is refused too: True is not a count) or ValueError when
// it is out of range; both messages name what was given and what is accepted.
inline bool int_argument(PyObject *value, const char *what, long long low, long long high,
                         long long *out, bool or_none = false) {
    const char *none = or_none ? "None or " : "";
    if (!PyLong_Check(value) || PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "coextra: %s must be %san int from %lld to %lld, not %.200s",
                     what, none, low, high, Py_TYPE(value)->tp_name);
        return false;
    }
    int overflow = 0;
    long long result = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (result == -1 && PyErr_Occurred()) {
        return false;
    }
    if (overflow != 0 || result < low || result > high) {
        PyErr_Format(PyExc_ValueError, "coextra: %s must be %san int from %lld to %lld, not %R",
                     what, none, low, high, value);
        return false;
    }
    *out = result;
    return true;
}

// A bool argument: True or False only, since a truthy value passed by
// mistake (a string, a callable) should not silently switch a mode on.
inline bool bool_argument(PyObject *value, const char *what, bool *out) {
    if (!PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "coextra: %s must be True or False, not %.200s", what,
                     Py_TYPE(value)->tp_name);
        return false;
    }
    *out = value == Py_True;
    return true;
}

// A raw function as the PyMethodDef slot wants it.
template <typename Function>
PyCFunction as_method(Function *function) {
    return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

}  // namespace coextra::detail
