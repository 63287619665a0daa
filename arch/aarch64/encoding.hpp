// AArch64 instruction encodings the pads and the compiler backend emit (64-bit forms). Register
// 31 is sp as a base or an add/sub operand, xzr elsewhere. Offsets are in bytes and must be
// multiples of the access size.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tpagent::arch::aarch64::enc {

inline constexpr unsigned kSp = 31, kZr = 31;
inline constexpr std::uint32_t kBlrX16 = 0xd63f0200;

constexpr std::uint32_t mov_reg(unsigned d, unsigned m) { // orr xd, xzr, xm
    return 0xaa0003e0 | m << 16 | d;
}
constexpr std::uint32_t add_imm(unsigned d, unsigned n, std::uint32_t imm12) { // flags kept
    return 0x91000000 | imm12 << 10 | n << 5 | d;
}
constexpr std::uint32_t sub_imm(unsigned d, unsigned n, std::uint32_t imm12) {
    return 0xd1000000 | imm12 << 10 | n << 5 | d;
}
constexpr std::uint32_t ldr_x(unsigned t, unsigned n, std::uint32_t offset) { // [xn, #off]
    return 0xf9400000 | (offset / 8) << 10 | n << 5 | t;
}
constexpr std::uint32_t str_x(unsigned t, unsigned n, std::uint32_t offset) {
    return 0xf9000000 | (offset / 8) << 10 | n << 5 | t;
}
constexpr std::uint32_t ldr_w(unsigned t, unsigned n, std::uint32_t offset) {
    return 0xb9400000 | (offset / 4) << 10 | n << 5 | t;
}
constexpr std::uint32_t str_w(unsigned t, unsigned n, std::uint32_t offset) {
    return 0xb9000000 | (offset / 4) << 10 | n << 5 | t;
}
constexpr std::uint32_t stp(unsigned a, unsigned b, unsigned n, std::uint32_t offset) {
    return 0xa9000000 | (offset / 8) << 15 | b << 10 | n << 5 | a;
}
constexpr std::uint32_t ldp(unsigned a, unsigned b, unsigned n, std::uint32_t offset) {
    return 0xa9400000 | (offset / 8) << 15 | b << 10 | n << 5 | a;
}

constexpr std::uint32_t add_imm_lsl12(unsigned d, unsigned n, std::uint32_t imm12) {
    return 0x91400000 | imm12 << 10 | n << 5 | d;
}
constexpr std::uint32_t add_reg(unsigned d, unsigned n, unsigned m) {
    return 0x8b000000 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t lsr_imm(unsigned d, unsigned n, unsigned shift) { // ubfm xd, xn, #s, #63
    return 0xd340fc00 | shift << 16 | n << 5 | d;
}
constexpr std::uint32_t ldxr_x(unsigned t, unsigned n) {
    return 0xc85f7c00 | n << 5 | t;
}
constexpr std::uint32_t stxr_x(unsigned status, unsigned t, unsigned n) { // status: a w register
    return 0xc8007c00 | status << 16 | n << 5 | t;
}
constexpr std::uint32_t msr_tpidr_el0(unsigned t) {
    return 0xd51bd040 | t;
}
constexpr std::uint32_t mrs_tpidr_el0(unsigned t) {
    return 0xd53bd040 | t;
}
// Branches with their offset left 0, for Emitter::patch_or (branch_offset_bits).
constexpr std::uint32_t b_unlinked() {
    return 0x14000000;
}
constexpr std::uint32_t cbnz_x(unsigned t) {
    return 0xb5000000 | t;
}
constexpr std::uint32_t cbnz_w(unsigned t) {
    return 0x35000000 | t;
}
// The offset bits of a branch at byte offset `from` to `to`: B (imm26), TBZ/TBNZ (imm14), or
// B.cond and CBZ/CBNZ (imm19).
constexpr std::uint32_t branch_offset_bits(std::uint32_t insn, std::size_t from, std::size_t to) {
    const auto words = static_cast<std::uint32_t>(static_cast<std::int64_t>(to) / 4 -
                                                  static_cast<std::int64_t>(from) / 4);
    if ((insn & 0xfc000000) == 0x14000000) return words & 0x3ffffff;
    if ((insn & 0x7e000000) == 0x36000000) return (words & 0x3fff) << 5;
    return (words & 0x7ffff) << 5;
}

} // namespace tpagent::arch::aarch64::enc
