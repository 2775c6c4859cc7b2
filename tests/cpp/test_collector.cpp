// test_collector.cpp -- the cycle collector driven from C++, the way a native
// backend uses it through the C API (collector_collect_all), in an embedded
// interpreter. The Python suite covers the shapes; these pin down the
// algorithm's accounting: the virtual edge, pruning, the budget, reentrancy.
#include <gtest/gtest.h>
#include <chrono>
#include <cstdio>
#include <unistd.h>
#include <fstream>
#include <string>
#include <set>
#include <pybind11/embed.h>

#include "core_test_main.h"
#include "run_time_functions.h"

#include "auto_collect.h"
#include "collector.h"
#include "ephemeron_map.h"
#include "generation_pass.h"
#include "heap_graph.h"
#include "holder.h"
#include "lifecycle.h"
#include "live_structures.h"
#include "page_local_hash.h"
#include "registry.h"
#include "system_memory.h"

namespace py = pybind11;
using namespace coextra::detail;

namespace {

using coextra_test::code_ptr;
using coextra_test::make_function;

// Caches `product` on f's code; returns the holder (borrowed, owned by the registry).
Holder *cache(const py::object &f, const py::handle &product) {
    Holder *h = registry_ensure(code_ptr(f));
    Py_DECREF(holder_add(h, product.ptr(), nullptr));
    return h;
}

void gc_collect() { py::module_::import("gc").attr("collect")(); }

class Collector : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_GE(registry_reset(), 0);
        gc_collect();
        holders_before = holder_live_count();
        entries_before = entry_live_count();
        budget_before = collector_budget();
    }
    void TearDown() override {
        ASSERT_EQ(collector_set_budget(budget_before), 0);
        registry_reset();
        gc_collect();
        EXPECT_EQ(holder_live_count(), holders_before);
        EXPECT_EQ(entry_live_count(), entries_before);
        EXPECT_FALSE(PyErr_Occurred());
    }
    int64_t holders_before = 0, entries_before = 0;
    Py_ssize_t budget_before = 0;
};

// The graph's two indexes: a code object with a holder in the holder index's
// range is found through its holder, everything else by address, and growing
// the address index (past what expect() sized) loses neither kind of node.
TEST_F(Collector, GraphIndexesFindEveryNodeAgainAcrossGrowth) {
    py::object f = make_function("indexed"), g = make_function("by_address");
    Holder *in_range = cache(f, py::none());
    Holder *out_of_range = cache(g, py::none());  // registry slot 1
    ASSERT_EQ(in_range->registry_slot, 0u);
    HeapGraph graph(1000);
    ASSERT_TRUE(graph.expect(4, /*first_slot=*/0, /*end_slot=*/1));
    bool added = false;
    uint32_t code_node = graph.intern_code_of(in_range, &added);
    ASSERT_TRUE(added);
    EXPECT_TRUE(graph.nodes[code_node].flags & NODE_BY_HOLDER);
    uint32_t other_code = graph.intern(out_of_range->code, &added);
    ASSERT_TRUE(added);
    EXPECT_FALSE(graph.nodes[other_code].flags & NODE_BY_HOLDER);
    py::list objects;  // far more than the 4 expected: the address index grows
    std::vector<uint32_t> object_nodes;
    for (int i = 0; i < 600; i++) {
        objects.append(py::list());
        object_nodes.push_back(graph.intern(objects[i].ptr(), &added));
        ASSERT_TRUE(added);
    }
    EXPECT_EQ(graph.intern(in_range->code, &added), code_node) << "found through co_extra";
    EXPECT_FALSE(added);
    EXPECT_EQ(graph.intern_code_of(in_range, &added), code_node);
    EXPECT_EQ(graph.intern(out_of_range->code, &added), other_code);
    for (int i = 0; i < 600; i++) {
        ASSERT_EQ(graph.intern(objects[i].ptr(), &added), object_nodes[i]);
        ASSERT_FALSE(added);
    }
    EXPECT_EQ(graph.nodes.size(), 602u);
}

// A node's count of unexplained references is narrower than a reference
// count: a larger count is stored as the largest, which no graph can explain
// away, since it records fewer edges than that (a static_assert in
// heap_graph.h). So such a node stays a root.
TEST_F(Collector, AReferenceCountTooLargeForANodeIsSaturatedAndStaysUnexplained) {
    py::list shared;
    Py_ssize_t real = Py_REFCNT(shared.ptr());
    HeapGraph graph(1000);
    ASSERT_TRUE(graph.expect(4, 0, 0));
    bool added = false;
    Py_SET_REFCNT(shared.ptr(), real + kMaxCount);  // as if referenced that often
    uint32_t node = graph.intern(shared.ptr(), &added);
    Py_SET_REFCNT(shared.ptr(), real);
    ASSERT_TRUE(added);
    EXPECT_EQ(graph.nodes[node].unexplained, kMaxCount);
}

// Past its edge limit a graph records no more edges and says its budget is
// exhausted; the reference then stays unexplained on its target (more live,
// never less).
TEST_F(Collector, AGraphPastItsEdgeLimitRecordsNoMoreEdgesAndSaysItsBudgetIsExhausted) {
    py::list a, b;
    HeapGraph graph(1000, /*max_edges=*/2);
    ASSERT_TRUE(graph.expect(4, 0, 0));
    bool added = false;
    uint32_t from = graph.intern(a.ptr(), &added), to = graph.intern(b.ptr(), &added);
    ASSERT_TRUE(graph.add_edge(from, to));
    ASSERT_TRUE(graph.add_edge(from, to));
    EXPECT_FALSE(graph.budget_exhausted);
    EXPECT_TRUE(graph.add_edge(from, to)) << "not a failure: the pass goes on";
    EXPECT_TRUE(graph.budget_exhausted);
    EXPECT_EQ(graph.edges.size(), 2u);
}

TEST_F(Collector, DetachesACodeReachableOnlyThroughItsOwnCache) {
    py::object f = make_function("f");
    py::object code_ref = py::module_::import("weakref").attr("ref")(f.attr("__code__"));
    py::list product;
    product.append(f);  // code -> holder -> entry -> list -> function -> code
    cache(f, product);
    f = py::object();
    product = py::list();
    gc_collect();
    ASSERT_EQ(registry_get()->holders.size(), 1u) << "the GC alone cannot see the cycle";
    EXPECT_EQ(collector_collect_all(), 1);
    EXPECT_EQ(registry_get()->holders.size(), 0u);
    EXPECT_GE(collector_stats().last_nodes, 4u);
    gc_collect();
    EXPECT_TRUE(code_ref().is_none()) << "the code object is freed";
}

// The scratch memory passes reuse is freed by the shutdown
// (lifecycle_shutdown) and made again by the next pass, if any.
TEST_F(Collector, ScratchMemoryIsFreedOnReleaseAndMadeAgainByTheNextPass) {
    EXPECT_EQ(collector_collect_all(), 0);
    ASSERT_NE(collector_state().scratch, nullptr) << "a pass makes it";
    collector_release_scratch();
    EXPECT_EQ(collector_state().scratch, nullptr);
    py::object f = make_function("f");
    py::list product;
    product.append(f);
    cache(f, product);
    f = py::object();
    product = py::list();
    gc_collect();
    EXPECT_EQ(collector_collect_all(), 1) << "a pass after the release still works";
    EXPECT_NE(collector_state().scratch, nullptr);
}

