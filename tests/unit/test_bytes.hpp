// Byte strings for tests that build machine code or file images by hand: little-endian
// fields, concatenation, and hex text for failure messages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <vector>

namespace tpagent::test {

using Bytes = std::vector<std::uint8_t>;

// Appends the low `size` bytes of `value`, little-endian.
inline void put_le(Bytes& out, std::uint64_t value, std::size_t size) {
    for (std::size_t i = 0; i < size; ++i)
        out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

// A rel32 or imm32 field: the low 4 bytes of v.
inline Bytes le32(std::int64_t v) {
    Bytes b;
    put_le(b, static_cast<std::uint64_t>(v), 4);
    return b;
}

inline Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes& p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

inline std::string hex(std::uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(v));
    return b;
}
inline std::string hex(const Bytes& bytes) {
    std::string s;
    char b[4];
    for (auto x : bytes) {
        std::snprintf(b, sizeof b, "%02x ", x);
        s += b;
    }
    return s;
}

} // namespace tpagent::test
