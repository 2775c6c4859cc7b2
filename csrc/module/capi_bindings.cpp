// capi_bindings.cpp -- module glue for the C API capsule and the evalframe
// backend: the functions of coextra.evalframe (python/coextra/evalframe.py
// re-exports them) live here, in the submodule coextra._coextra._evalframe.
//
// They are all C functions on purpose. A backend's callback runs for every
// code object that starts a frame, so any Python frame of coextra's own, say
// an enabled() context manager written as a generator or a disable() written
// in Python, would call the callback itself: a callback that raises would
// then keep the backend from ever being switched off. C functions start no
// frame, so leaving a `with enabled(...)` block or calling disable() in a
// `finally` always restores the previous evaluator, whatever the callback does.
#include <pybind11/pybind11.h>

#include "../capi.h"
#include "../evalframe.h"
#include "../fastcall_args.h"
#include "checked.h"
#include "enabled_scope.h"

namespace py = pybind11;
using namespace coextra::detail;
using coextra_bindings::checked;
using coextra_bindings::enabled_scope_new;
using coextra_bindings::enabled_scope_type;
using coextra_bindings::new_reference_or_null;
using coextra_bindings::steal_checked;

namespace {

// Parses and checks (callback, *, trace=False) for enable() and enabled().
bool parse_enable_args(const char *function, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, PyObject **callback, bool *trace) {
    static const char *const names[] = {"callback", "trace"};
    PyObject *values[2] = {nullptr, Py_False};
    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError,
                     "coextra: %s() takes 1 positional argument (%zd given); trace is keyword-only",
                     function, nargs);
        return false;
    }
    if (!parse_fastcall_args(function, names, 2, args, nargs, kwnames, values)) {
        return false;
    }
    if (!PyCallable_Check(values[0])) {
        PyErr_Format(PyExc_TypeError, "coextra: %s(): callback must be callable, not %.200s", function,
                     Py_TYPE(values[0])->tp_name);
        return false;
    }
    char what[64];
    PyOS_snprintf(what, sizeof what, "%s(): trace", function);
    *callback = values[0];
    return bool_argument(values[1], what, trace);
}

PyObject *py_enable(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *callback = nullptr;
    bool trace = false;
    if (!parse_enable_args("evalframe.enable", args, nargs, kwnames, &callback, &trace)) {
        return nullptr;
    }
    evalframe_enable(callback, trace);
    Py_RETURN_NONE;
}

PyObject *py_disable(PyObject *, PyObject *) {
    evalframe_disable();
    Py_RETURN_NONE;
}

PyObject *py_is_enabled(PyObject *, PyObject *) { return PyBool_FromLong(evalframe_is_enabled()); }

PyObject *py_traces_callback(PyObject *, PyObject *) {
    return PyBool_FromLong(evalframe_traces_callback());
}

PyObject *py_callback(PyObject *, PyObject *) {
    PyObject *callback = evalframe_callback();
    return Py_NewRef(callback ? callback : Py_None);
}

py::dict stats_dict() {
    EvalFrameStats s = evalframe_stats();
    py::dict out;
    out["frames"] = s.frames;
    out["hits"] = s.hits;
    out["compiles"] = s.compiles;
    out["stored"] = s.stored;
    out["passthrough"] = s.passthrough;
    return out;
}

PyObject *py_stats(PyObject *, PyObject *) { return new_reference_or_null(stats_dict); }

PyObject *py_reset_stats(PyObject *, PyObject *) {
    evalframe_reset_stats();
    Py_RETURN_NONE;
}

PyObject *py_enabled(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *callback = nullptr;
    bool trace = false;
    if (!parse_enable_args("evalframe.enabled", args, nargs, kwnames, &callback, &trace)) {
        return nullptr;
    }
    return enabled_scope_new(callback, trace);
}

PyMethodDef evalframe_functions[] = {
    {"enable", as_method(py_enable), METH_FASTCALL | METH_KEYWORDS,
     "enable($module, /, callback, *, trace=False)\n--\n\n"
     "Turn the backend on with callback (called as callback(code) for every code\n"
     "object that starts a frame without an entry; a result other than None is\n"
     "stored as an entry). Installs the backend's hook over the interpreter's\n"
     "current evaluator whenever it is not the current one; when it is, only the\n"
     "callback changes. trace=True lets sys.settrace, sys.setprofile and\n"
     "sys.monitoring see the callback's own frames (for debugging a backend)."},
    {"disable", py_disable, METH_NOARGS,
     "disable($module, /)\n--\n\n"
     "Switch the backend off and put back the evaluator it runs frames with. An\n"
     "evaluator installed on top of the backend since is left in place. Does\n"
     "nothing when the backend is off."},
    {"enabled", as_method(py_enabled), METH_FASTCALL | METH_KEYWORDS,
     "enabled($module, /, callback, *, trace=False)\n--\n\n"
     "A context manager: the backend is on with callback inside the with block;\n"
     "leaving the block (by an exception too) restores the callback and trace\n"
     "option from before it, or switches the backend off."},
    {"is_enabled", py_is_enabled, METH_NOARGS,
     "is_enabled($module, /)\n--\n\n"
     "Whether the backend is on and its hook is the interpreter's evaluator."},
    {"traces_callback", py_traces_callback, METH_NOARGS,
     "traces_callback($module, /)\n--\n\n"
     "Whether the callback runs with tracing and profiling on (trace=True)."},
    {"callback", py_callback, METH_NOARGS,
     "callback($module, /)\n--\n\nThe current callback, or None when the backend is off."},
    {"stats", py_stats, METH_NOARGS,
     "stats($module, /)\n--\n\n"
     "Counters since import or the last reset_stats(): frames (looked up), hits (whose\n"
     "code had an entry), compiles (callback calls), stored (results not None),\n"
     "passthrough (frames run untouched: during a compile, after disable under\n"
     "another evaluator, or resumed to throw an exception)."},
    {"reset_stats", py_reset_stats, METH_NOARGS,
     "reset_stats($module, /)\n--\n\nSet every counter of stats() to zero."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void bind_capi(py::module_ &m) {
    m.attr("_C_API") = steal_checked<py::object>(capi_capsule());

    // Made with PyModule_New, not def_submodule: pybind11's def_submodule
    // leaks a reference to the extension's file name.
    auto evalframe = steal_checked<py::module_>(PyModule_New("coextra._coextra._evalframe"));
    evalframe.doc() = "coextra.evalframe's functions.";
    m.attr("_evalframe") = evalframe;
    PyTypeObject *scope_type = checked(enabled_scope_type());
    checked(PyModule_AddObjectRef(evalframe.ptr(), "EnabledScope", reinterpret_cast<PyObject *>(scope_type)));
    checked(PyModule_AddFunctions(evalframe.ptr(), evalframe_functions));
}
