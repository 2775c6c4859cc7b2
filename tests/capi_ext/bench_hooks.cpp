// bench_hooks.cpp -- the baselines of bench/bench_evalframe.py, built like a
// third-party extension: the public C API header (coextra/coextra.h) and
// compat.h's header-only frame accessors, nothing linked from coextra.
//
//   raw_hook_enable() / raw_hook_disable()
//       A minimal PEP 523 hook: read one raw co_extra pointer of the frame's
//       code (an index of its own) and nothing else, then run the frame with
//       the evaluator that was installed before.
//   counting_hook_enable() / raw_hook_disable(), counting_hook_frames()
//       The same plus a frame counter: "another PEP 523 user" for the tests.
//   recording_hook_enable() / raw_hook_disable(), take_recorded_codes()
//       The same, recording the code of every frame it is given: which frames
//       an evaluator sees. take_recorded_codes() hands the list over and
//       starts a new one (it must not keep code objects alive for others).
//   time_raw_read(code, n) -> ns per read
//       n raw co_extra reads of code.
//   time_capi_holder_of(code, n), time_inline_holder_of(code, n) -> ns per call
//       n holder lookups through the table, and through the header's inline
//       coextra_holder_of() (one co_extra read with the table's index).
//   time_inline_front(code, n) -> ns per check
//       coextra_holder_of() then COEXTRA_API->front(): evalframe's per-frame check.
//   time_capi_find(code, n) -> ns per lookup
//       n C API lookups (find: co_extra read + front entry) of code, the
//       per-frame query of the evalframe backend.
#include <coextra/coextra.h>

#include "compat.h"

#include <ctime>

namespace {

Py_ssize_t raw_index = -1;
coextra::compat::EvalFrameFunction previous = nullptr;
void *volatile sink = nullptr;  // keeps the reads from being optimised away

PyObject *raw_hook(PyThreadState *tstate, coextra::compat::EvalFrame *frame, int throwflag) {
    void *extra = nullptr;
    coextra::compat::code_get_extra(coextra::compat::frame_code(frame), raw_index, &extra);
    sink = extra;
    return previous(tstate, frame, throwflag);
}

unsigned long long counted_frames = 0;

PyObject *counting_hook(PyThreadState *tstate, coextra::compat::EvalFrame *frame, int throwflag) {
    counted_frames++;
    return raw_hook(tstate, frame, throwflag);
}

PyObject *recorded = nullptr;  // list of code objects

PyObject *recording_hook(PyThreadState *tstate, coextra::compat::EvalFrame *frame, int throwflag) {
    // A frame entered to throw has an exception set that the append must not
    // clobber; the tests only ask about frames that run.
    if (!throwflag && PyList_Append(recorded, coextra::compat::frame_code(frame)) < 0) {
        PyErr_WriteUnraisable(nullptr);
    }
    return raw_hook(tstate, frame, throwflag);
}

PyObject *install(coextra::compat::EvalFrameFunction hook) {
    if (previous != nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "a _capi_bench hook is already installed");
        return nullptr;
    }
    previous = coextra::compat::get_eval_frame();
    coextra::compat::set_eval_frame(hook);
    Py_RETURN_NONE;
}

PyObject *raw_hook_enable(PyObject *, PyObject *) { return install(raw_hook); }

PyObject *counting_hook_enable(PyObject *, PyObject *) { return install(counting_hook); }

PyObject *recording_hook_enable(PyObject *, PyObject *) { return install(recording_hook); }

PyObject *take_recorded_codes(PyObject *, PyObject *) {
    PyObject *fresh = PyList_New(0);
    if (fresh == nullptr) {
        return nullptr;
    }
    PyObject *taken = recorded;
    recorded = fresh;
    return taken;
}

PyObject *counting_hook_frames(PyObject *, PyObject *) {
    return PyLong_FromUnsignedLongLong(counted_frames);
}

