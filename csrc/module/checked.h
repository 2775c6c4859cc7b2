// checked.h -- the one bridge between the core's error convention and
// pybind11's. The core reports failure the C API way (a NULL pointer or a
// negative number, with the Python exception set); pybind11 expects a C++
// exception. checked(x) returns x, or throws py::error_already_set, which
// pybind11 turns back into the pending Python exception.
#pragma once

#include <pybind11/pybind11.h>

#include <new>
#include <type_traits>

namespace coextra_bindings {

template <typename T>
T checked(T result) {
    bool failed;
    if constexpr (std::is_pointer_v<T>) {
        failed = result == nullptr;
    } else {
        failed = result < 0;
    }
    if (failed) {
        throw pybind11::error_already_set();
    }
    return result;
}

// A new reference from the core, as the pybind11 type it is.
template <typename Py>
Py steal_checked(PyObject *new_reference) {
    return pybind11::reinterpret_steal<Py>(checked(new_reference));
}

// Runs `body` (which returns a pybind11 object) for a raw CPython function:
// a new reference, or NULL with the Python exception that body threw.
template <typename Body>
PyObject *new_reference_or_null(Body &&body) {
    try {
        return body().release().ptr();
    } catch (pybind11::error_already_set &error) {
        error.restore();
    } catch (const std::bad_alloc &) {
        PyErr_NoMemory();
    }
    return nullptr;
}

}  // namespace coextra_bindings