// A generation pass ages only what it examined: a holder attached by code
// its detaching runs (a product's __del__) was never examined, and starts
// young.
TEST_F(Collector, AHolderAttachedWhileAGenerationPassDetachesStartsYoung) {
    py::object late = make_function("late");
    py::dict ns;
    ns["attach_late"] = py::cpp_function([late]() { ASSERT_NE(registry_ensure(code_ptr(late)), nullptr); });
    py::exec("class Product:\n"
             "    def __init__(self, f): self.f = f\n"
             "    def __del__(self): attach_late()\n",
             ns);
    py::object kept = make_function("kept");
    cache(kept, kept);
    py::object f = make_function("f");
    cache(f, ns["Product"](f));
    f = py::object();
    Registry *r = registry_get();
    ASSERT_EQ(auto_collect_run(r, 2), 1) << "one generation-2 collection";
    ASSERT_EQ(auto_collect_after_gc(0), 0) << "which freed nothing itself";
    EXPECT_FALSE(auto_collect_state().generation.active) << "two holders: one slice";
    Holder *h = registry_holder_of(code_ptr(late));
    ASSERT_NE(h, nullptr);
    EXPECT_GE(h->registry_slot, r->generations.middle_end) << "young: attached after the pass decided";
    Holder *survivor = registry_holder_of(code_ptr(kept));
    EXPECT_GE(survivor->registry_slot, r->generations.old_end);
    EXPECT_LT(survivor->registry_slot, r->generations.middle_end) << "found live once: middle";
}

// --- the generation pass in slices (auto_collect.h, rule 1) ------------------

// Drives automatic collection by hand: CPython's own GC stays off, and every
// slice seeds kSliceMinSeeds holders (the time per holder is set so high that
// the minimum wins), so the slicing does not depend on this machine's speed.
class GenerationSlices : public Collector {
protected:
    void SetUp() override {
        Collector::SetUp();
        py::module_::import("gc").attr("disable")();
        // No generation pass in progress, and no cache of this program has
        // died yet (adaptive tenuring, and how far a generation-2
        // collection's slices go), until a test makes one.
        auto_collect_state().generation = {};
        // No sweep comes due (rule 2 has tests of its own that set one due):
        // a generation-2 collection would follow its pass with a slice of it.
        saved_sweep = auto_collect_state().sweep;
        auto_collect_state().sweep.active = false;
        auto_collect_state().sweep.ended = AutoCollectState::Clock::now() + std::chrono::hours(24);
        auto_collect_state().detached_at_program_start = collector_stats().detached_by_collector;
        auto_collect_state().entries_removed_at_program_start = collector_stats().entries_removed_by_collector;
    }
    void TearDown() override {
        auto_collect_state().sweep = saved_sweep;
        py::module_::import("gc").attr("enable")();
        Collector::TearDown();
    }
    AutoCollectState::Sweep saved_sweep;
    // One GC pass of `generation` as automatic collection sees it: its
    // "start", and its "stop" after CPython freed `collected` objects.
    Py_ssize_t gc_pass(long generation, Py_ssize_t collected = 0) {
        auto_collect_state().seconds_per_holder = 1.0;
        auto_collect_state().seconds_per_position = 1.0;
        Py_ssize_t found = auto_collect_run(registry_get(), generation);
        if (found < 0) {
            return found;
        }
        Py_ssize_t second = auto_collect_after_gc(collected);
        return second < 0 ? second : found + second;
    }
    bool in_progress() const { return auto_collect_state().generation.active; }
    // A generation-2 collection and the GC passes that finish its generation pass.
    Py_ssize_t whole_pass() {
        Py_ssize_t found = gc_pass(2);
        while (in_progress()) {
            found += gc_pass(0);
        }
        return found;
    }
    // n holders whose code stays referenced from here.
    void attach_live(size_t n) {
        for (size_t i = 0; i < n; i++) {
            live.push_back(make_function("live" + std::to_string(live.size())));
            cache(live.back(), py::make_tuple(live.back()));
        }
    }
    // n holders whose code only their own product references.
    void attach_dead(size_t n) {
        for (size_t i = 0; i < n; i++) {
            py::object f = make_function("dead" + std::to_string(i));
            cache(f, py::make_tuple(f));
        }
    }
    std::vector<py::object> live;
};

TEST_F(GenerationSlices, AGenerationPassOverLiveHoldersGoesOnOverTheNextGCPasses) {
    attach_live(1000);
    EXPECT_EQ(auto_collect_passes_to_old(), 1);
    uint64_t slices = auto_collect_state().stats.generation_slices;
    uint64_t passes = auto_collect_state().stats.generation_passes;
    EXPECT_EQ(gc_pass(2), 0);
    EXPECT_TRUE(in_progress()) << "one slice found all live: the rest waits";
    EXPECT_EQ(auto_collect_state().stats.generation_slices, slices + 1);
    EXPECT_EQ(registry_get()->generations.middle_end, 0u) << "nothing ages before the last slice";
    int more = 0;
    while (in_progress()) {
        EXPECT_EQ(gc_pass(0), 0);
        more++;
    }
    EXPECT_EQ(more, 3) << "1000 holders, 256 a slice";
    EXPECT_EQ(auto_collect_state().stats.generation_passes, passes + 1);
    Registry *r = registry_get();
    EXPECT_EQ(r->generations.old_end, 1000u) << "found live once while no cache dies: old";
    EXPECT_EQ(r->generations.middle_end, 1000u);
}

// Adaptive tenuring: one generation pass makes a holder old until a cache of
// the program is first found dead; two from then on, for good.
TEST_F(GenerationSlices, OnceACacheHasDiedAHolderBecomesOldOnlyAfterTwoPasses) {
    attach_live(500);
    attach_dead(100);
    EXPECT_EQ(whole_pass(), 100);
    EXPECT_EQ(auto_collect_passes_to_old(), 2);
    Registry *r = registry_get();
    EXPECT_EQ(r->generations.old_end, 0u);
    EXPECT_EQ(r->generations.middle_end, 500u) << "found live once in a program whose caches die: middle";
    attach_live(200);
    EXPECT_EQ(whole_pass(), 0);
    r = registry_get();
    EXPECT_EQ(r->generations.old_end, 500u) << "found live twice: old";
    EXPECT_EQ(r->generations.middle_end, 700u);
    attach_live(100);
    EXPECT_EQ(whole_pass(), 0);
    r = registry_get();
    EXPECT_EQ(r->generations.old_end, 700u) << "nothing died in the last two passes: still two passes to old";
    EXPECT_EQ(r->generations.middle_end, 800u);
    EXPECT_EQ(auto_collect_passes_to_old(), 2);
}

// At the "start" of a generation-2 collection, code that a function about to
// be freed by that collection still references is live; at its "stop" the
// function is gone, and the second look detaches the cache, before the
// holders age. A collection that freed nothing has nothing to look at again.
TEST_F(GenerationSlices, TheStopOfACollectionThatFreedObjectsLooksAgain) {
    for (Py_ssize_t collected : {0, 1}) {
        py::object f = make_function("referrer_freed_by_the_gc");
        cache(f, py::make_tuple(f.attr("__code__")));
        ASSERT_EQ(auto_collect_run(registry_get(), 2), 0) << "the function references the code";
        f.attr("__globals__").attr("clear")();  // CPython's pass frees the function
        f = py::object();
        EXPECT_EQ(auto_collect_after_gc(collected), collected);
        EXPECT_FALSE(in_progress()) << "the pass ended at the stop";
        if (collected == 0) {
            EXPECT_EQ(collector_collect_all(), 1) << "left for a later pass";
        }
        EXPECT_EQ(registry_get()->holders.size(), 0u);
    }
}

