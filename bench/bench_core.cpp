// bench_core.cpp -- Google Benchmark for the core's C-level paths, in an embedded interpreter.
//
// What a native backend pays per frame: finding the holder of a code object
// (registry_holder_of) against the raw co_extra read it is built on, and
// against a dict keyed by code; finding an entry with a native matcher
// (holder_lookup); adding an entry (holder_add).
//
// Grouping convention shared by every benchmark binary that the bench session (noxfile.py)
// runs: a benchmark's group is its name up to the first '/', and the group's
// first benchmark (in registration order) is the reference the others are
// reported as ratios of (scripts/bench_summary.py).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "compat.h"
#include "holder.h"
#include "lifecycle.h"
#include "registry.h"

using namespace coextra::detail;

namespace {

// A new function compiled at run time; returns a new reference to its code object.
PyObject *new_code(const char *name) {
    PyObject *globals = PyDict_New();
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    char source[128];
    std::snprintf(source, sizeof source, "def %s(x):\n    return x + 1\n", name);
    PyObject *result = PyRun_String(source, Py_file_input, globals, globals);
    if (result == nullptr) {
        PyErr_Print();
        std::abort();
    }
    Py_DECREF(result);
    PyObject *code = PyObject_GetAttrString(PyDict_GetItemString(globals, name), "__code__");
    Py_DECREF(globals);  // the function and its globals form a cycle; the code stays referenced
    return code;
}

int always(Entry *, void *) { return 1; }

// A native guard: the entry applies when its product is the object in `context`.
int product_is(Entry *entry, void *context) { return entry->product == context; }

// ---------------------------------------------------------------------------
// Lookup: from a code object to its cached product.

void Lookup_raw_co_extra_read(benchmark::State &state) {
    PyObject *code = new_code("f");
    Holder *h = registry_ensure(code);
    Py_ssize_t index = registry_extra_index();
    for (auto _ : state) {
        void *extra = nullptr;
        coextra::compat::code_get_extra(code, index, &extra);
        benchmark::DoNotOptimize(extra);
    }
    if (registry_holder_of(code) != h) state.SkipWithError("holder not found");
    registry_reset();
    Py_DECREF(code);
}

void Lookup_registry_holder_of(benchmark::State &state) {
    PyObject *code = new_code("f");
    registry_ensure(code);
    for (auto _ : state) {
        benchmark::DoNotOptimize(registry_holder_of(code));
    }
    registry_reset();
    Py_DECREF(code);
}

void Lookup_holder_of_then_lookup_1_entry(benchmark::State &state) {
    PyObject *code = new_code("f");
    Holder *h = registry_ensure(code);
    Py_DECREF(holder_add(h, Py_None, nullptr));
    for (auto _ : state) {
        Entry *found = nullptr;
        holder_lookup(registry_holder_of(code), always, nullptr, &found);
        benchmark::DoNotOptimize(found->product);
        Py_DECREF(found);
    }
    registry_reset();
    Py_DECREF(code);
}

void Lookup_holder_lookup_8_entries_native_guard_miss(benchmark::State &state) {
    PyObject *code = new_code("f");
    Holder *h = registry_ensure(code);
    std::vector<PyObject *> products;
    for (int i = 0; i < 8; i++) {
        products.push_back(PyLong_FromLong(1000 + i));
        Py_DECREF(holder_add(h, products.back(), nullptr));
    }
    for (auto _ : state) {
        Entry *found = nullptr;
        // Scans all eight entries: the guard accepts none of them.
        benchmark::DoNotOptimize(holder_lookup(h, product_is, Py_None, &found));
    }
    registry_reset();
    for (PyObject *p : products) Py_DECREF(p);
    Py_DECREF(code);
}

void Lookup_PyDict_GetItem_keyed_by_code(benchmark::State &state) {
    PyObject *code = new_code("f");
    PyObject *table = PyDict_New();
    PyDict_SetItem(table, code, Py_None);
    for (auto _ : state) {
        benchmark::DoNotOptimize(PyDict_GetItem(table, code));
    }
    Py_DECREF(table);
    Py_DECREF(code);
}

// ---------------------------------------------------------------------------
// Add: caching one more product on a code object that already has one.

void Add_PyDict_SetItem_keyed_by_code(benchmark::State &state) {
    PyObject *code = new_code("f");
    PyObject *table = PyDict_New();
    PyObject *product = PyLong_FromLong(12345);
    for (auto _ : state) {
        PyDict_SetItem(table, code, product);  // replaces the previous value
    }
    Py_DECREF(product);
    Py_DECREF(table);
    Py_DECREF(code);
}

void Add_holder_add_bounded_1_evicts(benchmark::State &state) {
    PyObject *code = new_code("f");
    Holder *h = registry_ensure(code);
    holder_set_max_entries(h, 1);
    PyObject *product = PyLong_FromLong(12345);
    for (auto _ : state) {
        // A new Entry each time; the previous one is evicted and freed.
        Py_DECREF(holder_add(h, product, nullptr));
    }
    Py_DECREF(product);
    registry_reset();
    Py_DECREF(code);
}

void Add_registry_ensure_new_code_and_holder_add(benchmark::State &state) {
    // First caching on a code object: attach a holder, add the entry, detach.
    PyObject *code = new_code("f");
    PyObject *product = PyLong_FromLong(12345);
    for (auto _ : state) {
        Holder *h = registry_ensure(code);
        Py_DECREF(holder_add(h, product, nullptr));
        registry_detach(h);
    }
    Py_DECREF(product);
    Py_DECREF(code);
}

}  // namespace

// Names: "group/what is measured"; the first of each group is its reference.
BENCHMARK(Lookup_raw_co_extra_read)->Name("Lookup/raw co_extra read (compat::code_get_extra)");
BENCHMARK(Lookup_registry_holder_of)->Name("Lookup/registry_holder_of");
BENCHMARK(Lookup_holder_of_then_lookup_1_entry)
    ->Name("Lookup/registry_holder_of + holder_lookup, 1 entry, native matcher");
BENCHMARK(Lookup_holder_lookup_8_entries_native_guard_miss)
    ->Name("Lookup/holder_lookup, 8 entries, native guard, miss (full scan)");
BENCHMARK(Lookup_PyDict_GetItem_keyed_by_code)->Name("Lookup/PyDict_GetItem, dict keyed by code");
BENCHMARK(Add_PyDict_SetItem_keyed_by_code)->Name("Add/PyDict_SetItem, dict keyed by code (replace)");
BENCHMARK(Add_holder_add_bounded_1_evicts)->Name("Add/holder_add, max_entries=1 (new entry, evicts the old)");
BENCHMARK(Add_registry_ensure_new_code_and_holder_add)
    ->Name("Add/registry_ensure + holder_add + registry_detach (first product)");

int main(int argc, char **argv) {
    Py_Initialize();
    PyObject *registry = registry_init();
    if (registry == nullptr) {
        PyErr_Print();
        return 2;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
        return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    Py_DECREF(registry);
    return Py_FinalizeEx() < 0 ? 3 : 0;
}
