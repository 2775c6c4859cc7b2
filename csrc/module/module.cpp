// module.cpp -- coextra._coextra: the Python API over the C++ core.
//
// pybind11 builds the module; its functions are raw CPython functions (see
// below) over the core.
#include <pybind11/pybind11.h>

#include "../ephemeron_map.h"
#include "../fastcall_args.h"
#include "../holder.h"
#include "../lifecycle.h"
#include "../registry.h"
#include "../target.h"
#include "checked.h"

namespace py = pybind11;
using namespace coextra::detail;
using coextra::Ref;
using coextra_bindings::checked;
using coextra_bindings::new_reference_or_null;

void bind_capi(py::module_ &m);  // capi_bindings.cpp: the C API capsule and evalframe
// The cycle collector's bindings (collector_bindings.cpp).
void bind_collector(py::module_ &m);
void add_collector_stats(py::dict &out);

namespace {

// The functions below are raw METH_FASTCALL functions rather than pybind11
// ones: holder() is what a Python backend calls on every frame, where
// pybind11's generic dispatch would cost more than the lookup itself (see
// bench/bench_lookup.py), and all of them report a bad call in the one style
// of fastcall_args.h instead of pybind11's list of overloads.

// holder(obj, create=False) -> Holder | None
PyObject *py_holder(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"obj", "create"};
    PyObject *values[2] = {nullptr, Py_False};
    if (!parse_fastcall_args("holder", names, 2, args, nargs, kwnames, values)) {
        return nullptr;
    }
    PyObject *code = code_of(values[0], "holder");  // borrowed: a lookup runs no code
    if (code == nullptr) {
        return nullptr;
    }
    bool create = false;
    if (!bool_argument(values[1], "holder(): create", &create)) {
        return nullptr;
    }
    Holder *h = registry_holder_of(code);
    if (h != nullptr || !create) {
        return Py_NewRef(h ? reinterpret_cast<PyObject *>(h) : Py_None);
    }
    // The allocation can run any code, which may take the function's code
    // away (target.h): hold it until we are done.
    Ref held = code_ref(values[0], "holder");
    h = registry_ensure(held.get());
    return h ? Py_NewRef(reinterpret_cast<PyObject *>(h)) : nullptr;
}

// attach(obj, product, guard=None) -> Entry
PyObject *py_attach(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"obj", "product", "guard"};
    PyObject *values[3] = {nullptr, nullptr, Py_None};
    if (!parse_fastcall_args("attach", names, 3, args, nargs, kwnames, values) ||
        entry_check_guard(values[2], "attach()") < 0) {
        return nullptr;
    }
    Ref code = code_ref(values[0], "attach");
    if (!code) {
        return nullptr;
    }
    Holder *borrowed = registry_ensure(code.get());
    if (borrowed == nullptr) {
        return nullptr;
    }
    // Our own reference: allocating the entry may run a GC pass (3.10/3.11)
    // whose callbacks detach this holder, dropping the registry's reference.
    Ref holder = Ref::borrow(reinterpret_cast<PyObject *>(borrowed));
    return reinterpret_cast<PyObject *>(holder_add(borrowed, values[1], values[2]));
}

// detach(obj) -> bool
PyObject *py_detach(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"obj"};
    PyObject *obj = nullptr;
    if (!parse_fastcall_args("detach", names, 1, args, nargs, kwnames, &obj)) {
        return nullptr;
    }
    Ref code = code_ref(obj, "detach");
    if (!code) {
        return nullptr;
    }
    Holder *h = registry_holder_of(code.get());
    return PyBool_FromLong(h != nullptr && registry_detach(h) == 1);
}

PyObject *py_reset(PyObject *, PyObject *) {
    Py_ssize_t detached = registry_reset();
    return detached < 0 ? nullptr : PyLong_FromSsize_t(detached);
}

PyObject *py_holders(PyObject *, PyObject *) { return registry_holders(); }

py::dict stats() {
    Registry *r = checked(registry_get());
    py::dict out;
    out["holders"] = r->holders.size();
    out["entries"] = holder_attached_entries();
    out["attached_total"] = r->attached_total;
    out["detached_total"] = r->detached_total;
    out["holders_alive"] = holder_live_count();
    out["entries_alive"] = entry_live_count();
    out["ephemeron_maps"] = ephemeron_maps().size();
    out["ephemeron_entries"] = ephemeron_entry_count();
    out["ephemeron_entries_alive"] = ephemeron_entry_live_count();
    add_collector_stats(out);
    return out;
}

PyObject *py_stats(PyObject *, PyObject *) { return new_reference_or_null(stats); }

PyMethodDef functions[] = {
    {"holder", as_method(py_holder), METH_FASTCALL | METH_KEYWORDS,
     "holder($module, /, obj, create=False)\n--\n\n"
     "holder(obj, create=False) -> Holder | None\n\n"
     "The holder of obj's code object (obj: a code object, a Python function or a bound\n"
     "method). With create=True, make and attach one if it is missing."},
    {"attach", as_method(py_attach), METH_FASTCALL | METH_KEYWORDS,
     "attach($module, /, obj, product, guard=None)\n--\n\n"
     "attach(obj, product, guard=None) -> Entry\n\n"
     "Same as holder(obj, create=True).add(product, guard)."},
    {"detach", as_method(py_detach), METH_FASTCALL | METH_KEYWORDS,
     "detach($module, /, obj)\n--\n\n"
     "detach(obj) -> bool\n\nDetach the holder of obj's code; True if there was one."},
    {"reset", py_reset, METH_NOARGS,
     "reset($module, /)\n--\n\nreset() -> int\n\nDetach every holder; returns how many."},
    {"holders", py_holders, METH_NOARGS,
     "holders($module, /)\n--\n\nholders() -> list[Holder]\n\nEvery attached holder."},
    {"stats", py_stats, METH_NOARGS,
     "stats($module, /)\n--\n\nstats() -> dict\n\nCounters of the registry, the collector "
     "and the ephemeron maps\n(README.md lists every key)."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

// The pybind11 module is built under an internal name; PyInit__coextra below is
// the real entry point.
PYBIND11_MODULE(_coextra_pybind11, m) {
    m.doc() = "coextra: GC-safe per-code-object caches for frame-evaluation backends.";
    m.attr("_registry") = coextra_bindings::steal_checked<py::object>(lifecycle_start());
    m.attr("Holder") = py::handle(reinterpret_cast<PyObject *>(&HolderType));
    m.attr("Entry") = py::handle(reinterpret_cast<PyObject *>(&EntryType));
    m.attr("EphemeronMap") = py::handle(reinterpret_cast<PyObject *>(&EphemeronMapType));
    checked(PyModule_AddFunctions(m.ptr(), functions));
    bind_collector(m);
    bind_capi(m);
}

// coextra runs in the main interpreter only (registry.h). The check must come
// before pybind11's own PyInit: that touches pybind11's internals through
// PyGILState_Ensure, which deadlocks in a subinterpreter on 3.10/3.11.
// With multi-phase init the module takes its name from the import spec.
extern "C" PYBIND11_EXPORT PyObject *PyInit__coextra() {
    if (PyInterpreterState_Get() != PyInterpreterState_Main()) {
        PyErr_SetString(PyExc_ImportError,
                        "coextra supports the main interpreter only, not subinterpreters");
        return nullptr;
    }
    return PyInit__coextra_pybind11();
}
