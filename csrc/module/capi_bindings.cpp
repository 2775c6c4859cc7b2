// capi_bindings.cpp -- module glue for the C API capsule and the evalframe
// backend (python/coextra/evalframe.py is the public face of the latter).
#include <pybind11/pybind11.h>

#include "../capi.h"
#include "../evalframe.h"
#include "checked.h"

namespace py = pybind11;
using namespace coextra::detail;
using coextra_bindings::checked;
using coextra_bindings::steal_checked;

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
    m.attr("_C_API") = steal_checked<py::object>(capi_capsule());

    m.def(
        "_evalframe_enable",
        [](py::handle callback, bool trace) {
            checked(evalframe_enable(callback.ptr(), trace));
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
}
