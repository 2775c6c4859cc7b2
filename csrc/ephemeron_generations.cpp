// ephemeron_generations.cpp -- automatic collection's generations of the
// maps' entries (EntryGenerations, ephemeron_map.h).
#include "ephemeron_map.h"
#include "ephemeron_state.h"

#include <algorithm>
#include <new>

namespace coextra::detail {

namespace {

constexpr EphemeronState &state = ephemeron_state;

// The entry whose live key is at `address`, or NULL. Runs no code.
EphemeronEntry *find_by_address(const EphemeronMap *m, uintptr_t address) {
    return ephemeron_usable(m->table.find(reinterpret_cast<PyObject *>(address)));
}

constexpr size_t kCompactMin = 64;
constexpr size_t kListMin = 64;

void forget(EntryGeneration &generation) {
    state.listed -= generation.listed.size();
    std::vector<uintptr_t>().swap(generation.listed);  // its memory too
    if (generation.whole) {
        state.whole--;
        generation.whole = false;
    }
}

void set_whole(EntryGeneration &generation) {
    forget(generation);
    generation.whole = true;
    state.whole++;
}

// Drops the stale and repeated addresses of m's young list.
void compact_young(EphemeronMap *m) {
    std::vector<uintptr_t> &young = m->generations->young.listed;
    std::sort(young.begin(), young.end());
    size_t kept = 0;
    for (size_t i = 0; i < young.size(); i++) {
        bool repeated = i > 0 && young[i] == young[i - 1];
        if (!repeated && find_by_address(m, young[i]) != nullptr) {
            young[kept++] = young[i];
        }
    }
    state.listed -= young.size() - kept;
    young.resize(kept);
    m->generations->compact_at = std::max(kCompactMin, 2 * kept);
}

// Lists a new entry's key address as young; false when out of memory. The
// young list is compacted whenever it has doubled since it last was, so it
// stays within twice the map's entries (plus kCompactMin) however many
// entries come and go between two generation passes; past a quarter of the
// map it gives way to the whole map.
}  // namespace

bool ephemeron_list_young(EphemeronMap *m, uintptr_t address) {
    try {
        if (m->generations == nullptr) {
            m->generations = new EntryGenerations{{}, {}, {}, kCompactMin};
        }
        EntryGeneration &young = m->generations->young;
        if (young.whole) {
            return true;
        }
        if (young.listed.size() >= m->generations->compact_at) {
            compact_young(m);
        }
        if (young.listed.size() >= std::max(kListMin, m->table.size() / 4)) {
            set_whole(young);
            return true;
        }
        young.listed.push_back(address);
    } catch (const std::bad_alloc &) {
        return false;
    }
    state.listed++;
    return true;
}

// Forgets m's generations (its table is empty, or the map is going).
void ephemeron_unlist_all(EphemeronMap *m) {
    if (EntryGenerations *g = m->generations) {
        forget(g->young);
        forget(g->examined);
        forget(g->middle);
    }
}

bool ephemeron_generations_pending() { return state.listed != 0 || state.whole != 0; }

void ephemeron_begin_generation_pass() {
    for (EphemeronMap *m : state.maps) {
        EntryGenerations *g = m->generations;
        if (g == nullptr) {
            continue;
        }
        // `examined` is empty unless a pass was abandoned: its entries join.
        // Without memory for both lists, the whole map is examined.
        std::vector<uintptr_t> &examined = g->examined.listed;
        bool whole = g->young.whole || g->examined.whole;
        if (!whole && examined.empty()) {
            examined.swap(g->young.listed);
        } else if (!whole) {
            try {
                examined.insert(examined.end(), g->young.listed.begin(), g->young.listed.end());
                std::vector<uintptr_t>().swap(g->young.listed);  // moved: still counted as listed
            } catch (const std::bad_alloc &) {
                whole = true;
            }
        }
        if (whole) {
            set_whole(g->examined);
        }
        forget(g->young);  // what is left of it: nothing, or a list the whole map covers
        g->compact_at = kCompactMin;
    }
}

void ephemeron_age_generations(bool straight_to_old) {
    for (EphemeronMap *m : state.maps) {
        if (EntryGenerations *g = m->generations) {
            forget(g->middle);
            if (straight_to_old) {
                forget(g->examined);
            } else {
                std::swap(g->middle, g->examined);
            }
        }
    }
}

void ephemeron_all_old() {
    for (EphemeronMap *m : state.maps) {
        ephemeron_unlist_all(m);
    }
}

bool ephemeron_generation_whole(const EphemeronMap *m) {
    const EntryGenerations *g = m->generations;
    return g != nullptr && (g->middle.whole || g->examined.whole);
}

size_t ephemeron_generation_seeds(const EphemeronMap *m) {
    const EntryGenerations *g = m->generations;
    return g != nullptr ? g->middle.listed.size() + g->examined.listed.size() : 0;
}

PyObject *ephemeron_generation_key(const EphemeronMap *m, size_t i) {
    const EntryGenerations *g = m->generations;
    size_t middle = g->middle.listed.size();
    uintptr_t address = i < middle ? g->middle.listed[i] : g->examined.listed[i - middle];
    EphemeronEntry *e = find_by_address(m, address);
    return e != nullptr ? e->ref.wr_object : nullptr;
}

}  // namespace coextra::detail
