// test_core.cpp -- the C++ core (Holder, Entry, Registry) in an embedded interpreter.
//
// These tests drive the core directly, the way the extension module and the
// C API do, and check the invariants of docs/design.md from C++.
#include <gtest/gtest.h>
#include <pybind11/embed.h>

#include "core_test_main.h"
#include "run_time_functions.h"

#include <unistd.h>

#include <map>

#include "generation_pass.h"
#include "holder.h"
#include "lifecycle.h"
#include "registry.h"

namespace py = pybind11;
using namespace coextra::detail;

namespace {

using coextra_test::code_ptr;
using coextra_test::make_function;

size_t attached_count() { return registry_get()->holders.size(); }

int always(Entry *, void *) { return 1; }

int product_equals(Entry *entry, void *context) {
    return PyObject_RichCompareBool(entry->product, static_cast<PyObject *>(context), Py_EQ);
}

class Core : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_GE(registry_reset(), 0);
        py::module_::import("gc").attr("collect")();
        holders_before = holder_live_count();
        entries_before = entry_live_count();
    }
    void TearDown() override {
        registry_reset();
        py::module_::import("gc").attr("collect")();
        // Every test leaves nothing behind: no holder and no entry outlives it.
        EXPECT_EQ(holder_live_count(), holders_before);
        EXPECT_EQ(entry_live_count(), entries_before);
        EXPECT_FALSE(PyErr_Occurred());
    }
    int64_t holders_before = 0;
    int64_t entries_before = 0;
};

TEST_F(Core, AttachStoresOnlyANonOwningPointerInCoExtra) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    Py_ssize_t code_refs = Py_REFCNT(code);

    Holder *h = registry_ensure(code);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(registry_holder_of(code), h);
    EXPECT_EQ(registry_ensure(code), h) << "a code object has at most one holder";
    EXPECT_EQ(h->code, code);
    EXPECT_EQ(Py_REFCNT(code), code_refs) << "the holder must not own its code";
    EXPECT_EQ(Py_REFCNT(h), 1) << "the registry's reference is the only one";
    EXPECT_EQ(attached_count(), 1u);
}

TEST_F(Core, LookupFindsMatchMovesItToFrontAndCountsHits) {
    py::object f = make_function("f");
    Holder *h = registry_ensure(code_ptr(f));
    py::object a = py::str("a"), b = py::str("b");
    Py_DECREF(holder_add(h, a.ptr(), nullptr));
    Py_DECREF(holder_add(h, b.ptr(), nullptr));
    ASSERT_EQ(h->size, 2u);
    EXPECT_EQ(reinterpret_cast<Entry *>(holder_items(h)[0])->product, b.ptr()) << "MRU first";

    Entry *found = nullptr;
    ASSERT_EQ(holder_lookup(h, product_equals, a.ptr(), &found), 1);
    EXPECT_EQ(found->product, a.ptr());
    EXPECT_EQ(found->hits, 1u);
    EXPECT_EQ(holder_items(h)[0], reinterpret_cast<PyObject *>(found)) << "a hit moves to the front";
    Py_DECREF(found);

    py::object c = py::str("c");
    EXPECT_EQ(holder_lookup(h, product_equals, c.ptr(), &found), 0);
    EXPECT_EQ(found, nullptr);
}

TEST_F(Core, DetachClearsTheSlotAndDropsTheRegistryReference) {
    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    Holder *h = registry_ensure(code);
    Py_INCREF(h);
    ASSERT_EQ(registry_detach(h), 1);
    EXPECT_EQ(h->code, nullptr);
    EXPECT_EQ(registry_holder_of(code), nullptr);
    EXPECT_EQ(Py_REFCNT(h), 1) << "only our reference is left";
    EXPECT_EQ(attached_count(), 0u);
    EXPECT_EQ(registry_detach(h), 0) << "detaching twice is a no-op";

    // A detached holder keeps working as a plain container...
    py::object p = py::int_(7);
    Entry *e = holder_add(h, p.ptr(), nullptr);
    ASSERT_NE(e, nullptr);
    Py_DECREF(e);
    EXPECT_EQ(h->size, 1u);
    // ...and is never attached again: the code gets a new holder.
    Holder *fresh = registry_ensure(code);
    EXPECT_NE(fresh, h);
    EXPECT_EQ(h->code, nullptr);
    Py_DECREF(h);
}

