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

// Cuts g's addresses to [0, end), and its runs with them.
void cut_listed(EntryGenerations &g, size_t end) {
    state.listed -= g.listed.size() - end;
    g.listed.resize(end);
    g.runs.truncate(end);
}

// Gives back the memory of g's list when it is mostly unused. Never fails:
// without memory for a smaller copy the list keeps what it has.
void release_unused(EntryGenerations &g) {
    if (g.listed.empty()) {
        std::vector<uintptr_t>().swap(g.listed);
    } else if (g.listed.size() < g.listed.capacity() / 4) {
        try {
            g.listed.shrink_to_fit();
        } catch (const std::bad_alloc &) {
        }
    }
}

// Drops g's old runs (of addresses and of marks), which a map does not keep.
void drop_old(EntryGenerations &g) {
    size_t old = g.runs.forget_old();
    g.listed.erase(g.listed.begin(), g.listed.begin() + static_cast<ptrdiff_t>(old));
    state.listed -= old;
    size_t old_marks = g.whole.forget_old();
    g.marks -= old_marks;
    state.whole -= old_marks;
    release_unused(g);
    g.runs.validate(g.listed.size());
    g.whole.validate(g.marks);
}

// Drops the stale and repeated addresses of m's young run.
void compact_young(EphemeronMap *m) {
    EntryGenerations &g = *m->generations;
    auto young = g.listed.begin() + static_cast<ptrdiff_t>(g.runs.pass_end);
    std::sort(young, g.listed.end());
    size_t kept = g.runs.pass_end;
    for (size_t i = g.runs.pass_end; i < g.listed.size(); i++) {
        bool repeated = i > g.runs.pass_end && g.listed[i] == g.listed[i - 1];
        if (!repeated && find_by_address(m, g.listed[i]) != nullptr) {
            g.listed[kept++] = g.listed[i];
        }
    }
    cut_listed(g, kept);
    g.compact_at = std::max(kCompactMin, 2 * g.young_listed());
}

}  // namespace

// The young run is compacted whenever it has doubled since it last was, so
// it stays within twice the map's entries (plus kCompactMin) however many
// entries come and go between two generation passes; past a quarter of the
// map it gives way to a mark: the whole map.
bool ephemeron_list_young(EphemeronMap *m, uintptr_t address) {
    try {
        if (m->generations == nullptr) {
            m->generations = new EntryGenerations{};
            m->generations->compact_at = kCompactMin;
        }
        EntryGenerations &g = *m->generations;
        if (g.young_whole()) {
            return true;
        }
        if (g.young_listed() >= g.compact_at) {
            compact_young(m);
        }
        if (g.young_listed() >= std::max(kListMin, m->table.size() / 4)) {
            cut_listed(g, g.runs.pass_end);
            release_unused(g);
            g.marks++;
            state.whole++;
            return true;
        }
        g.listed.push_back(address);
    } catch (const std::bad_alloc &) {
        return false;
    }
    state.listed++;
    return true;
}

void ephemeron_unlist_all(EphemeronMap *m) {
    if (EntryGenerations *g = m->generations) {
        g->runs.all_old(g->listed.size());
        g->whole.all_old(g->marks);
        drop_old(*g);
    }
}

bool ephemeron_generations_pending() { return state.listed != 0 || state.whole != 0; }

void ephemeron_generations_begin_pass(EphemeronMap *m) {
    EntryGenerations *g = m->generations;
    if (g == nullptr) {
        return;
    }
    g->runs.begin_pass(g->listed.size());
    g->whole.begin_pass(g->marks);
    if (g->whole.young_in_pass() != 0) {
        cut_listed(*g, g->runs.middle_end);  // the whole map covers the young run's addresses
        release_unused(*g);
    }
    g->compact_at = kCompactMin;
    g->runs.validate(g->listed.size());
    g->whole.validate(g->marks);
}

void ephemeron_generations_age(EphemeronMap *m, bool straight_to_old) {
    if (EntryGenerations *g = m->generations) {
        g->runs.age(straight_to_old);
        g->whole.age(straight_to_old);
        drop_old(*g);
    }
}

bool ephemeron_generation_whole(const EphemeronMap *m) {
    const EntryGenerations *g = m->generations;
    return g != nullptr && g->whole.in_pass() != 0;
}

size_t ephemeron_generation_seeds(const EphemeronMap *m) {
    const EntryGenerations *g = m->generations;
    return g != nullptr ? g->runs.in_pass() : 0;
}

PyObject *ephemeron_generation_key(const EphemeronMap *m, size_t i) {
    const EntryGenerations *g = m->generations;
    EphemeronEntry *e = find_by_address(m, g->listed[g->runs.old_end + i]);
    return e != nullptr ? e->ref.wr_object : nullptr;
}

}  // namespace coextra::detail