TEST_F(GenerationSlices, SlicesGoOnInTheSameGCPassWhileTheyFindGarbage) {
    attach_live(700);
    attach_dead(600);  // the youngest, as a program's latest dropped code
    EXPECT_EQ(gc_pass(2), 600) << "every dead cache, in the collection itself";
    EXPECT_EQ(registry_get()->holders.size(), 700u);
}

TEST_F(GenerationSlices, GarbageBelowLiveHoldersIsFoundByALaterSlice) {
    attach_dead(300);
    attach_live(700);
    EXPECT_EQ(gc_pass(2), 0) << "the youngest slice is all live";
    Py_ssize_t found = 0;
    while (in_progress()) {
        found += gc_pass(0);
    }
    EXPECT_EQ(found, 300);
    EXPECT_EQ(registry_get()->holders.size(), 700u);
}

TEST_F(GenerationSlices, AGeneration2CollectionRunsTheRestOfAPassFirst) {
    attach_live(1000);
    gc_pass(2);
    ASSERT_TRUE(in_progress());
    attach_dead(10);  // after the pass began: not its business
    uint64_t passes = auto_collect_state().stats.generation_passes;
    EXPECT_EQ(gc_pass(2), 10) << "the rest, then a new pass over the newcomers";
    EXPECT_GE(auto_collect_state().stats.generation_passes, passes + 1) << "the rest ran";
    EXPECT_EQ(registry_get()->holders.size(), 1000u);
}

// The bound (auto_collect.h): in a program whose caches die, a generation-2
// collection leaves at most max(2,000, 10% of the live) holders unexamined,
// even below a youngest slice that is all live; in one whose caches live, it
// stops at that slice.
TEST_F(GenerationSlices, InAProgramWhoseCachesDieACollectionLeavesAtMostTheAllowanceUnexamined) {
    attach_dead(1);
    ASSERT_EQ(gc_pass(2), 1) << "a cache died: this program's caches die";
    attach_dead(3000);
    attach_live(300);  // the youngest slices: all live
    Py_ssize_t found = gc_pass(2);
    size_t dead_left = registry_get()->holders.size() - live.size();
    EXPECT_GT(found, 0);
    EXPECT_LE(dead_left, 2000u) << "unexamined beyond the allowance";
    while (in_progress()) {
        gc_pass(0);
    }
    EXPECT_EQ(registry_get()->holders.size(), live.size());
}

TEST_F(GenerationSlices, InAProgramWhoseCachesLiveACollectionStopsAtAnAllLiveSlice) {
    attach_dead(3000);
    attach_live(300);
    EXPECT_EQ(gc_pass(2), 0) << "nothing died before: the first slice, all live, ends it";
    EXPECT_TRUE(in_progress());
    while (in_progress()) {
        gc_pass(0);
    }
    EXPECT_EQ(registry_get()->holders.size(), live.size());
}

// Detaches and attachments between slices move holders about the table
// (registry.h); every holder the pass began with is still examined exactly
// as if none had happened.
TEST_F(GenerationSlices, HoldersDetachedAndAttachedBetweenSlicesLeaveNoneUnexamined) {
    attach_live(200);
    gc_pass(2);
    while (in_progress()) {
        gc_pass(0);
    }
    ASSERT_EQ(registry_get()->generations.middle_end, 200u) << "a middle run below the young one";
    // Dead and live interleaved, under a youngest slice that is all live,
    // so that the pass stops after its first slice and goes on over GC
    // passes with detaches and attachments between them.
    for (int i = 0; i < 400; i++) {
        (i % 3 == 0 ? attach_dead(1) : attach_live(1));
    }
    attach_live(300);
    EXPECT_EQ(gc_pass(2), 0);
    ASSERT_TRUE(in_progress());
    std::vector<py::object> newcomers;
    std::set<PyObject *> detached_here;
    int round = 0;
    while (in_progress()) {
        // Between slices: detach every seventh live holder still attached (a
        // hole in the old, middle or young run) and attach one more.
        for (size_t i = round % 7; i < live.size(); i += 7) {
            if (Holder *h = registry_holder_of(code_ptr(live[i]))) {
                registry_detach(h);
                detached_here.insert(code_ptr(live[i]));
            }
        }
        newcomers.push_back(make_function("newcomer" + std::to_string(round)));
        cache(newcomers.back(), py::make_tuple(newcomers.back()));
        gc_pass(0);
        round++;
    }
    EXPECT_GE(round, 1) << "the pass went on after the collection";
    Registry *r = registry_get();
    ASSERT_LE(r->generations.old_end, r->generations.middle_end);
    ASSERT_LE(r->generations.middle_end, r->generations.pass_end);
    ASSERT_LE(r->generations.pass_end, r->holders.size());
    size_t dead_left = 0;
    for (size_t slot = 0; slot < r->holders.size(); slot++) {
        Holder *h = r->holders[slot];
        bool is_newcomer = false;
        for (const py::object &f : newcomers) {
            is_newcomer |= code_ptr(f) == h->code;
        }
        bool is_live = is_newcomer;
        for (const py::object &f : live) {
            is_live |= code_ptr(f) == h->code;
        }
        dead_left += !is_live;
        if (is_newcomer) {
            EXPECT_GE(slot, r->generations.middle_end) << "attached after the pass began: young";
        } else {
            EXPECT_LT(slot, r->generations.middle_end) << "examined by the pass: middle or old";
        }
    }
    EXPECT_EQ(dead_left, 0u) << "every dead cache the pass began with";
    for (const py::object &f : live) {
        if (detached_here.count(code_ptr(f)) == 0) {
            EXPECT_NE(registry_holder_of(code_ptr(f)), nullptr) << "a live cache was dropped";
        }
    }
}

// Rule 2's pace: a sweep starts kSweepPace times its predicted duration after
// the previous one ended, or sooner (down to kSweepBusyPace times it) while
// sweeps find caches that died old fast enough to fill the allowance first.
TEST_F(GenerationSlices, SweepsComeSoonerWhileTheyFindCachesThatDiedOld) {
    attach_live(100);
    gc_pass(2);
    gc_pass(2);  // every holder old: no generation pass to run
    ASSERT_FALSE(in_progress());
    AutoCollectState &state = auto_collect_state();
    const AutoCollectState::Sweep saved = state.sweep;
    auto sweep_after = [&](double seconds_ago, double found_per_second) {
        state.seconds_per_holder = 1e-3;  // predicted 0.1 s: pace 4 s, busy pace 1.5 s
        state.sweep.active = false;
        state.sweep.ended = AutoCollectState::Clock::now() -
                            std::chrono::duration_cast<AutoCollectState::Clock::duration>(
                                std::chrono::duration<double>(seconds_ago));
        state.sweep.found_per_second = found_per_second;
        uint64_t slices = state.stats.sweep_slices;
        auto_collect_run(registry_get(), 0);
        state.sweep.active = false;
        return state.stats.sweep_slices > slices;
    };
    EXPECT_FALSE(sweep_after(2.0, 0.0)) << "finding nothing: 40 times the duration";
    EXPECT_TRUE(sweep_after(4.5, 0.0));
    EXPECT_TRUE(sweep_after(2.0, 1e6)) << "finding caches fast: sooner";
    EXPECT_FALSE(sweep_after(1.0, 1e6)) << "but not before 15 times the duration";
    EXPECT_FALSE(sweep_after(2.0, 100.0)) << "finding few: the allowance lasts longer";
    state.sweep = saved;
}

