// Displaced instructions: what a tracepoint's original instructions become when they run from
// a pad at another address. ISA-neutral shape; each ISA's relocator fills it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tpagent::arch {

// An original instruction start and where its relocated form starts in the pad.
struct Boundary {
    std::uint32_t from_offset;
    std::uint32_t pad_offset;
};

struct Relocated {
    std::vector<std::uint8_t> code; // the pad's bytes, to be placed at `to`
    std::size_t covered = 0;        // bytes of original code displaced (whole instructions)
    // One entry per displaced instruction, in order, then {covered, offset of the jump back}.
    std::vector<Boundary> boundaries;
};

// Moving a thread stopped in displaced code to the pad, and back: nullopt unless the offset is
// an instruction boundary.
std::optional<std::size_t> pad_offset_of(const Relocated& r, std::size_t from_offset);
std::optional<std::size_t> from_offset_of(const Relocated& r, std::size_t pad_offset);
// For a pc inside relocated code placed at `copy`: whether it is inside at all, and the
// original instruction's address (`site` + its offset) when it stands on a boundary.
bool in_relocated(const Relocated& r, std::uint64_t copy, std::uint64_t pc);
std::optional<std::uint64_t> original_address(const Relocated& r, std::uint64_t copy,
                                              std::uint64_t site, std::uint64_t pc);

// Code relocated by someone else (gdb, qRelocInsn) for an instruction displaced from
// [site, site + covered): what is wrong with it, given the addresses its pc-relative operands
// reach and the original's (Architecture::pc_relative_targets), or nullopt. It must reach
// the same, and nothing inside the displaced bytes but `site` itself (the jump is there).
std::optional<std::string> relocation_mismatch(std::span<const std::uint64_t> original,
                                               std::span<const std::uint64_t> relocated,
                                               std::uint64_t site, std::size_t covered);

} // namespace tpagent::arch
