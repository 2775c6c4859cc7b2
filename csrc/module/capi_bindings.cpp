// capi_bindings.cpp -- module glue for the C API capsule and the evalframe
// backend (python/coextra/evalframe.py is the public face of the latter).
#include <pybind11/pybind11.h>

#include "../capi.h"
#include "../evalframe.h"

namespace py = pybind11;
using namespace coextra::detail;

namespace {

py::dict evalframe_stats_dict() {
    EvalFrameStats s = evalframe_stats();
    py::dict out;
    out["frames"] = s.frames;
    out["hits"] = s.hits;
    out["compiles"] = s.compiles;
    out["stored"] = s.stored;
    out["passthrough"] = s.passthrough;
    return out;
}

}  // namespace

void bind_capi(py::module_ &m) {
    PyObject *capsule = capi_capsule();
    if (capsule == nullptr) {
        throw py::error_already_set();
    }
    m.attr("_C_API") = py::reinterpret_steal<py::object>(capsule);

    m.def(
        "_evalframe_enable",
        [](py::handle callback, bool trace) {
            if (evalframe_enable(callback.ptr(), trace) < 0) {
                throw py::error_already_set();
            }
        },
        py::arg("callback"), py::kw_only(), py::arg("trace") = false);
    m.def("_evalframe_disable", &evalframe_disable);
    m.def("_evalframe_is_enabled", &evalframe_is_enabled);
    m.def("_evalframe_callback", []() -> py::object {
        PyObject *callback = evalframe_callback();
        return py::reinterpret_borrow<py::object>(callback ? callback : Py_None);
    });
    m.def("_evalframe_traces_callback", &evalframe_traces_callback);
    m.def("_evalframe_stats", &evalframe_stats_dict);
    m.def("_evalframe_reset_stats", &evalframe_reset_stats);

    // Switch the backend off when the interpreter starts to exit: atexit runs
    // callbacks last-registered first, so this runs before the registry's
    // teardown (registered when the registry was made), while the callback
    // can still be released normally.
    py::module_::import("atexit").attr("register")(m.attr("_evalframe_disable"));
}