// A generation-2 collection follows its generation pass with a due slice of
// rule 2, so a program whose only GC passes are gc.collect() calls finds the
// caches that died old too.
TEST_F(GenerationSlices, AGeneration2CollectionAlsoRunsADueSweepSlice) {
    attach_live(100);
    whole_pass();
    attach_live(1);  // young: the next collection has a generation pass to run
    live.erase(live.begin(), live.begin() + 40);  // 40 old caches die
    AutoCollectState &state = auto_collect_state();
    ASSERT_EQ(gc_pass(2), 0) << "no sweep due: the generation pass alone, all live";
    state.sweep.ended = AutoCollectState::Clock::time_point{};  // a sweep is due
    uint64_t slices = state.stats.sweep_slices;
    EXPECT_EQ(gc_pass(2), 40) << "the generation pass, then a sweep slice over every holder";
    EXPECT_EQ(state.stats.sweep_slices, slices + 1);
    EXPECT_EQ(registry_get()->holders.size(), live.size());
}

// A sweep lists the module dicts anew when it begins, as a generation pass
// does (test_collector_auto.py): a module that replaced another under the
// same name, sys.modules keeping its size, is pruned from its first slice on.
TEST_F(GenerationSlices, ASweepListsTheModuleDictsAnewWhenItBegins) {
    py::dict modules = py::module_::import("sys").attr("modules");
    py::object module_type = py::module_::import("types").attr("ModuleType");
    modules["coextra_test_replaced"] = module_type("coextra_test_replaced");
    ASSERT_EQ(collector_collect_all(), 0);  // lists the module dicts, with that module's
    py::object module = module_type("coextra_test_replaced");
    py::dict globals = module.attr("__dict__");
    for (int i = 0; i < 1000; i++) {
        globals[py::str("v" + std::to_string(i))] = py::make_tuple(py::list());
    }
    modules["coextra_test_replaced"] = module;
    py::object f = make_function("f");
    cache(f, py::make_tuple(f, globals));
    AutoCollectState &state = auto_collect_state();
    const AutoCollectState::Sweep saved = state.sweep;
    state.sweep.active = false;
    state.sweep.ended = AutoCollectState::Clock::time_point{};  // a sweep is due
    uint64_t slices = state.stats.sweep_slices;
    EXPECT_EQ(auto_collect_run(registry_get(), 0), 0);
    EXPECT_EQ(state.stats.sweep_slices, slices + 1);
    EXPECT_LT(collector_stats().last_nodes, 100u) << "the module's globals were explored";
    state.sweep = saved;
    modules.attr("pop")("coextra_test_replaced");
}

// Rule 3's pace: young passes back off while they find nothing, as far as
// kYoungMaxInterval GC passes apart; once a generation pass finds a cache
// dead they come at least every kYoungResumeInterval GC passes, and at every
// one once a young pass finds one.
TEST_F(GenerationSlices, YoungPassesBackOffWhileCachesLiveAndResumeOnceAnyPassFindsOneDead) {
    AutoCollectState &state = auto_collect_state();
    const AutoCollectState::Sweep saved = state.sweep;
    state.sweep.ended = AutoCollectState::Clock::now();  // no sweep comes due meanwhile
    attach_live(10);
    EXPECT_EQ(whole_pass(), 0);
    int gc_passes = 0;
    while (state.young_pace.interval < kYoungMaxInterval) {
        attach_live(1);
        EXPECT_EQ(gc_pass(0), 0);
        ASSERT_LT(++gc_passes, 2 * kYoungMaxInterval) << "the interval doubles after each empty young pass";
    }
    attach_dead(1);
    EXPECT_EQ(gc_pass(0), 0) << "the next young pass is kYoungMaxInterval GC passes away";
    EXPECT_EQ(whole_pass(), 1);
    attach_dead(1);
    Py_ssize_t found = 0;
    for (int i = 0; i < kYoungResumeInterval && found == 0; i++) {
        found = gc_pass(0);
    }
    EXPECT_EQ(found, 1) << "a generation pass found a cache dead: young passes come sooner";
    EXPECT_EQ(state.young_pace.interval, 1) << "and, once one finds a cache dead, at every GC pass";
    state.sweep = saved;
}

// --- ephemeron map entries' generations (ephemeron_map.h) ----------------------

// A generation pass examines the entries added since the one before it and
// those one pass found live; entries two passes found live are old, and only
// a map scan (due by time) examines them.
class MapGenerations : public GenerationSlices {
protected:
    void SetUp() override {
        GenerationSlices::SetUp();
        map = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject *>(ephemeron_new()));
        scans_before = collector_state().map_scans;
        set_map_scan_due(false);
    }
    void TearDown() override {
        keys.clear();
        map = py::object();
        collector_state().map_scans = scans_before;
        GenerationSlices::TearDown();
    }
    void set_map_scan_due(bool due) {
        MapScans &scans = collector_state().map_scans;
        scans.ended = due ? MapScans::Clock::time_point{} : MapScans::Clock::now();
        scans.seconds = due ? 0.0 : 1e6;
    }
    EphemeronMap *m() const { return reinterpret_cast<EphemeronMap *>(map.ptr()); }
    // n entries whose value references their key (a function), kept live from here.
    void add_entries(size_t n) {
        for (size_t i = 0; i < n; i++) {
            keys.push_back(make_function("key" + std::to_string(keys.size())));
            ASSERT_EQ(ephemeron_set(m(), keys.back().ptr(), py::make_tuple(keys.back()).ptr()), 0);
        }
    }
    // n entries whose key only its own value references.
    void add_dead_entries(size_t n) {
        for (size_t i = 0; i < n; i++) {
            py::object key = make_function("dead_key" + std::to_string(i));
            ASSERT_EQ(ephemeron_set(m(), key.ptr(), py::make_tuple(key).ptr()), 0);
        }
    }
    py::object map;
    std::vector<py::object> keys;
    MapScans scans_before;
};

TEST_F(MapGenerations, EntriesThatDieYoungGoAtTheNextGenerationPass) {
    add_entries(50);
    keys.clear();  // only their own values keep the keys now
    EXPECT_EQ(gc_pass(2), 50);
    EXPECT_EQ(m()->table.size(), 0u);
}

TEST_F(MapGenerations, EntriesTwoPassesFoundLiveAreOldAndLeftToTheMapScan) {
    add_entries(50);
    for (int pass = 0; pass < 2; pass++) {
        EXPECT_EQ(gc_pass(2), 0);
        EXPECT_FALSE(in_progress());
    }
    EXPECT_FALSE(ephemeron_generations_pending()) << "young, then middle, then old";
    keys.clear();
    uint64_t scans = collector_state().map_scans.scans;
    attach_live(1);  // a generation pass has something to examine
    EXPECT_EQ(gc_pass(2), 0) << "old entries are not the generation pass's";
    EXPECT_EQ(m()->table.size(), 50u);
    EXPECT_EQ(collector_state().map_scans.scans, scans);
    set_map_scan_due(true);
    Py_ssize_t found = gc_pass(2);
    while (auto_collect_state().map_scan.active) {
        found += gc_pass(0);
    }
    EXPECT_EQ(found, 50) << "the map scan examines every entry";
    EXPECT_EQ(collector_state().map_scans.scans, scans + 1);
}

