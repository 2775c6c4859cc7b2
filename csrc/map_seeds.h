// map_seeds.h -- which ephemeron map entries seed a collector pass (each by
// its key or its value: ephemeron_position_seed), and where that seeding
// stands: MapCursor inside a pass, MapScanCursor between the slices of a map
// scan.
//
// Plain values, owned by whoever holds them: a MapCursor by the pass that
// seeds from it (collector.cpp), a MapScanCursor by automatic collection
// (auto_collect.h) or a test. Neither points into a map: a map is named by its
// index in ephemeron_maps() (and compared by address), a table position by
// its number, so a map freed between two slices leaves nothing dangling.
#pragma once

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

// Which ephemeron map entries a pass also seeds: none, those of the
// entries' generations a generation pass examines (ephemeron_map.h), or every
// entry (a map scan).
enum class MapSeeds { kNo, kGenerations, kAll };

// Where a sliced walk over map entries goes on between its slices: a map
// scan's over every entry (seeds kAll), or a generation pass's over the
// entries it examines (seeds kGenerations). Maps are walked from the last of
// ephemeron_maps() down (a freed map's index gets the last map, which is
// then scanned again, never skipped; maps made meanwhile are not scanned),
// each table from its first position up (kAll) or from the youngest
// position of the generation pass down (kGenerations, as the pass's holders
// are). `maps_left` counts the maps not finished: the current one is
// maps[maps_left - 1]. `map`, `end` and `insertions` are that map's and its
// table's when the previous slice ended, compared only (`map` is never
// dereferenced): another map at that index makes the scan start its table
// over; a table that squeezed its holes out, go on at the same share of it
// (an entry moved across the cursor waits for the next scan). `end` is the
// length of what is walked in that table: every position (kAll), or the
// positions the generation pass examines (kGenerations). `visited` is how
// many positions the latest slice walked: fewer than it was given when the
// walk ended.
struct MapScanCursor {
    MapSeeds seeds = MapSeeds::kAll;
    size_t maps_left = 0;
    size_t position = 0;
    const void *map = nullptr;
    size_t end = 0;
    uint64_t insertions = 0;
    size_t visited = 0;
};

// Where seeding from the ephemeron maps goes on within a pass: the maps of
// ephemeron_maps() not finished, from the last down (the current one is
// maps[maps_left - 1]; MapScanCursor says why down), and a position of its
// table (MapSeeds::kAll) or an index of its generations' seeds
// (MapSeeds::kGenerations).
struct MapCursor {
    MapSeeds seeds = MapSeeds::kNo;
    size_t maps_left = 0;
    size_t slot = 0;
    size_t positions_left = SIZE_MAX;  // what a slice of a map scan may still visit
};

inline bool more_map_seeds(const MapCursor &cursor) { return cursor.maps_left != 0 && cursor.positions_left != 0; }

// A walk over the entries `seeds` names (kAll or kGenerations), not begun.
MapScanCursor start_map_walk(MapSeeds seeds);

// Where a slice of a map scan begins, allowed `positions` table positions:
// where the previous one ended; at the first position of that map's table
// when another map came to its index; at the same share of the table when
// the table squeezed its holes out meanwhile.
MapCursor resume_map_scan(const MapScanCursor &scan, size_t positions);

// Where the slice that resumed with `positions` ended, for the next one.
// Called before anything is detached: detaching may free maps.
void save_map_scan(const MapCursor &cursor, size_t positions, MapScanCursor *scan);

}  // namespace coextra::detail
