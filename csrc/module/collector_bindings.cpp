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
#include "../fastcall_args.h"
#include "../target.h"
#include "checked.h"

namespace py = pybind11;
using namespace coextra::detail;
using coextra::Ref;
using coextra_bindings::checked;

namespace {

// Raw CPython functions, as in module.cpp (one error style for a bad call).

PyObject *py_collect(PyObject *, PyObject *) {
    Py_ssize_t found = collector_collect_all();
    return found < 0 ? nullptr : PyLong_FromSsize_t(found);
}

PyObject *py_set_auto_collect(PyObject *, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames) {
    static const char *const names[] = {"enabled"};
    PyObject *value = nullptr;
    if (!parse_fastcall_args("set_auto_collect", names, 1, args, nargs, kwnames, &value)) {
        return nullptr;
    }
    bool enabled = false;
    if (!bool_argument(value, "set_auto_collect(): enabled", &enabled) || auto_collect_set(enabled) < 0) {
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject *py_get_auto_collect(PyObject *, PyObject *) {
    int enabled = auto_collect_get();
    return enabled < 0 ? nullptr : PyBool_FromLong(enabled);
}

PyObject *py_set_budget(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"nodes"};
    PyObject *value = nullptr;
    long long nodes = 0;
    if (!parse_fastcall_args("set_budget", names, 1, args, nargs, kwnames, &value) ||
        !int_argument(value, "set_budget(): nodes", 1, kMaxBudget, &nodes) ||
        collector_set_budget(static_cast<Py_ssize_t>(nodes)) < 0) {
        return nullptr;
    }
    Py_RETURN_NONE;
}

PyObject *py_get_budget(PyObject *, PyObject *) { return PyLong_FromSsize_t(collector_budget()); }

PyObject *py_explain(PyObject *, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    static const char *const names[] = {"obj", "map"};
    PyObject *values[2] = {nullptr, Py_None};
    if (!parse_fastcall_args("explain", names, 2, args, nargs, kwnames, values)) {
        return nullptr;
    }
    PyObject *map = values[1];
    if (map != Py_None) {
        if (!Py_IS_TYPE(map, &EphemeronMapType)) {
            PyErr_Format(PyExc_TypeError,
                         "coextra: explain(): map must be None or an EphemeronMap, not %.200s",
                         Py_TYPE(map)->tp_name);
            return nullptr;
        }
        return explain_entry_paths(values[0], reinterpret_cast<EphemeronMap *>(map),
                                   collector_budget());
    }
    Ref code = code_ref(values[0], "explain");  // explain_paths allocates: hold the code (target.h)
    if (!code) {
        // code_of's TypeError, with a hint for the commonest slip: a map's key without its map.
        PyErr_Format(PyExc_TypeError,
                     "coextra: explain(): obj must be %s, not %.200s (for an EphemeronMap key, pass map=)",
                     kCodeTargets, Py_TYPE(values[0])->tp_name);
        return nullptr;
    }
    return explain_paths(code.get(), collector_budget());
}

PyMethodDef functions[] = {
    {"collect", py_collect, METH_NOARGS,
     "collect($module, /)\n--\n\ncollect() -> int\n\n"
     "Run the cycle collector over every holder and EphemeronMap entry now; returns\n"
     "how many holders it detached because their code object was reachable only\n"
     "through its own cache, plus how many map entries it removed because their key\n"
     "was reachable only through such values. Returns 0 at once when called while a\n"
     "collection runs."},
    {"set_auto_collect", as_method(py_set_auto_collect), METH_FASTCALL | METH_KEYWORDS,
     "set_auto_collect($module, /, enabled)\n--\n\nset_auto_collect(enabled)\n\n"
     "Add (True) or remove (False) coextra's automatic collection in gc.callbacks.\n"
     "On by default."},
    {"get_auto_collect", py_get_auto_collect, METH_NOARGS,
     "get_auto_collect($module, /)\n--\n\nget_auto_collect() -> bool\n\n"
     "Whether automatic collection is in gc.callbacks."},
    {"set_budget", as_method(py_set_budget), METH_FASTCALL | METH_KEYWORDS,
     "set_budget($module, /, nodes)\n--\n\nset_budget(nodes)\n\n"
     "The most objects one collection explores, an int from 1 to 2**31-1. Objects\n"
     "past the budget are treated as live: a smaller budget only makes collection\n"
     "more conservative."},
    {"get_budget", py_get_budget, METH_NOARGS,
     "get_budget($module, /)\n--\n\nget_budget() -> int\n\nThe collector's node budget."},
    {"explain", as_method(py_explain), METH_FASTCALL | METH_KEYWORDS,
     "explain($module, /, obj, map=None)\n--\n\nexplain(obj, map=None) -> list[list]\n\n"
     "The reference paths from the holder of obj's code back to that code, each\n"
     "[holder, entry, product (or the entry's guard), ..., code], shortest first;\n"
     "[] when there is none\n"
     "within the budget. With an EphemeronMap: the paths from the entry of the key\n"
     "obj back to obj, each [entry, value, ..., obj]."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void add_collector_stats(py::dict &out) {
    const CollectorStats &s = collector_stats();
    const AutoCollectStats &a = auto_collect_stats();
    const std::pair<const char *, uint64_t> counts[] = {
        {"collections", s.collections}, {"auto_collections", s.auto_collections},
        {"detached_by_collector", s.detached_by_collector}, {"last_nodes", s.last_nodes},
        {"ephemeron_removed_by_collector", s.entries_removed_by_collector},
        {"budget_exhausted", s.budget_exhausted}, {"auto_detached", s.auto_detached},
        {"auto_ephemeron_removed", s.auto_entries_removed},
        {"auto_generation_passes", a.generation_passes},
        {"auto_generation_slices", a.generation_slices},
        {"auto_last_generation_detached", a.last_generation_detached},
        {"auto_sweeps", a.sweeps}, {"auto_sweep_slices", a.sweep_slices},
        {"auto_sweep_detached", a.sweep_detached},
        {"auto_last_sweep_detached", a.last_sweep_detached},
        {"map_scans", collector_map_scans().scans},
        {"auto_passes_to_old", static_cast<uint64_t>(auto_collect_passes_to_old())},
        {"auto_ephemeron_passes_to_old", static_cast<uint64_t>(auto_collect_entry_passes_to_old())}};
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

void bind_collector(py::module_ &m) { checked(PyModule_AddFunctions(m.ptr(), functions)); }