// A map scan slice is sized by the time per position the previous slices
// took, as a generation slice is, but its floor is lower: keys whose values
// reach large structures of their own would otherwise make each slice last
// many times its target.
TEST_F(MapGenerations, AMapScanOverCostlyEntriesGoesInSmallSlices) {
    add_entries(100);
    set_map_scan_due(true);
    uint64_t scans = collector_state().map_scans.scans;
    gc_pass(0);  // a second per position: the floor wins
    ASSERT_TRUE(auto_collect_state().map_scan.active);
    EXPECT_EQ(auto_collect_state().map_scan.cursor.visited, static_cast<size_t>(kMapScanMinPositions));
    int slices = 1;
    while (auto_collect_state().map_scan.active) {
        auto_collect_state().map_scan.next_slice = {};  // no wait between slices here
        gc_pass(0);
        slices++;
    }
    EXPECT_EQ(slices, (100 + kMapScanMinPositions - 1) / kMapScanMinPositions);
    EXPECT_EQ(collector_state().map_scans.scans, scans + 1);
}

// A map's generations are runs of its table's positions: they cost nothing
// per entry, and churn cannot make them outgrow the table.
TEST_F(MapGenerations, AKeySetAndDeletedOverAndOverTakesOnePositionOfTheYoungRun) {
    add_entries(1);
    PyObject *key = keys.back().ptr();
    for (int i = 0; i < 10000; i++) {
        ASSERT_EQ(ephemeron_delete(m(), key), 1);
        ASSERT_EQ(ephemeron_set(m(), key, Py_None), 0);
    }
    EXPECT_EQ(m()->table.end(), 1u) << "the trailing hole is trimmed, its position reused";
    EXPECT_EQ(m()->table.generations().young_since(m()->table.end()), 1u);
}

TEST_F(MapGenerations, APassBegunAgainBeforeItAgedExaminesEveryEntryOnce) {
    add_entries(10);
    generations_begin_pass();
    add_entries(10);
    generations_begin_pass();  // the first never aged: its entries join
    EXPECT_EQ(m()->table.generations().in_pass(), 20u);
    EXPECT_EQ(ephemeron_generation_seed_count(), 20u);
    generations_age(false, false);
    generations_age(false, false);
    EXPECT_FALSE(ephemeron_generations_pending());
    EXPECT_EQ(ephemeron_generation_seed_count(), 0u);
}

// Entries stay in their runs when the table squeezes its holes out: each
// bound moves down with the entries.
TEST_F(MapGenerations, ASqueezeKeepsEveryEntryInItsRun) {
    add_entries(300);
    generations_all_old();  // [0, 300) old
    add_entries(300);
    generations_begin_pass();
    generations_age(false, false);  // [300, 600) middle
    add_entries(300);               // [600, 900) young
    std::vector<py::object> runs[3] = {{keys.begin(), keys.begin() + 300},
                                       {keys.begin() + 300, keys.begin() + 600},
                                       {keys.begin() + 600, keys.end()}};
    for (auto &run : runs) {  // every other entry of each run leaves
        for (size_t i = 0; i < run.size(); i += 2) {
            ASSERT_EQ(ephemeron_delete(m(), run[i].ptr()), 1);
        }
    }
    const EntryTable &t = m()->table;
    size_t end = t.end();
    for (int i = 0; i < 1000 && t.end() >= end; i++) {
        keys.push_back(make_function("late" + std::to_string(i)));
        ASSERT_EQ(ephemeron_set(m(), keys.back().ptr(), Py_None), 0);
        end = std::max(end, t.end());
    }
    ASSERT_LT(t.end(), end) << "the table squeezed its holes out";
    const Generations &g = t.generations();
    EXPECT_EQ(g.old_end, 150u);
    EXPECT_EQ(g.middle_end, 300u);
    EXPECT_EQ(g.pass_end, 300u);
    size_t bounds[3][2] = {{0, g.old_end}, {g.old_end, g.middle_end}, {g.pass_end, t.end()}};
    for (int r = 0; r < 3; r++) {
        for (size_t i = 1; i < runs[r].size(); i += 2) {
            EphemeronEntry *e = ephemeron_find_entry(m(), runs[r][i].ptr());
            ASSERT_NE(e, nullptr);
            EXPECT_GE(e->position, bounds[r][0]) << "run " << r;
            EXPECT_LT(e->position, bounds[r][1]) << "run " << r;
        }
    }
}

// Adaptive tenuring, for map entries and holders apart (auto_collect.h,
// "Holders and map entries"): a dead holder says nothing about map entries.
TEST_F(MapGenerations, EntriesNeedTwoPassesToBecomeOldOnlyOnceAMapEntryHasDied) {
    add_entries(10);
    gc_pass(2);
    EXPECT_FALSE(ephemeron_generations_pending()) << "found live once while nothing dies: old";
    add_entries(10);
    attach_dead(5);
    EXPECT_EQ(gc_pass(2), 5);
    EXPECT_EQ(auto_collect_passes_to_old(), 2);
    EXPECT_EQ(auto_collect_entry_passes_to_old(), 1);
    EXPECT_FALSE(ephemeron_generations_pending()) << "a holder died, no map entry: still old after one pass";
    add_entries(10);
    add_dead_entries(5);
    EXPECT_EQ(gc_pass(2), 5);
    EXPECT_EQ(auto_collect_entry_passes_to_old(), 2);
    EXPECT_TRUE(ephemeron_generations_pending()) << "found live once after an entry died: middle";
    EXPECT_GE(m()->table.generations().in_pass(), 10u) << "(the dead ones' positions may stay, as holes)";
    for (int pass = 0; pass < 2; pass++) {
        add_entries(10);
        EXPECT_EQ(gc_pass(2), 0);
        EXPECT_EQ(m()->table.generations().in_pass(), 10u) << "nothing died lately, yet the newest are middle";
    }
}

// ... and a dead map entry says nothing about holders, nor counts as one.
TEST_F(MapGenerations, DeadMapEntriesLeaveTheHoldersTenuringAndCountsAlone) {
    uint64_t holders_before = collector_stats().detached_by_collector;
    uint64_t auto_holders_before = collector_stats().auto_detached;
    uint64_t entries_before = collector_stats().entries_removed_by_collector;
    uint64_t auto_entries_before = collector_stats().auto_entries_removed;
    add_dead_entries(20);
    EXPECT_EQ(gc_pass(2), 20);
    EXPECT_EQ(collector_stats().detached_by_collector, holders_before);
    EXPECT_EQ(collector_stats().auto_detached, auto_holders_before);
    EXPECT_EQ(collector_stats().entries_removed_by_collector, entries_before + 20);
    EXPECT_EQ(collector_stats().auto_entries_removed, auto_entries_before + 20);
    EXPECT_EQ(auto_collect_state().stats.last_generation_detached, 0u) << "holders only";
    EXPECT_EQ(auto_collect_entry_passes_to_old(), 2);
    EXPECT_EQ(auto_collect_passes_to_old(), 1);
    attach_live(300);
    whole_pass();
    EXPECT_EQ(registry_get()->generations.old_end, 300u) << "found live once while no holder died: old";
}

// A generation pass walks the young and middle map entries in slices, as
// it does its holders, from the youngest down: a generation-2 collection
// over many live entries pauses for one slice, and the entries a program
// has just dropped are in that slice.
TEST_F(MapGenerations, AGenerationPassWalksItsEntriesInSlicesFromTheYoungestDown) {
    add_entries(1000);
    add_dead_entries(100);
    uint64_t slices = auto_collect_state().stats.generation_slices;
    EXPECT_EQ(gc_pass(2), 100) << "the first slice, 256 positions, holds the youngest";
    EXPECT_EQ(auto_collect_state().stats.generation_slices, slices + 1);
    EXPECT_TRUE(in_progress()) << "it found the rest of its positions live: the others wait";
    int more = 0;
    while (in_progress()) {
        EXPECT_EQ(gc_pass(0), 0);
        more++;
    }
    EXPECT_GE(more, 3) << "at least 744 positions left, 256 a slice";
    EXPECT_EQ(m()->table.size(), 1000u);
    EXPECT_EQ(m()->table.generations().middle_end, 1000u) << "every survivor examined, and aged";
}