TEST_F(Core, FreeFunctionAcceptsNullAndDetachedHolders) {
    freefunc free_function = registry_free_function();
    free_function(nullptr);  // CPython calls it for every slot, set or not

    py::object f = make_function("f");
    Holder *h = registry_ensure(code_ptr(f));
    Py_INCREF(h);
    registry_detach(h);
    Py_ssize_t refs = Py_REFCNT(h);
    free_function(h);
    EXPECT_EQ(Py_REFCNT(h), refs) << "a detached holder is left alone";
    EXPECT_EQ(h->code, nullptr);
    EXPECT_EQ(attached_count(), 0u);
    Py_DECREF(h);
}

TEST_F(Core, FreeingTheCodeObjectDetachesItsHolder) {
    py::object f = make_function("f");
    Holder *h = registry_ensure(code_ptr(f));
    py::object product = py::list();
    Py_DECREF(holder_add(h, product.ptr(), nullptr));
    Py_INCREF(h);
    f = py::none();  // the function and its globals form a cycle: collect it
    py::module_::import("gc").attr("collect")();
    EXPECT_EQ(h->code, nullptr) << "CPython's call of the free function detached it";
    EXPECT_EQ(attached_count(), 0u);
    EXPECT_EQ(h->size, 1u) << "the holder still holds its entries until it dies";
    Py_DECREF(h);
}

TEST_F(Core, EvictionDropsTheLeastRecentlyUsedEntry) {
    py::object f = make_function("f");
    Holder *h = registry_ensure(code_ptr(f));
    holder_set_max_entries(h, 2);
    py::object p1 = py::str("p1"), p2 = py::str("p2"), p3 = py::str("p3");
    Py_DECREF(holder_add(h, p1.ptr(), nullptr));
    Py_DECREF(holder_add(h, p2.ptr(), nullptr));
    Entry *found = nullptr;
    ASSERT_EQ(holder_lookup(h, product_equals, p1.ptr(), &found), 1);  // p2 is now LRU
    Py_DECREF(found);
    int64_t entries = entry_live_count();
    Py_DECREF(holder_add(h, p3.ptr(), nullptr));
    ASSERT_EQ(h->size, 2u);
    EXPECT_EQ(reinterpret_cast<Entry *>(holder_items(h)[0])->product, p3.ptr());
    EXPECT_EQ(reinterpret_cast<Entry *>(holder_items(h)[1])->product, p1.ptr());
    EXPECT_EQ(entry_live_count(), entries) << "the evicted entry was freed";
    holder_set_max_entries(h, 1);
    EXPECT_EQ(h->size, 1u);
}

TEST_F(Core, ResetDetachesEverything) {
    std::vector<py::object> functions;
    for (int i = 0; i < 50; i++) {
        functions.push_back(make_function("f" + std::to_string(i)));
        ASSERT_NE(registry_ensure(code_ptr(functions.back())), nullptr);
    }
    EXPECT_EQ(attached_count(), 50u);
    EXPECT_EQ(registry_reset(), 50);
    EXPECT_EQ(attached_count(), 0u);
    for (auto &f : functions) {
        EXPECT_EQ(registry_holder_of(code_ptr(f)), nullptr);
    }
}

// The registry's table: every attached holder at its slot, the generations
// contiguous and in order, whatever is detached from whichever generation.
void expect_table_consistent() {
    Registry *r = registry_get();
    ASSERT_LE(r->generations.old_end, r->generations.middle_end);
    ASSERT_LE(r->generations.middle_end, r->generations.pass_end);
    ASSERT_LE(r->generations.pass_end, r->holders.size());
    for (size_t i = 0; i < r->holders.size(); i++) {
        ASSERT_EQ(r->holders[i]->registry_slot, i);
        ASSERT_TRUE(holder_attached(r->holders[i]));
    }
}

// The run (0 old, 1 middle, 2 young in the generation pass, 3 young since)
// of every attached holder, by holder.
std::map<Holder *, int> generations() {
    Registry *r = registry_get();
    const Generations &g = r->generations;
    std::map<Holder *, int> out;
    for (size_t i = 0; i < r->holders.size(); i++) {
        out[r->holders[i]] = i < g.old_end ? 0 : i < g.middle_end ? 1 : i < g.pass_end ? 2 : 3;
    }
    return out;
}

