"""coextra.evalframe beside other PEP 523 users, under tracers and across fork().

Another evaluator may be installed over the backend, may call it or not, and
may put back whatever it saved when it leaves (PyTorch Dynamo puts back the
evaluator it found when a compiled region began: CPython's default for a
region entered before the backend was enabled). is_enabled() reports
whether the backend's hook is the interpreter's evaluator, and enable()
installs it again whenever it is not."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import pytest

import coextra
from capi_ext import load
from coextra import evalframe
from conftest import in_child, make_function

bench = load("_capi_bench")


pytestmark = pytest.mark.usefixtures("evalframe_off_afterwards")


class Recorder:
    def __init__(self):
        self.codes = []

    def __call__(self, code):
        self.codes.append(code)
        return ("compiled", code)

    def count(self, function) -> int:
        return self.codes.count(function.__code__)


# A foreign evaluator switch through ctypes, as any C extension would do it.
_api = ctypes.pythonapi
_api.PyInterpreterState_Get.restype = ctypes.c_void_p
_api._PyInterpreterState_GetEvalFrameFunc.restype = ctypes.c_void_p
_api._PyInterpreterState_GetEvalFrameFunc.argtypes = [ctypes.c_void_p]
_api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
DEFAULT_EVALUATOR = ctypes.cast(_api._PyEval_EvalFrameDefault, ctypes.c_void_p).value
_libc = ctypes.PyDLL(None)  # PyDLL: calls keep the GIL


def current_evaluator() -> int:
    return _api._PyInterpreterState_GetEvalFrameFunc(_api.PyInterpreterState_Get())


def set_evaluator(function: int) -> None:
    _api._PyInterpreterState_SetEvalFrameFunc(_api.PyInterpreterState_Get(), function)


# --- another evaluator puts back CPython's default ---------------------------


def test_an_evaluator_reset_to_the_default_unhooks_the_backend_and_is_enabled_says_so():
    f = make_function()
    record = Recorder()
    evalframe.enable(record)
    assert evalframe.is_enabled()
    set_evaluator(DEFAULT_EVALUATOR)  # Dynamo leaving a region entered before enable()
    assert not evalframe.is_enabled()
    frames = evalframe.stats()["frames"]
    f(1)
    assert evalframe.stats()["frames"] == frames and record.count(f) == 0


def test_enable_installs_the_hook_again_after_it_was_unhooked():
    f = make_function()
    record = Recorder()
    evalframe.enable(record)
    set_evaluator(DEFAULT_EVALUATOR)
    evalframe.enable(record)
    assert evalframe.is_enabled()
    f(1)
    f(2)
    assert record.count(f) == 1 and coextra.holder(f).entries[0].hits == 1
    evalframe.disable()
    assert current_evaluator() == DEFAULT_EVALUATOR


def test_enabled_block_survives_an_unhook_inside_it():
    f = make_function()
    record = Recorder()
    with evalframe.enabled(record):
        set_evaluator(DEFAULT_EVALUATOR)
        with evalframe.enabled(record):  # a nested block re-installs
            f(1)
        assert not evalframe.is_enabled() or evalframe.callback() is record
    assert not evalframe.is_enabled() and record.count(f) == 1


# --- another evaluator on top that calls the one underneath -------------------


def test_an_evaluator_on_top_that_calls_the_backend_keeps_it_working():
    f = make_function()
    record = Recorder()
    evalframe.enable(record)
    bench.counting_hook_enable()  # on top; calls the hook underneath
    try:
        assert not evalframe.is_enabled(), "another evaluator is the interpreter's"
        before = bench.counting_hook_frames()
        f(1)
        assert record.count(f) == 1, "frames still reach the backend through the chain"
        assert bench.counting_hook_frames() > before
    finally:
        bench.raw_hook_disable()
    assert evalframe.is_enabled()


def test_enable_over_an_evaluator_that_calls_the_backend_runs_each_frame_once_through_both():
    f = make_function()
    record = Recorder()
    evalframe.enable(record)
    bench.counting_hook_enable()
    try:
        evalframe.enable(record)  # the hook on top again: a loop hook -> counting -> hook
        assert evalframe.is_enabled()
        before = bench.counting_hook_frames()
        assert [f(i) for i in range(5)] == [1, 2, 3, 4, 5]
        assert bench.counting_hook_frames() - before >= 5, "the other evaluator sees every frame"
        assert record.count(f) == 1 and coextra.holder(f).entries[0].hits == 4
        evalframe.disable()  # hands the interpreter back to the counting hook
        assert current_evaluator() != DEFAULT_EVALUATOR and not evalframe.is_enabled()
        assert f(1) == 2
    finally:
        bench.raw_hook_disable()  # puts the (disabled) hook back: it must not call a departed evaluator
    assert f(1) == 2
    evalframe.disable()
    assert current_evaluator() == DEFAULT_EVALUATOR or evalframe.is_enabled() is False


# --- the callback's frames never reach an evaluator on top --------------------


def compile_step(code):
    return helper_in_the_callback(code)


def test_an_evaluator_on_top_never_sees_the_callback_frames():
    f = make_function()
    evalframe.enable(compile_step)
    bench.recording_hook_enable()  # on top; records each frame and hands it to the hook
    try:
        on_top = current_evaluator()
        assert f(1) == 2 and f(2) == 3
        assert current_evaluator() == on_top, "put back after the callback"
    finally:
        bench.raw_hook_disable()  # raises unless the recording hook is current
    codes = bench.take_recorded_codes()
    assert codes.count(f.__code__) == 2, "user frames still go through it"
    assert compile_step.__code__ not in codes and helper_in_the_callback.__code__ not in codes
    assert coextra.holder(f).entries[0].product == ("compiled", f.__code__)
    assert coextra.holder(f).entries[0].hits == 1


def test_trace_true_lets_an_evaluator_on_top_see_the_callback_frames():
    f = make_function()
    evalframe.enable(compile_step, trace=True)
    bench.recording_hook_enable()
    try:
        assert f(1) == 2
    finally:
        bench.raw_hook_disable()
    codes = bench.take_recorded_codes()
    assert f.__code__ in codes and compile_step.__code__ in codes


def test_a_callback_that_disables_under_an_evaluator_on_top_leaves_it_in_place():
    f, g = make_function(), make_function("def g():\n    return 2\n", "g")

    def callback(code):
        if code is f.__code__:
            evalframe.disable()
        return compile_step(code)

    evalframe.enable(callback)
    bench.recording_hook_enable()
    try:
        on_top = current_evaluator()
        assert f(1) == 2
        assert current_evaluator() == on_top and not evalframe.is_enabled()
        passthrough = evalframe.stats()["passthrough"]
        assert g() == 2  # through the evaluator on top, then the disabled hook
        assert evalframe.stats()["passthrough"] == passthrough + 1
    finally:
        bench.raw_hook_disable()
    codes = bench.take_recorded_codes()
    assert f.__code__ in codes and g.__code__ in codes and callback.__code__ not in codes
    assert coextra.holder(f) is not None and coextra.holder(g) is None


def test_a_callback_that_enables_under_an_evaluator_on_top_puts_the_hook_on_top():
    f, g = make_function(), make_function("def g():\n    return 2\n", "g")
    record = Recorder()

    def callback(code):
        if code is f.__code__:
            evalframe.enable(record)  # the hook is not the interpreter's: installs it
        return compile_step(code)

    evalframe.enable(callback)
    bench.recording_hook_enable()
    try:
        assert f(1) == 2
        assert evalframe.is_enabled()
        assert g() == 2
        assert record.count(g) == 1
        evalframe.disable()  # hands the interpreter back to the recording hook
    finally:
        bench.raw_hook_disable()
    codes = bench.take_recorded_codes()
    assert g.__code__ in codes and callback.__code__ not in codes


def test_an_evaluator_installed_during_the_callback_stays():
    f = make_function()

    def callback(code):
        if code is f.__code__:
            set_evaluator(DEFAULT_EVALUATOR)  # another user takes over meanwhile
        return compile_step(code)

    evalframe.enable(callback)
    bench.recording_hook_enable()
    on_top = current_evaluator()
    try:
        assert f(1) == 2
        assert current_evaluator() == DEFAULT_EVALUATOR, "not overwritten by the one set aside"
    finally:
        set_evaluator(on_top)  # so that the recording hook can leave
        bench.raw_hook_disable()
    bench.take_recorded_codes()


def test_other_threads_run_while_the_callback_waits_and_the_evaluator_on_top_comes_back():
    functions = [make_function(f"def f{i}(x):\n    return x + {i}\n", f"f{i}") for i in range(10)]
    results = {}

    def slow_callback(code):
        time.sleep(0.001)  # releases the GIL: the workers run meanwhile
        return compile_step(code)

    def worker(k):
        results[k] = [sum(f(j) for f in functions) for j in range(20)]

    evalframe.enable(slow_callback)
    bench.recording_hook_enable()
    try:
        on_top = current_evaluator()
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert current_evaluator() == on_top
    finally:
        bench.raw_hook_disable()
    codes = bench.take_recorded_codes()
    expected = [sum(j + i for i in range(10)) for j in range(20)]
    assert results == {k: expected for k in range(3)}
    assert slow_callback.__code__ not in codes and all(f.__code__ in codes for f in functions)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork with threads (3.12+)
def test_fork_while_another_thread_is_inside_the_callback_under_an_evaluator_on_top():
    inside, release = threading.Event(), threading.Event()
    f = make_function()

    def slow_callback(code):
        if code is f.__code__:
            inside.set()
            release.wait(10)  # releases the GIL with the evaluator on top set aside
        return compile_step(code)

    thread = threading.Thread(target=lambda: f(1))
    evalframe.enable(slow_callback)
    bench.recording_hook_enable()
    try:
        on_top = current_evaluator()
        thread.start()
        assert inside.wait(10)
        # fork() from C, with the GIL held: os.fork() would run the at-fork
        # hooks of threading in the child, whose first compile would put the
        # evaluator back itself. No frame runs in the child before the check.
        pid = _libc.fork()
        if pid == 0:
            os._exit(0 if _api._PyInterpreterState_GetEvalFrameFunc(_api.PyInterpreterState_Get()) == on_top else 3)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        thread.join()
        bench.raw_hook_disable()
    bench.take_recorded_codes()
    assert os.waitstatus_to_exitcode(status) == 0, "the child starts with the evaluator on top back"


# --- PyTorch Dynamo, when installed (Python 3.11: torch 2.13 CPU) --------------


def test_torch_compile_regions_leave_the_backend_reinstallable():
    torch = pytest.importorskip("torch")
    f = make_function()
    record = Recorder()

    def model(x):
        return torch.sin(x) + 1

    compiled = torch.compile(model, backend="eager")
    evalframe.enable(record)
    x = torch.ones(3)
    assert torch.equal(compiled(x), model(x))
    # Dynamo installs its own evaluator for the region and puts back what it
    # found or CPython's default; either way the truth is reported.
    if not evalframe.is_enabled():
        evalframe.enable(record)
    assert evalframe.is_enabled()
    f(1)
    assert record.count(f) == 1


def dynamo():
    """torch, and the codes Dynamo was handed to compile since its last reset."""
    torch = pytest.importorskip("torch")
    import torch._dynamo
    from torch._dynamo.utils import counters

    input_codes = getattr(torch._dynamo.convert_frame, "input_codes", None)
    if input_codes is None:
        pytest.skip("this torch keeps no torch._dynamo.convert_frame.input_codes")
    torch._dynamo.reset()
    counters.clear()
    return torch, input_codes, counters


def fresh_model():
    """A model with a graph break (Dynamo compiles the rest as a frame of its
    own), with a code object no earlier test has stored an entry for."""
    return make_function("def model(x):\n    y = x.sin() + 1\n    print(end='')\n    return y * 2\n", "model")


def is_dynamo_version_of(code, function) -> bool:
    """Whether `code` is the bytecode Dynamo made for `function` and runs in
    its place: a frame Dynamo's evaluator handed down to the backend."""
    original = function.__code__
    return code is not original and (code.co_name, code.co_filename) == (original.co_name, original.co_filename)


