// Load-exclusive/store-exclusive sequences (LL/SC): a trap or a call between the two clears
// the exclusive monitor (an exception return does: Arm ARM, "Context switch support"; so do
// the collector's own atomics), so the store fails at every try and the program's retry loop
// never ends on hardware. (qemu compares values at the store instead: it cannot show this.)
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tpagent::arch::aarch64 {

// CASP/CASPA/CASPL/CASPAL share the exclusives' encoding space (bit 21 set, bit 31 clear):
// single instructions, no sequence.
constexpr bool compare_and_swap_pair(std::uint32_t insn) {
    return (insn & 0x80200000) == 0x00200000;
}
// LDXR/LDAXR/LDXP/LDAXP (any size).
constexpr bool load_exclusive(std::uint32_t insn) {
    return (insn & 0x3fc00000) == 0x08400000 && !compare_and_swap_pair(insn);
}
// STXR/STLXR/STXP/STLXP (any size).
constexpr bool store_exclusive(std::uint32_t insn) {
    return (insn & 0x3fc00000) == 0x08000000 && !compare_and_swap_pair(insn);
}

// Instructions looked at on each side of an address: compilers and libraries keep a
// sequence to a handful of instructions (the architecture guarantees progress only for
// short ones).
inline constexpr std::size_t kExclusiveWindowBytes = 64;

// Why a trap or a jump at `address` would break a sequence (the address is after a
// load-exclusive and at or before its store-exclusive), or nullopt. `stepped`: the instruction
// at the address is single-stepped (a trap stepped over in place), so the load-exclusive
// itself counts too (the step's exception comes right after it). `before` holds the code just
// before the address, `from` the code starting at it (either may be short: a page's end).
std::optional<std::string> inside_exclusive_sequence(std::uint64_t address,
                                                     std::span<const std::uint8_t> before,
                                                     std::span<const std::uint8_t> from,
                                                     bool stepped = false);

} // namespace tpagent::arch::aarch64
