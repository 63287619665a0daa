// The ring of dprintf lines (shared_buffer.hpp, PrintRing): the writers' side, program threads
// in the in-process agent (breakpoint_hit.cpp), and the reader's, tpagent
// (experiment/inproc_breakpoints.cpp). Lock-free: writers take numbers with a CAS on `taken`
// bounded by `read`, and publish each slot with its number; the one reader goes in number order
// up to the first slot not yet published.
#pragma once
#include "inproc/shared_buffer.hpp"
#include <atomic>
#include <cstdint>

namespace tpagent::inproc {

// A slot for the next line, and its number; null when the ring is full.
inline PrintSlot* try_print_slot(void* shared, std::uint64_t& number) {
    PrintRing* ring = print_ring(shared);
    number = ring->taken.load(std::memory_order_relaxed);
    do {
        // (acquire: the reader is done with the slot this number reuses.)
        if (number - ring->read.load(std::memory_order_acquire) >= kPrintSlots) return nullptr;
    } while (!ring->taken.compare_exchange_weak(number, number + 1, std::memory_order_relaxed,
                                                std::memory_order_relaxed));
    return print_slot(shared, number);
}

// The slot's line is whole: the reader may take it.
inline void publish_print_slot(PrintSlot* slot, std::uint64_t number) {
    slot->published.store(number + 1, std::memory_order_release);
}

// Each published line in order, given to `line(const PrintSlot&)`, and its slot given back;
// how many.
template <class Line> std::uint64_t read_print_ring(void* shared, Line&& line) {
    PrintRing* ring = print_ring(shared);
    std::uint64_t number = ring->read.load(std::memory_order_relaxed), count = 0;
    const std::uint64_t taken = ring->taken.load(std::memory_order_relaxed);
    for (; number != taken; ++number, ++count) {
        const PrintSlot* slot = print_slot(shared, number);
        // Taken but not yet whole (its writer is between the two): the rest waits for it.
        if (slot->published.load(std::memory_order_acquire) != number + 1) break;
        line(*slot);
        ring->read.store(number + 1, std::memory_order_release);
    }
    return count;
}

} // namespace tpagent::inproc
