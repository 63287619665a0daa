// Helpers shared by the trace tests.
#pragma once
#include "protocol/hex.hpp"
#include "base/result.hpp"
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trace_test {

using Bytes = std::vector<std::uint8_t>;

// Enough for amd64 with AVX-512 (gdb's `collect $regs` mask there has 155 bits).
inline constexpr unsigned kRegisterCount = 160;

inline Bytes bytes_of(std::string_view hex) {
    auto b = tpagent::protocol::from_hex(hex);
    REQUIRE(b.ok());
    return *b;
}

template <typename T> void check_rejected(const tpagent::Result<T>& r, tpagent::ErrorCode code) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == code);
    CHECK_FALSE(r.error().text.empty());
}

// The QTDP and QTDPsrc payloads that define again what upload pieces (T/A/S/Z, V ignored)
// describe: the way gdb turns a qTfP upload back into a definition.
struct Redefinition {
    std::vector<std::string> qtdp;
    std::vector<std::string> qtdpsrc;
};
inline std::vector<Redefinition> pieces_to_packets(const std::vector<std::string>& pieces) {
    std::vector<Redefinition> out;
    bool stepping = false;
    for (const std::string& piece : pieces) {
        if (piece == "l") break;
        char kind = piece[0];
        std::string rest = piece.substr(1);
        std::size_t c1 = rest.find(':');
        std::size_t c2 = rest.find(':', c1 + 1);
        std::string key = rest.substr(0, c2);
        std::string tail = rest.substr(c2 + 1);
        if (kind == 'T') {
            out.push_back({{rest}, {}});
            stepping = false;
        } else if (kind == 'A' || kind == 'S') {
            REQUIRE_FALSE(out.empty());
            out.back().qtdp.back() += '-';
            std::string prefix = kind == 'S' && !stepping ? "S" : "";
            stepping = stepping || kind == 'S';
            out.back().qtdp.push_back("-" + key + ":" + prefix + tail);
        } else if (kind == 'Z') {
            REQUIRE_FALSE(out.empty());
            out.back().qtdpsrc.push_back(rest);
        }
    }
    return out;
}

} // namespace trace_test
