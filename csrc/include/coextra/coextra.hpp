// coextra.hpp -- header-only C++ wrapper over coextra's C API (coextra.h), C++14 or later.
//
// RAII references (coextra::Ref, ref.hpp) and lambdas for guards and visits; no pybind11, no C++
// exceptions: every fallible call reports failure the CPython way (an empty
// result or -1, with a Python exception set). Call coextra_import() first:
// the wrapper goes through COEXTRA_API, so the rules of coextra.h apply (one
// table per file unless COEXTRA_API_UNIQUE_SYMBOL is defined; a file that has
// not imported gets RuntimeError). `code` is a code object, never a function.
//
//     coextra::Holder h = coextra::Holder::ensure(code);
//     if (!h) return nullptr;                       // exception set
//     coextra::Entry entry = h.add(product);
//     coextra::Entry hit;
//     int found = h.lookup([&](PyObject *p) { return p == wanted ? 1 : 0; }, hit);
#ifndef COEXTRA_COEXTRA_HPP
#define COEXTRA_COEXTRA_HPP

#if (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 201402L
#error "coextra: coextra.hpp needs C++14 or later (coextra.h alone is C99 and C++11)"
#endif

#include "coextra.h"
#include "ref.hpp"

#include <type_traits>
#include <utility>

namespace coextra {

// An entry: its product and Python guard are borrowed from the entry, which
// this object keeps alive.
class Entry {
public:
    Entry() = default;
    explicit Entry(Ref entry) : entry_(std::move(entry)) {}
    explicit operator bool() const { return static_cast<bool>(entry_); }
    PyObject *get() const { return entry_.get(); }
    PyObject *product() const { return COEXTRA_API->entry_product(entry_.get()); }
    PyObject *guard() const { return COEXTRA_API->entry_guard(entry_.get()); }

private:
    Ref entry_;
};

// A holder with a strong reference of its own, so it stays a valid object
// even if it is detached while this wrapper exists (it then works as a plain
// container, as every detached holder does). Its methods need a holder: test
// an empty one (`if (h)`) first, as a pointer. The same goes for Entry.
class Holder {
public:
    Holder() = default;

    // The holder of `code`, or an empty Holder (no exception) when none.
    static Holder of(PyObject *code) { return Holder(Ref::borrow(COEXTRA_API->holder_of(code))); }

    // The holder of `code`, created when missing; empty with an exception set
    // on failure.
    static Holder ensure(PyObject *code) { return Holder(Ref::borrow(COEXTRA_API->ensure(code))); }

    explicit operator bool() const { return static_cast<bool>(holder_); }
    PyObject *get() const { return holder_.get(); }

    // The new entry; empty with an exception set on failure.
    Entry add(PyObject *product, PyObject *guard = nullptr) const {
        return Entry(Ref::steal(COEXTRA_API->add(holder_.get(), product, guard)));
    }

    // match(PyObject *product) -> int (1 match, 0 no, -1 error with exception).
    // Returns as coextra_CAPI::lookup; the hit is stored in `found`.
    template <class Match>
    int lookup(Match &&match, Entry &found) const {
        PyObject *entry = nullptr;
        int result = COEXTRA_API->lookup(holder_.get(), &call_match<Match>, &match, &entry);
        found = Entry(Ref::steal(entry));
        return result;
    }

    // The front entry (its hit counted), held by `found`: 1, or 0 when empty.
    int front(Entry &found) const {
        found = Entry(Ref::borrow(COEXTRA_API->front(holder_.get())));
        return found ? 1 : 0;
    }

    // visit(PyObject *entry, PyObject *product) -> int (0 go on, 1 stop, -1 error).
    // Returns as coextra_CAPI::for_each.
    template <class Visit>
    int for_each(Visit &&visit) const {
        return COEXTRA_API->for_each(holder_.get(), &call_visit<Visit>, &visit);
    }

    Py_ssize_t size() const { return COEXTRA_API->size(holder_.get()); }
    // The bound (0: none); setting it evicts beyond it. -1 + ValueError for a bad bound.
    Py_ssize_t max_entries() const { return COEXTRA_API->max_entries(holder_.get()); }
    int set_max_entries(Py_ssize_t bound) const { return COEXTRA_API->set_max_entries(holder_.get(), bound); }
    bool remove(const Entry &entry) const { return COEXTRA_API->remove(holder_.get(), entry.get()) == 1; }
    void clear() const { COEXTRA_API->clear(holder_.get()); }
    bool detach() const { return COEXTRA_API->detach(holder_.get()) == 1; }
    // The code object, borrowed while attached; NULL once detached.
    PyObject *code() const { return COEXTRA_API->holder_code(holder_.get()); }

private:
    explicit Holder(Ref holder) : holder_(std::move(holder)) {}

    template <class Match>
    static int call_match(PyObject *product, void *context) {
        return (*static_cast<std::remove_reference_t<Match> *>(context))(product);
    }
    template <class Visit>
    static int call_visit(PyObject *entry, PyObject *product, void *context) {
        return (*static_cast<std::remove_reference_t<Visit> *>(context))(entry, product);
    }

    Ref holder_;
};

// A coextra.EphemeronMap with a strong reference of its own: keys by identity,
// each entry alive exactly as long as its key is reachable from outside map
// values and caches (coextra.h, "Ephemeron maps"). Test an empty one
// (`if (m)`) first, as a pointer. The map functions check the map's type:
// borrow() of anything else gives a wrapper whose calls raise TypeError.
class EphemeronMap {
public:
    EphemeronMap() = default;

    // A new, empty map; empty with an exception set on failure.
    static EphemeronMap create() { return EphemeronMap(Ref::steal(COEXTRA_API->map_new())); }
    // A map made elsewhere (handed over from Python, say), with a reference of
    // this wrapper's own.
    static EphemeronMap borrow(PyObject *map) { return EphemeronMap(Ref::borrow(map)); }

    explicit operator bool() const { return static_cast<bool>(map_); }
    PyObject *get() const { return map_.get(); }

    // The value of `key`, held by `value`: 1, 0 when missing (`value` empty),
    // or -1 with an exception (TypeError).
    int find(PyObject *key, Ref &value) const {
        PyObject *found = nullptr;
        int result = COEXTRA_API->map_get(map_.get(), key, &found);
        value = Ref::steal(found);
        return result;
    }
    // 0, or -1 with an exception (TypeError, MemoryError). May run Python code.
    int set(PyObject *key, PyObject *value) const { return COEXTRA_API->map_set(map_.get(), key, value); }
    // 1 when `key` was there, 0 when not, -1 with an exception (TypeError).
    int erase(PyObject *key) const { return COEXTRA_API->map_delete(map_.get(), key); }
    // The number of entries, or -1 with TypeError.
    Py_ssize_t size() const { return COEXTRA_API->map_size(map_.get()); }

private:
    explicit EphemeronMap(Ref map) : map_(std::move(map)) {}
    Ref map_;
};

// Runs the cycle collector now; the holders it detached plus the map entries
// it removed, as coextra.collect(). Throws nothing: -1 means an exception is
// set, as in the C API.
inline Py_ssize_t collect() { return COEXTRA_API->collect(); }

}  // namespace coextra

#endif  // COEXTRA_COEXTRA_HPP