// In a program whose map entries die, a generation-2 collection's slices go
// on while the entries they leave unexamined exceed the dead allowance, as
// for holders: entries that died below newer live ones are within it when
// the collection ends.
TEST_F(MapGenerations, EntriesThatDiedBelowNewerLiveOnesAreWithinTheBoundAfterACollection) {
    add_dead_entries(10);
    EXPECT_EQ(whole_pass(), 10);
    EXPECT_EQ(auto_collect_entry_passes_to_old(), 2) << "this program's map entries die";
    add_dead_entries(5000);
    add_entries(3000);
    gc_pass(2);
    size_t dead_left = m()->table.size() - 3000;
    EXPECT_LE(dead_left, 2000u) << "the allowance: max(2,000, 10% of the live entries)";
    EXPECT_GT(dead_left, 0u) << "and no further than it";
}

TEST_F(MapGenerations, AMapFilledFasterThanPassesComeIsExaminedOnceYoungAndOnceMiddle) {
    add_entries(1000);
    keys.erase(keys.begin(), keys.begin() + 400);  // 400 die young
    EXPECT_EQ(whole_pass(), 400);
    EXPECT_EQ(m()->table.size(), 600u);
    whole_pass();
    EXPECT_FALSE(ephemeron_generations_pending()) << "the survivors aged, then became old";
}

// An entry whose value reaches nothing the collector follows cannot keep its
// key alive: no pass seeds it, and its key's death removes it. Atoms reach
// nothing, and so do small exact tuples of atoms; a code object, any other GC
// object, and a tuple holding one reach something, as does a tuple too large
// or nested too deep to be looked through.
TEST_F(MapGenerations, AnEntryWhoseValueReachesNothingIsNeverSeeded) {
    py::object key = py::set();  // weakly referenceable, in no cycle: dies by its count
    py::object code = py::reinterpret_steal<py::object>(Py_CompileString("0", "<value>", Py_eval_input));
    ASSERT_TRUE(code);
    {  // the values go before the key dies: one of them references it
        auto atoms = [](int count) {
            py::list items;
            for (int i = 0; i < count; i++) {
                items.append(i);
            }
            return py::tuple(items);
        };
        const std::vector<std::pair<const char *, py::object>> unseeded = {
            {"an int", py::int_(7)},
            {"a str", py::str("value")},
            {"None", py::none()},
            {"a tuple of atoms", py::make_tuple("value", 1, py::none())},
            {"the empty tuple", py::tuple()},
            {"tuples of atoms in a tuple", py::make_tuple(py::make_tuple(1, "a"), 2)},
            {"the largest tuple looked through", atoms(static_cast<int>(kAtomicTupleItems))},
        };
        const std::vector<std::pair<const char *, py::object>> seeded = {
            {"a tuple that references the key", py::make_tuple(key)},
            {"a code object", code},
            {"a tuple holding a code object", py::make_tuple(1, code)},
            {"a list of atoms", py::list(py::make_tuple(1, 2))},
            {"a tuple holding a list", py::make_tuple("value", py::list())},
            {"a tuple one item larger", atoms(static_cast<int>(kAtomicTupleItems) + 1)},
            {"atoms nested too deep", py::make_tuple(py::make_tuple(py::make_tuple(1)))},
        };
        for (const auto &[what, value] : unseeded) {
            ASSERT_EQ(ephemeron_set(m(), key.ptr(), value.ptr()), 0);
            for (bool shared_values : {false, true}) {
                PyObject *seed = key.ptr();
                ASSERT_TRUE(ephemeron_position_seed(m(), 0, shared_values, &seed));
                EXPECT_EQ(seed, nullptr) << what;
            }
        }
        for (const auto &[what, value] : seeded) {
            ASSERT_EQ(ephemeron_set(m(), key.ptr(), value.ptr()), 0);
            PyObject *seed = nullptr;
            ASSERT_TRUE(ephemeron_position_seed(m(), 0, false, &seed));
            EXPECT_EQ(seed, key.ptr()) << what;
            ASSERT_TRUE(ephemeron_position_seed(m(), 0, true, &seed));
            EXPECT_EQ(seed, value.ptr()) << what << ", which `seeded` references too";
        }
    }
    ASSERT_EQ(ephemeron_set(m(), key.ptr(), py::make_tuple("value").ptr()), 0);
    key = py::object();
    EXPECT_EQ(m()->table.size(), 0u) << "the key died: its callback removed the entry";
}

// An automatic pass seeds an entry by its value when something besides the
// entry references the value, and by its key otherwise; collect() seeds
// every key. A value many entries share is then explored once, and a key no
// seed reaches stays out of the graph.
TEST_F(MapGenerations, AnAutomaticPassExploresAValueManyEntriesShareOnce) {
    py::list shared;  // every entry's value, and referenced from here
    for (int i = 0; i < 1000; i++) {
        keys.push_back(make_function("shared" + std::to_string(i)));
        ASSERT_EQ(ephemeron_set(m(), keys.back().ptr(), shared.ptr()), 0);
    }
    keys.push_back(make_function("own"));
    ASSERT_EQ(ephemeron_set(m(), keys.back().ptr(), py::list().ptr()), 0);
    MapScanCursor cursor = collector_map_scan_start();
    ASSERT_EQ(collector_collect_map_slice(&cursor, 2 * keys.size(), Scratch::kKeep), 0);
    ASSERT_TRUE(collector_map_scan_done(cursor));
    EXPECT_LT(collector_stats().last_nodes, 20u) << "the shared value, and the last entry by its key";
    EXPECT_GT(collector_stats().last_nodes, 1u) << "the last entry by its key";
    ASSERT_EQ(collector_collect_all(), 0);
    EXPECT_GT(collector_stats().last_nodes, 1000u) << "collect() seeds every key";
    EXPECT_EQ(m()->table.size(), keys.size());
}

// Keys reachable only through a value their entries share are found from
// that value: they are garbage together, and live together while anything
// else references the value.
TEST_F(MapGenerations, KeysReachableOnlyThroughAValueTheyShareAreFoundFromIt) {
    for (bool value_referenced_elsewhere : {true, false}) {
        py::list shared;
        for (int i = 0; i < 10; i++) {
            py::object key = make_function("through_shared" + std::to_string(i));
            shared.append(key);
            ASSERT_EQ(ephemeron_set(m(), key.ptr(), shared.ptr()), 0);
        }
        py::object elsewhere = value_referenced_elsewhere ? shared : py::object();
        shared = py::list();
        MapScanCursor cursor = collector_map_scan_start();
        Py_ssize_t removed = collector_collect_map_slice(&cursor, 100, Scratch::kKeep);
        ASSERT_TRUE(collector_map_scan_done(cursor));
        EXPECT_EQ(removed, value_referenced_elsewhere ? 0 : 10);
        EXPECT_EQ(m()->table.size(), value_referenced_elsewhere ? 10u : 0u);
        if (value_referenced_elsewhere) {
            ephemeron_clear(m());
        }
    }
}

