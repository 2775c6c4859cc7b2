// generation_pass.cpp -- the steps of a generation pass over every kind
// (generation_pass.h).
#include "generation_pass.h"

#include "ephemeron_map.h"
#include "registry.h"

namespace coextra::detail {

namespace {

// Applies a step to every kind: `holders` to the registry's runs (given the
// number of holders), whose table is then checked, and `map` to each map.
template <typename Holders, typename Entries>
void step_every_kind(Holders holders, Entries entries) {
    if (Registry *r = registry_current()) {
        holders(r->generations, r->holders.size());
        registry_validate(r);
    }
    for (EphemeronMap *m : ephemeron_maps()) {
        entries(m->table.generations(), m->table.end());
        m->table.generations().validate(m->table.end());
    }
}

}  // namespace

void generations_begin_pass() {
    auto begin = [](Generations &g, size_t end) { g.begin_pass(end); };
    step_every_kind(begin, begin);
}

void generations_age(bool holders_straight_to_old, bool entries_straight_to_old) {
    step_every_kind([=](Generations &g, size_t) { g.age(holders_straight_to_old); },
                    [=](Generations &g, size_t) { g.age(entries_straight_to_old); });
}

void generations_all_old() {
    auto all_old = [](Generations &g, size_t end) { g.all_old(end); };
    step_every_kind(all_old, all_old);
}

bool ephemeron_generations_pending() {
    for (const EphemeronMap *m : ephemeron_maps()) {
        if (m->table.generations().pending(m->table.end())) {
            return true;
        }
    }
    return false;
}

size_t ephemeron_generation_seed_count() {
    size_t seeds = 0;
    for (const EphemeronMap *m : ephemeron_maps()) {
        seeds += m->table.generations().in_pass();
    }
    return seeds;
}

}  // namespace coextra::detail
