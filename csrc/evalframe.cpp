// evalframe.cpp -- the PEP 523 backend (see evalframe.h for the contract).
#include "evalframe.h"

#include "capi.h"

namespace coextra {

namespace {

struct State {
    // Owned (one reference) while enabled, NULL when disabled.
    PyObject *callback = nullptr;
    // The evaluator underneath: frames always run with it. Set when the hook
    // is installed and kept while the hook can still be called (even after
    // disable), so an in-flight or chained call never finds it NULL.
    compat::EvalFrameFunction previous = nullptr;
    bool enabled = false;
    // The hook is the interpreter's evaluator or in another evaluator's chain.
    bool installed = false;
    // Callbacks in progress, on any thread. While non-zero every frame passes
    // through: the GIL serialises the hook, so a plain counter is enough, and a
    // callback that releases the GIL cannot let another thread recurse in.
    int compiling = 0;
    // enabled && compiling == 0: the one flag the hook tests per frame.
    bool active = false;
    // Frames looked up that were not hits (frames = hits + misses).
    uint64_t misses = 0;
    // The C API table, the one third parties get through the capsule.
    const coextra_CAPI *api = nullptr;
    EvalFrameStats stats{};
};

State state;

void update_active() { state.active = state.enabled && state.compiling == 0; }

// Calls the callback for `code` and stores a non-None result. Returns 0, or -1
// with the callback's (or the store's) exception set.
int compile(PyObject *code) {
    const coextra_CAPI *api = state.api;
    if (api->closed()) {
        return 0;  // interpreter teardown: never try to store
    }
    // Our own reference: the callback may disable or re-enable the backend,
    // which drops the backend's reference to it.
    PyObject *callback = Py_NewRef(state.callback);
    state.compiling++;
    update_active();
    state.stats.compiles++;
    PyObject *product = PyObject_CallOneArg(callback, code);
    state.compiling--;
    update_active();
    Py_DECREF(callback);
    if (product == nullptr) {
        return -1;
    }
    int result = 0;
    if (product != Py_None && !api->closed()) {
        // Nothing runs between ensure() and add(), and add() keeps the holder
        // alive itself while it allocates (see coextra.h, Lifetime).
        PyObject *holder = api->ensure(code);
        PyObject *entry = holder ? api->add(holder, product, nullptr) : nullptr;
        if (entry == nullptr) {
            result = -1;
        } else {
            state.stats.stored++;
            Py_DECREF(entry);
        }
    }
    Py_DECREF(product);
    return result;
}

PyObject *hook(PyThreadState *tstate, compat::EvalFrame *frame, int throwflag) {
    compat::EvalFrameFunction previous = state.previous;
    // throwflag: the frame is resumed to raise an exception already set
    // (generator.throw); calling Python code now would clobber it.
    if (!state.active || throwflag) {
        state.stats.passthrough++;
        return previous(tstate, frame, throwflag);
    }
    PyObject *code = compat::frame_code(frame);
    // The header's inline holder read, then the table's front(): every entry
    // applies (no guard), so the front one answers; it counts the hit and
    // needs no reference, since nothing runs before the frame does.
    PyObject *holder = coextra_holder_of(code);
    if (holder != nullptr && state.api->front(holder) != nullptr) {
        state.stats.hits++;
        return previous(tstate, frame, throwflag);
    }
    state.misses++;
    if (compile(code) < 0) {
        // Run the frame in "throw" mode: the evaluator raises the pending
        // exception inside the frame, so the frame is unwound and popped by
        // its own evaluator (returning NULL here would leak the 3.11+ frame),
        // as if its first instruction raised.
        return previous(tstate, frame, 1);
    }
    return previous(tstate, frame, throwflag);
}

}  // namespace

int evalframe_enable(PyObject *callback) {
    if (!PyCallable_Check(callback)) {
        PyErr_Format(PyExc_TypeError, "evalframe.enable: callback must be callable, not '%.200s'",
                     Py_TYPE(callback)->tp_name);
        return -1;
    }
    state.api = capi_table();
    coextra_api = state.api;  // this file's copy of the header's table pointer (coextra_holder_of)
    if (!state.installed) {
        compat::EvalFrameFunction current = compat::get_eval_frame();
        state.previous = current ? current : compat::default_eval_frame();
        compat::set_eval_frame(hook);
        state.installed = true;
    }
    PyObject *old = state.callback;
    state.callback = Py_NewRef(callback);
    state.enabled = true;
    update_active();
    Py_XDECREF(old);  // last: may run a __del__ that sees the new state
    return 0;
}

void evalframe_disable() {
    if (state.installed && compat::get_eval_frame() == hook) {
        compat::set_eval_frame(state.previous);
        state.installed = false;
    }
    state.enabled = false;
    update_active();
    PyObject *old = state.callback;
    state.callback = nullptr;
    Py_XDECREF(old);
}

bool evalframe_is_enabled() { return state.enabled; }

PyObject *evalframe_callback() { return state.callback; }

EvalFrameStats evalframe_stats() {
    EvalFrameStats stats = state.stats;
    stats.frames = stats.hits + state.misses;  // one counter less per frame
    return stats;
}

void evalframe_reset_stats() {
    state.stats = EvalFrameStats{};
    state.misses = 0;
}

}  // namespace coextra
