// AArch64 instruction encodings the pads and the compiler backend emit (64-bit forms). Register
// 31 is sp as a base or an add/sub operand, xzr elsewhere. Offsets are in bytes and must be
// multiples of the access size.
#pragma once
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

} // namespace tpagent::arch::aarch64::enc
