// enabled_scope.h -- coextra.evalframe.EnabledScope (enabled_scope.cpp), the
// context manager evalframe.enabled() returns.
#pragma once

#include <Python.h>

namespace coextra_bindings {

// A new scope for callback (callable) and trace, or NULL with an exception.
PyObject *enabled_scope_new(PyObject *callback, bool trace);
// The type, made ready on first use; NULL with an exception.
PyTypeObject *enabled_scope_type();

}  // namespace coextra_bindings
