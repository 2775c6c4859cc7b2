"""coextra.evalframe: the PEP 523 backend, as the specification of its behaviour.

Counts are exact: every frame the hook sees while enabled is looked up (a hit
when its code has an entry, a compile otherwise), except frames that start
while a compile is in progress, which pass through. The evalframe functions
are C functions, so switching the backend on and off counts no frame.
"""

from __future__ import annotations

import dataclasses
import gc
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import types
import weakref

import pytest

import coextra
from capi_ext import load
from coextra import evalframe
from conftest import make_function, subprocess_env

bench = load("_capi_bench")

# From 3.11 on, calling a generator or coroutine function runs its frame once
# to create the generator object; 3.10 creates it without running a frame.
CREATION_FRAME = 1 if sys.version_info >= (3, 11) else 0


pytestmark = pytest.mark.usefixtures("evalframe_off_afterwards")


class Recorder:
    """A callback that records the code objects it is called with and returns
    a product (or None for the codes in `decline`)."""

    def __init__(self, decline=()):
        self.codes: list[types.CodeType] = []
        self.decline = set(decline)

    def __call__(self, code):
        self.codes.append(code)
        return None if code in self.decline else ("compiled", code.co_name)

    def count(self, function) -> int:
        return self.codes.count(function.__code__)


def hits(function) -> int:
    holder = coextra.holder(function)
    return holder.entries[0].hits if holder else 0


def run_enabled(callback, body):
    """body() with the backend on."""
    evalframe.enable(callback)
    try:
        return body()
    finally:
        evalframe.disable()


# --- hits and compiles ------------------------------------------------------

def test_first_call_compiles_and_every_later_call_hits():
    g = make_function("def g(x):\n    return x * 2\n", "g")
    f = make_function("def f(g):\n    return g(1) + g(2) + g(3)\n", "f")
    record = Recorder()

    results = run_enabled(record, lambda: [f(g) for _ in range(5)])

    assert results == [12] * 5
    assert [c for c in record.codes if c in (f.__code__, g.__code__)] == [f.__code__, g.__code__]
    assert record.count(f) == 1 and record.count(g) == 1
    assert hits(f) == 4 and hits(g) == 14
    assert coextra.holder(g).entries[0].product == ("compiled", "g")
    s = evalframe.stats()
    lambda_and_list = len(record.codes) - 2  # the lambda's (and, before 3.12, the listcomp's) frames
    assert s["frames"] == 5 + 15 + lambda_and_list
    assert s["compiles"] == len(record.codes) == s["stored"]
    assert s["hits"] == s["frames"] - s["compiles"] == 18


def test_recursion_compiles_once():
    fib = make_function("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n", "fib")
    record = Recorder()
    assert run_enabled(record, lambda: fib(10)) == 55
    assert record.count(fib) == 1
    assert hits(fib) == 177 - 1  # fib(10) makes 177 calls


def test_a_none_result_is_not_stored_and_the_code_compiles_again():
    f = make_function()
    record = Recorder(decline={f.__code__})
    run_enabled(record, lambda: [f(i) for i in range(3)])
    assert record.count(f) == 3
    assert coextra.holder(f) is None


def test_an_entry_cached_before_enabling_is_a_hit():
    f = make_function()
    coextra.attach(f, "ahead of time")
    record = Recorder()
    run_enabled(record, lambda: f(1))
    assert record.count(f) == 0 and hits(f) == 1


def test_the_callback_runs_with_the_backend_off_on_its_own_frames():
    helper = make_function("def helper(code):\n    return code.co_name\n", "helper")
    f = make_function()
    seen = []

    def callback(code):
        seen.append(code)
        return helper(code)  # would compile helper if the hook were on

    run_enabled(callback, lambda: f(1))
    assert f.__code__ in seen
    assert helper.__code__ not in seen and callback.__code__ not in seen
    assert coextra.holder(helper) is None
    assert evalframe.stats()["passthrough"] >= 2  # callback and helper frames


