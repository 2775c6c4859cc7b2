/* coextra.h -- the C API of coextra, for native frame-evaluation backends.
 *
 * Include this header (C99 or C++11, or later) and call coextra_import()
 * once, typically in your module's init function. There is nothing to link:
 * the functions come from the extension module coextra._coextra through the
 * PyCapsule "coextra._coextra._C_API", the pattern of NumPy's and datetime's
 * C APIs. The directory to add to your include path is
 * coextra.get_include().
 *
 *     #include <coextra/coextra.h>
 *
 *     PyMODINIT_FUNC PyInit_mybackend(void) {
 *         if (coextra_import() < 0) return NULL;
 *         ...
 *     }
 *
 *     PyObject *holder = COEXTRA_API->ensure(code);
 *
 * Files. coextra_import() sets the table pointer behind COEXTRA_API, and by
 * default each file (translation unit) has its own, private one: a file that
 * uses COEXTRA_API must have called coextra_import() itself. An extension of
 * several files shares one table instead, as NumPy's PY_ARRAY_UNIQUE_SYMBOL
 * does, best from a header of its own that every file includes:
 *
 *     #define COEXTRA_API_UNIQUE_SYMBOL mybackend_coextra_api   // every file
 *     #define COEXTRA_NO_IMPORT        // every file but the one that imports
 *     #include <coextra/coextra.h>
 *
 * The name becomes a global symbol of the extension: make it yours. A file
 * that uses the table before coextra_import() has succeeded for it does not
 * crash: every function then raises RuntimeError naming coextra_import() and
 * returns its failure value (NULL, -1 or 0; closed() returns 1), whatever its
 * description below says about never failing.
 *
 * Code objects. The functions that take `code` (holder_of, ensure, find and
 * the inline coextra_holder_of) take a code object, not a function, a method
 * or a frame: pass PyFunction_GetCode(f) or the frame's code. ensure() raises
 * TypeError for anything else, NULL included; holder_of(), find() and
 * coextra_holder_of() answer "no holder" (NULL, 0) without an exception, so
 * the per-frame path has no type check of its own. (coextra's Python
 * functions, unlike these, accept functions and methods too.)
 *
 * Objects. A holder is the cache of one code object: an ordered list of
 * entries, most recently used first. An entry is one cached product (any
 * object) with an optional Python guard. Both are Python objects
 * (coextra.Holder, coextra.Entry), so they are passed as PyObject*. The
 * functions below do not check their types: pass only holders and entries
 * obtained from this API or from the coextra Python module.
 *
 * Lifetime. coextra's registry owns every attached holder; the code object's
 * co_extra keeps only a non-owning pointer, so products that reference their
 * own code object do not leak (see the README). A borrowed holder stays valid
 * until it is detached: by detach() below, coextra.detach()/reset(), the code
 * object being freed, the cycle collector, or interpreter exit. Any of these
 * can happen whenever Python code runs (a guard, a __del__, a GC pass on
 * 3.10/3.11 allocations), so take a reference (Py_INCREF) to a holder you
 * keep across such calls of your own. The functions below that can run Python
 * code keep the holder they are given alive for their own duration. A
 * detached holder is still a valid container.
 *
 * Threads. Call every function with the GIL held (coextra supports the
 * default, GIL build of CPython only) and from the main interpreter.
 *
 * Versioning. `version` is the ABI version: a change that is not an addition
 * bumps it and coextra_import() then fails with ImportError. New functions are
 * only ever appended, one revision at a time (COEXTRA_CAPI_REVISION below);
 * `table_size` says how large the struct a module exports is, so a module
 * built with a newer header refuses an older coextra that lacks the
 * functions it knows (ImportError naming both sizes), and an older header
 * keeps working with a newer coextra.
 *
 * Ephemeron maps (revision 2). coextra.EphemeronMap maps weakly referenceable
 * keys, by identity, to values; an entry lives exactly as long as its key is
 * reachable from outside the values of ephemeron entries and code caches (see
 * the README). The map_* functions check that `map` is an EphemeronMap
 * (TypeError otherwise) and that a key can be weakly referenced (TypeError).
 */
