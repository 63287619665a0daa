#include "trace/frame_query.hpp"

#include "protocol/hex.hpp"
#include <fmt/format.h>

namespace tpagent::trace {

namespace {

Error bad_frame_request(std::string_view what) {
    return make_error(ErrorCode::BadPacket, fmt::format("QTFrame: {}", what));
}

Result<std::pair<std::uint64_t, std::uint64_t>> parse_range(std::string_view text) {
    auto fields = protocol::split(text, ':');
    if (fields.size() != 2) return bad_frame_request("expected <start>:<end>");
    auto a = protocol::parse_hex_u64(fields[0]);
    auto b = protocol::parse_hex_u64(fields[1]);
    if (!a || !b) return bad_frame_request("bad address");
    return std::pair{*a, *b};
}

} // namespace

Result<FrameQuery> parse_frame_query(std::string_view payload) {
    auto take = [&payload](std::string_view prefix) {
        if (!payload.starts_with(prefix)) return false;
        payload.remove_prefix(prefix.size());
        return true;
    };
    if (take("pc:")) {
        auto pc = protocol::parse_hex_u64(payload);
        if (!pc) return bad_frame_request("bad pc");
        return FrameQuery{FrameAtPc{*pc}};
    }
    if (take("tdp:")) {
        auto t = protocol::parse_hex_u64(payload);
        if (!t || *t > 0xffffffff) return bad_frame_request("bad tracepoint number");
        return FrameQuery{FrameOfTracepoint{static_cast<std::uint32_t>(*t)}};
    }
    if (take("range:")) {
        auto r = parse_range(payload);
        if (!r) return r.error();
        return FrameQuery{FrameInRange{r->first, r->second}};
    }
    if (take("outside:")) {
        auto r = parse_range(payload);
        if (!r) return r.error();
        return FrameQuery{FrameOutsideRange{r->first, r->second}};
    }
    // gdb formats the number as unsigned 32-bit hex, so -1 arrives as ffffffff.
    auto n = protocol::parse_hex_i64(payload);
    if (!n || *n > 0xffffffff || *n < -1) return bad_frame_request("bad frame number");
    std::int64_t number = *n == 0xffffffff ? -1 : *n;
    return FrameQuery{FrameByNumber{number}};
}

std::string frame_found_reply(std::size_t number, std::uint32_t tracepoint) {
    return fmt::format("F{:x}T{:x}", number, tracepoint);
}

} // namespace tpagent::trace
