// chunk_seeds.h -- ChunkSeeds: the seeds of a collector pass's current chunk,
// the codes it adds together and explores before adding the next.
//
// Owned by its Pass (collector_pass.h), a fixed table inside it; kept from
// one chunk to the next, and from pass to pass, since an entry of an older
// chunk counts as empty. Its code and holder pointers are borrowed: the
// holders are attached and owned by the registry, and nothing can detach or
// free them while the analysis runs (docs/design.md, invariant 5).
#pragma once

#include "compat.h"
#include "holder.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace coextra::detail {

// Seeds are added a chunk at a time, each chunk explored before the next is
// added: a code object is then expanded soon after it was added, and so is
// what its cache leads to, while their cache lines are still in the CPU cache.
// Adding every seed first (plain breadth first) would read each code object
// twice from memory once the heap outgrows the caches. The order of
// exploration does not change the graph a pass builds, only (when the budget
// runs out) which part of it.
constexpr size_t kSeedChunk = 256;

// The codes of the current chunk of seeds, with their holders and nodes. A
// pass asks two things of nearly every seed: which node is this code (when a
// function's reference to it is found) and which is its holder (when it is
// traversed). co_extra answers both, but through the code's co_extra line
// and its extras array: two more lines per holder, cold once the heap
// outgrows the CPU caches. This table (12 KiB, cache resident) answers them
// for the current chunk; a code it does not have (an older chunk's, or no
// seed) is asked of co_extra.
// Each entry carries the chunk it was added in and entries of other chunks
// count as empty, so a new chunk clears nothing.
class ChunkSeeds {
public:
    struct Seed {
        PyObject *code;  // borrowed, like its holder: analysis runs no code (heap_graph.h)
        Holder *holder;  // attached, owned by the registry
        uint32_t node;
        uint32_t chunk;
    };

    void start_chunk() {
        if (++chunk_ == 0) {  // wrapped around: entries left from chunk 0 would look current
            std::memset(static_cast<void *>(slots_), 0, sizeof slots_);
            chunk_ = 1;
        }
    }

    // At most kSeedChunk adds per chunk, so half the slots stay empty and
    // every probe ends.
    void add(PyObject *code, Holder *holder, uint32_t node) {
        size_t i = slot_of(code);
        while (slots_[i].chunk == chunk_ && slots_[i].code != code) {
            i = (i + 1) & (kSlots - 1);
        }
        slots_[i] = Seed{code, holder, node, chunk_};
    }

    const Seed *find(PyObject *code) const {
        for (size_t i = slot_of(code);; i = (i + 1) & (kSlots - 1)) {
            const Seed &seed = slots_[i];
            if (seed.chunk != chunk_) {
                return nullptr;
            }
            if (seed.code == code) {
                return &seed;
            }
        }
    }

private:
    static constexpr int kBits = 9;
    static constexpr size_t kSlots = size_t{1} << kBits;
    static_assert(kSlots >= 2 * kSeedChunk, "the table must stay at most half full");

    static size_t slot_of(PyObject *code) {
        return static_cast<size_t>((reinterpret_cast<uintptr_t>(code) >> 4) * 0x9E3779B97F4A7C15ull >>
                                   (64 - kBits));
    }

    Seed slots_[kSlots] = {};
    uint32_t chunk_ = 1;  // the zeroed slots belong to chunk 0: empty
};

}  // namespace coextra::detail