#ifndef COEXTRA_COEXTRA_H
#define COEXTRA_COEXTRA_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stddef.h>

/* NULL and casts that strict C++ warnings accept
 * (-Wzero-as-null-pointer-constant, -Wold-style-cast), so that including
 * this header adds none to a client's build; CPython's own headers do the
 * same from 3.12. */
#ifdef __cplusplus
#define COEXTRA_NULL nullptr
#define COEXTRA_CAST(type, expression) static_cast<type>(expression)
#else
#define COEXTRA_NULL NULL
#define COEXTRA_CAST(type, expression) ((type)(expression))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define COEXTRA_CAPI_VERSION 1
/* Revision 1: holder_of ... collect. Revision 2: map_new ... map_size.
 * Revision 3: set_max_entries, max_entries. */
#define COEXTRA_CAPI_REVISION 3
#define COEXTRA_CAPSULE_NAME "coextra._coextra._C_API"

/* A native guard: decides whether a cached product applies.
 * Returns 1 (match), 0 (no match) or -1 with an exception set. It may run
 * Python code; it must not assume the holder is unchanged when it returns. */
typedef int (*coextra_guard)(PyObject *product, void *context);

/* Called for each entry by for_each: `entry` and `product` are borrowed for
 * the duration of the call (the iteration holds a reference to every entry).
 * Returns 0 to continue, 1 to stop, -1 with an exception set to abort. */
typedef int (*coextra_visit)(PyObject *entry, PyObject *product, void *context);