backend_callback_codes = []


def backend_callback(code):
    backend_callback_codes.append(code)
    return compile_step(code)


def test_dynamo_does_not_compile_the_backend_callback():
    torch, input_codes, counters = dynamo()
    model = fresh_model()
    expected = [model(torch.arange(4.0).reshape(s)) for s in ((4,), (2, 2), (4,))]

    def run():
        compiled = torch.compile(model, backend="eager")
        return [compiled(torch.arange(4.0).reshape(s)) for s in ((4,), (2, 2), (4,))]

    run()  # without the backend: the frames Dynamo compiles for this program
    frames_alone = counters["frames"]["total"]
    torch._dynamo.reset()
    counters.clear()
    backend_callback_codes.clear()
    evalframe.enable(backend_callback)
    try:
        results = run()
    finally:
        evalframe.disable()
    assert all(torch.equal(a, b) for a, b in zip(results, expected))
    # Dynamo handed the frame of its version of the model down to the
    # backend: the callback ran with Dynamo's evaluator on top.
    assert any(is_dynamo_version_of(code, model) for code in backend_callback_codes)
    assert model.__code__ in input_codes
    assert backend_callback.__code__ not in input_codes
    assert compile_step.__code__ not in input_codes
    assert counters["frames"]["total"] == frames_alone