# --- generators and coroutines: resumed frames ------------------------------

def test_every_resume_of_a_generator_is_a_frame_and_a_hit_after_the_first():
    gen = make_function("def gen(n):\n    for i in range(n):\n        yield i\n", "gen")
    record = Recorder()
    assert run_enabled(record, lambda: list(gen(3))) == [0, 1, 2]
    assert record.count(gen) == 1
    # 3 values and the final StopIteration: 4 resumes (plus the creation frame).
    assert hits(gen) == CREATION_FRAME + 4 - 1


def test_generator_throw_and_close_pass_through_and_behave():
    source = textwrap.dedent(
        """
        def gen():
            try:
                yield 1
            except KeyError:
                yield "caught"
            yield 3
        """
    )
    gen = make_function(source, "gen")
    record = Recorder()

    def body():
        g = gen()
        first = next(g)
        caught = g.throw(KeyError("k"))
        g.close()
        return first, caught

    assert run_enabled(record, body) == (1, "caught")
    assert record.count(gen) == 1
    assert evalframe.stats()["passthrough"] >= 1  # the throw


def test_coroutines_resume_through_the_backend():
    source = textwrap.dedent(
        """
        import types

        @types.coroutine
        def pause():
            yield "paused"

        async def work(x):
            await pause()
            await pause()
            return x * 3
        """
    )
    namespace: dict = {}
    exec(compile(source, "<coroutines>", "exec"), namespace)
    work, pause = namespace["work"], namespace["pause"]
    record = Recorder()

    def drive():
        coro = work(7)
        assert coro.send(None) == "paused"
        assert coro.send(None) == "paused"
        with pytest.raises(StopIteration) as stop:
            coro.send(None)
        return stop.value.value

    assert run_enabled(record, drive) == 21
    assert record.count(work) == 1 and record.count(pause) == 1
    assert hits(work) == CREATION_FRAME + 3 - 1  # three sends resume work
    # Each pause() generator: created, then resumed twice (yield, then return).
    assert hits(pause) == 2 * (CREATION_FRAME + 2) - 1


# --- exceptions -------------------------------------------------------------

def test_a_callback_exception_propagates_out_of_the_frame_that_triggered_it():
    ran = []
    f = make_function("def f(ran):\n    ran.append('f ran')\n    return 1\n", "f")
    g = make_function(
        "def g(f, ran):\n    try:\n        return f(ran)\n    except ZeroDivisionError as e:\n"
        "        return e\n",
        "g",
    )

    def callback(code):
        if code is f.__code__:
            raise ZeroDivisionError("refused to compile f")
        return "compiled"

    error = run_enabled(callback, lambda: g(f, ran))
    assert isinstance(error, ZeroDivisionError) and str(error) == "refused to compile f"
    assert ran == [], "the frame that triggered the error must not run"
    frames = [frame.f_code for frame, _ in traceback.walk_tb(error.__traceback__)]
    # Raised in the callback, caught by f's caller. f's frame itself is listed
    # except on 3.11 and 3.12, which omit frames that never reached their
    # first instruction from tracebacks (docs/c-api.md).
    assert frames[0] is g.__code__ and frames[-1] is callback.__code__
    assert (f.__code__ in frames) == (sys.version_info[:2] not in ((3, 11), (3, 12)))
    assert coextra.holder(f) is None
    # Nothing was stored, so the next call compiles again (and now succeeds).
    assert run_enabled(lambda code: "ok", lambda: g(f, ran)) == 1 and ran == ["f ran"]


def test_a_callback_exception_on_a_closure_frame_unwinds_cleanly():
    outer = make_function(
        "def outer():\n    y = 5\n    def inner():\n        return y\n    return inner\n", "outer"
    )
    inner = outer()

    def callback(code):
        if code is inner.__code__:
            raise LookupError("no")
        return "ok"

    for _ in range(3):  # repeatedly: a leaked or half-initialised frame would show
        with pytest.raises(LookupError):
            run_enabled(callback, inner)
    assert inner() == 5