typedef struct coextra_CAPI {
    /* COEXTRA_CAPI_VERSION of the module that made this table. */
    unsigned int version;
    /* sizeof(coextra_CAPI) in the module that made this table. */
    size_t table_size;
    /* The co_extra index where coextra keeps its (non-owning) holder pointers,
     * for coextra_holder_of() below. Read-only. */
    Py_ssize_t extra_index;

    /* The holder attached to `code` (a code object), or NULL when there is
     * none, `code` is not a code object, or the caller is not in the main
     * interpreter. Borrowed (the registry owns it; see Lifetime above).
     * Never sets an exception. One co_extra read: cheap enough for every
     * frame. */
    PyObject *(*holder_of)(PyObject *code);

    /* The holder of `code`, created and attached when missing. Borrowed.
     * coextra holds its own reference to `code` while it allocates, so code
     * run meanwhile cannot free it under the call. NULL with an exception
     * set on failure: TypeError when `code` is not a code object,
     * MemoryError, RuntimeError once the interpreter is shutting down (see
     * closed()) or when that code dropped what was the last reference
     * besides coextra's. */
    PyObject *(*ensure)(PyObject *code);

    /* Adds an entry at the front of `holder` (evicting the least recently
     * used one beyond the holder's max_entries). `product` is any object
     * (a new reference is taken); `guard` is NULL, Py_None or a Python
     * callable, stored for Python-level lookups (Holder.lookup) and readable
     * with entry_guard(); native lookups do not call it.
     * Returns a NEW reference to the entry, or NULL with an exception
     * (TypeError when guard is not callable, MemoryError). */
    PyObject *(*add)(PyObject *holder, PyObject *product, PyObject *guard);

    /* The product of `entry`. Borrowed: valid while you hold the entry or it
     * stays in its holder. Never NULL for an entry that is not garbage. */
    PyObject *(*entry_product)(PyObject *entry);

    /* The Python guard of `entry`, or NULL when it has none. Borrowed, as
     * entry_product. */
    PyObject *(*entry_guard)(PyObject *entry);

    /* Finds the first entry, most recently used first, whose product `match`
     * accepts; match == NULL accepts the first entry. The hit moves to the
     * front and its hit count grows by one.
     * Returns 1 with a NEW reference to the entry in *found, 0 (and *found
     * NULL) when nothing matches, -1 with an exception when match failed (the
     * holder is then unchanged). */
    int (*lookup)(PyObject *holder, coextra_guard match, void *context, PyObject **found);

    /* The front (most recently used) entry of `holder`, counting a hit on it,
     * or NULL when the holder is empty. BORROWED and no Python code runs: the
     * cheapest "is there a product" check for a frame evaluator whose entries
     * always apply. The entry stays valid until Python code runs (Py_INCREF it
     * to keep it longer). Never sets an exception. */
    PyObject *(*front)(PyObject *holder);

    /* holder_of(code) then lookup(): the per-frame query in one call.
     * Returns as lookup(); 0 when `code` has no holder or is not a code
     * object. */
    int (*find)(PyObject *code, coextra_guard match, void *context, PyObject **found);

    /* Calls visit for each entry, most recently used first, over a snapshot
     * (visit may change the holder). Returns 0 when every entry was visited,
     * 1 when visit stopped early, -1 with an exception when visit failed or
     * memory ran out. */
    int (*for_each)(PyObject *holder, coextra_visit visit, void *context);

    /* How many entries `holder` has. Never fails. */
    Py_ssize_t (*size)(PyObject *holder);

    /* Removes `entry` from `holder`: 1 when it was there, 0 when it was not.
     * Never sets an exception (dropping the entry may run a __del__, whose
     * errors are reported as unraisable, as for any decref). */
    int (*remove)(PyObject *holder, PyObject *entry);

    /* Removes every entry of `holder`. Never fails. */
    void (*clear)(PyObject *holder);

    /* Detaches `holder` from its code object (the registry drops its
     * reference: a borrowed holder may be freed by this call). Returns 1 when
     * it was attached, 0 when it already was detached. Never fails. */
    int (*detach)(PyObject *holder);

    /* The code object `holder` is attached to, or NULL once detached.
     * Borrowed: valid while the holder stays attached. Never fails. */
    PyObject *(*holder_code)(PyObject *holder);

    /* 1 once interpreter teardown has started (ensure() then refuses new
     * holders: a backend should stop compiling), else 0. Never fails. */
    int (*closed)(void);

    /* Runs the cycle collector over every holder and map entry now
     * (coextra.collect()). Returns how many holders it detached because their
     * code object was reachable only through its own cache, plus how many map
     * entries it removed because their key was reachable only through map
     * values and caches, or -1 with an exception (out of memory). Detaching
     * frees products, so it may run Python code and free any holder you
     * borrowed. Returns 0 when called during a collection. */
    Py_ssize_t (*collect)(void);

    /* Revision 2: ephemeron maps (see "Ephemeron maps" above). */

    /* A new, empty coextra.EphemeronMap (a NEW reference), or NULL with an
     * exception. */
    PyObject *(*map_new)(void);
    /* The value of `key` in `map`: 1 with a NEW reference in *value, 0 (and
     * *value NULL) when missing, -1 with an exception (TypeError). Runs no
     * Python code for a key that can be weakly referenced: cheap enough for
     * every frame. */
    int (*map_get)(PyObject *map, PyObject *key, PyObject **value);
    /* Sets the value of `key` (new references are taken; `value` must not
     * be NULL). 0, or -1 with an exception (TypeError, MemoryError). May run Python code (allocation;
     * the replaced value's __del__). */
    int (*map_set)(PyObject *map, PyObject *key, PyObject *value);
    /* Removes `key`: 1 when it was there, 0 when not, -1 with an exception
     * (TypeError). Dropping the value may run Python code. */
    int (*map_delete)(PyObject *map, PyObject *key);
    /* The number of entries of `map`, or -1 with TypeError. */
    Py_ssize_t (*map_size)(PyObject *map);

    /* Revision 3: a holder's bound (Holder.max_entries in Python). */

    /* Bounds `holder` to `max_entries` entries, 1 to 4294967295, or removes
     * its bound with 0; entries beyond the bound are evicted at once, least
     * recently used first, which may run Python code (a product's __del__).
     * 0, or -1 with ValueError for another value. */
    int (*set_max_entries)(PyObject *holder, Py_ssize_t max_entries);
    /* The bound of `holder`, 0 when it has none. Never fails. */
    Py_ssize_t (*max_entries)(PyObject *holder);
} coextra_CAPI;

