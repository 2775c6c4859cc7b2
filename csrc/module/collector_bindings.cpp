// collector_bindings.cpp -- the Python API of the cycle collector:
// collect, set/get_auto_collect, set/get_budget, explain, and the collector's
// keys in stats().
#include <pybind11/pybind11.h>

#include <cstdint>
#include <utility>

#include "../auto_collect.h"
#include "../collector.h"
#include "../ephemeron_map.h"
#include "../explain.h"
#include "../target.h"
#include "checked.h"

namespace py = pybind11;
using namespace coextra::detail;
using coextra_bindings::checked;
using coextra_bindings::steal_checked;

namespace {

void set_auto_collect(py::handle enabled) {
    checked(auto_collect_set(checked(PyObject_IsTrue(enabled.ptr())) != 0));
}

void set_budget(py::handle nodes) {
    if (!PyLong_Check(nodes.ptr()) || PyBool_Check(nodes.ptr())) {
        throw py::type_error(std::string("coextra.set_budget: nodes must be an int, not '") +
                             Py_TYPE(nodes.ptr())->tp_name + "'");
    }
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(nodes.ptr(), &overflow);
    if (value == -1 && PyErr_Occurred()) {
        throw py::error_already_set();  // -1 is also a value: PyErr_Occurred() tells
    }
    if (overflow != 0) {
        value = overflow < 0 ? 0 : static_cast<long long>(kMaxBudget) + 1;
    }
    checked(collector_set_budget(static_cast<Py_ssize_t>(value)));
}

py::list explain(py::handle obj, py::handle map) {
    if (!map.is_none()) {
        if (!Py_IS_TYPE(map.ptr(), &EphemeronMapType)) {
            throw py::type_error(std::string("coextra.explain: map must be an EphemeronMap, not '") +
                                 Py_TYPE(map.ptr())->tp_name + "'");
        }
        return steal_checked<py::list>(
            explain_entry_paths(obj.ptr(), reinterpret_cast<EphemeronMap *>(map.ptr()), collector_budget()));
    }
    CodeRef code(obj.ptr());  // explain_paths allocates: hold the code (target.h)
    return steal_checked<py::list>(explain_paths(checked(code.get()), collector_budget()));
}

}  // namespace

void add_collector_stats(py::dict &out) {
    const CollectorStats &s = collector_stats();
    const AutoCollectStats &a = auto_collect_stats();
    const std::pair<const char *, uint64_t> counts[] = {
        {"collections", s.collections}, {"auto_collections", s.auto_collections},
        {"detached_by_collector", s.detached_by_collector}, {"last_nodes", s.last_nodes},
        {"budget_exhausted", s.budget_exhausted}, {"auto_detached", s.auto_detached},
        {"auto_generation_passes", a.generation_passes},
        {"auto_generation_slices", a.generation_slices},
        {"auto_last_generation_detached", a.last_generation_detached},
        {"auto_sweeps", a.sweeps}, {"auto_sweep_slices", a.sweep_slices},
        {"auto_last_sweep_detached", a.last_sweep_detached},
        {"map_scans", collector_map_scans().scans},
        {"auto_passes_to_old", static_cast<uint64_t>(auto_collect_passes_to_old())}};
    const std::pair<const char *, double> seconds[] = {
        {"last_seconds", s.last_seconds}, {"auto_seconds", s.auto_seconds},
        {"auto_max_pause", s.auto_max_pause}};
    for (const auto &[name, value] : counts) {
        out[name] = value;
    }
    for (const auto &[name, value] : seconds) {
        out[name] = value;
    }
}

void bind_collector(py::module_ &m) {
    m.def("collect", [] { return checked(collector_collect_all()); },
          "collect() -> int\n\nRun the cycle collector over every holder and EphemeronMap entry\n"
          "now; returns how many holders it detached because their code object was\n"
          "reachable only through its own cache, plus how many map entries it removed\n"
          "because their key was reachable only through such values. Returns 0 at\n"
          "once when called while a collection runs.");
    m.def("set_auto_collect", &set_auto_collect, py::arg("enabled"),
          "set_auto_collect(enabled)\n\nAdd (True) or remove (False) coextra's automatic "
          "collection\nin gc.callbacks. On by default.");
    m.def("get_auto_collect", [] { return checked(auto_collect_get()) != 0; },
          "get_auto_collect() -> bool\n\nWhether automatic collection is in gc.callbacks.");
    m.def("set_budget", &set_budget, py::arg("nodes"),
          "set_budget(nodes)\n\nThe most nodes one collection explores (an int >= 1). Nodes past\n"
          "the budget are treated as live: a smaller budget only makes collection\n"
          "more conservative.");
    m.def("get_budget", &collector_budget, "get_budget() -> int\n\nThe collector's node budget.");
    m.def("explain", &explain, py::arg("obj"), py::arg("map") = py::none(),
          "explain(obj, map=None) -> list[list]\n\nThe reference paths from the holder of obj's code back to\n"
          "that code, each [holder, entry, product, ..., code], shortest first; [] when\n"
          "there is none within the budget. With an EphemeronMap: the paths from the\n"
          "entry of the key obj back to obj, each [entry, value, ..., obj].");
}