// Emptied from the end (every key deleted, or popitem) and filled again, a
// table takes for each insert a slot its old keys left, stale since
// (EntryTable::insert): refilling the same keys puts each in the slot it
// had, so the index neither fills up with stale slots towards a rebuild nor
// makes a probe pass over them.
TEST_F(MapGenerations, RefillingAnEmptiedTableTakesTheSlotsItsKeysLeft) {
    add_entries(1000);
    const EntryTable &t = m()->table;
    size_t in_use = t.index_slots_in_use();
    for (int round = 0; round < 3; round++) {
        for (const py::object &key : keys) {
            ASSERT_EQ(ephemeron_delete(m(), key.ptr()), 1);
        }
        ASSERT_EQ(t.end(), 0u) << "emptied from the end: no position left";
        for (const py::object &key : keys) {
            ASSERT_EQ(ephemeron_set(m(), key.ptr(), Py_None), 0);
            ASSERT_LE(t.index_slots_in_use(), in_use) << "round " << round << ", at " << t.end();
        }
        EXPECT_EQ(t.index_slots_in_use(), in_use) << "round " << round;
    }
    for (const py::object &key : keys) {
        EXPECT_NE(ephemeron_find_entry(m(), key.ptr()), nullptr);
    }
}

// A map scan goes in slices of table positions. Between slices, entries
// leave and others come, so the table squeezes its holes out now and then,
// moving entries down under the cursor: the scan goes on at the same share
// of the table rather than over from its start, so it ends; a dead key the
// squeeze moved behind the cursor waits for the next scan.
TEST_F(MapGenerations, AMapScanWhoseTableSqueezesBetweenSlicesEnds) {
    add_entries(1000);
    add_dead_entries(100);
    add_entries(1000);
    const EntryTable &t = m()->table;
    MapScanCursor cursor = collector_map_scan_start();
    Py_ssize_t found = 0;
    int squeezes = 0;
    int slices = 0;
    for (; slices < 100 && !collector_map_scan_done(cursor); slices++) {
        Py_ssize_t slice = collector_collect_map_slice(&cursor, 500, Scratch::kKeep);
        ASSERT_GE(slice, 0);
        found += slice;
        size_t end = t.end();
        for (size_t i = 0; i < 200; i++) {  // the oldest live entries leave
            ASSERT_EQ(ephemeron_delete(m(), keys[i].ptr()), 1);
        }
        keys.erase(keys.begin(), keys.begin() + 200);
        add_entries(200);
        squeezes += t.end() < end + 200;
    }
    EXPECT_TRUE(collector_map_scan_done(cursor)) << slices << " slices, " << squeezes << " squeezes";
    EXPECT_GT(squeezes, 0) << "the churn squeezed the table between slices";
    cursor = collector_map_scan_start();
    while (!collector_map_scan_done(cursor)) {
        Py_ssize_t slice = collector_collect_map_slice(&cursor, 500, Scratch::kKeep);
        ASSERT_GE(slice, 0);
        found += slice;
    }
    EXPECT_EQ(found, 100) << "every dead key found by the second scan at the latest";
    EXPECT_EQ(t.size(), keys.size());
}

// A slice of a map scan says how many positions it walked: all it was
// given, or fewer when the scan ends within it. Automatic collection sizes
// the next slice by the time per position walked, so a short last slice
// must not make the next scan's first slice huge.
TEST_F(MapGenerations, AMapScanSliceSaysHowManyPositionsItWalked) {
    add_entries(1000);
    MapScanCursor cursor = collector_map_scan_start();
    ASSERT_GE(collector_collect_map_slice(&cursor, 600, Scratch::kKeep), 0);
    EXPECT_EQ(cursor.visited, 600u);
    EXPECT_FALSE(collector_map_scan_done(cursor));
    ASSERT_GE(collector_collect_map_slice(&cursor, 600, Scratch::kKeep), 0);
    EXPECT_TRUE(collector_map_scan_done(cursor));
    EXPECT_EQ(cursor.visited, 400u) << "the scan ended 400 positions into the slice";
}

TEST_F(Collector, KeepsACodeWithAnOutsideReference) {
    py::object f = make_function("f");
    py::object code = f.attr("__code__");
    cache(f, f);
    f = py::object();
    EXPECT_EQ(collector_collect_all(), 0) << "`code` is referenced from here";
    EXPECT_NE(registry_holder_of(code.ptr()), nullptr);
}

TEST_F(Collector, AnOutsideReferenceToTheHolderKeepsItsCodeLive) {
    // The holder's count includes the registry's reference, explained by the
    // virtual edge code -> holder; ours is one more, so the holder is a root.
    py::object f = make_function("f");
    Holder *h = cache(f, f);
    Py_INCREF(h);
    f = py::object();
    EXPECT_EQ(collector_collect_all(), 0);
    EXPECT_TRUE(holder_attached(h));
    Py_DECREF(h);
    EXPECT_EQ(collector_collect_all(), 1);
}

TEST_F(Collector, TheRegistryIsNeverExpandedEvenWhenAProductReachesIt) {
    // Were the registry expanded, its reference to the holder would be counted
    // twice (once as the virtual edge) and our reference would look internal.
    py::object f = make_function("f");
    py::list product;
    product.append(f);
    product.append(py::handle(reinterpret_cast<PyObject *>(registry_get())));
    Holder *h = cache(f, product);
    Py_INCREF(h);
    f = py::object();
    product = py::list();
    EXPECT_EQ(collector_collect_all(), 0);
    EXPECT_TRUE(holder_attached(h));
    Py_DECREF(h);
}

TEST_F(Collector, TwoCachesHoldingEachOthersFunctionAreCollectedTogether) {
    py::object f = make_function("f"), g = make_function("g");
    cache(f, g);
    cache(g, f);
    f = g = py::object();
    gc_collect();
    EXPECT_EQ(collector_collect_all(), 2);
}

TEST_F(Collector, ABudgetTooSmallForTheCycleKeepsEverything) {
    py::object f = make_function("f");
    py::list inner;
    inner.append(f);
    py::list product;
    product.append(inner);
    cache(f, product);
    f = py::object();
    inner = product = py::list();
    uint64_t exhausted = collector_stats().budget_exhausted;
    ASSERT_EQ(collector_set_budget(3), 0);
    EXPECT_EQ(collector_collect_all(), 0);
    EXPECT_EQ(collector_stats().budget_exhausted, exhausted + 1);
    ASSERT_EQ(collector_set_budget(1000), 0);
    EXPECT_EQ(collector_collect_all(), 1);
}

TEST_F(Collector, BudgetBelowOneIsAValueError) {
    EXPECT_EQ(collector_set_budget(0), -1);
    ASSERT_TRUE(PyErr_ExceptionMatches(PyExc_ValueError));
    PyErr_Clear();
}

TEST_F(Collector, SharedStructureIsExploredOncePerPass) {
    py::list shared;
    for (int i = 0; i < 1000; i++) {
        shared.append(py::list());
    }
    std::vector<py::object> functions;
    for (int i = 0; i < 50; i++) {
        functions.push_back(make_function("f" + std::to_string(i)));
        cache(functions.back(), shared);
    }
    EXPECT_EQ(collector_collect_all(), 0);
    // 50 x (code, holder, entry) + the shared list and its 1000 lists, plus
    // the pruned module dicts: far below 50 x 1000.
    EXPECT_LT(collector_stats().last_nodes, 50u * 3 + 1001 + 2000);
}

TEST_F(Collector, AutomaticCollectionCanBeSwitchedOffAndOn) {
    ASSERT_EQ(auto_collect_set(false), 0);
    EXPECT_EQ(auto_collect_get(), 0);
    ASSERT_EQ(auto_collect_set(true), 0);
    EXPECT_EQ(auto_collect_get(), 1);
    py::object f = make_function("f");
    cache(f, f);
    f = py::object();
    gc_collect();  // a young pass from gc.callbacks finds it
    EXPECT_EQ(registry_get()->holders.size(), 0u);
    ASSERT_EQ(auto_collect_set(false), 0);
}