def test_a_callback_that_runs_a_compiled_function_inside_a_dynamo_region():
    torch, _, _ = dynamo()
    model = fresh_model()
    compiled = torch.compile(model, backend="eager")
    triple = torch.compile(lambda t: t * 3, backend="eager")
    nested = []

    def callback(code):
        if is_dynamo_version_of(code, model):  # reached through Dynamo's evaluator
            nested.append(triple(torch.ones(2)))  # a Dynamo region of its own
        return compile_step(code)

    evalframe.enable(callback)
    try:
        x = torch.arange(3.0)
        results = [compiled(x), compiled(x)]
        if not evalframe.is_enabled():
            evalframe.enable(callback)
        f = make_function()
        assert f(1) == 2 and coextra.holder(f) is not None, "the backend still works after the regions"
    finally:
        evalframe.disable()
    assert all(torch.equal(r, model(x)) for r in results)
    assert len(nested) == 1 and torch.equal(nested[0], torch.full((2,), 3.0))
    # Not asserted: when the nested region ends, Dynamo puts its evaluator back
    # on top (the outer region is still active on the thread), so it sees the
    # rest of that callback (docs/c-api.md).


def test_threads_in_dynamo_regions_with_the_backend_on():
    torch, input_codes, _ = dynamo()
    model = fresh_model()
    compiled = torch.compile(model, backend="eager")
    results = {}

    def worker(k):
        results[k] = [compiled(torch.full((3,), float(k + i))) for i in range(5)]

    evalframe.enable(backend_callback)
    try:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        evalframe.disable()
    for k in range(3):
        for i in range(5):
            assert torch.equal(results[k][i], model(torch.full((3,), float(k + i))))
    assert backend_callback.__code__ not in input_codes and compile_step.__code__ not in input_codes


