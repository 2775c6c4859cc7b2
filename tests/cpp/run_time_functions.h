// run_time_functions.h -- Python functions compiled at run time, for the C++ tests.
//
// A function made here has a fresh code object that can die (unlike code in a
// module's source, which the module's own code keeps alive through co_consts).
#pragma once

#include <pybind11/embed.h>

#include <string>

namespace coextra_test {

// `def NAME(x): return x + 1`, in a namespace of its own.
inline pybind11::object make_function(const std::string &name) {
    pybind11::dict ns;
    pybind11::exec("def " + name + "(x):\n    return x + 1\n", ns);
    return ns[name.c_str()];
}

// The function's code object, borrowed from it.
inline PyObject *code_ptr(const pybind11::object &function) {
    return function.attr("__code__").ptr();
}

}  // namespace coextra_test