/* The table of a file that has not imported (see "Files" above): every
 * function raises RuntimeError naming coextra_import() and returns its
 * failure value, so a forgotten import is an exception, not a NULL
 * dereference. */
static inline void coextra_unimported(const char *function) {
    PyErr_Format(PyExc_RuntimeError,
                 "coextra: %s() was called where coextra_import() has not succeeded (the C API "
                 "table of this file is not set); call coextra_import() in the module's init "
                 "function, and share its table across the files of an extension: #define "
                 "COEXTRA_API_UNIQUE_SYMBOL to one name of yours in every file and "
                 "COEXTRA_NO_IMPORT in all but the file that calls coextra_import()",
                 function);
}
static inline PyObject *coextra_unimported_holder_of(PyObject *code) {
    (void)code;
    coextra_unimported("COEXTRA_API->holder_of");
    return COEXTRA_NULL;
}
static inline PyObject *coextra_unimported_ensure(PyObject *code) {
    (void)code;
    coextra_unimported("COEXTRA_API->ensure");
    return COEXTRA_NULL;
}
static inline PyObject *coextra_unimported_add(PyObject *holder, PyObject *product, PyObject *guard) {
    (void)holder, (void)product, (void)guard;
    coextra_unimported("COEXTRA_API->add");
    return COEXTRA_NULL;
}
static inline PyObject *coextra_unimported_entry_product(PyObject *entry) {
    (void)entry;
    coextra_unimported("COEXTRA_API->entry_product");
    return COEXTRA_NULL;
}
static inline PyObject *coextra_unimported_entry_guard(PyObject *entry) {
    (void)entry;
    coextra_unimported("COEXTRA_API->entry_guard");
    return COEXTRA_NULL;
}
static inline int coextra_unimported_lookup(PyObject *holder, coextra_guard match, void *context,
                                            PyObject **found) {
    (void)holder, (void)match, (void)context;
    *found = COEXTRA_NULL;
    coextra_unimported("COEXTRA_API->lookup");
    return -1;
}
static inline PyObject *coextra_unimported_front(PyObject *holder) {
    (void)holder;
    coextra_unimported("COEXTRA_API->front");
    return COEXTRA_NULL;
}
static inline int coextra_unimported_find(PyObject *code, coextra_guard match, void *context,
                                          PyObject **found) {
    (void)code, (void)match, (void)context;
    *found = COEXTRA_NULL;
    coextra_unimported("COEXTRA_API->find");
    return -1;
}
static inline int coextra_unimported_for_each(PyObject *holder, coextra_visit visit, void *context) {
    (void)holder, (void)visit, (void)context;
    coextra_unimported("COEXTRA_API->for_each");
    return -1;
}
static inline Py_ssize_t coextra_unimported_size(PyObject *holder) {
    (void)holder;
    coextra_unimported("COEXTRA_API->size");
    return -1;
}
static inline int coextra_unimported_remove(PyObject *holder, PyObject *entry) {
    (void)holder, (void)entry;
    coextra_unimported("COEXTRA_API->remove");
    return 0;
}
static inline void coextra_unimported_clear(PyObject *holder) {
    (void)holder;
    coextra_unimported("COEXTRA_API->clear");
}
static inline int coextra_unimported_detach(PyObject *holder) {
    (void)holder;
    coextra_unimported("COEXTRA_API->detach");
    return 0;
}
static inline PyObject *coextra_unimported_holder_code(PyObject *holder) {
    (void)holder;
    coextra_unimported("COEXTRA_API->holder_code");
    return COEXTRA_NULL;
}
/* 1: a backend that checks closed() stops compiling. */
static inline int coextra_unimported_closed(void) {
    coextra_unimported("COEXTRA_API->closed");
    return 1;
}
static inline Py_ssize_t coextra_unimported_collect(void) {
    coextra_unimported("COEXTRA_API->collect");
    return -1;
}
static inline PyObject *coextra_unimported_map_new(void) {
    coextra_unimported("COEXTRA_API->map_new");
    return COEXTRA_NULL;
}
static inline int coextra_unimported_map_get(PyObject *map, PyObject *key, PyObject **value) {
    (void)map, (void)key;
    *value = COEXTRA_NULL;
    coextra_unimported("COEXTRA_API->map_get");
    return -1;
}
static inline int coextra_unimported_map_set(PyObject *map, PyObject *key, PyObject *value) {
    (void)map, (void)key, (void)value;
    coextra_unimported("COEXTRA_API->map_set");
    return -1;
}
static inline int coextra_unimported_map_delete(PyObject *map, PyObject *key) {
    (void)map, (void)key;
    coextra_unimported("COEXTRA_API->map_delete");
    return -1;
}
static inline Py_ssize_t coextra_unimported_map_size(PyObject *map) {
    (void)map;
    coextra_unimported("COEXTRA_API->map_size");
    return -1;
}
static inline int coextra_unimported_set_max_entries(PyObject *holder, Py_ssize_t max_entries) {
    (void)holder, (void)max_entries;
    coextra_unimported("COEXTRA_API->set_max_entries");
    return -1;
}
static inline Py_ssize_t coextra_unimported_max_entries(PyObject *holder) {
    (void)holder;
    coextra_unimported("COEXTRA_API->max_entries");
    return -1;
}

