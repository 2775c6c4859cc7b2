// compat.h -- every CPython version difference coextra depends on, in one place.
//
// The rest of csrc/ calls only the names defined here, never a version-specific
// API directly, so supporting a new CPython release means reading this file only.
// Supported: CPython 3.10-3.15, default (GIL) build.
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
// Python code or allocating (docs/design.md, invariant 5).

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

// Where op's list of weak references starts, or NULL when op's type has
// none or the list is out of reach: 3.12+ keeps the list of a static builtin
// type in the interpreter's state.
inline PyWeakReference **weaklist_of(PyObject *op) {
    Py_ssize_t offset = Py_TYPE(op)->tp_weaklistoffset;
    if (offset == 0) {
        return nullptr;
    }
#if PY_VERSION_HEX >= 0x030C0000
    if (PyType_Check(op) && !(reinterpret_cast<PyTypeObject *>(op)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        return nullptr;
    }
#endif
    // 3.12+ heap types keep the list before the object (a negative offset).
    return reinterpret_cast<PyWeakReference **>(reinterpret_cast<char *>(op) + offset);
}

// The head of op's list of weak references (borrowed), or NULL when it has
// none. Ephemeron map entries are weak references, so this list is how the
// collector finds a key's entries. A static builtin type's list is out of
// reach (weaklist_of); such types are immortal, so the collector never asks
// for them, and NULL ("no entries") is sound anyway.
inline PyWeakReference *weakrefs_of(PyObject *op) {
    PyWeakReference **list = weaklist_of(op);
    return list != nullptr ? *list : nullptr;
}

// Whether objects of `type` can be weakly referenced (PyType_SUPPORTS_WEAKREFS
// is a function call from 3.11 on, and its sign test differs on 3.10).
inline bool supports_weakrefs(PyTypeObject *type) { return type->tp_weaklistoffset != 0; }

}  // namespace coextra::compat

// --- frames
// PEP 523 frame evaluation. The hook receives a PyFrameObject* on 3.10 and an
// _PyInterpreterFrame* from 3.11 on; the eval-function getters and setters and
// _PyEval_EvalFrameDefault keep their private names on every version. Only 3.11
// needs an internal header: its frame struct has no accessor for the code.
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE
#define COEXTRA_UNDEF_BUILD_CORE
#endif
#include <internal/pycore_frame.h>
#ifdef COEXTRA_UNDEF_BUILD_CORE
#undef Py_BUILD_CORE
#undef COEXTRA_UNDEF_BUILD_CORE
#endif
#elif PY_VERSION_HEX < 0x030B0000
#include <frameobject.h>
#endif

namespace coextra::compat {

#if PY_VERSION_HEX >= 0x030B0000
using EvalFrame = struct _PyInterpreterFrame;
#else
using EvalFrame = PyFrameObject;
#endif

// PyObject *(*)(PyThreadState *, EvalFrame *, int throwflag)
using EvalFrameFunction = _PyFrameEvalFunction;

// The code object `frame` runs. Borrowed: the frame owns a reference for as
// long as it exists, and the caller is evaluating it.
inline PyObject *frame_code(EvalFrame *frame) {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *code = PyUnstable_InterpreterFrame_GetCode(frame);  // a new reference
    Py_DECREF(code);  // the frame keeps its own
    return code;
#else
    return reinterpret_cast<PyObject *>(frame->f_code);  // 3.11: internal header; 3.10: frameobject.h
#endif
}

// The evaluator installed for the current interpreter (never NULL: the default
// evaluator when no PEP 523 user installed one).
inline EvalFrameFunction get_eval_frame() {
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Get());
}

inline void set_eval_frame(EvalFrameFunction function) {
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), function);
}

inline EvalFrameFunction default_eval_frame() { return _PyEval_EvalFrameDefault; }

// The same two for the main interpreter, callable without a thread state (a
// fork handler): the interpreter state functions read and write its field.
inline EvalFrameFunction get_main_eval_frame() {
    return _PyInterpreterState_GetEvalFrameFunc(PyInterpreterState_Main());
}

inline void set_main_eval_frame(EvalFrameFunction function) {
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Main(), function);
}

// Suspends sys.settrace and sys.setprofile for `tstate` (and, from 3.12 on,
// sys.monitoring events, which check the same counter) until resume_tracing;
// pairs nest. The way CPython itself runs a trace function: code run inside
// is not traced. 3.10 has no function for it.
inline void suspend_tracing(PyThreadState *tstate) {
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_EnterTracing(tstate);
#else
    tstate->tracing++;
    tstate->cframe->use_tracing = 0;
#endif
}

inline void resume_tracing(PyThreadState *tstate) {
#if PY_VERSION_HEX >= 0x030B0000
    PyThreadState_LeaveTracing(tstate);
#else
    tstate->tracing--;
    tstate->cframe->use_tracing =
        tstate->tracing == 0 && (tstate->c_tracefunc != nullptr || tstate->c_profilefunc != nullptr);
#endif
}

}  // namespace coextra::compat