# --- tracing and profiling ----------------------------------------------------


def traced_code_names(body, *, trace: bool):
    f = make_function()
    names = []

    def tracer(frame, event, arg):
        if event == "call":
            names.append(frame.f_code.co_name)
        return None

    def compile_step(code):
        return helper_in_the_callback(code)

    evalframe.enable(compile_step, trace=trace)
    sys.settrace(tracer)
    try:
        body(f)
    finally:
        sys.settrace(None)
        evalframe.disable()
    return names


def helper_in_the_callback(code):
    return ("compiled", code)


def test_tracers_do_not_see_the_callback_frames_by_default():
    names = traced_code_names(lambda f: f(1), trace=False)
    assert "f" in names
    assert "compile_step" not in names and "helper_in_the_callback" not in names


def test_trace_true_lets_tracers_see_the_callback():
    names = traced_code_names(lambda f: f(1), trace=True)
    assert "compile_step" in names and "helper_in_the_callback" in names


def test_a_raising_tracer_does_not_fail_the_compile():
    f = make_function()
    record = Recorder()

    def tracer(frame, event, arg):
        if frame.f_code is Recorder.__call__.__code__:
            raise RuntimeError("a tracer that fails on the backend's frames")
        return tracer

    evalframe.enable(record)
    sys.settrace(tracer)
    try:
        result = f(1)
    finally:
        sys.settrace(None)
        evalframe.disable()
    assert result == 2 and record.count(f) == 1 and coextra.holder(f) is not None


