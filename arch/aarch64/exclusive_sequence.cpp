#include "arch/aarch64/exclusive_sequence.hpp"
#include <cstring>
#include <fmt/format.h>

namespace tpagent::arch::aarch64 {
namespace {

std::uint32_t word_at(std::span<const std::uint8_t> code, std::size_t i) {
    std::uint32_t insn = 0;
    std::memcpy(&insn, code.data() + 4 * i, 4);
    return insn;
}

// B, BL, and the branches to a register (BR, BLR, RET, ERET and their authenticated forms):
// no sequence runs on through them.
bool unconditional_branch(std::uint32_t insn) {
    return (insn & 0x7c000000) == 0x14000000 || (insn & 0xfe000000) == 0xd6000000;
}
bool clear_exclusive(std::uint32_t insn) {
    return (insn & 0xfffff0ff) == 0xd503305f;
}

} // namespace

std::optional<std::string> inside_exclusive_sequence(std::uint64_t address,
                                                     std::span<const std::uint8_t> before,
                                                     std::span<const std::uint8_t> from,
                                                     bool stepped) {
    // Back to the nearest load-exclusive (stepped: the one at the address counts), unless
    // something that ends a sequence comes first.
    const auto behind = before.last(before.size() / 4 * 4); // whole instructions only
    std::optional<std::uint64_t> load;
    std::size_t ahead = 0; // the store-exclusive is looked for from here on
    if (stepped && from.size() >= 4 && load_exclusive(word_at(from, 0))) {
        load = address;
        ahead = 1;
    }
    for (std::size_t i = behind.size() / 4; !load && i-- > 0;) {
        const std::uint32_t insn = word_at(behind, i);
        if (store_exclusive(insn) || clear_exclusive(insn) || unconditional_branch(insn)) break;
        if (load_exclusive(insn)) load = address - (behind.size() / 4 - i) * 4;
    }
    if (!load) return std::nullopt;
    // On to its store-exclusive: the address is inside only if the sequence goes on past it.
    for (std::size_t i = ahead; i < from.size() / 4; ++i) {
        const std::uint32_t insn = word_at(from, i);
        if (store_exclusive(insn)) {
            if (*load == address) // stepped
                return fmt::format(
                    "0x{:x} is the load-exclusive of the sequence to 0x{:x}, and a trap there "
                    "with no pad in reach is stepped over: the step clears the exclusive "
                    "monitor, so the store would fail at every try and the program's loop "
                    "never end; put the tracepoint before the load-exclusive or after the "
                    "store-exclusive",
                    address, address + 4 * i);
            return fmt::format("0x{:x} is inside the load-exclusive/store-exclusive sequence "
                               "from 0x{:x} to 0x{:x}: a trap or a call there clears the "
                               "exclusive monitor, so the store would fail at every try and "
                               "the program's loop never end; put the tracepoint on the "
                               "load-exclusive or after the store-exclusive",
                               address, *load, address + 4 * i);
        }
        if (load_exclusive(insn) || clear_exclusive(insn) || unconditional_branch(insn)) break;
    }
    return std::nullopt;
}

} // namespace tpagent::arch::aarch64
