// generation_pass.h -- the steps of a generation pass over every kind that
// automatic collection keeps in generations (Generations, generations.h):
// the registry's holders, whose runs are slots of the registry's table, and
// each map's entries, whose runs are positions of its table
// (EntryTable::generations). Called by automatic collection and collect();
// the policy is docs/design.md's "Automatic collection".
#pragma once

#include <cstddef>

namespace coextra::detail {

// The steps of a generation pass, for every kind at once: the registry's
// holders (when there is a registry) and the entries of every live map.

// A generation pass begins: it examines every young holder and entry.
void generations_begin_pass();

// It has examined them: each kind ages (Generations::age), its young going
// straight to old as automatic collection decides for that kind (adaptive
// tenuring, auto_collect.h).
void generations_age(bool holders_straight_to_old, bool entries_straight_to_old);

// A pass over every holder and entry found every survivor live: all old.
void generations_all_old();

// Whether some map's entries are young or middle; how many entries the
// generation pass in progress examines, over every map.
bool ephemeron_generations_pending();
size_t ephemeron_generation_seed_count();

}  // namespace coextra::detail
