// node_rules.h -- which objects the collector's graph (heap_graph.h) makes
// nodes of, and which references of an object it follows: tp_traverse, by
// hand for code objects, and the virtual edges code -> holder and
// key -> ephemeron entry (docs/design.md, "The collector", steps 1 and 2).
//
// Shared by a collector pass (exploration.cpp) and explain(). Functions only,
// owning nothing; they are inline because a pass calls them for every
// reference it meets. The objects they are given are borrowed from the
// analysis that holds them, during which nothing can free them (invariant 5).
#pragma once

#include "compat.h"
#include "ephemeron_map.h"
#include "holder.h"
#include "registry.h"

namespace coextra::detail {

// True while some ephemeron map holds an entry: only then do keys have
// virtual edges to follow (one load per expanded object otherwise).
inline bool ephemeron_entries_exist() { return ephemeron_entry_count() != 0; }

// Whether op may be the key of an ephemeron entry: it has weak references.
inline bool may_be_ephemeron_key(PyObject *op) {
    return ephemeron_entries_exist() && compat::weakrefs_of(op) != nullptr;
}

// Whether op may become a node. Leaves that cannot hold references (str, int:
// not GC objects) and objects the collector always treats as live are never
// nodes, so they cost nothing: a reference they hold is simply unexplained on
// its target, which can only make the target live.
//   - code objects are nodes although they are not GC containers (the point);
//   - module objects and static types stay unexpanded (cheap, never garbage;
//     the exact type check only: PyModule_Check's subtype walk is a
//     measurable share of a pass, and an instance of a module subclass is
//     merely explored), except a module that may be an ephemeron key: a
//     module made at run time can be garbage kept by its own entry;
//   - immortal objects (3.12+) have meaningless reference counts;
//   - the Registry is never a node: its references to holders are already
//     counted as the virtual edges code -> holder. (An ephemeron map is a
//     node, which may be garbage or a key itself, but its references to its
//     entries are likewise the edges key -> entry: visit_referents skips them.)
inline bool is_node_candidate(PyObject *op) {
    if (PyCode_Check(op)) {
        return !compat::is_immortal(op);
    }
    if (!compat::is_gc_object(op) || Py_IS_TYPE(op, &RegistryType)) {
        return false;
    }
    if (PyModule_CheckExact(op) && !may_be_ephemeron_key(op)) {
        return false;
    }
    return !compat::is_immortal(op);
}

// Visits what a code object references for the collector: its co_consts
// (nested code lives there) and, when it has a holder h, the virtual edge to h.
inline void visit_code_referents(PyObject *code, Holder *h, visitproc visit, void *arg) {
    visit(compat::code_consts(code), arg);
    if (h != nullptr) {
        visit(reinterpret_cast<PyObject *>(h), arg);
    }
}

// Visits the virtual edges op -> each ephemeron entry op is the key of; only
// a load while no map holds an entry.
inline void visit_entry_edges(PyObject *op, visitproc visit_entry, void *arg) {
    if (ephemeron_entries_exist()) {
        ephemeron_visit_entries(op, visit_entry, arg);
    }
}

// Visits every reference op holds that the collector knows of: tp_traverse for
// GC objects but an ephemeron map (it references nothing but its entries),
// visit_code_referents for a code object, and the virtual edges to the
// ephemeron entries op is the key of (given to visit_entry). Returns the
// holder of a code object, else NULL.
inline Holder *visit_referents(PyObject *op, visitproc visit, void *arg, visitproc visit_entry) {
    Holder *h = nullptr;
    if (PyCode_Check(op)) {
        h = registry_holder_of(op);
        visit_code_referents(op, h, visit, arg);
    } else if (!Py_IS_TYPE(op, &EphemeronMapType)) {
        Py_TYPE(op)->tp_traverse(op, visit, arg);
    }
    visit_entry_edges(op, visit_entry, arg);
    return h;
}

inline Holder *visit_referents(PyObject *op, visitproc visit, void *arg) {
    return visit_referents(op, visit, arg, visit);
}

}  // namespace coextra::detail
