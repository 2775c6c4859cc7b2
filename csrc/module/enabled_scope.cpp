// enabled_scope.cpp -- coextra.evalframe.EnabledScope, what
// evalframe.enabled(callback, trace=...) returns: a context manager that turns
// the backend on with its callback and, on leaving, restores what was on
// before (another callback and its trace option, or the backend off).
//
// A C type, as every evalframe function is (capi_bindings.cpp says why): its
// __enter__ and __exit__ start no frame that would call the callback.
//
// One scope object may be entered again before it is left (nested in itself,
// as `with s: with s:`): each __enter__ saves the state it replaces on a
// stack and each __exit__ restores the innermost one, as
// contextlib.redirect_stdout does.
#include "enabled_scope.h"

#include "../evalframe.h"
#include "../fastcall_args.h"

#include <new>
#include <vector>

namespace {

using coextra::detail::evalframe_callback;
using coextra::detail::evalframe_disable;
using coextra::detail::evalframe_enable;
using coextra::detail::evalframe_traces_callback;

// The backend's state that an __enter__ replaced.
struct Saved {
    PyObject *callback;  // owned; NULL: the backend was off
    bool trace;
};

// GC contract: owns `callback` and the callback of every Saved on `outer`;
// traverses them all, as a callback (a closure, a bound method) may
// reference the scope. tp_clear drops them; the GC calls it only on a scope
// that is garbage, which no `with` block is using, so nothing is left to
// restore. Owned by whoever holds it (the `with` statement, a variable).
struct EnabledScope {
    PyObject_HEAD
    PyObject *callback;  // owned; NULL only after tp_clear
    bool trace;
    std::vector<Saved> outer;  // the states entered and not yet left, innermost last
};

PyTypeObject EnabledScopeType = {PyVarObject_HEAD_INIT(nullptr, 0)};

EnabledScope *as_scope(PyObject *self) { return reinterpret_cast<EnabledScope *>(self); }

int scope_traverse(PyObject *self, visitproc visit, void *arg) {
    EnabledScope *scope = as_scope(self);
    Py_VISIT(scope->callback);
    for (const Saved &saved : scope->outer) {
        Py_VISIT(saved.callback);
    }
    return 0;
}

int scope_clear(PyObject *self) {
    EnabledScope *scope = as_scope(self);
    Py_CLEAR(scope->callback);
    std::vector<Saved> outer;
    outer.swap(scope->outer);  // emptied before a decref can run code that looks at it
    for (const Saved &saved : outer) {
        Py_XDECREF(saved.callback);
    }
    return 0;
}

void scope_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    scope_clear(self);
    as_scope(self)->outer.~vector();
    PyObject_GC_Del(self);
}

PyObject *scope_enter(PyObject *self, PyObject *) {
    EnabledScope *scope = as_scope(self);
    if (scope->callback == nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "coextra: this evalframe.enabled() scope was cleared");
        return nullptr;
    }
    PyObject *current = evalframe_callback();
    try {
        scope->outer.push_back({Py_XNewRef(current), evalframe_traces_callback()});
    } catch (const std::bad_alloc &) {
        Py_XDECREF(current);
        return PyErr_NoMemory();
    }
    evalframe_enable(scope->callback, scope->trace);
    Py_RETURN_NONE;
}

PyObject *scope_exit(PyObject *self, PyObject *const *, Py_ssize_t) {
    EnabledScope *scope = as_scope(self);
    if (scope->outer.empty()) {
        PyErr_SetString(PyExc_RuntimeError, "coextra: EnabledScope.__exit__() without a matching __enter__()");
        return nullptr;
    }
    Saved saved = scope->outer.back();
    scope->outer.pop_back();
    if (saved.callback == nullptr) {
        evalframe_disable();
    } else {
        evalframe_enable(saved.callback, saved.trace);
        Py_DECREF(saved.callback);
    }
    Py_RETURN_FALSE;  // an exception from the block propagates
}

PyMethodDef scope_methods[] = {
    {"__enter__", scope_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\nTurn the backend on with this scope's callback and trace option."},
    {"__exit__", coextra::detail::as_method(scope_exit), METH_FASTCALL,
     "__exit__($self, exc_type, exc, traceback, /)\n--\n\n"
     "Restore the callback and trace option from before the matching __enter__,\n"
     "or switch the backend off. Returns False: an exception propagates."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

namespace coextra_bindings {

PyObject *enabled_scope_new(PyObject *callback, bool trace) {
    auto *scope = PyObject_GC_New(EnabledScope, &EnabledScopeType);
    if (scope == nullptr) {
        return nullptr;
    }
    scope->callback = Py_NewRef(callback);
    scope->trace = trace;
    new (&scope->outer) std::vector<Saved>();
    PyObject_GC_Track(scope);
    return reinterpret_cast<PyObject *>(scope);
}

PyTypeObject *enabled_scope_type() {
    if (!(EnabledScopeType.tp_flags & Py_TPFLAGS_READY)) {
        EnabledScopeType.tp_name = "coextra.evalframe.EnabledScope";
        EnabledScopeType.tp_doc = "What evalframe.enabled() returns: a context manager.";
        EnabledScopeType.tp_basicsize = sizeof(EnabledScope);
        EnabledScopeType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION;
        EnabledScopeType.tp_traverse = scope_traverse;
        EnabledScopeType.tp_clear = scope_clear;
        EnabledScopeType.tp_dealloc = scope_dealloc;
        EnabledScopeType.tp_methods = scope_methods;
        if (PyType_Ready(&EnabledScopeType) < 0) {
            return nullptr;
        }
    }
    return &EnabledScopeType;
}

}  // namespace coextra_bindings
