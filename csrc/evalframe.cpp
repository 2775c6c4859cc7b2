// evalframe.cpp -- the PEP 523 backend (see evalframe.h for the contract).
#include "evalframe.h"

#include "capi.h"

#include <pthread.h>
#include <utility>

namespace coextra::detail {

namespace {

PyObject *hook(PyThreadState *tstate, compat::EvalFrame *frame, int throwflag);

// The backend's state: per process, touched with the GIL held.
struct EvalFrameState {
    // Owned (one reference) while enabled, NULL when disabled. Not a Ref:
    // this state is static and outlives the interpreter, whose shutdown
    // disables the backend (lifecycle_shutdown) while it can still release.
    PyObject *callback = nullptr;
    // The evaluator underneath: frames always run with it. Set whenever the
    // hook is installed and never cleared, so a call that reaches the hook
    // after disable (another evaluator's chain) still finds it.
    compat::EvalFrameFunction previous = nullptr;
    // What `previous` becomes when disable() hands the interpreter back to
    // it: the evaluator the hook ran frames with before it was installed over
    // `previous`. If `previous` is an evaluator that had been installed over
    // the hook (and so calls it), frames then flow previous -> hook ->
    // underneath, and again hook -> underneath once that evaluator puts the
    // hook back as it leaves: never into an evaluator that has left.
    compat::EvalFrameFunction underneath = nullptr;
    bool enabled = false;
    bool trace = false;  // enable's `trace`: leave tracing on in the callback
    // A callback is in progress (on any thread). While set, every frame passes
    // through. At most one at a time: a compile starts only while none is in
    // progress, and the GIL serialises the hook.
    bool compiling = false;
    pthread_t compiling_thread{};  // valid while compiling
    // enabled && !compiling.
    bool active = false;
    // active && previous is CPython's default evaluator: the one flag the
    // hook tests per frame on its common path (update_active keeps it).
    bool direct = false;
    // While a callback runs: the evaluator that was the interpreter's when
    // the hook was reached through it, set aside for the callback (the hook is
    // the interpreter's evaluator meanwhile); NULL otherwise.
    compat::EvalFrameFunction above = nullptr;
    // Frames looked up that were not hits (frames = hits + misses).
    uint64_t misses = 0;
    EvalFrameStats stats{};
};

EvalFrameState state;

// The frame this thread's hook is handing to a non-default `previous`. Such
// an evaluator may call the hook again with the same frame (it was installed
// over the hook and chains to what it found): that frame has been looked up
// already, and handing it down again would loop.
thread_local compat::EvalFrame *passing_down = nullptr;

void update_active() {
    state.active = state.enabled && !state.compiling;
    state.direct = state.active && state.previous == compat::default_eval_frame();
}

// Runs the frame with the evaluator underneath.
PyObject *run_previous(compat::EvalFrameFunction previous, PyThreadState *tstate,
                       compat::EvalFrame *frame, int throwflag) {
    if (previous == compat::default_eval_frame()) {
        return previous(tstate, frame, throwflag);  // cannot come back: no bookkeeping
    }
    compat::EvalFrame *outer = passing_down;
    passing_down = frame;
    PyObject *result = previous(tstate, frame, throwflag);
    passing_down = outer;
    return result;
}

// The interpreter's evaluator as the backend's functions see it: while a
// callback runs with the evaluator above set aside, that evaluator.
compat::EvalFrameFunction current_evaluator() {
    compat::EvalFrameFunction current = compat::get_eval_frame();
    return state.above != nullptr && current == hook ? state.above : current;
}

// When another evaluator is the interpreter's (it sits above the hook and
// passed the frame down), makes the hook the interpreter's evaluator for the
// callback: the callback's frames then pass through the hook to `previous`,
// as when the hook is on top, and the evaluator above never sees them (PyTorch
// Dynamo above would otherwise compile the backend's compile step as user
// code). The evaluator is per interpreter, not per thread: while the callback
// releases the GIL, other threads' frames skip the evaluator above too (a
// Dynamo region on another thread runs its frames uncompiled meanwhile). A
// compile is rare (once per code) and other threads' frames are already
// passed through untouched by the backend then, so the callback's isolation
// wins; trace=True (debugging a backend) leaves the evaluator above in place,
// and the callback is then visible to every tool, evaluators included.
void set_aside_evaluator_above() {
    compat::EvalFrameFunction current = compat::get_eval_frame();
    if (current != hook) {
        state.above = current;
        compat::set_eval_frame(hook);
    }
}

// Puts the evaluator above back, unless the interpreter's evaluator changed
// meanwhile (someone installed their own: theirs stays) or enable() took the
// set-aside evaluator as the one to run frames with. Main interpreter only,
// like the rest of coextra; needs no thread state (the fork handler).
void restore_evaluator_above() {
    if (state.above != nullptr) {
        if (compat::get_main_eval_frame() == hook) {
            compat::set_main_eval_frame(state.above);
        }
        state.above = nullptr;
    }
}

// Calls the callback for `code` and stores a non-None result. Returns 0, or -1
// with the callback's (or the store's) exception set.
int compile(PyThreadState *tstate, PyObject *code) {
    const coextra_CAPI *api = coextra_api;
    if (api->closed()) {
        return 0;  // interpreter teardown: never try to store
    }
    // Our own reference: the callback may disable or re-enable the backend,
    // which drops the backend's reference to it. Likewise `suspend` is read
    // once: the callback may change the option.
    Ref callback = Ref::borrow(state.callback);
    bool suspend = !state.trace;
    state.compiling = true;
    state.compiling_thread = pthread_self();
    update_active();
    state.stats.compiles++;
    if (suspend) {
        compat::suspend_tracing(tstate);
        set_aside_evaluator_above();
    }
    Ref product = Ref::steal(PyObject_CallOneArg(callback.get(), code));
    if (suspend) {
        restore_evaluator_above();
        compat::resume_tracing(tstate);
    }
    state.compiling = false;
    update_active();
    callback = Ref();
    if (!product) {
        return -1;
    }
    if (product.get() == Py_None || api->closed()) {
        return 0;
    }
    // Nothing runs between ensure() and add(), and add() keeps the holder
    // alive itself while it allocates (see coextra.h, Lifetime).
    PyObject *holder = api->ensure(code);
    Ref entry = Ref::steal(holder ? api->add(holder, product.get(), nullptr) : nullptr);
    if (!entry) {
        return -1;
    }
    state.stats.stored++;
    return 0;
}

// Everything but a hit with the default evaluator underneath: a miss (the
// compile), the backend off or compiling, a throw, another evaluator
// underneath. Kept out of line so that the common path saves no registers
// for it.
[[gnu::noinline, gnu::cold]] PyObject *hook_slow_path(PyThreadState *tstate, compat::EvalFrame *frame,
                                                      int throwflag) {
    // Read once: a callback may re-enable over another evaluator meanwhile.
    compat::EvalFrameFunction previous = state.previous;
    // passing_down is only ever set for a non-default `previous`.
    if (previous != compat::default_eval_frame() && frame == passing_down) {
        // Back from the evaluator we handed this frame to: run it ourselves.
        return compat::default_eval_frame()(tstate, frame, throwflag);
    }
    // throwflag: the frame is resumed to raise an exception already set
    // (generator.throw); calling Python code now would clobber it.
    if (!state.active || throwflag) {
        state.stats.passthrough++;
        return run_previous(previous, tstate, frame, throwflag);
    }
    PyObject *code = compat::frame_code(frame);
    PyObject *holder = coextra_holder_of(code);
    if (holder != nullptr && coextra_api->front(holder) != nullptr) {
        state.stats.hits++;
        return run_previous(previous, tstate, frame, throwflag);
    }
    state.misses++;
    if (compile(tstate, code) < 0) {
        // Run the frame in "throw" mode: the evaluator raises the pending
        // exception inside the frame, so the frame is unwound and popped by
        // its own evaluator (returning NULL here would leak the 3.11+ frame),
        // as if its first instruction raised.
        return run_previous(previous, tstate, frame, 1);
    }
    return run_previous(previous, tstate, frame, throwflag);
}

PyObject *hook(PyThreadState *tstate, compat::EvalFrame *frame, int throwflag) {
    if (state.direct && !throwflag) {
        // The header's inline holder read, then the table's front(): every
        // entry applies (no guard), so the front one answers; it counts the
        // hit and needs no reference, since nothing runs before the frame does.
        PyObject *holder = coextra_holder_of(compat::frame_code(frame));
        if (holder != nullptr && coextra_api->front(holder) != nullptr) {
            state.stats.hits++;
            return compat::default_eval_frame()(tstate, frame, throwflag);
        }
    }
    return hook_slow_path(tstate, frame, throwflag);
}

}  // namespace

void evalframe_enable(PyObject *callback, bool trace) {
    // This file's copy of the header's table pointer, which coextra_holder_of
    // reads: the backend goes through the C API as a third party does.
    coextra_api = capi_table();
    compat::EvalFrameFunction current = current_evaluator();
    if (current != hook) {
        state.underneath = state.previous ? state.previous : compat::default_eval_frame();
        state.previous = current ? current : compat::default_eval_frame();
        compat::set_eval_frame(hook);
        state.above = nullptr;  // the hook is on top of it now: nothing to put back
    }
    // Released last: its release may run a __del__, which sees the new state.
    Ref old = Ref::steal(std::exchange(state.callback, Py_NewRef(callback)));
    state.trace = trace;
    state.enabled = true;
    update_active();
}

void evalframe_disable() {
    if (current_evaluator() == hook) {
        compat::set_eval_frame(state.previous);
        state.previous = state.underneath;
    }
    state.enabled = false;
    update_active();  // also after `previous` changed
    Ref old = Ref::steal(std::exchange(state.callback, nullptr));
}

bool evalframe_is_enabled() { return state.enabled && current_evaluator() == hook; }

PyObject *evalframe_callback() { return state.callback; }

bool evalframe_traces_callback() { return state.trace; }

EvalFrameStats evalframe_stats() {
    EvalFrameStats stats = state.stats;
    stats.frames = stats.hits + state.misses;  // one counter less per frame
    return stats;
}

void evalframe_reset_stats() {
    state.stats = EvalFrameStats{};
    state.misses = 0;
}

void evalframe_after_fork_child() {
    // The forking thread is the child's only thread; a compile of its own
    // (a callback that forks) goes on and finishes normally in the child.
    if (state.compiling && !pthread_equal(state.compiling_thread, pthread_self())) {
        state.compiling = false;
        update_active();
        restore_evaluator_above();
    }
}

}  // namespace coextra::detail