def test_program_exceptions_are_unchanged():
    f = make_function("def f(x):\n    return 1 / x\n", "f")
    record = Recorder()
    with pytest.raises(ZeroDivisionError):
        run_enabled(record, lambda: f(0))
    assert run_enabled(record, lambda: f(2)) == 0.5
    assert record.count(f) == 1


# --- threads -----------------------------------------------------------------

def test_threads_never_enter_the_callback_while_a_compile_is_in_progress():
    functions = [make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}") for i in range(40)]
    state = {"inside": 0, "max_inside": 0}
    counts: dict = {}
    lock = threading.Lock()

    def callback(code):
        with lock:
            state["inside"] += 1
            state["max_inside"] = max(state["max_inside"], state["inside"])
            counts[code] = counts.get(code, 0) + 1
        time.sleep(0.001)  # releases the GIL: other threads run meanwhile
        with lock:
            state["inside"] -= 1
        return "compiled"

    results: dict = {}

    def worker(k):
        results[k] = [sum(f(j) for f in functions) for j in range(20)]

    def body():
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run_enabled(callback, body)
    expected = [sum(j + i for i in range(40)) for j in range(20)]
    assert results == {k: expected for k in range(4)}
    assert state["max_inside"] == 1
    assert all(n == 1 for n in counts.values()), "a stored code is never compiled again"
    assert all(f.__code__ in counts for f in functions)
    assert evalframe.stats()["compiles"] == sum(counts.values())


# --- enable, disable ---------------------------------------------------------

def test_enabling_twice_replaces_the_callback_and_disable_restores_the_original_evaluator():
    f, g = make_function(), make_function("def g():\n    return 2\n", "g")
    first, second = Recorder(), Recorder()
    bench.counting_hook_enable()  # another PEP 523 user, installed earlier
    try:
        evalframe.enable(first)
        f(1)
        evalframe.enable(second)
        assert evalframe.callback() is second
        g()
        evalframe.disable()
        assert not evalframe.is_enabled() and evalframe.callback() is None
        frames = evalframe.stats()["frames"]
        before = bench.counting_hook_frames()
        f(1)
        g()
        assert bench.counting_hook_frames() == before + 2, "the earlier evaluator still runs"
        assert evalframe.stats()["frames"] == frames, "the backend is out of the chain"
    finally:
        bench.raw_hook_disable()  # raises if the backend were still on top of it
    assert first.count(f) == 1 and first.count(g) == 0
    assert second.count(g) == 1 and second.count(f) == 0


def test_the_earlier_evaluator_runs_every_frame_underneath_the_backend():
    f = make_function()
    bench.counting_hook_enable()
    try:
        before = bench.counting_hook_frames()
        run_enabled(Recorder(), lambda: [f(i) for i in range(10)])
        assert bench.counting_hook_frames() - before >= 10 + 1  # f, the lambda, the callbacks
    finally:
        bench.raw_hook_disable()


def test_disable_under_a_later_evaluator_leaves_it_in_place_and_passes_through():
    f = make_function()
    record = Recorder()
    evalframe.enable(record)
    bench.counting_hook_enable()  # installed on top, calls the backend underneath
    try:
        evalframe.disable()
        frames, passthrough = evalframe.stats()["frames"], evalframe.stats()["passthrough"]
        f(1)
        assert evalframe.stats()["frames"] == frames
        assert evalframe.stats()["passthrough"] > passthrough
    finally:
        bench.raw_hook_disable()
    evalframe.enable(record)  # the backend is still in the chain: re-enabling reuses it
    f(1)
    evalframe.disable()
    assert record.count(f) == 1


def test_disabling_inside_a_callback_finishes_the_compile_and_stops_the_backend():
    f, g = make_function(), make_function("def g():\n    return 2\n", "g")

    def callback(code):
        evalframe.disable()
        return ("compiled", code.co_name)

    evalframe.enable(callback)
    assert f(1) == 2
    assert not evalframe.is_enabled()
    assert coextra.holder(f).entries[0].product == ("compiled", "f")
    frames = evalframe.stats()["frames"]
    g()
    assert evalframe.stats()["frames"] == frames and coextra.holder(g) is None


