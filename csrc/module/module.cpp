// module.cpp -- coextra._coextra: the Python API over the C++ core.
//
// pybind11 builds the module and the functions that are not on a hot path.
// holder() is a raw METH_FASTCALL function instead: it is what a Python backend
// calls on every frame, and pybind11's generic dispatch would cost more than the
// lookup itself (see bench/bench_lookup.py).
#include <pybind11/pybind11.h>

#include <pthread.h>

#include "../collector.h"
#include "../fastcall_args.h"
#include "../evalframe.h"
#include "../holder.h"
#include "../live_counts.h"
#include "../registry.h"
#include "../target.h"

namespace py = pybind11;
using namespace coextra::detail;

void bind_capi(py::module_ &m);  // capi_bindings.cpp: the C API capsule and evalframe
// The cycle collector's bindings (collector_bindings.cpp).
void bind_collector(py::module_ &m);
void add_collector_stats(py::dict &out);

namespace {

PyObject *code_or_throw(const CodeRef &code) {
    if (code.get() == nullptr) {
        throw py::error_already_set();
    }
    return code.get();
}

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
    Holder *borrowed = registry_ensure(code_or_throw(code));
    if (borrowed == nullptr) {
        throw py::error_already_set();
    }
    // Our own reference: allocating the entry may run a GC pass (3.10/3.11)
    // whose callbacks detach this holder, dropping the registry's reference.
    auto holder = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject *>(borrowed));
    Entry *entry = holder_add(borrowed, product.ptr(), guard.ptr());
    if (entry == nullptr) {
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject *>(entry));
}

bool detach(py::handle obj) {
    CodeRef code(obj.ptr());
    Holder *h = registry_holder_of(code_or_throw(code));
    return h != nullptr && registry_detach(h) == 1;
}

Py_ssize_t reset() {
    Py_ssize_t detached = registry_reset();
    if (detached < 0) {
        throw py::error_already_set();
    }
    return detached;
}

py::list holders() {
    PyObject *list = registry_holders();
    if (list == nullptr) {
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::list>(list);
}

py::dict stats() {
    Registry *r = registry_get();
    if (r == nullptr) {
        throw py::error_already_set();
    }
    size_t entries = 0;
    for (Holder *h : r->holders) {
        entries += h->size;
    }
    py::dict out;
    out["holders"] = r->holders.size();
    out["entries"] = entries;
    out["attached_total"] = r->attached_total;
    out["detached_total"] = r->detached_total;
    out["holders_alive"] = live_counts.holders;
    out["entries_alive"] = live_counts.entries;
    add_collector_stats(out);
    return out;
}

// fork() copies the process with only the forking thread. State that another
// thread had mid-flight (a collector pass, an evalframe compile, each of which
// can release the GIL in Python code) would stay "in progress" forever in the
// child; pthread_atfork covers os.fork() and forks from C alike. The handlers
// touch plain C state only, as a fork handler must.
void after_fork_child() {
    collector_after_fork_child();
    evalframe_after_fork_child();
}

void register_fork_handler() {
    static bool registered = false;  // once per process: the module may be re-imported
    if (!registered) {
        if (pthread_atfork(nullptr, nullptr, after_fork_child) != 0) {
            throw py::import_error("coextra: pthread_atfork failed (out of memory)");
        }
        registered = true;
    }
}

}  // namespace

// The pybind11 module is built under an internal name; PyInit__coextra below is
// the real entry point.
PYBIND11_MODULE(_coextra_pybind11, m) {
    m.doc() = "coextra: GC-safe per-code-object caches for frame-evaluation backends.";
    py::object registry = py::reinterpret_steal<py::object>(registry_init());
    if (!registry) {
        throw py::error_already_set();
    }
    m.attr("_registry") = registry;
    m.attr("Holder") = py::handle(reinterpret_cast<PyObject *>(&HolderType));
    m.attr("Entry") = py::handle(reinterpret_cast<PyObject *>(&EntryType));
    if (PyModule_AddFunctions(m.ptr(), raw_functions) < 0) {
        throw py::error_already_set();
    }
    m.def("attach", &attach, py::arg("obj"), py::arg("product"), py::arg("guard") = py::none(),
          "attach(obj, product, guard=None) -> Entry\n\n"
          "Same as holder(obj, create=True).add(product, guard).");
    m.def("detach", &detach, py::arg("obj"),
          "detach(obj) -> bool\n\nDetach the holder of obj's code; True if there was one.");
    m.def("reset", &reset, "reset() -> int\n\nDetach every holder; returns how many.");
    m.def("holders", &holders, "holders() -> list[Holder]\n\nEvery attached holder.");
    bind_collector(m);
    m.def("stats", &stats,
          "stats() -> dict\n\nCounts: holders and entries attached now, attached_total and\n"
          "detached_total ever, holders_alive and entries_alive (including detached).");
    bind_capi(m);
    register_fork_handler();
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