static const coextra_CAPI coextra_unimported_table = {
    COEXTRA_CAPI_VERSION,
    sizeof(coextra_CAPI),
    -1,
    coextra_unimported_holder_of,
    coextra_unimported_ensure,
    coextra_unimported_add,
    coextra_unimported_entry_product,
    coextra_unimported_entry_guard,
    coextra_unimported_lookup,
    coextra_unimported_front,
    coextra_unimported_find,
    coextra_unimported_for_each,
    coextra_unimported_size,
    coextra_unimported_remove,
    coextra_unimported_clear,
    coextra_unimported_detach,
    coextra_unimported_holder_code,
    coextra_unimported_closed,
    coextra_unimported_collect,
    coextra_unimported_map_new,
    coextra_unimported_map_get,
    coextra_unimported_map_set,
    coextra_unimported_map_delete,
    coextra_unimported_map_size,
    coextra_unimported_set_max_entries,
    coextra_unimported_max_entries,
};

/* The table pointer, NULL until coextra_import() succeeds (see "Files"
 * above). COEXTRA_API_EXTERN declares it extern under the name coextra_api,
 * for an extension that defines `const coextra_CAPI *coextra_api = NULL;` in
 * one file itself. */
#if defined(COEXTRA_API_EXTERN) && !defined(COEXTRA_API_UNIQUE_SYMBOL)
#define COEXTRA_API_UNIQUE_SYMBOL coextra_api
#define COEXTRA_NO_IMPORT
#endif

#if defined(COEXTRA_API_UNIQUE_SYMBOL)
#define coextra_api COEXTRA_API_UNIQUE_SYMBOL
#if defined(COEXTRA_NO_IMPORT)
extern const coextra_CAPI *coextra_api;
#else
const coextra_CAPI *coextra_api = COEXTRA_NULL;
#endif
#elif defined(COEXTRA_NO_IMPORT)
#error "coextra: COEXTRA_NO_IMPORT is defined without COEXTRA_API_UNIQUE_SYMBOL; #define COEXTRA_API_UNIQUE_SYMBOL to one name of yours (e.g. mybackend_coextra_api) in every file of the extension, before including coextra/coextra.h"
#else
static const coextra_CAPI *coextra_api = COEXTRA_NULL;
#endif

