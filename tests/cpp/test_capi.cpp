// test_capi.cpp -- coextra's C API used exactly as a third-party extension uses it.
//
// This binary does not link coextra_core: it includes only the public header
// (csrc/include/coextra/coextra.h), imports the built coextra._coextra through
// coextra_import() (CMake puts the package on PYTHONPATH) and calls the
// function table from the capsule.
#include <gtest/gtest.h>
#include <pybind11/embed.h>

#include "run_time_functions.h"

#include <coextra/coextra.h>
#include <coextra/coextra.hpp>

#include <string>
#include <vector>

namespace py = pybind11;

namespace {

using coextra_test::code_ptr;
using coextra_test::make_function;

py::dict stats() { return py::module_::import("coextra").attr("stats")(); }

int product_equals(PyObject *product, void *context) {
    return PyObject_RichCompareBool(product, static_cast<PyObject *>(context), Py_EQ);
}

int raise_value_error(PyObject *, void *) {
    PyErr_SetString(PyExc_ValueError, "guard failed");
    return -1;
}

class CAPI : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(coextra_import(), 0);
        py::module_::import("coextra").attr("reset")();
        py::module_::import("gc").attr("collect")();
        before = stats();
    }
    void TearDown() override {
        EXPECT_FALSE(PyErr_Occurred());
        PyErr_Clear();
        py::module_::import("coextra").attr("reset")();
        py::module_::import("gc").attr("collect")();
        // Nothing a test made outlives it.
        py::dict after = stats();
        EXPECT_EQ(after["holders_alive"].cast<long>(), before["holders_alive"].cast<long>());
        EXPECT_EQ(after["entries_alive"].cast<long>(), before["entries_alive"].cast<long>());
        EXPECT_EQ(after["ephemeron_entries_alive"].cast<long>(),
                  before["ephemeron_entries_alive"].cast<long>());
    }
    py::dict before;
};

TEST_F(CAPI, ImportGivesTheVersionedTableOfThisHeader) {
    ASSERT_NE(COEXTRA_API, nullptr);
    EXPECT_EQ(COEXTRA_API->version, static_cast<unsigned>(COEXTRA_CAPI_VERSION));
    EXPECT_GE(COEXTRA_API->table_size, sizeof(coextra_CAPI));
    EXPECT_GE(COEXTRA_API->extra_index, 0) << "filled in once the registry exists";
    EXPECT_EQ(COEXTRA_API, PyCapsule_Import(COEXTRA_CAPSULE_NAME, 0)) << "one table, from the capsule";
}

// Swaps coextra._coextra._C_API for the test's duration.
class CapsuleSwap {
public:
    explicit CapsuleSwap(py::object replacement)
        : module_(py::module_::import("coextra._coextra")), saved_(module_.attr("_C_API")) {
        if (replacement.is_none()) {
            py::delattr(module_, "_C_API");
        } else {
            module_.attr("_C_API") = replacement;
        }
    }
    ~CapsuleSwap() { module_.attr("_C_API") = saved_; }

private:
    py::module_ module_;
    py::object saved_;
};

std::string import_error_message() {
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_ImportError));
    py::error_already_set error;
    return error.what();
}

TEST_F(CAPI, ImportFailsWithImportErrorOnAnotherVersion) {
    static coextra_CAPI other;
    other = *COEXTRA_API;
    other.version = COEXTRA_CAPI_VERSION + 1;
    {
        CapsuleSwap swap(py::reinterpret_steal<py::object>(
            PyCapsule_New(&other, COEXTRA_CAPSULE_NAME, nullptr)));
        EXPECT_EQ(coextra_import(), -1);
        EXPECT_NE(import_error_message().find("C API version"), std::string::npos);
    }
    EXPECT_EQ(coextra_import(), 0) << "the real capsule imports again";
}

TEST_F(CAPI, ImportFailsWhenTheModuleHasAnOlderSmallerTable) {
    static coextra_CAPI older;
    older = *COEXTRA_API;
    older.table_size = offsetof(coextra_CAPI, closed);  // as if built before closed() was added
    CapsuleSwap swap(py::reinterpret_steal<py::object>(
        PyCapsule_New(&older, COEXTRA_CAPSULE_NAME, nullptr)));
    EXPECT_EQ(coextra_import(), -1);
    EXPECT_NE(import_error_message().find("older"), std::string::npos);
}

TEST_F(CAPI, ImportAcceptsANewerModuleWithALargerTable) {
    // What a client built with this header sees of a coextra one revision
    // newer: the functions it knows are where it expects them.
    struct Newer {
        coextra_CAPI known;
        void *added;
    };
    static Newer newer;
    newer.known = *COEXTRA_API;
    newer.known.table_size = sizeof(Newer);
    newer.added = nullptr;
    const coextra_CAPI *real = COEXTRA_API;
    {
        CapsuleSwap swap(py::reinterpret_steal<py::object>(
            PyCapsule_New(&newer, COEXTRA_CAPSULE_NAME, nullptr)));
        EXPECT_EQ(coextra_import(), 0);
        EXPECT_EQ(COEXTRA_API, &newer.known);
    }
    EXPECT_EQ(coextra_import(), 0);
    EXPECT_EQ(COEXTRA_API, real);
}

