// ephemeron_table.h -- EntryTable: one EphemeronMap's entries, found by their
// key's identity.
//
// Laid out as CPython's dict: the entries in insertion order in a dense
// array (a hole where one left), and a compact hash index of 32-bit
// positions into it (open addressing on the key's address, hashed by page:
// page_local_hash.h; linear probing).
// Walking the entries (iteration, the collector's seeding, clear) reads
// memory in order -- entries, and usually their keys, were allocated in
// that order too -- and the index a lookup probes at random is four bytes a
// slot. An entry knows its position, so removing it (its key's callback)
// needs no probe; its index slot stays, pointing at a hole or, once the
// position is reused, at an entry of another key, until the index is next
// rebuilt: probes pass over both. A slot naming a position past the end
// (trimmed off) is known stale without reading the entries: an insert
// takes it.
//
// The map looks most keys up on their own list of weak references instead
// (ephemeron_find_entry); the index serves keys whose list is long or out of
// reach, and inserts.
//
// The table only arranges pointers: it takes, drops and runs nothing, and
// never fails but in grow(). The map (ephemeron_map.cpp) owns the entries.
#pragma once

#include "compat.h"
#include "generations.h"

#include <cstdint>

namespace coextra::detail {

struct EphemeronEntry;

class EntryTable {
public:
    // The entry of `key` whose value is set, or NULL. Runs no code.
    EphemeronEntry *find(PyObject *key) const;

    // Starts reading the index slot where insert(`key`'s entry) will probe
    // first, so that the miss to memory overlaps making the entry.
    void prefetch_insert(PyObject *key) const {
        if (index_ != nullptr) {
            __builtin_prefetch(&index_[slot_of(reinterpret_cast<uintptr_t>(key))]);
        }
    }

    // Room for one more entry; false when out of memory (nothing changed,
    // no exception set).
    bool grow();
    // Appends an entry whose key is alive; grow() made room. Its position
    // is written into the entry.
    void insert(EphemeronEntry *entry);
    // Takes `entry` out if the table holds it (true); no reference moves.
    // Its position becomes kNoPosition.
    bool take(EphemeronEntry *entry);

    // The number of entries, and the positions in use: [0, end()), each an
    // entry or NULL (a hole), in insertion order.
    size_t size() const { return size_; }
    // How many entries were ever inserted: unchanged, no entry came.
    uint64_t insertions() const { return insertions_; }
    size_t end() const { return used_; }
    // Index slots not empty: those naming an entry, and stale ones until the
    // index is next rebuilt.
    size_t index_slots_in_use() const { return index_filled_; }
    EphemeronEntry *at(size_t position) const { return entries_[position]; }

    // Empties the table and hands over its entries: the array (PyMem; NULL
    // for an empty table) and, in *count, how many positions it holds, holes
    // included. Each entry's position becomes kNoPosition.
    EphemeronEntry **release(size_t *count);
    // How many times release() emptied the table: positions read before a
    // change name nothing now.
    uint64_t releases() const { return releases_; }

    // While pinned (an iterator walks the positions; pins count, several may
    // walk at once), an entry never moves and a position is never reused:
    // holes are neither squeezed out nor, at the end, trimmed. So the entries
    // at [0, end()) when an iterator began stay at their positions while they
    // stay in the table, and entries inserted since lie past them.
    void pin() { pins_++; }
    void unpin() { pins_--; }
    // Frees the arrays (the map is going, its entries already released).
    void free_arrays();

    // Automatic collection's generations of the entries, as runs of
    // positions (generations.h): an insert appends at end(), so its entry is
    // young since the generation pass in progress began; a squeeze moves
    // each bound down with the entries (an entry never changes runs); holes
    // trimmed at the end cut the runs; an emptied table has none. The map's
    // generation steps move the bounds (generation_pass.h).
    Generations &generations() { return runs_; }
    const Generations &generations() const { return runs_; }

private:
    static constexpr uint32_t kEmpty = UINT32_MAX;

    size_t slot_of(uintptr_t key_address) const;
    // Rebuilds the index over the entries, holes squeezed out unless pinned;
    // -1 when out of memory (nothing changed).
    int rebuild_index(size_t index_slots);
    // The invariants, checked where the table changes in builds with
    // assertions (ephemeron_table.cpp): all of them after the entry array
    // grows and before and after the index is rebuilt (`rebuilt`: also those
    // a rebuild makes true), those of one entry after it is inserted or taken.
    void validate(bool rebuilt) const;
    void validate_inserted(const EphemeronEntry *entry) const;
    void validate_taken(const EphemeronEntry *entry, size_t position) const;
    // Whether probing from the slot of the key at `key_address` reaches a
    // slot naming `position` before an empty one (for the checks only).
    bool index_reaches(uintptr_t key_address, size_t position) const;

    EphemeronEntry **entries_ = nullptr;  // [0, used_) in use, capacity_ allocated
    size_t capacity_ = 0;
    size_t used_ = 0;
    size_t size_ = 0;
    uint64_t insertions_ = 0;
    uint32_t *index_ = nullptr;  // index_mask_ + 1 slots, kEmpty or a position
    size_t index_mask_ = 0;
    size_t index_filled_ = 0;  // slots not kEmpty
    unsigned index_shift_ = 64;  // 64 - log2(slots)
    uint64_t releases_ = 0;
    size_t pins_ = 0;
    Generations runs_;  // over the positions [0, used_)
};

}  // namespace coextra::detail
