// core_test_main.h -- main() of the C++ suites that drive the core directly
// (test_core, test_collector). test_capi does not use it: it reaches coextra
// only through the C API, as a third party does.
#pragma once

#include <gtest/gtest.h>

#include "registry.h"

namespace coextra_test {

// One embedded interpreter and one registry for the whole binary, then a clean
// finalization (which runs the registry's atexit teardown).
inline int run_all_tests_with_registry() {
    Py_Initialize();
    PyObject *registry = coextra::detail::registry_init();
    if (registry == nullptr) {
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
