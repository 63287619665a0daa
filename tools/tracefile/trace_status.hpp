// The `status` line of a trace file: a qTStatus reply payload (gdb writes it without the
// leading `T`): `<0|1>;<reason>[:...];tframes:<n>;...`, numbers in hex, texts hex-encoded.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tpagent::tracefile {

struct TraceStatus {
    bool running = false;
    // tnotrun, tstop, tfull, tdisconnected, tpasscount, terror or tunknown; empty if absent.
    std::string stop_reason;
    std::string stop_text; // tstop's note or terror's message, decoded
    std::optional<std::uint32_t> stop_tracepoint;
    std::optional<std::uint64_t> frames;  // tframes
    std::optional<std::uint64_t> created; // tcreated
    std::optional<std::uint64_t> free;    // tfree
    std::optional<std::uint64_t> size;    // tsize
    std::optional<bool> circular;
    std::optional<bool> disconnected;
    std::optional<std::uint64_t> start_time; // microseconds
    std::optional<std::uint64_t> stop_time;
    std::string user;  // username, decoded
    std::string notes; // decoded
    // Fields this reader does not interpret, as name and raw value.
    std::vector<std::pair<std::string, std::string>> other;
};

// Accepts the payload with or without the leading `T`.
Result<TraceStatus> parse_trace_status(std::string_view payload);

} // namespace tpagent::tracefile
