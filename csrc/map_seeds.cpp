// map_seeds.cpp -- a map scan's place carried from one slice to the next
// (map_seeds.h).
#include "map_seeds.h"

#include "ephemeron_map.h"

#include <algorithm>
#include <vector>

namespace coextra::detail {

namespace {

// How many positions of t a walk seeding `seeds` goes through.
size_t walked_length(const EntryTable &t, MapSeeds seeds) {
    return seeds == MapSeeds::kGenerations ? t.generations().in_pass() : t.end();
}

}  // namespace

MapScanCursor start_map_walk(MapSeeds seeds) {
    MapScanCursor walk;
    walk.seeds = seeds;
    walk.maps_left = ephemeron_maps().size();
    return walk;
}

MapCursor resume_map_scan(const MapScanCursor &scan, size_t positions) {
    const std::vector<EphemeronMap *> &maps = ephemeron_maps();
    MapCursor cursor{scan.seeds, std::min(scan.maps_left, maps.size()), scan.position, positions};
    if (cursor.maps_left != 0) {
        const EphemeronMap *m = maps[cursor.maps_left - 1];
        const EntryTable &t = m->table;
        size_t length = walked_length(t, scan.seeds);
        // Inserts append positions past those a generation pass examines,
        // and to those a map scan walks.
        size_t appended = scan.seeds == MapSeeds::kAll ? t.insertions() - scan.insertions : 0;
        if (cursor.maps_left != scan.maps_left || m != scan.map) {
            cursor.slot = 0;  // another map came to this index
        } else if (length != scan.end + appended) {
            // Any other change of the length squeezed holes out, moving
            // entries down. An entry moved across the cursor is seen twice
            // or waits for the next walk; starting over instead would never
            // end a walk over a table that squeezes between most slices.
            cursor.slot = scan.end == 0 ? 0 : cursor.slot * length / scan.end;
        }
    }
    return cursor;
}

void save_map_scan(const MapCursor &cursor, size_t positions, MapScanCursor *scan) {
    *scan = MapScanCursor{cursor.seeds, cursor.maps_left, cursor.slot, nullptr, 0, 0,
                          positions - cursor.positions_left};
    if (cursor.maps_left != 0) {
        const EphemeronMap *m = ephemeron_maps()[cursor.maps_left - 1];
        scan->map = m;
        scan->end = walked_length(m->table, cursor.seeds);
        scan->insertions = m->table.insertions();
    }
}

}  // namespace coextra::detail
