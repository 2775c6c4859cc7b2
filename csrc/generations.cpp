// generations.cpp -- the steps of a generation pass over every kind
// (generations.h): the registry's holders, whose runs are the registry's
// table itself, and each map's entries (ephemeron_generations.cpp keeps a
// map's runs).
#include "generations.h"

#include "ephemeron_map.h"
#include "registry.h"

namespace coextra::detail {

void generations_begin_pass() {
    if (Registry *r = registry_current()) {
        r->generations.begin_pass(r->holders.size());
        registry_validate(r);
    }
    for (EphemeronMap *m : ephemeron_maps()) {
        ephemeron_generations_begin_pass(m);
    }
}

void generations_age(bool holders_straight_to_old, bool entries_straight_to_old) {
    if (Registry *r = registry_current()) {
        r->generations.age(holders_straight_to_old);
        registry_validate(r);
    }
    for (EphemeronMap *m : ephemeron_maps()) {
        ephemeron_generations_age(m, entries_straight_to_old);
    }
}

void generations_all_old() {
    if (Registry *r = registry_current()) {
        r->generations.all_old(r->holders.size());
        registry_validate(r);
    }
    for (EphemeronMap *m : ephemeron_maps()) {
        ephemeron_unlist_all(m);
    }
}

}  // namespace coextra::detail
