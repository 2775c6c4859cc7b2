// system_memory.h -- the blocks of a pass's arrays (PodArray, pod_array.h)
// and of the registry's holder table (Allocator, below): large ones taken
// from the system and given straight back to it.
//
// A pass over many holders needs arrays sized for all of them, and gives
// them back when it ends, or every holder would seem to cost more
// (bench/bench_memory.py). Freed to malloc, a large block can stay in the
// process: glibc raises its mmap threshold after the first large free, and
// only malloc_trim(), which walks the whole heap and so costs more the larger
// the program, would return its pages. Blocks of kDirectBytes (glibc's
// initial mmap threshold) and more are therefore mapped and unmapped here,
// so that their pages go back at once; smaller ones use malloc. A sanitizer
// build uses malloc for every block: AddressSanitizer checks the bounds of
// malloc'd blocks only.
//
// A pass over everything (collect()) writes its arrays once, on pages fresh
// from the kernel, so over a large heap a fault per 4 KiB page is a large
// share of its time. While a HugePages scope is on, blocks of kHugeBytes and
// more ask for transparent huge pages (madvise), which fault once per 2 MiB;
// where THP is off or "always", the advice changes nothing. Automatic passes
// go without: a slice uses a little of arrays sized for more, and a huge
// page is cleared whole on its first touch, which lengthens the pauses that
// they are sliced to keep short.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define COEXTRA_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COEXTRA_ADDRESS_SANITIZER 1
#endif
#endif

namespace coextra::detail::system_memory {

#ifdef COEXTRA_ADDRESS_SANITIZER
constexpr size_t kDirectBytes = SIZE_MAX;
#else
constexpr size_t kDirectBytes = size_t{1} << 17;
#endif

inline bool direct(size_t bytes) { return bytes >= kDirectBytes; }

constexpr size_t kHugeBytes = size_t{1} << 21;

// Whether blocks mapped or grown now ask for huge pages. Process-wide: the
// GIL serialises the passes, the only users.
inline bool huge_pages_wanted = false;

// Asks for huge pages while it lives (when `on`), for the pass it scopes.
class HugePages {
public:
    explicit HugePages(bool on) : previous_(huge_pages_wanted) { huge_pages_wanted = on; }
    HugePages(const HugePages &) = delete;
    HugePages &operator=(const HugePages &) = delete;
    ~HugePages() { huge_pages_wanted = previous_; }

private:
    bool previous_;
};

// `block`, a mapped block of `bytes` (or MAP_FAILED), as resize() returns it.
inline void *advised(void *block, size_t bytes) {
    if (block == MAP_FAILED) {
        return nullptr;
    }
#ifdef MADV_HUGEPAGE
    if (huge_pages_wanted && bytes >= kHugeBytes) {
        madvise(block, bytes, MADV_HUGEPAGE);  // advice only: its failure leaves 4 KiB pages
    }
#endif
    return block;
}

// Gives back a block of `bytes` from resize() (NULL when bytes is 0).
inline void release(void *block, size_t bytes) {
    if (direct(bytes)) {
        munmap(block, bytes);
    } else {
        std::free(block);
    }
}

// `block`, of old_bytes (NULL when 0), resized to new_bytes with its contents
// kept up to the smaller size; NULL when memory is exhausted, and `block`
// then stays as it was.
inline void *resize(void *block, size_t old_bytes, size_t new_bytes) {
    if (!direct(old_bytes) && !direct(new_bytes)) {
        return std::realloc(block, new_bytes);
    }
#ifdef __linux__
    if (direct(old_bytes) && direct(new_bytes)) {
        return advised(mremap(block, old_bytes, new_bytes, MREMAP_MAYMOVE), new_bytes);  // pages move, not bytes
    }
#endif
    void *fresh = nullptr;
    if (direct(new_bytes)) {
        fresh = advised(mmap(nullptr, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                        new_bytes);
    } else {
        fresh = std::malloc(new_bytes);
    }
    if (fresh == nullptr) {
        return nullptr;
    }
    if (block != nullptr) {
        std::memcpy(fresh, block, std::min(old_bytes, new_bytes));
    }
    release(block, old_bytes);
    return fresh;
}

// A standard allocator over resize() and release(), for the one long-lived
// table that grows with the program: the registry's holders (registry.h).
// std::vector grows by allocating a block twice the size and freeing the
// old one; freed to malloc, the old blocks would stay resident under the
// raised mmap threshold (above), about as many bytes again as the table.
template <typename T>
struct Allocator {
    using value_type = T;

    Allocator() = default;
    template <typename U>
    Allocator(const Allocator<U> &) {}

    T *allocate(size_t n) {
        void *block = resize(nullptr, 0, n * sizeof(T));  // n <= max_size(): no overflow
        if (block == nullptr) {
            throw std::bad_alloc();
        }
        return static_cast<T *>(block);
    }
    void deallocate(T *block, size_t n) { release(block, n * sizeof(T)); }

    friend bool operator==(const Allocator &, const Allocator &) { return true; }
    friend bool operator!=(const Allocator &, const Allocator &) { return false; }
};

}  // namespace coextra::detail::system_memory
