// page_local_hash.h -- the slot of an object's address in an open-addressing
// table of 2^k slots with linear probing: the collector's address index
// (address_index.h) and an EphemeronMap's index (ephemeron_table.h) hash by it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace coextra::detail {

// Page-local hashing: the 4 KiB page an object lives on picks a random run
// of 256 slots (Fibonacci hashing of the page number: the product's top
// bits), and its place on the page (objects are 16-byte aligned) its slot in
// that run. Objects allocated together -- the nodes a pass meets, the keys a
// loop inserts into a map -- then fall into a few runs of the table, so
// filling or probing it in that order stays within a few of its pages
// instead of one random page each, which matters once the table outgrows the
// caches and the TLB. Linear probing absorbs the runs of different pages that
// overlap. `shift` is 64 - k (k >= 1) and `mask` 2^k - 1.
inline size_t page_local_slot(uintptr_t address, unsigned shift, size_t mask) {
    uint64_t page = static_cast<uint64_t>(address >> 12) * 0x9E3779B97F4A7C15ull;
    return (static_cast<size_t>(page >> shift) + ((address >> 4) & 255)) & mask;
}

}  // namespace coextra::detail
