// map_seeds.cpp -- a map scan's place carried from one slice to the next
// (map_seeds.h).
#include "map_seeds.h"

#include "ephemeron_map.h"

#include <algorithm>
#include <vector>

namespace coextra::detail {

MapCursor resume_map_scan(const MapScanCursor &scan, size_t positions) {
    const std::vector<EphemeronMap *> &maps = ephemeron_maps();
    MapCursor cursor{MapSeeds::kAll, std::min(scan.maps_left, maps.size()), scan.position, positions};
    if (cursor.maps_left != 0) {
        const EphemeronMap *m = maps[cursor.maps_left - 1];
        const EntryTable &t = m->table;
        if (cursor.maps_left != scan.maps_left || m != scan.map) {
            cursor.slot = 0;  // another map came to this index
        } else if (t.end() != scan.end + (t.insertions() - scan.insertions)) {
            // Only inserts append positions; any other change of end()
            // squeezed holes out, moving entries down. An entry moved across
            // the cursor is seen twice or waits for the next scan; starting
            // over instead would never end a scan of a table that squeezes
            // between most slices.
            cursor.slot = scan.end == 0 ? 0 : cursor.slot * t.end() / scan.end;
        }
    }
    return cursor;
}

void save_map_scan(const MapCursor &cursor, size_t positions, MapScanCursor *scan) {
    *scan = MapScanCursor{cursor.maps_left, cursor.slot, nullptr, 0, 0, positions - cursor.positions_left};
    if (cursor.maps_left != 0) {
        const EphemeronMap *m = ephemeron_maps()[cursor.maps_left - 1];
        scan->map = m;
        scan->end = m->table.end();
        scan->insertions = m->table.insertions();
    }
}

}  // namespace coextra::detail