def test_profilers_do_not_see_the_callback_frames():
    f = make_function()
    names = []

    def profiler(frame, event, arg):
        if event == "call":
            names.append(frame.f_code.co_name)

    evalframe.enable(Recorder())
    sys.setprofile(profiler)
    try:
        f(1)
    finally:
        sys.setprofile(None)
        evalframe.disable()
    assert "f" in names and "__call__" not in names


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is 3.12+")
def test_sys_monitoring_does_not_see_the_callback_frames():
    mon = sys.monitoring
    tool = mon.PROFILER_ID
    f = make_function()
    names = []
    mon.use_tool_id(tool, "coextra-test")
    try:
        mon.register_callback(tool, mon.events.PY_START, lambda code, offset: names.append(code.co_name))
        mon.set_events(tool, mon.events.PY_START)
        evalframe.enable(Recorder())
        try:
            f(1)
        finally:
            evalframe.disable()
            mon.set_events(tool, 0)
    finally:
        mon.register_callback(tool, mon.events.PY_START, None)
        mon.free_tool_id(tool)
    assert "f" in names and "__call__" not in names


def test_the_context_manager_restores_the_trace_option():
    with evalframe.enabled(Recorder(), trace=True):
        assert evalframe.traces_callback()
        with evalframe.enabled(Recorder()):
            assert not evalframe.traces_callback()
        assert evalframe.traces_callback()
    assert not evalframe.is_enabled()


# --- fork() ----------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork with threads (3.12+)
def test_fork_while_another_thread_is_inside_the_callback():
    inside, release = threading.Event(), threading.Event()
    f, g = make_function(), make_function("def g():\n    return 2\n", "g")
    record = Recorder()

    def slow_callback(code):
        if code is f.__code__:
            inside.set()
            release.wait(10)  # releases the GIL with a compile in progress
        return record(code)

    thread = threading.Thread(target=lambda: f(1))
    evalframe.enable(slow_callback)
    try:
        thread.start()
        assert inside.wait(10)

        def child():
            g()  # the parent's compile never ends here: the backend must still work
            return record.count(g) == 1 and coextra.holder(g) is not None

        status = in_child(child)
    finally:
        release.set()
        thread.join()
        evalframe.disable()
    assert status == 0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fork_while_another_thread_is_inside_collect():
    inside, release = threading.Event(), threading.Event()

    class Slow:
        def __del__(self):
            inside.set()
            release.wait(10)  # releases the GIL with a collection running

    def make_garbage_cache():
        f = make_function()
        coextra.attach(f, (f, Slow()))

    make_garbage_cache()
    thread = threading.Thread(target=coextra.collect)
    thread.start()
    try:
        assert inside.wait(10)

        def child():
            make_garbage_cache()
            return coextra.collect() == 1

        status = in_child(child)
    finally:
        release.set()
        thread.join()
    assert status == 0


def test_holders_attached_in_the_parent_work_in_the_child():
    f = make_function()
    entry = coextra.attach(f, ("product", f))
    keep = make_function("def k():\n    return 3\n", "k")
    coextra.attach(keep, "kept")

    def child():
        holder = coextra.holder(f)
        ok = holder is not None and holder.entries == [entry] and holder.lookup() is entry
        del holder
        ok = ok and coextra.detach(f) and coextra.holder(keep).entries[0].product == "kept"
        return ok and coextra.collect() == 0 and len(coextra.holders()) == 1

    assert in_child(child) == 0
    assert coextra.holder(f).entries == [entry]