TEST_F(Core, DetachKeepsEveryHolderInItsGeneration) {
    // Every shape of up to two holders per run, empty ones included, and
    // every holder of it detached in turn.
    py::module_::import("gc").attr("disable")();  // no automatic pass ages them meanwhile
    constexpr int kRuns = 4, kMost = 2;
    for (int shape = 0; shape < 81; shape++) {
        int counts[kRuns];
        int total = 0;
        for (int g = 0, rest = shape; g < kRuns; g++, rest /= kMost + 1) {
            counts[g] = rest % (kMost + 1);
            total += counts[g];
        }
        for (int victim = 0; victim < total; victim++) {
            SCOPED_TRACE("shape " + std::to_string(counts[0]) + "/" + std::to_string(counts[1]) + "/" +
                         std::to_string(counts[2]) + "/" + std::to_string(counts[3]) + ", victim " +
                         std::to_string(victim));
            std::vector<py::object> functions;
            std::vector<Holder *> holders;
            for (int g = 0; g < kRuns; g++) {
                for (int i = 0; i < counts[g]; i++) {
                    functions.push_back(make_function("g" + std::to_string(functions.size())));
                    holders.push_back(registry_ensure(code_ptr(functions.back())));
                    ASSERT_NE(holders.back(), nullptr);
                }
                if (g < 3) {
                    generations_begin_pass();
                }
                if (g < 2) {
                    generations_age(false, false);
                }
            }
            // Two whole generation passes made the first run old and the
            // second middle; a third began over the third run.
            Registry *r = registry_get();
            ASSERT_EQ(r->generations.old_end, static_cast<size_t>(counts[0]));
            ASSERT_EQ(r->generations.middle_end, static_cast<size_t>(counts[0] + counts[1]));
            ASSERT_EQ(r->generations.pass_end, static_cast<size_t>(counts[0] + counts[1] + counts[2]));
            std::map<Holder *, int> before = generations();
            std::map<Holder *, size_t> slots;
            for (Holder *h : r->holders) {
                slots[h] = h->registry_slot;
            }
            ASSERT_EQ(registry_detach(holders[victim]), 1);
            expect_table_consistent();
            std::map<Holder *, int> after = generations();
            EXPECT_EQ(after.size(), before.size() - 1);
            for (auto &[holder, generation] : after) {
                ASSERT_EQ(generation, before[holder]);
                // What a generation pass's downward slices rely on.
                ASSERT_LE(holder->registry_slot, slots[holder]) << "a holder moved up";
            }
            registry_reset();
        }
    }
    py::module_::import("gc").attr("enable")();
}

// --- reentrancy: Python code running while a holder is being changed -----------

const char *reentrant_helpers = R"(
import coextra_test_hooks as hooks

class CallsBackOnDel:
    """A product whose __del__ attaches new entries to the code it was cached on."""
    def __init__(self, code):
        self.code = code
    def __del__(self):
        hooks.add_to(self.code)
)";

// A tiny module the reentrant products call: add_to(code) attaches an entry.
PyObject *hooks_add_to(PyObject *, PyObject *code) {
    Holder *h = registry_ensure(code);
    if (h == nullptr) {
        return nullptr;
    }
    Entry *e = holder_add(h, Py_None, nullptr);
    Py_XDECREF(e);
    return e ? Py_NewRef(Py_None) : nullptr;
}

