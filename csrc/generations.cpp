// generations.cpp -- the steps of a generation pass over every kind
// (generations.h): the registry's holders, whose runs are the registry's
// table itself, and each map's entries (ephemeron_generations.cpp keeps a
// map's runs).
#include "generations.h"

#include "ephemeron_map.h"
#include "registry.h"

namespace coextra::detail {

namespace {

// Applies a step to every kind: `holders` to the registry's runs (given the
// number of holders), whose table is then checked, and `map` to each map.
template <typename Holders, typename Map>
void step_every_kind(Holders holders, Map map) {
    if (Registry *r = registry_current()) {
        holders(r->generations, r->holders.size());
        registry_validate(r);
    }
    for (EphemeronMap *m : ephemeron_maps()) {
        map(m);
    }
}

}  // namespace

void generations_begin_pass() {
    step_every_kind([](Generations &g, size_t end) { g.begin_pass(end); }, ephemeron_generations_begin_pass);
}

void generations_age(bool holders_straight_to_old, bool entries_straight_to_old) {
    step_every_kind([=](Generations &g, size_t) { g.age(holders_straight_to_old); },
                    [=](EphemeronMap *m) { ephemeron_generations_age(m, entries_straight_to_old); });
}

void generations_all_old() {
    step_every_kind([](Generations &g, size_t end) { g.all_old(end); }, ephemeron_unlist_all);
}

}  // namespace coextra::detail