def test_a_callback_can_replace_itself():
    f, g = make_function(), make_function("def g():\n    return 2\n", "g")
    second = Recorder()

    def first(code):
        if code is f.__code__:
            evalframe.enable(second)
        return "first"

    run_enabled(first, lambda: (f(1), g()))
    assert coextra.holder(f).entries[0].product == "first"
    assert second.count(g) == 1


def test_the_context_manager_restores_the_outer_state():
    outer, inner = Recorder(), Recorder()
    with evalframe.enabled(outer):
        with evalframe.enabled(inner):
            assert evalframe.callback() is inner
        assert evalframe.callback() is outer
    assert not evalframe.is_enabled()
    with pytest.raises(KeyError):
        with evalframe.enabled(outer):
            raise KeyError
    assert not evalframe.is_enabled()


def test_one_scope_entered_inside_itself_restores_each_level():
    outer, inner = Recorder(), Recorder()
    scope = evalframe.enabled(inner)
    with evalframe.enabled(outer):
        with scope:
            with scope:
                assert evalframe.callback() is inner
            assert evalframe.callback() is inner
        assert evalframe.callback() is outer
        with scope:  # and again once left
            assert evalframe.callback() is inner
        assert evalframe.callback() is outer
    assert not evalframe.is_enabled() and evalframe.callback() is None


def test_a_scope_in_a_cycle_with_its_callback_is_collected():
    class Backend:
        def __call__(self, code):
            return None

    backend = Backend()
    backend.scope = evalframe.enabled(backend)
    with backend.scope:
        with backend.scope:
            pass
    gone = weakref.ref(backend)
    del backend
    gc.collect()
    assert gone() is None


def always_raising(code):
    raise RuntimeError(f"backend bug compiling {code.co_name}")


def test_leaving_the_with_block_restores_the_evaluator_whatever_the_callback_raises():
    # The callback raises for every code object, the clean-up's included: the
    # block's own exit must start no frame that would call it.
    f = make_function()
    with pytest.raises(RuntimeError, match="compiling f"):
        with evalframe.enabled(always_raising):
            f(1)
    assert not evalframe.is_enabled() and evalframe.callback() is None
    assert make_function()(1) == 2  # new frames run without the backend


def test_a_raising_inner_block_gives_the_outer_callback_back():
    outer, f = Recorder(), make_function()
    with evalframe.enabled(outer):
        with pytest.raises(RuntimeError):
            with evalframe.enabled(always_raising):
                f(1)
        assert evalframe.callback() is outer and evalframe.is_enabled()
    assert not evalframe.is_enabled()


def test_disable_in_a_finally_clause_runs_whatever_the_callback_raises():
    f = make_function()
    with pytest.raises(RuntimeError, match="compiling f"):
        evalframe.enable(always_raising)
        try:
            f(1)
        finally:
            evalframe.disable()
    assert not evalframe.is_enabled()


def test_enable_rejects_a_callback_that_is_not_callable():
    with pytest.raises(TypeError, match="callable"):
        evalframe.enable(42)
    assert not evalframe.is_enabled()


# --- lifetime ------------------------------------------------------------------

@pytest.mark.usefixtures("explicit_collection_only")  # gc.collect() alone leaves the cycle
def test_products_referencing_their_code_are_freed_once_detached():
    f = make_function()
    code_alive = weakref.ref(f.__code__)
    run_enabled(lambda code: (code, "compiled"), lambda: f(1))
    del f
    gc.collect()
    assert code_alive() is not None
    coextra.reset()
    gc.collect()
    assert code_alive() is None


