// lifecycle.cpp -- start-up, shutdown and fork, in their order (lifecycle.h).
#include "lifecycle.h"

#include "auto_collect.h"
#include "collector.h"
#include "ephemeron_map.h"
#include "evalframe.h"
#include "include/coextra/ref.hpp"
#include "registry.h"

#include <pthread.h>

namespace coextra::detail {

namespace {

// The fork handler and the atexit callback are registered (once per process).
bool process_hooks = false;

// fork() copies the process with only the forking thread. State that another
// thread had mid-flight (a collector pass, an evalframe compile, each of which
// can release the GIL in Python code) would stay "in progress" forever in the
// child; pthread_atfork covers os.fork() and forks from C alike. The handlers
// touch plain C state only, as a fork handler must.
void after_fork_child() {
    collector_after_fork_child();
    evalframe_after_fork_child();
}

PyObject *shutdown_at_exit(PyObject *, PyObject *) {
    lifecycle_shutdown();
    Py_RETURN_NONE;
}

PyMethodDef shutdown_def = {"_coextra_shutdown", shutdown_at_exit, METH_NOARGS,
                            "Switch coextra's evalframe backend off and detach every holder "
                            "(registered with atexit)."};

int register_shutdown_at_exit() {
    Ref atexit = Ref::steal(PyImport_ImportModule("atexit"));
    if (!atexit) {
        return -1;
    }
    Ref callback = Ref::steal(PyCFunction_New(&shutdown_def, nullptr));
    Ref result = callback ? Ref::steal(PyObject_CallMethod(atexit.get(), "register", "O", callback.get())) : Ref();
    return result ? 0 : -1;
}

}  // namespace

PyObject *lifecycle_start() {
    Ref registry = Ref::steal(registry_init());
    if (!registry || ephemeron_types_ready() < 0 || auto_collect_set(true) < 0) {
        return nullptr;
    }
    if (!process_hooks) {
        if (pthread_atfork(nullptr, nullptr, after_fork_child) != 0) {
            PyErr_SetString(PyExc_ImportError, "coextra: pthread_atfork failed (out of memory)");
            return nullptr;
        }
        if (register_shutdown_at_exit() < 0) {
            return nullptr;
        }
        process_hooks = true;
    }
    return registry.release();
}

void lifecycle_shutdown() {
    evalframe_disable();
    registry_teardown();
    collector_release_scratch();
}

}  // namespace coextra::detail