// The nodes of recorded reaches: a table by address that a pass consults
// for every node it adds. It keeps at most kMaxReachNodes; once full it
// takes no new node but still updates the ones it keeps, and a forgotten
// node leaves room when the table is rebuilt.
TEST(LiveStructuresReach, KeepsAtMostItsLimitAndUpdatesWhatItKeepsWhenFull) {
    LiveStructures records;
    py::list objects;
    const size_t limit = LiveStructures::kMaxReachNodes;
    for (size_t i = 0; i < limit + 1; i++) {
        objects.append(py::list());
    }
    auto at = [&](size_t i) { return objects[i].ptr(); };
    for (size_t i = 0; i < limit; i++) {
        records.add_reach_node(at(i), Py_TYPE(at(i)), 1);
    }
    EXPECT_TRUE(records.recorded(at(0)));
    EXPECT_TRUE(records.recorded(at(limit - 1)));
    EXPECT_FALSE(records.still_live(at(0), 1)) << "one unexplained reference, one from its reach";
    EXPECT_TRUE(records.still_live(at(0), 2));
    records.add_reach_node(at(limit), Py_TYPE(at(limit)), 1);
    EXPECT_FALSE(records.recorded(at(limit))) << "full: no new node";
    records.add_reach_node(at(0), Py_TYPE(at(0)), 5);
    EXPECT_FALSE(records.still_live(at(0), 5)) << "full, but a kept node is updated";
    records.forget(at(1));
    EXPECT_FALSE(records.recorded(at(1)));
    records.add_reach_node(at(limit), Py_TYPE(at(limit)), 1);
    EXPECT_TRUE(records.recorded(at(limit))) << "the forgotten node's room";
    EXPECT_TRUE(records.recorded(at(2)));
    records.clear();
    EXPECT_TRUE(records.empty());
    EXPECT_FALSE(records.recorded(at(2)));
}

// Page-local hashing (page_local_hash.h), which the collector's address
// index and every EphemeronMap's index use. A table of 2^20 slots.
constexpr unsigned kTableShift = 64 - 20;
constexpr size_t kTableMask = (size_t{1} << 20) - 1;

// The objects of one page take consecutive slots, 16 bytes a slot: filling
// or probing the table in allocation order stays on a few cache lines.
TEST(PageLocalHash, TheObjectsOfOnePageTakeConsecutiveSlots) {
    for (uintptr_t page : {uintptr_t{0x7f3a12345000}, uintptr_t{0x55d0c0de0000}, uintptr_t{0x1000}}) {
        size_t first = page_local_slot(page, kTableShift, kTableMask);
        for (uintptr_t offset = 0; offset < 4096; offset += 16) {
            EXPECT_EQ(page_local_slot(page + offset, kTableShift, kTableMask), (first + offset / 16) & kTableMask)
                << std::hex << page + offset;
        }
    }
}

// And the pages spread over the table: objects laid out in a row, at the
// strides of small objects and of page-sized ones, take short probes under
// linear probing at the load EntryTable grows at (two thirds).
TEST(PageLocalHash, ObjectsInARowTakeShortLinearProbes) {
    constexpr size_t kObjects = (kTableMask + 1) * 2 / 3;
    for (uintptr_t stride : {48, 64, 96, 256, 4096, 3 * 4096, 64 * 4096}) {
        std::vector<bool> taken(kTableMask + 1);
        size_t probes = 0;
        size_t longest = 0;
        for (size_t n = 0; n < kObjects; n++) {
            size_t i = page_local_slot(0x7f0000000000 + n * stride, kTableShift, kTableMask);
            size_t probe = 1;
            for (; taken[i]; i = (i + 1) & kTableMask) {
                probe++;
            }
            taken[i] = true;
            probes += probe;
            longest = std::max(longest, probe);
        }
        EXPECT_LT(static_cast<double>(probes) / kObjects, 4.0) << "stride " << stride;
        EXPECT_LT(longest, 1000u) << "stride " << stride;
    }
}

// The VmFlags of the mapping that holds `address` (/proc/self/smaps), or ""
// when none does.
std::string mapping_flags(const void *address) {
    std::ifstream smaps("/proc/self/smaps");
    auto at = reinterpret_cast<uintptr_t>(address);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long low = 0, high = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &low, &high) == 2 && line.find('-') < line.find(' ')) {
            inside = low <= at && at < high;
        } else if (inside && line.rfind("VmFlags:", 0) == 0) {
            return line;
        }
    }
    return "";
}

// A pass over everything asks for transparent huge pages for its large
// arrays (system_memory.h); automatic passes, sliced to keep pauses short,
// and anything outside a HugePages scope do not.
TEST(SystemMemory, LargeBlocksAskForHugePagesOnlyInsideAHugePagesScope) {
    if (system_memory::kDirectBytes == SIZE_MAX || access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) != 0) {
        GTEST_SKIP() << "large blocks come from malloc (sanitizer build), or the kernel has no THP";
    }
    constexpr size_t kBytes = 4 * system_memory::kHugeBytes;
    PodArray<char> plain, huge, grown;
    ASSERT_TRUE(plain.assign_zeroed(kBytes));
    {
        system_memory::HugePages scope(true);
        ASSERT_TRUE(huge.assign_zeroed(kBytes));
        ASSERT_TRUE(grown.assign_zeroed(system_memory::kDirectBytes));  // mapped below kHugeBytes: no advice
        EXPECT_EQ(mapping_flags(&grown[0]).find(" hg"), std::string::npos);
        ASSERT_TRUE(grown.assign_zeroed(kBytes));  // grown past it in the scope (mremap)
        {
            system_memory::HugePages off(false);
            EXPECT_FALSE(system_memory::huge_pages_wanted) << "a scope off inside one on";
        }
        EXPECT_TRUE(system_memory::huge_pages_wanted) << "the outer scope is back";
    }
    EXPECT_FALSE(system_memory::huge_pages_wanted);
    EXPECT_EQ(mapping_flags(&plain[0]).find(" hg"), std::string::npos) << mapping_flags(&plain[0]);
    EXPECT_NE(mapping_flags(&huge[0]).find(" hg"), std::string::npos) << mapping_flags(&huge[0]);
    EXPECT_NE(mapping_flags(&grown[0]).find(" hg"), std::string::npos) << mapping_flags(&grown[0]);
}

// The registry's table gives each large block back to the system as it
// grows past it: under glibc's raised mmap threshold a block freed to malloc
// would stay resident, as many bytes again as the table (bench_memory.py).
TEST(SystemMemory, TheHolderTableUnmapsTheBlocksItGrowsThrough) {
    if (system_memory::kDirectBytes == SIZE_MAX) {
        GTEST_SKIP() << "large blocks come from malloc (sanitizer build)";
    }
    HolderTable table(system_memory::kDirectBytes / sizeof(Holder *), nullptr);
    const void *first = table.data();
    ASSERT_NE(mapping_flags(first), "");
    table.push_back(nullptr);  // past the capacity: a block twice as large
    ASSERT_NE(static_cast<const void *>(table.data()), first);
    EXPECT_EQ(mapping_flags(first), "") << "the block the table grew from is still mapped";
    EXPECT_NE(mapping_flags(table.data()), "");
}

}  // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return coextra_test::run_all_tests_with_registry();
}
