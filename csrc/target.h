// target.h -- which code object a public entry point is talking about.
//
// Every function that takes `obj` accepts a code object, a Python function or a
// bound method of a Python function, and means that object's code.
#pragma once

#include "compat.h"

namespace coextra {

// The code object of obj (borrowed from obj), or NULL with TypeError.
inline PyObject *code_of(PyObject *obj) {
    if (PyCode_Check(obj)) {
        return obj;
    }
    PyObject *function = PyMethod_Check(obj) ? PyMethod_GET_FUNCTION(obj) : obj;
    if (PyFunction_Check(function)) {
        return PyFunction_GET_CODE(function);
    }
    PyErr_Format(PyExc_TypeError,
                 "coextra: expected a code object, a Python function or a bound method, "
                 "not '%.200s'",
                 Py_TYPE(obj)->tp_name);
    return nullptr;
}

}  // namespace coextra
