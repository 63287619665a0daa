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

// A file tpagent --record wrote (trace/recorded_status.hpp): where it stands in its run.
struct RecordedFile {
    std::uint64_t file = 0;  // rfile: its number in the folder
    std::uint64_t first = 0; // rfirst: the run's index of its first frame
    // The run's frames not in any file, up to this file's end, by reason.
    std::uint64_t lost = 0;      // rlost: overwritten in the buffer before recorded
    std::uint64_t dropped = 0;   // rdropped: not collected, no room left in the buffer
    std::uint64_t unwritten = 0; // runwritten: not written, the disk full or refusing
};

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
    std::optional<RecordedFile> recorded;
    // Fields this reader does not interpret, as name and raw value.
    std::vector<std::pair<std::string, std::string>> other;
};

// Accepts the payload with or without the leading `T`.
Result<TraceStatus> parse_trace_status(std::string_view payload);

} // namespace tpagent::tracefile