TEST_F(Core, ProductDelCallingBackDuringEvictionClearAndDetach) {
    static PyMethodDef defs[] = {{"add_to", hooks_add_to, METH_O, nullptr}, {nullptr}};
    auto hooks = py::reinterpret_steal<py::module_>(PyModule_New("coextra_test_hooks"));
    PyModule_AddFunctions(hooks.ptr(), defs);
    py::module_::import("sys").attr("modules")["coextra_test_hooks"] = hooks;
    py::dict ns;
    py::exec(reentrant_helpers, ns);

    py::object f = make_function("f");
    PyObject *code = code_ptr(f);
    Holder *h = registry_ensure(code);
    holder_set_max_entries(h, 1);
    py::object first = ns["CallsBackOnDel"](py::handle(code));
    Py_DECREF(holder_add(h, first.ptr(), nullptr));
    first = py::none();
    // Evicts the CallsBackOnDel entry, whose __del__ adds to the same holder.
    py::object second = py::str("second");
    Py_DECREF(holder_add(h, second.ptr(), nullptr));
    EXPECT_LE(h->size, 1u);

    py::object third = ns["CallsBackOnDel"](py::handle(code));
    Py_DECREF(holder_add(h, third.ptr(), nullptr));
    third = py::none();
    holder_clear(h);  // __del__ runs after the holder is emptied and adds one entry
    EXPECT_EQ(h->size, 1u);

    py::object fourth = ns["CallsBackOnDel"](py::handle(code));
    Py_DECREF(holder_add(h, fourth.ptr(), nullptr));
    fourth = py::none();
    // The registry holds the last reference: detaching frees the holder, its
    // entry and the product, whose __del__ attaches a new holder to the code.
    registry_detach(h);
    Holder *fresh = registry_holder_of(code);
    ASSERT_NE(fresh, nullptr);
    EXPECT_EQ(fresh->code, code);
    ASSERT_EQ(fresh->size, 1u);
    EXPECT_EQ(reinterpret_cast<Entry *>(holder_items(fresh)[0])->product, Py_None);
    EXPECT_EQ(attached_count(), 1u);
    EXPECT_FALSE(PyErr_Occurred());
}

// A guard that clears the holder it is being looked up in.
struct ClearingGuard {
    Holder *holder;  // borrowed: the registry owns it for the whole test
    int calls = 0;
};

int clearing_matcher(Entry *, void *context) {
    auto *guard = static_cast<ClearingGuard *>(context);
    guard->calls++;
    holder_clear(guard->holder);
    return 0;
}

TEST_F(Core, GuardMutatingTheHolderDuringLookup) {
    py::object f = make_function("f");
    Holder *h = registry_ensure(code_ptr(f));
    for (int i = 0; i < 12; i++) {  // more than the lookup's inline snapshot
        py::object p = py::int_(i);
        Py_DECREF(holder_add(h, p.ptr(), nullptr));
    }
    ClearingGuard guard{h};
    Entry *found = nullptr;
    EXPECT_EQ(holder_lookup(h, clearing_matcher, &guard, &found), 0);
    EXPECT_EQ(guard.calls, 12) << "the lookup walks its own snapshot to the end";
    EXPECT_EQ(h->size, 0u);

    // A match on an entry the matcher removed is still a hit, but not reinserted.
    py::object p = py::int_(1);
    Py_DECREF(holder_add(h, p.ptr(), nullptr));
    EXPECT_EQ(holder_lookup(h,
                            [](Entry *e, void *ctx) {
                                holder_clear(static_cast<Holder *>(ctx));
                                return e != nullptr ? 1 : 0;
                            },
                            h, &found),
              1);
    EXPECT_EQ(h->size, 0u);
    EXPECT_EQ(found->hits, 1u);
    Py_DECREF(found);
}

// --- teardown ---------------------------------------------------------------------

TEST(Teardown, DetachesEverythingIncludingFrozenStdlibCode) {
    // In a forked child: attach to run-time and frozen stdlib code (posixpath.join
    // is deep-frozen on 3.11/3.12 and never freed), finalize, and check that no
    // holder or entry survives. Any failure exits non-zero.
    EXPECT_EXIT(
        {
            {
                py::object join = py::module_::import("posixpath").attr("join");
                py::object product = py::make_tuple(join, py::str("compiled"));
                Holder *h = registry_ensure(code_ptr(join));
                Py_DECREF(holder_add(h, product.ptr(), nullptr));
                for (int i = 0; i < 1000; i++) {
                    py::object f = make_function("g" + std::to_string(i));
                    Holder *g = registry_ensure(code_ptr(f));
                    // The product keeps the function alive: only detaching frees it.
                    Py_DECREF(holder_add(g, f.ptr(), nullptr));
                }
            }
            int status = Py_FinalizeEx();
            bool clean = status == 0 && holder_live_count() == 0 && entry_live_count() == 0;
            _exit(clean ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::GTEST_FLAG(death_test_style) = "fast";
    return coextra_test::run_all_tests_with_registry();
}