def test_a_product_referencing_its_code_is_reclaimed_by_the_collector_once_the_function_is_gone():
    f = make_function()
    code_alive = weakref.ref(f.__code__)
    run_enabled(lambda code: (code, "compiled"), lambda: f(1))
    assert coextra.holder(f) is not None
    del f
    gc.collect()
    coextra.collect()
    gc.collect()
    assert code_alive() is None


def test_exit_with_the_backend_enabled_is_clean():
    script = textwrap.dedent(
        """
        import atexit

        def after_teardown():
            # Registered before coextra: runs after its teardown, by which time
            # the backend was switched off.
            def late():
                return 1
            late()
            s = coextra.stats()
            print("after-teardown", s["holders"], evalframe.is_enabled())
            # Enabled again now, it still runs frames but never compiles or stores.
            evalframe.reset_stats()
            evalframe.enable(lambda code: (code, "too late"))
            late()
            e = evalframe.stats()
            evalframe.disable()
            print("late backend", e["frames"] > 0, e["compiles"], e["stored"], coextra.stats()["holders"])

        atexit.register(after_teardown)
        import coextra
        from coextra import evalframe

        evalframe.enable(lambda code: (code, "compiled"))
        def f(x):
            return x + 1
        f(1)
        print("enabled", evalframe.stats()["stored"] > 0)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.split("\n")[:3] == ["enabled True", "after-teardown 0 False",
                                            "late backend True 0 0 0"]


# --- a real workload -----------------------------------------------------------

def generated_classes_workload(make_class, asdict, replace):
    """A library that writes __init__, __repr__, __eq__, ordering and hashing
    methods as source and execs them: many functions created at run time, then
    called. make_class(name, {field: default}, order, frozen, slots) -> class."""
    out = []
    for i in range(40):
        defaults = {f"a{j}": j for j in range(i % 4 + 1)}
        cls = make_class(f"C{i}", defaults, True, bool(i % 2), bool(i % 3))
        objects = sorted([cls(*range(k, k + len(defaults))) for k in (3, 1, 2)])
        out.append((repr(objects), objects[0] == cls(*range(1, 1 + len(defaults))),
                    [asdict(o) for o in objects], hash(objects[0]) if i % 2 else None,
                    replace(objects[-1], a0=-1)))
    return repr(out)


def make_dataclass(name, defaults, order, frozen, slots):
    fields = [(n, int, dataclasses.field(default=d)) for n, d in defaults.items()]
    return dataclasses.make_dataclass(name, fields, order=order, frozen=frozen, slots=slots)


def dataclass_workload():
    return generated_classes_workload(make_dataclass, dataclasses.asdict, dataclasses.replace)


def assert_identical_results_under_the_backend(workload, is_generated_file):
    """workload() gives the same with the backend as without; the backend
    compiled the generated methods (an __init__ from a file is_generated_file
    accepts among them) and then hit its cache."""
    expected = workload()
    record = Recorder()
    got = run_enabled(lambda code: (code, record(code)), workload)
    assert got == expected
    s = evalframe.stats()
    assert s["compiles"] > 40 * 3, "the generated methods were compiled"
    assert s["hits"] > s["compiles"]
    assert any(code.co_name == "__init__" and is_generated_file(code.co_filename)
               for code in record.codes), sorted({c.co_filename for c in record.codes})[:10]


def test_a_dataclass_heavy_workload_gives_identical_results_under_the_backend():
    assert_identical_results_under_the_backend(dataclass_workload, lambda f: f == "<string>")


def attrs_workload():
    """The same through attrs, a PyPI library (a test dependency)."""
    import attrs

    def make_class(name, defaults, order, frozen, slots):
        fields = {n: attrs.field(default=d) for n, d in defaults.items()}
        return attrs.make_class(name, fields, order=order, frozen=frozen, slots=slots)

    return generated_classes_workload(make_class, attrs.asdict, attrs.evolve)


def test_an_attrs_heavy_workload_gives_identical_results_under_the_backend():
    assert_identical_results_under_the_backend(attrs_workload, lambda f: "attrs generated" in f)
