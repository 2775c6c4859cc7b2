// live_counts.h -- how many ephemeron entry objects exist right now.
//
// Tests and stats() use it to prove that entries are really released; it costs
// one increment per allocation and is only touched with the GIL held.
#pragma once

#include <cstdint>

namespace coextra::detail {

// Part of internals (internals.h).
struct LiveCounts {
    int64_t ephemeron_entries = 0;  // ephemeron_map.cpp
};

}  // namespace coextra::detail