TEST_F(CAPI, AModuleOfAnEarlierRevisionIsRefusedByThisHeader) {
    // The table as revision 1 (before ephemeron maps) and revision 2 (before
    // holder bounds) exported it.
    for (size_t size : {offsetof(coextra_CAPI, map_new), offsetof(coextra_CAPI, set_max_entries)}) {
        static coextra_CAPI earlier;
        earlier = *COEXTRA_API;
        earlier.table_size = size;
        CapsuleSwap swap(py::reinterpret_steal<py::object>(
            PyCapsule_New(&earlier, COEXTRA_CAPSULE_NAME, nullptr)));
        EXPECT_EQ(coextra_import(), -1) << size;
        EXPECT_NE(import_error_message().find("older"), std::string::npos);
    }
}

TEST_F(CAPI, ImportFailsWithImportErrorWhenTheCapsuleIsMissing) {
    CapsuleSwap swap{py::none()};
    EXPECT_EQ(coextra_import(), -1);
    EXPECT_NE(import_error_message().find("missing"), std::string::npos);
}

TEST_F(CAPI, HolderOfIsNullWithoutErrorUntilEnsureCreatesOne) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    EXPECT_EQ(COEXTRA_API->holder_of(code), nullptr);
    EXPECT_FALSE(PyErr_Occurred());
    PyObject *h = COEXTRA_API->ensure(code);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(COEXTRA_API->holder_of(code), h);
    EXPECT_EQ(coextra_holder_of(code), h) << "the inline read agrees with the table";
    EXPECT_EQ(COEXTRA_API->ensure(code), h) << "one holder per code object";
    EXPECT_EQ(COEXTRA_API->holder_code(h), code);
    EXPECT_EQ(COEXTRA_API->size(h), 0);
    // The same holder the Python API sees.
    EXPECT_EQ(py::module_::import("coextra").attr("holder")(f).ptr(), h);
}

TEST_F(CAPI, EnsureRejectsWhatIsNotACodeObject) {
    py::object f = make_function("f");
    EXPECT_EQ(COEXTRA_API->ensure(f.ptr()), nullptr);
    ASSERT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    py::error_already_set error;
    EXPECT_NE(std::string(error.what()).find("takes a code object"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("'function'"), std::string::npos) << error.what();
}

TEST_F(CAPI, TheLookupsAnswerNoHolderForWhatIsNotACodeObject) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    ASSERT_NE(h, nullptr);
    Py_DECREF(COEXTRA_API->add(h, py::str("p").ptr(), nullptr));
    // The function whose code has a holder: still no holder, and no exception.
    PyObject *found = reinterpret_cast<PyObject *>(1);
    EXPECT_EQ(COEXTRA_API->holder_of(f.ptr()), nullptr);
    EXPECT_EQ(coextra_holder_of(f.ptr()), nullptr);
    EXPECT_EQ(COEXTRA_API->find(f.ptr(), nullptr, nullptr, &found), 0);
    EXPECT_EQ(found, nullptr);
    EXPECT_FALSE(PyErr_Occurred());
}

TEST_F(CAPI, NullCodeIsNoHolderForTheLookupsAndATypeErrorForEnsure) {
    PyObject *found = reinterpret_cast<PyObject *>(1);
    EXPECT_EQ(COEXTRA_API->holder_of(nullptr), nullptr);
    EXPECT_EQ(coextra_holder_of(nullptr), nullptr);
    EXPECT_EQ(COEXTRA_API->find(nullptr, nullptr, nullptr, &found), 0);
    EXPECT_EQ(found, nullptr);
    EXPECT_FALSE(PyErr_Occurred());
    EXPECT_EQ(COEXTRA_API->ensure(nullptr), nullptr);
    ASSERT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    py::error_already_set error;
    EXPECT_NE(std::string(error.what()).find("takes a code object (a function's __code__), not NULL"),
              std::string::npos) << error.what();
}

// What a file that never called coextra_import() sees: its table pointer is
// NULL, and every call raises instead of dereferencing it.
class NotImported {
public:
    NotImported() : saved_(coextra_api) { coextra_api = nullptr; }
    ~NotImported() { coextra_api = saved_; }
    NotImported(const NotImported &) = delete;
    NotImported &operator=(const NotImported &) = delete;

private:
    const coextra_CAPI *saved_;
};

// Whether the pending exception is the RuntimeError of a missing import
// naming `function`; clears it.
bool raised_not_imported(const std::string &function) {
    if (!PyErr_ExceptionMatches(PyExc_RuntimeError)) {
        ADD_FAILURE() << function << ": no RuntimeError";
        PyErr_Clear();
        return false;
    }
    py::error_already_set error;
    std::string message = error.what();
    bool ok = message.find("coextra: " + function + "()") != std::string::npos &&
              message.find("coextra_import()") != std::string::npos &&
              message.find("COEXTRA_API_UNIQUE_SYMBOL") != std::string::npos;
    EXPECT_TRUE(ok) << message;
    return ok;
}