/* The table: the imported one, or the raising one of a file that has not
 * imported. Never NULL. */
#define COEXTRA_API (coextra_api != COEXTRA_NULL ? coextra_api : &coextra_unimported_table)

/* Imports coextra._coextra and fetches its C API. Returns 0 on success, or -1
 * with ImportError set when the module or the capsule is missing, or when
 * the module's C API version does not match this header. */
static inline int coextra_import(void) {
    const coextra_CAPI *api;
    /* co_extra indices are per interpreter and coextra's registry lives in the
     * main one: refuse here. That covers an extension with multi-phase init,
     * made in the interpreter that imports it; a single-phase one is handed
     * to legacy subinterpreters without running this again (docs/c-api.md). */
    if (PyInterpreterState_Get() != PyInterpreterState_Main()) {
        PyErr_SetString(PyExc_ImportError,
                        "coextra: the C API is available in the main interpreter only");
        return -1;
    }
    api = COEXTRA_CAST(const coextra_CAPI *, PyCapsule_Import(COEXTRA_CAPSULE_NAME, 0));
    if (api == COEXTRA_NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ImportError)) {
            /* PyCapsule_Import raises AttributeError for a missing capsule. */
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyErr_Format(PyExc_ImportError, "coextra: the C API capsule %s is missing (%S)",
                         COEXTRA_CAPSULE_NAME, value ? value : Py_None);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
        }
        return -1;
    }
    if (api->version != COEXTRA_CAPI_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "coextra: C API version %u was built, but this extension needs version %u; "
                     "rebuild it against coextra.get_include()",
                     api->version, COEXTRA_CAST(unsigned int, COEXTRA_CAPI_VERSION));
        return -1;
    }
    if (api->table_size < sizeof(coextra_CAPI)) {
        PyErr_Format(PyExc_ImportError,
                     "coextra: the installed coextra is older than the header this extension was "
                     "built with (C API table of %zu bytes, %zu needed); upgrade coextra",
                     api->table_size, sizeof(coextra_CAPI));
        return -1;
    }
    coextra_api = api;
    return 0;
}

/* holder_of(code) inlined into the caller: one co_extra read, no call into
 * coextra, for the hottest paths (a frame evaluator's per-frame check). Same
 * contract as COEXTRA_API->holder_of (borrowed or NULL, never an exception
 * once imported), and the same answer: coextra clears the slot whenever it
 * detaches a holder, so a non-NULL slot always holds an attached holder.
 * `code` must be a code object (anything else: NULL). Unlike the table's
 * holder_of(), it does not check the interpreter: call it only in the main
 * one (a multi-phase module is never reachable from another; see
 * coextra_import()). (CPython renamed the accessor in 3.12; this header must
 * stand alone.) */
static inline PyObject *coextra_holder_of(PyObject *code) {
    void *holder = COEXTRA_NULL;
    const coextra_CAPI *api = coextra_api;
    if (api == COEXTRA_NULL) {
        coextra_unimported("coextra_holder_of");
        return COEXTRA_NULL;
    }
    if (code == COEXTRA_NULL) {
        return COEXTRA_NULL;
    }
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Code_GetExtra(code, api->extra_index, &holder) < 0) {
#else
    if (_PyCode_GetExtra(code, api->extra_index, &holder) < 0) {
#endif
        PyErr_Clear();
        return COEXTRA_NULL;
    }
    return COEXTRA_CAST(PyObject *, holder);
}

#ifdef __cplusplus
}
#endif

#endif /* COEXTRA_COEXTRA_H */
