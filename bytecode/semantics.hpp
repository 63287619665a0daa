// The arithmetic of the opcodes on 64-bit stack entries, shared by the interpreter and
// constant folding. Cases C leaves undefined get the mathematical answer: shifts by 64 or
// more shift everything out, INT64_MIN / -1 wraps, ext 0 gives 0.
// Division by zero is the caller's job (it is an evaluation error).
#pragma once
#include <cstdint>

namespace tpagent::bytecode::sem {

using u64 = std::uint64_t;
using i64 = std::int64_t;

// Powers of two and 32-bit operands avoid the 64-bit divide, which costs 40-90 cycles.
inline bool is_pow2(u64 v) {
    return v != 0 && (v & (v - 1)) == 0;
}
inline bool fits_i32(i64 v) {
    return v == static_cast<std::int32_t>(v);
}

inline u64 div_signed(u64 a, u64 b) {
    const auto sa = static_cast<i64>(a), sb = static_cast<i64>(b);
    if (sb == -1) return u64{0} - a;
    if (sb > 0 && is_pow2(b)) {
        const u64 bias = sa < 0 ? b - 1 : 0; // round toward zero
        return static_cast<u64>(static_cast<i64>(a + bias) >> __builtin_ctzll(b));
    }
    if (fits_i32(sa) && fits_i32(sb))
        return static_cast<u64>(
            static_cast<i64>(static_cast<std::int32_t>(sa) / static_cast<std::int32_t>(sb)));
    return static_cast<u64>(sa / sb);
}
inline u64 rem_signed(u64 a, u64 b) {
    const auto sa = static_cast<i64>(a), sb = static_cast<i64>(b);
    if (sb == -1) return 0;
    if (sb > 0 && is_pow2(b)) { // the remainder takes the dividend's sign
        const u64 r = a & (b - 1);
        return sa < 0 && r ? r | ~(b - 1) : r;
    }
    if (fits_i32(sa) && fits_i32(sb))
        return static_cast<u64>(
            static_cast<i64>(static_cast<std::int32_t>(sa) % static_cast<std::int32_t>(sb)));
    return static_cast<u64>(sa % sb);
}
inline u64 div_unsigned(u64 a, u64 b) {
    if (is_pow2(b)) return a >> __builtin_ctzll(b);
    if ((a | b) <= 0xffffffffu)
        return static_cast<std::uint32_t>(a) / static_cast<std::uint32_t>(b);
    return a / b;
}
inline u64 rem_unsigned(u64 a, u64 b) {
    if (is_pow2(b)) return a & (b - 1);
    if ((a | b) <= 0xffffffffu)
        return static_cast<std::uint32_t>(a) % static_cast<std::uint32_t>(b);
    return a % b;
}
inline u64 lsh(u64 a, u64 b) {
    return b >= 64 ? 0 : a << b;
}
inline u64 rsh_signed(u64 a, u64 b) {
    return static_cast<u64>(static_cast<i64>(a) >> (b >= 64 ? 63 : b));
}
inline u64 rsh_unsigned(u64 a, u64 b) {
    return b >= 64 ? 0 : a >> b;
}
inline u64 sign_extend(u64 a, u64 bits) {
    if (bits >= 64) return a;
    if (bits == 0) return 0;
    const unsigned s = 64 - static_cast<unsigned>(bits);
    return static_cast<u64>(static_cast<i64>(a << s) >> s);
}
inline u64 zero_extend(u64 a, u64 bits) {
    if (bits >= 64) return a;
    return a & ((u64{1} << bits) - 1);
}
inline u64 less_signed(u64 a, u64 b) {
    return static_cast<i64>(a) < static_cast<i64>(b);
}

} // namespace tpagent::bytecode::sem
