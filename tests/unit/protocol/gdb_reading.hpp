// How gdb reads what tpagent writes: `}` escapes and run-length encoding. Plain functions,
// no Catch2: fuzz/fuzz_packet_decoder uses them too.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace tpagent::protocol::testing {

// `}` + (byte ^ 0x20) is the byte.
inline std::string unescape(std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '}' && i + 1 < in.size())
            out.push_back(static_cast<char>(in[++i] ^ 0x20));
        else
            out.push_back(in[i]);
    }
    return out;
}

// `X*n` is X followed by n - 29 more copies of X. nullopt on what gdb would reject: a `*`
// with nothing to repeat or no count, a count outside 3..97 repeats, or one that is a frame
// character (`#`, `$`).
inline std::optional<std::string> rle_expand(std::string_view in) {
    std::string out;
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '*') {
            out.push_back(in[i]);
            continue;
        }
        if (i + 1 >= in.size() || out.empty()) return std::nullopt;
        const unsigned char count = static_cast<unsigned char>(in[++i]);
        if (count < 29 + 3 || count > 126 || count == '#' || count == '$') return std::nullopt;
        out.append(count - 29, out.back());
    }
    return out;
}

} // namespace tpagent::protocol::testing
