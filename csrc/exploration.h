// exploration.h -- steps 1 and 2 of a collector pass (docs/design.md, "The
// collector"): building the graph of what the seeds reach, pruning on the
// way, and counting for every node the references that explored nodes
// account for.
//
// Works on a Pass (collector_pass.h), which owns every array it fills, and
// owns nothing itself. Runs during the analysis: it holds borrowed pointers
// only, allocates no Python object, changes no reference count and runs no
// Python code (invariant 5), so nothing it reaches can be freed under it.
#pragma once

#include "collector_pass.h"
#include "holder.h"
#include "map_seeds.h"
#include "registry.h"

#include <cstddef>

namespace coextra::detail {

// Explores from the codes of holders[pass.next_seed, end) (the registry's
// table), then from the ephemeron entries `map_cursor` says (their seeds:
// ephemeron_position_seed), which it advances; then settles the deferred
// nodes (LiveStructures): one whose references the graph leaves unexplained
// number no more than those its unexplored part may hold may have died, so
// it is expanded now, and exploration goes on from it -- which can explain
// references of other deferred nodes, so all are looked at again until none
// is expanded. Counts the internal references on the way. False when out of
// memory.
bool explore_and_count(Pass &pass, const HolderTable &holders, size_t end, MapCursor &map_cursor);

}  // namespace coextra::detail
