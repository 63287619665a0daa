#pragma once
// Bytes in an anonymous mapping of their own, between two inaccessible guard pages.
// For large buffers whose size changes at run time (the trace buffer, up to 1 GiB): the
// memory goes back to the system as soon as the buffer is resized or freed (a heap block of
// that size may stay in the process), pages are only made resident as they are written, an
// overrun past either end faults at once, and sanitizer builds do not shadow-poison the whole
// size on every resize.
#include <cstddef>
#include <cstdint>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

namespace tpagent {

class MappedBytes {
  public:
    MappedBytes() = default;
    // Null data() if the system refuses the mapping.
    explicit MappedBytes(std::size_t size) {
        const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        const std::size_t length = (size + page - 1) / page * page + 2 * page;
        void* base = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) return;
        auto* bytes = static_cast<std::uint8_t*>(base) + page;
        if (mprotect(bytes, length - 2 * page, PROT_READ | PROT_WRITE) != 0) {
            munmap(base, length);
            return;
        }
        // Not copied into children (a program being started is a fork until its exec).
        madvise(base, length, MADV_DONTFORK);
        base_ = base;
        length_ = length;
        data_ = bytes;
    }
    MappedBytes(const MappedBytes&) = delete;
    MappedBytes& operator=(const MappedBytes&) = delete;
    MappedBytes(MappedBytes&& other) noexcept { swap(other); }
    MappedBytes& operator=(MappedBytes&& other) noexcept {
        MappedBytes(std::move(other)).swap(*this);
        return *this;
    }
    ~MappedBytes() {
        if (base_) munmap(base_, length_);
    }

    std::uint8_t* data() const { return data_; }

  private:
    void swap(MappedBytes& other) noexcept {
        std::swap(base_, other.base_);
        std::swap(length_, other.length_);
        std::swap(data_, other.data_);
    }

    void* base_ = nullptr;
    std::size_t length_ = 0;
    std::uint8_t* data_ = nullptr;
};

} // namespace tpagent
