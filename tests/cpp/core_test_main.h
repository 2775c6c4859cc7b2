// core_test_main.h -- main() of the C++ suites that drive the core directly
// (test_core, test_collector). test_capi does not use it: it reaches coextra
// only through the C API, as a third party does.
#pragma once

#include <gtest/gtest.h>

#include "auto_collect.h"
#include "lifecycle.h"

namespace coextra_test {

// One embedded interpreter and one registry for the whole binary, started as
// the module starts it but with automatic collection off (the tests that
// want it turn it on), then a clean finalization (which runs the shutdown).
inline int run_all_tests_with_registry() {
    Py_Initialize();
    PyObject *registry = coextra::detail::lifecycle_start();
    if (registry == nullptr || coextra::detail::auto_collect_set(false) < 0) {
        PyErr_Print();
        return 2;
    }
    int result = RUN_ALL_TESTS();
    Py_DECREF(registry);
    if (Py_FinalizeEx() < 0) {
        return 3;
    }
    return result;
}

}  // namespace coextra_test
