/* example_backend.h -- included by every file of example_backend, before
 * anything else: the files share one coextra C API table, which module.c
 * imports (coextra/coextra.h, "Files"). The symbol name is ours alone. */
#ifndef EXAMPLE_BACKEND_H
#define EXAMPLE_BACKEND_H

#define COEXTRA_API_UNIQUE_SYMBOL example_backend_coextra_api
#include <coextra/coextra.h>

/* cache.c: the module's functions (module.c lists them). */
PyObject *example_remember(PyObject *self, PyObject *args);
PyObject *example_recall(PyObject *self, PyObject *args);
PyObject *example_keys(PyObject *self, PyObject *f);
PyObject *example_forget(PyObject *self, PyObject *args);
PyObject *example_clear(PyObject *self, PyObject *f);
PyObject *example_detach(PyObject *self, PyObject *f);
PyObject *example_size(PyObject *self, PyObject *f);

#endif /* EXAMPLE_BACKEND_H */
