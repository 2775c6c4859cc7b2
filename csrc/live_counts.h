// live_counts.h -- how many Holder, Entry and ephemeron entry objects exist
// right now.
//
// Attached or not: a detached holder still counts until it is freed. Tests and
// stats() use these to prove that objects are really released; they cost one
// increment per allocation and are only touched with the GIL held.
#pragma once

#include <cstdint>

namespace coextra::detail {

// Part of internals (internals.h).
struct LiveCounts {
    int64_t holders = 0;
    int64_t entries = 0;
    int64_t ephemeron_entries = 0;  // ephemeron_map.cpp
};

}  // namespace coextra::detail
