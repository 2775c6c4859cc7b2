// ref.hpp -- coextra::Ref, an owned (strong) reference released on destruction.
//
// The one owning-reference type of coextra: the C++ wrapper of the C API
// (coextra.hpp) hands it to clients, and the core holds its own references
// with it. Needs Python.h only, nothing of the C API table.
#ifndef COEXTRA_REF_HPP
#define COEXTRA_REF_HPP

#include <Python.h>

#include <utility>

namespace coextra {

// Empty means NULL. steal() takes over a new reference (a NULL result of a
// failed call gives an empty Ref, the exception still set); borrow() takes a
// reference of its own to an object borrowed from elsewhere.
class Ref {
public:
    Ref() = default;
    static Ref steal(PyObject *object) { return Ref(object); }
    static Ref borrow(PyObject *object) {
        Py_XINCREF(object);
        return Ref(object);
    }
    Ref(const Ref &other) : object_(other.object_) { Py_XINCREF(object_); }
    Ref(Ref &&other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
    Ref &operator=(Ref other) noexcept {
        std::swap(object_, other.object_);
        return *this;
    }
    // Any code a release runs (a __del__, weakref callbacks) runs here.
    ~Ref() { Py_XDECREF(object_); }

    PyObject *get() const { return object_; }
    explicit operator bool() const { return object_ != nullptr; }
    // Gives the reference to the caller.
    PyObject *release() { return std::exchange(object_, nullptr); }
    // Drops the reference now, as Py_CLEAR: the Ref is empty before any code
    // the release runs, so that code never sees the object through it.
    void reset() { Py_XDECREF(std::exchange(object_, nullptr)); }

private:
    explicit Ref(PyObject *object) : object_(object) {}
    PyObject *object_ = nullptr;
};

}  // namespace coextra

#endif  // COEXTRA_REF_HPP
