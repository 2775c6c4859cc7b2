// target.h -- which code object a public entry point is talking about.
//
// Every function that takes `obj` accepts a code object, a Python function or a
// bound method of a Python function, and means that object's code.
#pragma once

#include "compat.h"

#include "include/coextra/ref.hpp"

namespace coextra::detail {

// What an `obj` parameter accepts, as its TypeError says.
constexpr const char kCodeTargets[] = "a code object, a Python function or a bound method of one";

// The code object of obj (borrowed from obj), or NULL with a TypeError that
// names `caller`, the public function obj was given to.
inline PyObject *code_of(PyObject *obj, const char *caller) {
    if (PyCode_Check(obj)) {
        return obj;
    }
    PyObject *function = PyMethod_Check(obj) ? PyMethod_GET_FUNCTION(obj) : obj;
    if (PyFunction_Check(function)) {
        return PyFunction_GET_CODE(function);
    }
    PyErr_Format(PyExc_TypeError, "coextra: %s(): obj must be %s, not %.200s", caller, kCodeTargets,
                 Py_TYPE(obj)->tp_name);
    return nullptr;
}

// The code object of obj as a strong reference held for a whole call; empty,
// with TypeError set, when obj has no code.
//
// code_of() borrows the code from the function, and the function's reference
// can go away in the middle of a call: any allocation may run a GC pass
// (3.10/3.11), and its callbacks, finalizers or another thread may assign
// f.__code__. A holder would then be attached to freed memory. Every public
// entry point that takes `obj` therefore holds this for as long as it uses
// the code; results that outlive the call (a holder, an entry) are new
// references taken before it is released, so a code object that dies at the
// end of the call detaches its holder cleanly.
inline Ref code_ref(PyObject *obj, const char *caller) { return Ref::borrow(code_of(obj, caller)); }

}  // namespace coextra::detail