PyObject *raw_hook_disable(PyObject *, PyObject *) {
    coextra::compat::EvalFrameFunction current = coextra::compat::get_eval_frame();
    if (previous == nullptr) {
        Py_RETURN_NONE;
    }
    if (current != raw_hook && current != counting_hook && current != recording_hook) {
        PyErr_SetString(PyExc_RuntimeError, "another evaluator is installed on top of the hook");
        return nullptr;
    }
    coextra::compat::set_eval_frame(previous);
    previous = nullptr;
    Py_RETURN_NONE;
}

double now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

// Runs op(code) n times; returns the mean time per run in ns.
template <class Op>
PyObject *time_loop(PyObject *args, Op op) {
    PyObject *code;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!n", &PyCode_Type, &code, &n)) {
        return nullptr;
    }
    if (n <= 0) {
        PyErr_SetString(PyExc_ValueError, "n must be positive");
        return nullptr;
    }
    double start = now_ns();
    for (Py_ssize_t i = 0; i < n; i++) {
        op(code);
    }
    return PyFloat_FromDouble((now_ns() - start) / n);
}

PyObject *time_raw_read(PyObject *, PyObject *args) {
    return time_loop(args, [](PyObject *code) {
        void *extra = nullptr;
        coextra::compat::code_get_extra(code, raw_index, &extra);
        sink = extra;
    });
}

PyObject *time_capi_find(PyObject *, PyObject *args) {
    return time_loop(args, [](PyObject *code) {
        PyObject *entry = nullptr;
        COEXTRA_API->find(code, nullptr, nullptr, &entry);
        sink = entry;
        Py_XDECREF(entry);
    });
}

PyObject *time_capi_holder_of(PyObject *, PyObject *args) {
    return time_loop(args, [](PyObject *code) { sink = COEXTRA_API->holder_of(code); });
}

PyObject *time_inline_holder_of(PyObject *, PyObject *args) {
    return time_loop(args, [](PyObject *code) { sink = coextra_holder_of(code); });
}

PyObject *time_inline_front(PyObject *, PyObject *args) {
    return time_loop(args, [](PyObject *code) {
        PyObject *holder = coextra_holder_of(code);
        sink = holder ? COEXTRA_API->front(holder) : nullptr;
    });
}

PyMethodDef methods[] = {
    {"time_inline_front", time_inline_front, METH_VARARGS,
     "time_inline_front(code, n) -> ns per coextra_holder_of + front (evalframe's per-frame check)"},
    {"time_capi_holder_of", time_capi_holder_of, METH_VARARGS,
     "time_capi_holder_of(code, n) -> ns per COEXTRA_API->holder_of(code)"},
    {"time_inline_holder_of", time_inline_holder_of, METH_VARARGS,
     "time_inline_holder_of(code, n) -> ns per coextra_holder_of(code) (inline)"},
    {"raw_hook_enable", raw_hook_enable, METH_NOARGS, "Install the minimal raw co_extra hook."},
    {"counting_hook_enable", counting_hook_enable, METH_NOARGS, "Install the counting hook."},
    {"counting_hook_frames", counting_hook_frames, METH_NOARGS, "Frames the counting hook saw."},
    {"recording_hook_enable", recording_hook_enable, METH_NOARGS, "Install the recording hook."},
    {"take_recorded_codes", take_recorded_codes, METH_NOARGS,
     "The codes of the frames the recording hook saw since the last call."},
    {"raw_hook_disable", raw_hook_disable, METH_NOARGS,
     "Restore the evaluator found at enable, if the hook is still the installed one."},
    {"time_raw_read", time_raw_read, METH_VARARGS, "time_raw_read(code, n) -> ns per read"},
    {"time_capi_find", time_capi_find, METH_VARARGS, "time_capi_find(code, n) -> ns per lookup"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_capi_bench",
                      "Baselines for bench/bench_evalframe.py.", -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__capi_bench() {
    if (coextra_import() < 0) {
        return nullptr;
    }
    recorded = PyList_New(0);
    if (recorded == nullptr) {
        return nullptr;
    }
    raw_index = coextra::compat::request_code_extra_index(nullptr);
    if (raw_index < 0) {
        PyErr_SetString(PyExc_ImportError, "_capi_bench: no co_extra index left");
        return nullptr;
    }
    return PyModule_Create(&module);
}
