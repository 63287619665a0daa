// qTStatus: whether a trace runs, why it stopped, and the buffer's figures (GDB manual,
// "Tracepoint Packets", qTStatus). The same fields make a trace file's status line.
#pragma once
#include <cstdint>
#include <string>

namespace tpagent::protocol {

struct TraceStopReason {
    enum class Kind : std::uint8_t { NotRun, Stop, Full, Disconnected, PassCount, Error, Unknown };
    Kind kind = Kind::NotRun;
    std::string text;             // Stop: the note tstop was given; Error: what went wrong
    std::uint64_t tracepoint = 0; // PassCount, Error: the tracepoint's number
};
// "tnotrun:0", "tstop:NOTE:0", "tfull:0", "tdisconnected:0", "tpasscount:N", "terror:TEXT:N",
// "tunknown:0" (texts hex-encoded, numbers hex).
std::string encode_stop_reason(const TraceStopReason& reason);

struct TraceStatus {
    bool running = false;
    TraceStopReason reason;
    std::uint64_t frames = 0, created = 0, free = 0, size = 0;
    bool circular = false, disconnected = false;
    std::int64_t start_time = 0, stop_time = 0; // microseconds since the epoch, 0: none
    std::string user, notes;
};
std::string encode_trace_status(const TraceStatus& status);

} // namespace tpagent::protocol
