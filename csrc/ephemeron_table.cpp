// ephemeron_table.cpp -- EntryTable (ephemeron_table.h).
#include "ephemeron_table.h"

#include "ephemeron_entry.h"
#include "page_local_hash.h"

namespace coextra::detail {

namespace {

constexpr size_t kMinIndexSlots = 8;

// Whether `e` (from the index) is the entry of the key at `key_address`.
// The weak reference, not a remembered address: an address alone could name
// a dead key whose callback is pending (CPython cleared the reference).
inline bool is_entry_of(const EphemeronEntry *e, uintptr_t key_address) {
    return e != nullptr && reinterpret_cast<uintptr_t>(e->ref.wr_object) == key_address && e->value != nullptr;
}

}  // namespace

size_t EntryTable::slot_of(uintptr_t key_address) const {
    return index_shift_ < 64 ? page_local_slot(key_address, index_shift_, index_mask_) : 0;
}

// The invariants, as gc.c's validate_list checks its lists: only in builds
// with assertions (the debug and sanitizer builds). validate() is linear in
// the table; it runs where the entry array grows and around an index
// rebuild, which come once per a share of the table's size in inserts, so
// it costs a constant per insert. The others check one entry, with a probe.
//   - the entries: size_ of the positions [0, used_) hold an entry (the rest
//     are holes), used_ <= capacity_, and each entry knows its position;
//   - the index: index_filled_ slots are not kEmpty, and at least one is (a
//     probe ends); probing from a live key's slot reaches its position (no
//     slot is emptied but by a rebuild). Stale slots may name holes, reused
//     positions, or positions past used_ that a trimmed tail had, but never
//     past capacity_; right after a rebuild, every slot names an entry with
//     a live key, one slot per such entry, and an unpinned table has no
//     holes.
#ifdef NDEBUG
void EntryTable::validate(bool) const {}
void EntryTable::validate_inserted(const EphemeronEntry *) const {}
void EntryTable::validate_taken(const EphemeronEntry *, size_t) const {}
#else
bool EntryTable::index_reaches(uintptr_t key_address, size_t position) const {
    for (size_t i = slot_of(key_address);; i = (i + 1) & index_mask_) {
        if (index_[i] == kEmpty) {
            return false;
        }
        if (index_[i] == position) {
            return true;
        }
    }
}

void EntryTable::validate(bool rebuilt) const {
    assert(used_ <= capacity_ && size_ <= used_ && "entry counts out of order");
    size_t entries = 0;
    size_t keyed = 0;
    for (size_t p = 0; p < used_; p++) {
        const EphemeronEntry *e = entries_[p];
        if (e == nullptr) {
            continue;
        }
        entries++;
        assert(e->position == p && "an entry that does not know its position");
        PyObject *key = e->ref.wr_object;
        if (key != Py_None) {
            keyed++;
            assert(index_reaches(reinterpret_cast<uintptr_t>(key), p) && "an entry the index does not find");
        }
    }
    assert(entries == size_ && "size() is not the number of entries");
    runs_.validate(used_);
    assert((!rebuilt || pins_ != 0 || entries == used_) && "holes left in an unpinned table after a rebuild");
    if (index_ == nullptr) {
        assert(used_ == 0 && index_filled_ == 0 && "entries without an index");
        return;
    }
    size_t filled = 0;
    for (size_t i = 0; i <= index_mask_; i++) {
        uint32_t position = index_[i];
        if (position == kEmpty) {
            continue;
        }
        filled++;
        assert(position < capacity_ && "an index slot past the entry array");
        if (rebuilt) {
            assert(position < used_ && "an index slot past the end after a rebuild");
            const EphemeronEntry *e = entries_[position];
            assert(e != nullptr && e->ref.wr_object != Py_None &&
                   "an index slot naming a hole or a dead key after a rebuild");
        }
    }
    assert(filled == index_filled_ && "index_filled_ is not the number of filled slots");
    assert((!rebuilt || filled == keyed) && "index slots and live keys differ in number after a rebuild");
    assert(filled <= index_mask_ && "an index without an empty slot: a probe would not end");
}

void EntryTable::validate_inserted(const EphemeronEntry *entry) const {
    size_t p = entry->position;
    assert(p + 1 == used_ && used_ <= capacity_ && entries_[p] == entry &&
           "an entry not at the end it was appended to");
    assert(size_ <= used_ && "more entries than positions");
    assert(index_filled_ * 3 <= (index_mask_ + 1) * 2 && "an index more than 2/3 full");
    assert(index_reaches(reinterpret_cast<uintptr_t>(entry->ref.wr_object), p) &&
           "an inserted entry the index does not find");
    assert(find(entry->ref.wr_object) == entry && "another entry of the same key");
}

void EntryTable::validate_taken(const EphemeronEntry *entry, size_t p) const {
    assert(entry->position == kNoPosition && "a taken entry that names a position");
    assert((p >= used_ || entries_[p] == nullptr) && "a taken entry still in the table");
    assert(size_ <= used_ && used_ <= capacity_ && "entry counts out of order");
    assert((pins_ != 0 || used_ == 0 || entries_[used_ - 1] != nullptr) && "a trailing hole in an unpinned table");
    PyObject *key = entry->ref.wr_object;
    assert((key == Py_None || find(key) != entry) && "the index still finds a taken entry");
}
#endif

EphemeronEntry *EntryTable::find(PyObject *key) const {
    if (index_ == nullptr) {
        return nullptr;
    }
    auto address = reinterpret_cast<uintptr_t>(key);
    for (size_t i = slot_of(address);; i = (i + 1) & index_mask_) {
        uint32_t position = index_[i];
        if (position == kEmpty) {
            return nullptr;
        }
        // A stale slot may name a position past used_ (the tail was trimmed).
        EphemeronEntry *e = position < used_ ? entries_[position] : nullptr;
        if (is_entry_of(e, address)) {
            return e;
        }
    }
}

int EntryTable::rebuild_index(size_t index_slots) {
    validate(false);  // what the inserts and removals since the last rebuild left
    auto *index = static_cast<uint32_t *>(PyMem_Malloc(index_slots * sizeof(uint32_t)));
    if (index == nullptr) {
        return -1;
    }
    for (size_t i = 0; i < index_slots; i++) {
        index[i] = kEmpty;
    }
    unsigned shift = 64;
    for (size_t s = index_slots; s > 1; s >>= 1) {
        shift--;
    }
    size_t mask = index_slots - 1;
    size_t kept = 0;
    size_t filled = 0;
    // A run's bound moves to where the first entry at or past it goes.
    size_t *bounds[] = {&runs_.old_end, &runs_.middle_end, &runs_.pass_end};
    size_t next_bound = 0;
    const size_t old_bounds[] = {runs_.old_end, runs_.middle_end, runs_.pass_end};
    for (size_t p = 0; p < used_; p++) {
        while (next_bound < 3 && old_bounds[next_bound] == p) {
            *bounds[next_bound++] = kept;
        }
        EphemeronEntry *e = entries_[p];
        if (e == nullptr) {
            if (pins_ != 0) {
                kept++;  // pinned: the hole stays where it is
            }
            continue;
        }
        entries_[kept] = e;
        e->position = kept;
        // A dead key's entry stays (its callback is pending) but is never
        // found, so it needs no slot: its key's address is gone anyway.
        PyObject *key = e->ref.wr_object;
        if (key != Py_None) {
            size_t i = page_local_slot(reinterpret_cast<uintptr_t>(key), shift, mask);
            while (index[i] != kEmpty) {
                i = (i + 1) & mask;
            }
            index[i] = static_cast<uint32_t>(kept);
            filled++;
        }
        kept++;
    }
    for (; next_bound < 3; next_bound++) {
        *bounds[next_bound] = kept;  // at used_
    }
    PyMem_Free(index_);
    index_ = index;
    index_mask_ = mask;
    index_shift_ = shift;
    index_filled_ = filled;
    used_ = kept;
    validate(true);
    return 0;
}

bool EntryTable::grow() {
    // The index stays at most 2/3 full (counting stale slots); rebuilt, it
    // is at most 1/3 full, so it is rebuilt once per as many inserts as the
    // map holds.
    if ((index_filled_ + 1) * 3 > (index_mask_ + 1) * 2 || index_ == nullptr) {
        size_t slots = kMinIndexSlots;
        while (slots < 2 * (size_ + 1)) {
            slots *= 2;
        }
        if (slots - 1 >= kEmpty || rebuild_index(slots) < 0) {
            return false;
        }
    }
    if (used_ < capacity_) {
        return true;
    }
    if (pins_ == 0 && size_ * 4 < used_ * 3) {  // a quarter holes: squeeze them out instead
        return rebuild_index(index_mask_ + 1) == 0;
    }
    // By a quarter: the entry array is a fifth of the table's memory, and
    // growing it moves no entry.
    size_t capacity = used_ + used_ / 4 + 8;
    auto *entries = static_cast<EphemeronEntry **>(PyMem_Realloc(entries_, capacity * sizeof(EphemeronEntry *)));
    if (entries == nullptr) {
        return false;
    }
    entries_ = entries;
    capacity_ = capacity;
    validate(false);
    return true;
}

void EntryTable::insert(EphemeronEntry *entry) {
    size_t position = used_++;
    entries_[position] = entry;
    entry->position = position;
    size_++;
    insertions_++;
    // The first slot on the probe that is empty or stale: one naming this
    // position or one past it is stale (a trimmed tail had it; a live slot
    // names an entry below the old end). Taking it, not the empty slot
    // further on, lets a map emptied from the end (del of every key, popitem)
    // refill without probing past the slots its old keys left, nor filling
    // the index towards a rebuild.
    size_t i = slot_of(reinterpret_cast<uintptr_t>(entry->ref.wr_object));
    while (index_[i] < position) {  // kEmpty is past every position
        i = (i + 1) & index_mask_;
    }
    index_filled_ += index_[i] == kEmpty;
    index_[i] = static_cast<uint32_t>(position);
    validate_inserted(entry);
}

bool EntryTable::take(EphemeronEntry *entry) {
    size_t position = entry->position;
    if (position >= used_ || entries_[position] != entry) {
        return false;
    }
    entries_[position] = nullptr;
    entry->position = kNoPosition;
    size_--;
    // Trailing holes are dropped, so that popping the last entry (popitem)
    // and adding again reuse the same positions.
    while (pins_ == 0 && used_ > 0 && entries_[used_ - 1] == nullptr) {
        used_--;
    }
    runs_.truncate(used_);
    validate_taken(entry, position);
    return true;
}

EphemeronEntry **EntryTable::release(size_t *count) {
    EphemeronEntry **entries = entries_;
    *count = used_;
    for (size_t p = 0; p < used_; p++) {
        if (EphemeronEntry *e = entries[p]) {
            e->position = kNoPosition;
        }
    }
    PyMem_Free(index_);
    EntryTable emptied;
    emptied.insertions_ = insertions_;  // emptied and refilled is not unchanged
    emptied.releases_ = releases_ + 1;
    emptied.pins_ = pins_;
    *this = emptied;
    return entries;
}

void EntryTable::free_arrays() {
    PyMem_Free(entries_);
    PyMem_Free(index_);
    *this = EntryTable();
}

}  // namespace coextra::detail