TEST_F(CAPI, EveryFunctionRaisesNamingCoextraImportInAFileThatHasNotImported) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    PyObject *h = COEXTRA_API->ensure(code);
    ASSERT_NE(h, nullptr);
    PyObject *e = COEXTRA_API->add(h, py::str("p").ptr(), nullptr);
    ASSERT_NE(e, nullptr);
    py::object map = py::reinterpret_steal<py::object>(COEXTRA_API->map_new());
    PyObject *key = code;
    PyObject *found = reinterpret_cast<PyObject *>(1);
    {
        NotImported not_imported;
        ASSERT_NE(COEXTRA_API, nullptr) << "never NULL";
        EXPECT_EQ(COEXTRA_API->extra_index, -1);
        EXPECT_EQ(COEXTRA_API->holder_of(code), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->holder_of"));
        EXPECT_EQ(coextra_holder_of(code), nullptr);
        EXPECT_TRUE(raised_not_imported("coextra_holder_of"));
        EXPECT_EQ(COEXTRA_API->ensure(code), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->ensure"));
        EXPECT_EQ(COEXTRA_API->add(h, Py_None, nullptr), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->add"));
        EXPECT_EQ(COEXTRA_API->entry_product(e), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->entry_product"));
        EXPECT_EQ(COEXTRA_API->entry_guard(e), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->entry_guard"));
        EXPECT_EQ(COEXTRA_API->lookup(h, nullptr, nullptr, &found), -1);
        EXPECT_EQ(found, nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->lookup"));
        EXPECT_EQ(COEXTRA_API->front(h), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->front"));
        found = reinterpret_cast<PyObject *>(1);
        EXPECT_EQ(COEXTRA_API->find(code, nullptr, nullptr, &found), -1);
        EXPECT_EQ(found, nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->find"));
        EXPECT_EQ(COEXTRA_API->for_each(h, nullptr, nullptr), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->for_each"));
        EXPECT_EQ(COEXTRA_API->size(h), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->size"));
        EXPECT_EQ(COEXTRA_API->remove(h, e), 0);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->remove"));
        COEXTRA_API->clear(h);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->clear"));
        EXPECT_EQ(COEXTRA_API->detach(h), 0);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->detach"));
        EXPECT_EQ(COEXTRA_API->holder_code(h), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->holder_code"));
        EXPECT_EQ(COEXTRA_API->closed(), 1) << "a backend that checks stops compiling";
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->closed"));
        EXPECT_EQ(COEXTRA_API->collect(), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->collect"));
        EXPECT_EQ(COEXTRA_API->map_new(), nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->map_new"));
        found = reinterpret_cast<PyObject *>(1);
        EXPECT_EQ(COEXTRA_API->map_get(map.ptr(), key, &found), -1);
        EXPECT_EQ(found, nullptr);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->map_get"));
        EXPECT_EQ(COEXTRA_API->map_set(map.ptr(), key, Py_None), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->map_set"));
        EXPECT_EQ(COEXTRA_API->map_delete(map.ptr(), key), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->map_delete"));
        EXPECT_EQ(COEXTRA_API->map_size(map.ptr()), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->map_size"));
        EXPECT_EQ(COEXTRA_API->set_max_entries(h, 1), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->set_max_entries"));
        EXPECT_EQ(COEXTRA_API->max_entries(h), -1);
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->max_entries"));
        // The C++ wrapper goes through the same table.
        EXPECT_FALSE(coextra::Holder::ensure(code));
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->ensure"));
        EXPECT_FALSE(coextra::Holder::of(code));
        EXPECT_TRUE(raised_not_imported("COEXTRA_API->holder_of"));
    }
    // Nothing was touched: the holder still has its entry, attached.
    EXPECT_EQ(COEXTRA_API->holder_of(code), h);
    EXPECT_EQ(COEXTRA_API->size(h), 1);
    EXPECT_EQ(COEXTRA_API->front(h), e);
    Py_DECREF(e);
}

TEST_F(CAPI, AddThenLookupWithANativeGuardMovesTheHitToTheFront) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    py::str a("a"), b("b"), c("c");
    PyObject *ea = COEXTRA_API->add(h, a.ptr(), nullptr);
    PyObject *eb = COEXTRA_API->add(h, b.ptr(), nullptr);
    ASSERT_NE(ea, nullptr);
    ASSERT_NE(eb, nullptr);
    EXPECT_EQ(COEXTRA_API->entry_product(ea), a.ptr());
    EXPECT_EQ(COEXTRA_API->entry_guard(ea), nullptr);

    PyObject *found = nullptr;
    ASSERT_EQ(COEXTRA_API->lookup(h, product_equals, a.ptr(), &found), 1);
    EXPECT_EQ(found, ea);
    EXPECT_EQ(py::handle(found).attr("hits").cast<int>(), 1);
    Py_DECREF(found);
    py::list entries = py::handle(h).attr("entries");
    EXPECT_EQ(entries[0].ptr(), ea) << "the hit moved to the front";

    EXPECT_EQ(COEXTRA_API->lookup(h, product_equals, c.ptr(), &found), 0);
    EXPECT_EQ(found, nullptr);
    // No guard: the front entry answers.
    ASSERT_EQ(COEXTRA_API->find(code_ptr(f), nullptr, nullptr, &found), 1);
    EXPECT_EQ(found, ea);
    EXPECT_EQ(py::handle(found).attr("hits").cast<int>(), 2);
    Py_DECREF(found);
    // front(): the same answer, borrowed, and the hit counted.
    Py_ssize_t refs = Py_REFCNT(ea);
    EXPECT_EQ(COEXTRA_API->front(h), ea);
    EXPECT_EQ(Py_REFCNT(ea), refs) << "front() takes no reference";
    EXPECT_EQ(py::handle(ea).attr("hits").cast<int>(), 3);
    Py_DECREF(ea);
    Py_DECREF(eb);
    COEXTRA_API->clear(h);
    EXPECT_EQ(COEXTRA_API->front(h), nullptr);
    EXPECT_FALSE(PyErr_Occurred());
}

TEST_F(CAPI, FindOnCodeWithoutHolderIsZeroWithoutError) {
    py::object f = make_function("f");
    PyObject *found = reinterpret_cast<PyObject *>(1);
    EXPECT_EQ(COEXTRA_API->find(code_ptr(f), nullptr, nullptr, &found), 0);
    EXPECT_EQ(found, nullptr);
    EXPECT_FALSE(PyErr_Occurred());
    EXPECT_EQ(COEXTRA_API->holder_of(code_ptr(f)), nullptr) << "find never creates";
}

TEST_F(CAPI, AGuardErrorPropagatesAndLeavesTheHolderUnchanged) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    py::int_ one(1), two(2);
    Py_DECREF(COEXTRA_API->add(h, one.ptr(), nullptr));
    Py_DECREF(COEXTRA_API->add(h, two.ptr(), nullptr));
    PyObject *found = nullptr;
    EXPECT_EQ(COEXTRA_API->lookup(h, raise_value_error, nullptr, &found), -1);
    EXPECT_EQ(found, nullptr);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_ValueError));
    PyErr_Clear();
    py::list entries = py::handle(h).attr("entries");
    EXPECT_EQ(entries[0].attr("product").cast<int>(), 2);
    EXPECT_EQ(entries[0].attr("hits").cast<int>(), 0);
}

TEST_F(CAPI, AddStoresAPythonGuardForPythonLookupsAndRejectsNonCallables) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    py::object positive = py::eval("lambda x: x > 0");
    py::str product("p");
    PyObject *e = COEXTRA_API->add(h, product.ptr(), positive.ptr());
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(COEXTRA_API->entry_guard(e), positive.ptr());
    EXPECT_TRUE(py::handle(h).attr("lookup")(-1).is_none());
    EXPECT_EQ(py::handle(h).attr("lookup")(1).ptr(), e);
    Py_DECREF(e);
    py::int_ not_callable(3);
    EXPECT_EQ(COEXTRA_API->add(h, product.ptr(), not_callable.ptr()), nullptr);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
}

struct Visit {
    std::vector<long> seen;
    long stop_at = -1;
    bool fail = false;
};

int record(PyObject *entry, PyObject *product, void *context) {
    auto *visit = static_cast<Visit *>(context);
    EXPECT_EQ(product, py::handle(entry).attr("product").ptr());
    visit->seen.push_back(PyLong_AsLong(product));
    if (visit->fail) {
        PyErr_SetString(PyExc_KeyError, "visit failed");
        return -1;
    }
    return PyLong_AsLong(product) == visit->stop_at ? 1 : 0;
}

TEST_F(CAPI, ForEachVisitsMostRecentlyUsedFirstAndCanStopOrFail) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    for (int i = 0; i < 12; i++) {  // more than the core's inline snapshot
        Py_DECREF(COEXTRA_API->add(h, py::int_(i).ptr(), nullptr));
    }
    Visit all;
    EXPECT_EQ(COEXTRA_API->for_each(h, record, &all), 0);
    std::vector<long> expected;
    for (int i = 11; i >= 0; i--) {
        expected.push_back(i);
    }
    EXPECT_EQ(all.seen, expected);

    Visit stop;
    stop.stop_at = 9;
    EXPECT_EQ(COEXTRA_API->for_each(h, record, &stop), 1);
    EXPECT_EQ(stop.seen, (std::vector<long>{11, 10, 9}));

    Visit fail;
    fail.fail = true;
    EXPECT_EQ(COEXTRA_API->for_each(h, record, &fail), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_KeyError));
    PyErr_Clear();
    EXPECT_EQ(fail.seen.size(), 1u);
}

int clear_holder_while_visiting(PyObject *, PyObject *, void *context) {
    COEXTRA_API->clear(static_cast<PyObject *>(context));
    return 0;
}

TEST_F(CAPI, SetMaxEntriesBoundsAHolderAndEvictsTheLeastRecentlyUsedAtOnce) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(COEXTRA_API->max_entries(h), 0) << "no bound by default";
    for (int i = 0; i < 3; i++) {
        Py_DECREF(COEXTRA_API->add(h, py::int_(i).ptr(), nullptr));
    }
    ASSERT_EQ(COEXTRA_API->set_max_entries(h, 2), 0);
    EXPECT_EQ(COEXTRA_API->max_entries(h), 2);
    EXPECT_EQ(COEXTRA_API->size(h), 2) << "evicted at once";
    Py_DECREF(COEXTRA_API->add(h, py::int_(3).ptr(), nullptr));
    std::vector<long> kept;
    COEXTRA_API->for_each(h, [](PyObject *, PyObject *product, void *context) {
        static_cast<std::vector<long> *>(context)->push_back(PyLong_AsLong(product));
        return 0;
    }, &kept);
    EXPECT_EQ(kept, (std::vector<long>{3, 2})) << "the least recently used go";
    // The Python attribute sees the same bound.
    EXPECT_EQ(py::handle(h).attr("max_entries").cast<long>(), 2);
    ASSERT_EQ(COEXTRA_API->set_max_entries(h, 0), 0);
    EXPECT_TRUE(py::handle(h).attr("max_entries").is_none());
    for (Py_ssize_t bad : {Py_ssize_t{-1}, static_cast<Py_ssize_t>(UINT32_MAX) + 1}) {
        EXPECT_EQ(COEXTRA_API->set_max_entries(h, bad), -1);
        ASSERT_TRUE(PyErr_ExceptionMatches(PyExc_ValueError));
        py::error_already_set error;
        EXPECT_NE(std::string(error.what()).find("max_entries must be 0 (no bound) or from 1 to 4294967295"),
                  std::string::npos) << error.what();
    }
    EXPECT_EQ(COEXTRA_API->max_entries(h), 0) << "a refused bound changes nothing";
    coextra::Holder wrapped = coextra::Holder::of(code_ptr(f));
    EXPECT_EQ(wrapped.set_max_entries(1), 0);
    EXPECT_EQ(wrapped.max_entries(), 1);
    EXPECT_EQ(wrapped.size(), 1);
}

TEST_F(CAPI, ForEachWalksASnapshotTheVisitMayChange) {
    py::object f = make_function("f");
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    Py_DECREF(COEXTRA_API->add(h, py::int_(1).ptr(), nullptr));
    Py_DECREF(COEXTRA_API->add(h, py::int_(2).ptr(), nullptr));
    EXPECT_EQ(COEXTRA_API->for_each(h, clear_holder_while_visiting, h), 0);
    EXPECT_EQ(COEXTRA_API->size(h), 0);
}

TEST_F(CAPI, RemoveClearAndDetach) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    PyObject *h = COEXTRA_API->ensure(code);
    PyObject *e1 = COEXTRA_API->add(h, py::int_(1).ptr(), nullptr);
    Py_DECREF(COEXTRA_API->add(h, py::int_(2).ptr(), nullptr));
    EXPECT_EQ(COEXTRA_API->size(h), 2);
    EXPECT_EQ(COEXTRA_API->remove(h, e1), 1);
    EXPECT_EQ(COEXTRA_API->remove(h, e1), 0) << "already removed";
    EXPECT_EQ(COEXTRA_API->size(h), 1);
    Py_DECREF(e1);
    COEXTRA_API->clear(h);
    EXPECT_EQ(COEXTRA_API->size(h), 0);

    Py_INCREF(h);  // keep it past the registry's reference
    EXPECT_EQ(COEXTRA_API->detach(h), 1);
    EXPECT_EQ(COEXTRA_API->holder_of(code), nullptr);
    EXPECT_EQ(coextra_holder_of(code), nullptr) << "detach clears the slot the inline read uses";
    EXPECT_EQ(COEXTRA_API->holder_code(h), nullptr);
    EXPECT_EQ(COEXTRA_API->detach(h), 0) << "detaching twice is a no-op";
    EXPECT_NE(COEXTRA_API->ensure(code), h) << "a detached holder is never attached again";
    Py_DECREF(h);
}

TEST_F(CAPI, AProductReferencingItsCodeIsFreedOnceDetached) {
    py::object f = make_function("f");
    py::object weakref = py::module_::import("weakref");
    py::object f_alive = weakref.attr("ref")(f);
    py::module_::import("coextra").attr("set_auto_collect")(false);  // else gc.collect() frees it
    PyObject *h = COEXTRA_API->ensure(code_ptr(f));
    // The product holds the function, hence its code: the cycle coextra exists for.
    Py_DECREF(COEXTRA_API->add(h, py::make_tuple(f, "compiled").ptr(), nullptr));
    f = py::none();
    py::module_::import("gc").attr("collect")();
    ASSERT_FALSE(f_alive().is_none()) << "attached: the registry keeps the product";
    COEXTRA_API->detach(h);
    py::module_::import("gc").attr("collect")();
    EXPECT_TRUE(f_alive().is_none()) << "detached: nothing keeps the cycle alive";
    py::module_::import("coextra").attr("set_auto_collect")(true);
}

TEST_F(CAPI, CollectDetachesAHolderWhoseCodeIsOnlyReachableThroughItsCache) {
    py::object f = make_function("f");
    py::object g = make_function("g");
    py::object weakref = py::module_::import("weakref");
    py::object f_alive = weakref.attr("ref")(f);
    py::module_::import("coextra").attr("set_auto_collect")(false);  // only our call collects
    Py_DECREF(COEXTRA_API->add(COEXTRA_API->ensure(code_ptr(f)), py::make_tuple(f).ptr(), nullptr));
    Py_DECREF(COEXTRA_API->add(COEXTRA_API->ensure(code_ptr(g)), py::make_tuple(g).ptr(), nullptr));
    f = py::none();  // g stays referenced from here: its cache must be kept
    py::module_::import("gc").attr("collect")();
    EXPECT_EQ(COEXTRA_API->collect(), 1);
    py::module_::import("gc").attr("collect")();
    EXPECT_TRUE(f_alive().is_none()) << "the collector freed the self-referencing cache";
    EXPECT_NE(COEXTRA_API->holder_of(code_ptr(g)), nullptr);
    EXPECT_EQ(coextra::collect(), 0) << "the C++ wrapper calls the same collector";
    py::module_::import("coextra").attr("set_auto_collect")(true);
}

// A guard that detaches every holder, then reports how many holders exist.
int detach_all_and_count(PyObject *, void *context) {
    py::module_::import("coextra").attr("reset")();
    *static_cast<long *>(context) = stats()["holders_alive"].cast<long>();
    return 1;
}

TEST_F(CAPI, ALookupKeepsABorrowedHolderAliveWhileItsGuardDetachesIt) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    PyObject *h = COEXTRA_API->ensure(code);  // borrowed: the registry's is the only reference
    Py_DECREF(COEXTRA_API->add(h, py::str("p").ptr(), nullptr));
    long alive_before = stats()["holders_alive"].cast<long>();
    long alive_during = -1;
    PyObject *found = nullptr;
    ASSERT_EQ(COEXTRA_API->lookup(h, detach_all_and_count, &alive_during, &found), 1);
    EXPECT_EQ(alive_during, alive_before) << "the lookup's own reference kept the holder alive";
    EXPECT_EQ(COEXTRA_API->holder_of(code), nullptr);
    EXPECT_EQ(py::handle(COEXTRA_API->entry_product(found)).cast<std::string>(), "p");
    Py_DECREF(found);
}

// --- ephemeron maps (revision 2)

TEST_F(CAPI, MapSetGetDeleteByKeyIdentity) {
    py::object map = py::reinterpret_steal<py::object>(COEXTRA_API->map_new());
    ASSERT_TRUE(map);
    py::object key = make_function("k");
    py::object equal_twin = make_function("k");
    py::object value = py::str("compiled");
    PyObject *found = reinterpret_cast<PyObject *>(1);
    EXPECT_EQ(COEXTRA_API->map_get(map.ptr(), key.ptr(), &found), 0);
    EXPECT_EQ(found, nullptr);
    ASSERT_EQ(COEXTRA_API->map_set(map.ptr(), key.ptr(), value.ptr()), 0);
    EXPECT_EQ(COEXTRA_API->map_size(map.ptr()), 1);
    ASSERT_EQ(COEXTRA_API->map_get(map.ptr(), key.ptr(), &found), 1);
    EXPECT_EQ(found, value.ptr());
    Py_DECREF(found);
    EXPECT_EQ(COEXTRA_API->map_get(map.ptr(), equal_twin.ptr(), &found), 0) << "identity, not equality";
    EXPECT_EQ(COEXTRA_API->map_delete(map.ptr(), key.ptr()), 1);
    EXPECT_EQ(COEXTRA_API->map_delete(map.ptr(), key.ptr()), 0);
    EXPECT_EQ(COEXTRA_API->map_size(map.ptr()), 0);
}

TEST_F(CAPI, MapEntryWhoseValueReferencesItsKeyIsCollected) {
    py::object map = py::reinterpret_steal<py::object>(COEXTRA_API->map_new());
    py::object key = make_function("k");
    py::list value;
    value.append(key);  // the value keeps its own key: a WeakKeyDictionary would leak it
    ASSERT_EQ(COEXTRA_API->map_set(map.ptr(), key.ptr(), value.ptr()), 0);
    py::object alive = py::module_::import("weakref").attr("ref")(key);
    key = py::object();
    value = py::list();
    py::module_::import("gc").attr("collect")();
    EXPECT_GE(COEXTRA_API->collect(), 0);
    py::module_::import("gc").attr("collect")();
    EXPECT_EQ(COEXTRA_API->map_size(map.ptr()), 0);
    EXPECT_TRUE(alive().is_none());
}

TEST_F(CAPI, MapFunctionsRefuseANonMapAndAKeyWithoutWeakReferences) {
    py::object map = py::reinterpret_steal<py::object>(COEXTRA_API->map_new());
    py::dict not_a_map;
    py::object key = make_function("k");
    PyObject *found = nullptr;
    EXPECT_EQ(COEXTRA_API->map_get(not_a_map.ptr(), key.ptr(), &found), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    EXPECT_EQ(COEXTRA_API->map_size(not_a_map.ptr()), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    EXPECT_EQ(COEXTRA_API->map_set(map.ptr(), key.ptr(), nullptr), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    py::int_ number(7);
    EXPECT_EQ(COEXTRA_API->map_set(map.ptr(), number.ptr(), key.ptr()), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    EXPECT_EQ(COEXTRA_API->map_get(map.ptr(), number.ptr(), &found), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    EXPECT_EQ(COEXTRA_API->map_delete(map.ptr(), number.ptr()), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
}

TEST_F(CAPI, ClosedIsFalseWhileTheInterpreterRuns) {
    PyErr_SetString(PyExc_LookupError, "pending");
    EXPECT_EQ(COEXTRA_API->closed(), 0);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_LookupError)) << "closed() keeps a pending exception";
    PyErr_Clear();
}

// --- the C++ wrapper (coextra.hpp)

TEST_F(CAPI, CppWrapperAddsLooksUpWithALambdaAndIterates) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    EXPECT_FALSE(coextra::Holder::of(code)) << "no holder yet, and no exception";
    EXPECT_FALSE(PyErr_Occurred());
    coextra::Holder h = coextra::Holder::ensure(code);
    ASSERT_TRUE(h);
    EXPECT_EQ(h.code(), code);
    for (int i = 0; i < 3; i++) {
        ASSERT_TRUE(h.add(py::int_(i).ptr()));
    }
    coextra::Entry hit;
    ASSERT_EQ(h.lookup([](PyObject *product) { return PyLong_AsLong(product) == 0 ? 1 : 0; }, hit), 1);
    EXPECT_EQ(PyLong_AsLong(hit.product()), 0);
    std::vector<long> order;
    EXPECT_EQ(h.for_each([&](PyObject *, PyObject *product) {
        order.push_back(PyLong_AsLong(product));
        return 0;
    }),
              0);
    EXPECT_EQ(order, (std::vector<long>{0, 2, 1})) << "the hit moved to the front";
    EXPECT_TRUE(h.remove(hit));
    EXPECT_EQ(h.size(), 2);
}

TEST_F(CAPI, CppWrapperKeepsADetachedHolderValid) {
    py::object f = make_function("f");
    coextra::Holder h = coextra::Holder::ensure(code_ptr(f));
    ASSERT_TRUE(h.add(py::str("p").ptr()));
    EXPECT_TRUE(h.detach());
    EXPECT_FALSE(h.detach());
    EXPECT_EQ(h.code(), nullptr);
    coextra::Entry front;
    EXPECT_EQ(h.front(front), 1) << "a detached holder still works as a container";
    EXPECT_EQ(h.size(), 1);
}

TEST_F(CAPI, CppWrapperReportsErrorsTheCPythonWay) {
    py::object f = make_function("f");
    coextra::Holder h = coextra::Holder::ensure(f.ptr());  // a function, not a code object
    EXPECT_FALSE(h);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    coextra::Holder good = coextra::Holder::ensure(code_ptr(f));
    ASSERT_TRUE(good.add(py::int_(1).ptr()));
    coextra::Entry none;
    EXPECT_EQ(good.lookup([](PyObject *) {
        PyErr_SetString(PyExc_RuntimeError, "boom");
        return -1;
    }, none),
              -1);
    EXPECT_FALSE(none);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_RuntimeError));
    PyErr_Clear();
}

TEST_F(CAPI, CppMapWrapperSetsFindsAndErasesByKeyIdentity) {
    coextra::EphemeronMap map = coextra::EphemeronMap::create();
    ASSERT_TRUE(map);
    py::object key = make_function("k");
    py::object equal_twin = make_function("k");
    py::str value("compiled");
    coextra::Ref found = coextra::Ref::borrow(Py_None);
    EXPECT_EQ(map.find(key.ptr(), found), 0);
    EXPECT_FALSE(found) << "a miss empties the result";
    ASSERT_EQ(map.set(key.ptr(), value.ptr()), 0);
    EXPECT_EQ(map.size(), 1);
    ASSERT_EQ(map.find(key.ptr(), found), 1);
    EXPECT_EQ(found.get(), value.ptr());
    EXPECT_EQ(map.find(equal_twin.ptr(), found), 0) << "identity, not equality";
    EXPECT_EQ(map.erase(key.ptr()), 1);
    EXPECT_EQ(map.erase(key.ptr()), 0);
    EXPECT_EQ(map.size(), 0);
}

TEST_F(CAPI, CppMapWrapperSharesAMapMadeInPythonAndItsEntriesDieWithTheirKeys) {
    py::object made = py::module_::import("coextra").attr("EphemeronMap")();
    coextra::EphemeronMap map = coextra::EphemeronMap::borrow(made.ptr());
    py::object key = make_function("k");
    py::list value;
    value.append(key);  // the value keeps its own key: a WeakKeyDictionary would leak it
    ASSERT_EQ(map.set(key.ptr(), value.ptr()), 0);
    EXPECT_EQ(py::len(made), 1u) << "the wrapper and Python see one map";
    py::object alive = py::module_::import("weakref").attr("ref")(key);
    key = py::object();
    value = py::list();
    made = py::object();  // the wrapper's own reference keeps the map
    py::module_::import("gc").attr("collect")();  // automatic collection may remove it here
    EXPECT_GE(coextra::collect(), 0);
    py::module_::import("gc").attr("collect")();
    EXPECT_EQ(map.size(), 0);
    EXPECT_TRUE(alive().is_none());
}

TEST_F(CAPI, CppMapWrapperReportsErrorsTheCPythonWay) {
    py::dict not_a_map;
    coextra::EphemeronMap wrong = coextra::EphemeronMap::borrow(not_a_map.ptr());
    py::object key = make_function("k");
    coextra::Ref found;
    EXPECT_EQ(wrong.find(key.ptr(), found), -1);
    EXPECT_FALSE(found);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    EXPECT_EQ(wrong.size(), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    coextra::EphemeronMap map = coextra::EphemeronMap::create();
    py::int_ number(7);
    EXPECT_EQ(map.set(number.ptr(), key.ptr()), -1) << "an int cannot be weakly referenced";
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
    EXPECT_EQ(map.erase(number.ptr()), -1);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_TypeError));
    PyErr_Clear();
}

// --- coextra::Ref (ref.hpp), the owned reference the wrapper and the core use

TEST(Ref, OwnsOneReferenceUntilReleasedOrReset) {
    py::object object = py::list();
    PyObject *p = object.ptr();
    const Py_ssize_t start = Py_REFCNT(p);
    {
        coextra::Ref owned = coextra::Ref::borrow(p);
        EXPECT_EQ(Py_REFCNT(p), start + 1);
        coextra::Ref copy = owned;
        EXPECT_EQ(Py_REFCNT(p), start + 2);
        coextra::Ref moved = std::move(copy);
        EXPECT_FALSE(copy) << "a move leaves the source empty";
        EXPECT_EQ(Py_REFCNT(p), start + 2) << "and takes no reference";
        moved.reset();
        EXPECT_FALSE(moved);
        EXPECT_EQ(Py_REFCNT(p), start + 1);
        moved.reset();  // empty: nothing to drop
        PyObject *given = owned.release();
        EXPECT_EQ(given, p);
        EXPECT_FALSE(owned);
        EXPECT_EQ(Py_REFCNT(p), start + 1) << "the caller has the reference now";
        coextra::Ref back = coextra::Ref::steal(given);
        EXPECT_EQ(back.get(), p);
        EXPECT_EQ(Py_REFCNT(p), start + 1);
    }
    EXPECT_EQ(Py_REFCNT(p), start) << "every reference taken was given back once";
}

TEST(Ref, StealingAFailedCallGivesAnEmptyRef) {
    coextra::Ref failed = coextra::Ref::steal(PyLong_FromString("not a number", nullptr, 10));
    EXPECT_FALSE(failed);
    EXPECT_EQ(failed.get(), nullptr);
    EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_ValueError)) << "the exception is still set";
    PyErr_Clear();
    EXPECT_FALSE(coextra::Ref::borrow(nullptr));
}

// reset() and assignment release the old object last: the code its release
// runs (a __del__) finds the Ref already empty, or already holding the new one.
coextra::Ref *watched = nullptr;
PyObject *seen_by_del = nullptr;

TEST(Ref, ResetAndAssignmentReleaseTheOldObjectLast) {
    py::dict ns;
    ns["record"] = py::cpp_function([] { seen_by_del = watched->get(); });
    py::exec("class Dies:\n    def __del__(self):\n        record()\n", ns);
    coextra::Ref ref = coextra::Ref::steal(ns["Dies"]().release().ptr());
    watched = &ref;
    seen_by_del = Py_None;
    ref.reset();
    EXPECT_EQ(seen_by_del, nullptr) << "__del__ ran with the Ref already empty";
    ref = coextra::Ref::steal(ns["Dies"]().release().ptr());
    py::object next = py::int_(7);
    seen_by_del = nullptr;
    ref = coextra::Ref::borrow(next.ptr());
    EXPECT_EQ(seen_by_del, next.ptr()) << "__del__ ran with the Ref holding the new object";
    watched = nullptr;
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    // Every test imports the C API in SetUp (listing the tests needs no coextra).
    py::scoped_interpreter interpreter;
    return RUN_ALL_TESTS();
}
