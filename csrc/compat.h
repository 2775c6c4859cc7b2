// compat.h -- every CPython version difference coextra depends on, in one place.
//
// The rest of csrc/ calls only the names defined here, never a version-specific
// API directly, so supporting a new CPython release means reading this file only.
// Supported: CPython 3.10-3.13, default (GIL) build.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030A0000
#error "coextra supports CPython 3.10 and newer"
#endif

// The free-threaded build has no exact reference counts (the collector's
// soundness rests on them) and an unsynchronised co_extra on 3.13t. The Python
// package refuses to import there before it ever loads this extension; this
// guard keeps a build from silently producing a module that would misbehave.
#ifdef Py_GIL_DISABLED
#error "coextra does not support the free-threaded build of CPython"
#endif

namespace coextra::compat {

// Per-interpreter co_extra index; CPython never releases one (at most 254).
inline Py_ssize_t request_code_extra_index(freefunc free_function) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Eval_RequestCodeExtraIndex(free_function);
#else
    return _PyEval_RequestCodeExtraIndex(free_function);
#endif
}

// Reads slot `index` of `code`'s co_extra; *extra is NULL when never set.
inline int code_get_extra(PyObject *code, Py_ssize_t index, void **extra) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Code_GetExtra(code, index, extra);
#else
    return _PyCode_GetExtra(code, index, extra);
#endif
}

// Writes slot `index`. CPython calls the index's free function on the value
// being replaced, so callers that overwrite a holder must expect that call.
inline int code_set_extra(PyObject *code, Py_ssize_t index, void *extra) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_Code_SetExtra(code, index, extra);
#else
    return _PyCode_SetExtra(code, index, extra);
#endif
}

// True once the interpreter has started Py_FinalizeEx's module teardown.
inline bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
}


// --- collector
// What the cycle collector needs to know about an object without running any
// Python code or allocating (DESIGN.md section 3, invariant 5).

// True for immortal objects (3.12+): their reference count says nothing, so the
// collector leaves them unexpanded (live). No object is immortal before 3.12.
inline bool is_immortal(PyObject *op) {
#if PY_VERSION_HEX >= 0x030C0000
    return _Py_IsImmortal(op) != 0;
#else
    (void)op;
    return false;
#endif
}

// PyObject_IS_GC without the function call: the type has Py_TPFLAGS_HAVE_GC and
// its tp_is_gc (static types answer no) agrees. Tracked or not does not matter.
inline bool is_gc_object(PyObject *op) {
    PyTypeObject *type = Py_TYPE(op);
    return PyType_IS_GC(type) && (type->tp_is_gc == nullptr || type->tp_is_gc(op));
}

// The constants tuple of a code object (borrowed from it). Code objects are not
// GC containers in the default build, so the collector visits this by hand:
// nested functions' code objects live there.
inline PyObject *code_consts(PyObject *code) {
    return reinterpret_cast<PyCodeObject *>(code)->co_consts;
}

}  // namespace coextra::compat
