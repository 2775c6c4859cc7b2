// ephemeron_state.h -- the state that the maps' own files share
// (ephemeron_map.cpp, which defines it, and ephemeron_generations.cpp);
// everything else reads it through ephemeron_map.h's functions. Per process,
// touched with the GIL held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace coextra::detail {

struct EphemeronMap;

struct EphemeronState {
    // Every live map, borrowed: a map removes itself when it is freed. The
    // collector seeds passes with the keys of their entries.
    std::vector<EphemeronMap *> maps;
    size_t entries = 0;           // in the tables of all maps
    uint64_t added_total = 0;     // entries ever added
    // Over every map's EntryGenerations: addresses listed, and whole-map
    // marks.
    size_t listed = 0;
    size_t whole = 0;
};

extern EphemeronState ephemeron_state;

}  // namespace coextra::detail
