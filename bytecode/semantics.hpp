// The arithmetic of the opcodes on 64-bit stack entries, shared by the interpreter and
// constant folding. Cases C leaves undefined get the mathematical answer: shifts by 64 or
// more shift everything out, INT64_MIN / -1 wraps, ext 0 gives 0.
// Division by zero is the caller's job (it is an evaluation error).
#pragma once
#include <cstdint>

namespace tpagent::bytecode::sem {

using u64 = std::uint64_t;
using i64 = std::int64_t;

inline u64 div_signed(u64 a, u64 b) {
    if (static_cast<i64>(b) == -1) return u64{0} - a;
    return static_cast<u64>(static_cast<i64>(a) / static_cast<i64>(b));
}
inline u64 rem_signed(u64 a, u64 b) {
    if (static_cast<i64>(b) == -1) return 0;
    return static_cast<u64>(static_cast<i64>(a) % static_cast<i64>(b));
}
inline u64 lsh(u64 a, u64 b) { return b >= 64 ? 0 : a << b; }
inline u64 rsh_signed(u64 a, u64 b) {
    return static_cast<u64>(static_cast<i64>(a) >> (b >= 64 ? 63 : b));
}
inline u64 rsh_unsigned(u64 a, u64 b) { return b >= 64 ? 0 : a >> b; }
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
inline u64 less_signed(u64 a, u64 b) { return static_cast<i64>(a) < static_cast<i64>(b); }

} // namespace tpagent::bytecode::sem
