// pod_array.h -- PodArray: a growable array of plain values that reports
// running out of memory instead of throwing.
//
// The arrays of a collector pass and of explain() are filled from tp_traverse
// callbacks, C frames a C++ exception must not cross, and while no Python code
// may run (docs/design.md, invariant 5): hence no exceptions and no Python
// allocation. An array owns its block, which comes from system_memory.h so
// that release() gives a large one back to the system; whoever holds the
// array owns it (a Pass, an explain() search, a HeapGraph).
#pragma once

#include "system_memory.h"

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

namespace coextra::detail {

// push() and the sizing calls return false when memory is exhausted (the
// array is then unchanged).
template <typename T>
class PodArray {
    static_assert(std::is_trivially_copyable<T>::value, "PodArray holds plain values");

public:
    PodArray() = default;
    PodArray(const PodArray &) = delete;
    PodArray &operator=(const PodArray &) = delete;
    ~PodArray() { release(); }

    bool reserve(size_t wanted) {
        if (wanted <= capacity_) {
            return true;
        }
        size_t capacity = capacity_ ? capacity_ : 16;
        while (capacity < wanted) {
            capacity *= 2;
        }
        void *grown = system_memory::resize(data_, capacity_ * sizeof(T), capacity * sizeof(T));
        if (grown == nullptr) {
            return false;
        }
        data_ = static_cast<T *>(grown);
        capacity_ = capacity;
        return true;
    }
    bool push(const T &value) {
        if (size_ == capacity_ && !reserve(size_ + 1)) {
            return false;
        }
        data_[size_++] = value;
        return true;
    }
    // Makes the array n values whose every byte is `byte` (for the indexes).
    bool assign_bytes(size_t n, unsigned char byte) {
        if (!reserve(n)) {
            return false;
        }
        if (n != 0) {  // data_ may still be NULL, and memset(NULL, 0, 0) is undefined
            std::memset(static_cast<void *>(data_), byte, n * sizeof(T));
        }
        size_ = n;
        return true;
    }
    bool assign_zeroed(size_t n) { return assign_bytes(n, 0); }
    void swap(PodArray &other) {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(capacity_, other.capacity_);
    }
    T pop() { return data_[--size_]; }
    void clear() { size_ = 0; }
    // Gives the memory back (clear() keeps it for the next pass).
    void release() {
        system_memory::release(data_, capacity_ * sizeof(T));
        data_ = nullptr;
        size_ = capacity_ = 0;
    }
    T &operator[](size_t i) { return data_[i]; }
    const T &operator[](size_t i) const { return data_[i]; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

private:
    T *data_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
};

}  // namespace coextra::detail
