// module.cpp -- coextra._coextra: the Python API over the C++ core.
//
// pybind11 builds the module and the functions that are not on a hot path.
// holder() is a raw METH_FASTCALL function instead: it is what a Python backend
// calls on every frame, and pybind11's generic dispatch would cost more than the
// lookup itself (see bench/bench_lookup.py).
#include <pybind11/pybind11.h>

#include "../ephemeron_map.h"
#include "../fastcall_args.h"
#include "../holder.h"
#include "../internals.h"
#include "../registry.h"
#include "../target.h"
#include "checked.h"

namespace py = pybind11;
using namespace coextra::detail;
using coextra_bindings::checked;
using coextra_bindings::steal_checked;

void bind_capi(py::module_ &m);  // capi_bindings.cpp: the C API capsule and evalframe
// The cycle collector's bindings (collector_bindings.cpp).
void bind_collector(py::module_ &m);
void add_collector_stats(py::dict &out);

namespace {

// holder(obj, create=False) -> Holder | None
PyObject *py_holder(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"obj", "create"};
    PyObject *values[2] = {nullptr, Py_False};
    if (!parse_fastcall_args("holder", names, 2, args, nargs, kwnames, values)) {
        return nullptr;
    }
    PyObject *code = code_of(values[0]);  // borrowed: a lookup runs no code
    if (code == nullptr) {
        return nullptr;
    }
    Holder *h = registry_holder_of(code);
    if (h != nullptr || values[1] == Py_False) {
        return Py_NewRef(h ? reinterpret_cast<PyObject *>(h) : Py_None);
    }
    // create: the truth test and the allocation can run any code, which may
    // take the function's code away (target.h): hold it until we are done.
    CodeRef code_ref(values[0]);
    int create = PyObject_IsTrue(values[1]);
    if (create < 0) {
        return nullptr;
    }
    if (create) {
        h = registry_ensure(code_ref.get());
        if (h == nullptr) {
            return nullptr;
        }
    }
    return Py_NewRef(h ? reinterpret_cast<PyObject *>(h) : Py_None);
}

PyMethodDef raw_functions[] = {
    {"holder", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_holder)),
     METH_FASTCALL | METH_KEYWORDS,
     "holder($module, /, obj, create=False)\n--\n\n"
     "holder(obj, create=False) -> Holder | None\n\n"
     "The holder of obj's code object (obj: a code object, a Python function or a bound\n"
     "method). With create=True, make and attach one if it is missing."},
    {nullptr, nullptr, 0, nullptr},
};

py::object attach(py::handle obj, py::handle product, py::handle guard) {
    CodeRef code(obj.ptr());
    Holder *borrowed = checked(registry_ensure(checked(code.get())));
    // Our own reference: allocating the entry may run a GC pass (3.10/3.11)
    // whose callbacks detach this holder, dropping the registry's reference.
    auto holder = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(borrowed));
    Entry *entry = checked(holder_add(borrowed, product.ptr(), guard.ptr()));
    return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject *>(entry));
}

bool detach(py::handle obj) {
    CodeRef code(obj.ptr());
    Holder *h = registry_holder_of(checked(code.get()));
    return h != nullptr && registry_detach(h) == 1;
}

py::dict stats() {
    Registry *r = checked(registry_get());
    py::dict out;
    out["holders"] = r->holders.size();
    out["entries"] = r->entries;
    out["attached_total"] = r->attached_total;
    out["detached_total"] = r->detached_total;
    out["holders_alive"] = internals.live.holders;
    out["entries_alive"] = internals.live.entries;
    out["ephemeron_maps"] = internals.ephemeron.maps.size();
    out["ephemeron_entries"] = internals.ephemeron.entries;
    out["ephemeron_entries_alive"] = internals.live.ephemeron_entries;
    out["ephemeron_removed_by_collector"] = internals.ephemeron.removed_by_collector;
    add_collector_stats(out);
    return out;
}

}  // namespace

// The pybind11 module is built under an internal name; PyInit__coextra below is
// the real entry point.
PYBIND11_MODULE(_coextra_pybind11, m) {
    m.doc() = "coextra: GC-safe per-code-object caches for frame-evaluation backends.";
    m.attr("_registry") = steal_checked<py::object>(internals_start());
    m.attr("Holder") = py::handle(reinterpret_cast<PyObject *>(&HolderType));
    m.attr("Entry") = py::handle(reinterpret_cast<PyObject *>(&EntryType));
    m.attr("EphemeronMap") = py::handle(reinterpret_cast<PyObject *>(&EphemeronMapType));
    checked(PyModule_AddFunctions(m.ptr(), raw_functions));
    m.def("attach", &attach, py::arg("obj"), py::arg("product"), py::arg("guard") = py::none(),
          "attach(obj, product, guard=None) -> Entry\n\n"
          "Same as holder(obj, create=True).add(product, guard).");
    m.def("detach", &detach, py::arg("obj"),
          "detach(obj) -> bool\n\nDetach the holder of obj's code; True if there was one.");
    m.def("reset", [] { return checked(registry_reset()); }, "reset() -> int\n\nDetach every holder; returns how many.");
    m.def("holders", [] { return steal_checked<py::list>(registry_holders()); }, "holders() -> list[Holder]\n\nEvery attached holder.");
    bind_collector(m);
    m.def("stats", &stats,
          "stats() -> dict\n\nCounts: holders and entries attached now, attached_total and\n"
          "detached_total ever, holders_alive and entries_alive (including detached).");
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
