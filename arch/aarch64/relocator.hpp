// AArch64 displaced instructions: one 4-byte instruction rewritten to run from a pad and branch
// back. PC-relative forms (B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ, ADR, ADRP, LDR/LDRSW/PRFM
// literal, SIMD&FP LDR literal) are rebuilt from their absolute targets, and register calls
// (BLR, BLRAA...) from their return address; the rest run as they are.
#pragma once
#include "arch/relocation.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <span>
#include <vector>

namespace tpagent::arch::aarch64 {

// How far a B (imm26) reaches: ±128 MiB.
inline constexpr std::int64_t kBranchReach = std::int64_t{1} << 27;

Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from,
                           std::uint64_t to);
// B from `from` to `to`; Unsupported when out of reach.
Result<std::uint32_t> encode_branch(std::uint64_t from, std::uint64_t to);

} // namespace tpagent::arch::aarch64
