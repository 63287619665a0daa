#include "protocol/trace_status.hpp"
#include "protocol/hex.hpp"
#include <fmt/format.h>

namespace tpagent::protocol {

std::string encode_stop_reason(const TraceStopReason& r) {
    using Kind = TraceStopReason::Kind;
    switch (r.kind) {
    case Kind::NotRun:
        return "tnotrun:0";
    case Kind::Stop:
        return fmt::format("tstop:{}:0", to_hex(r.text));
    case Kind::Full:
        return "tfull:0";
    case Kind::Disconnected:
        return "tdisconnected:0";
    case Kind::PassCount:
        return fmt::format("tpasscount:{:x}", r.tracepoint);
    case Kind::Error:
        return fmt::format("terror:{}:{:x}", to_hex(r.text), r.tracepoint);
    case Kind::Unknown:
        break;
    }
    return "tunknown:0";
}

std::string encode_trace_status(const TraceStatus& s) {
    return fmt::format(
        "T{};{};tframes:{:x};tcreated:{:x};tfree:{:x};tsize:{:x};circular:{};disconn:{};"
        "starttime:{:x};stoptime:{:x};username:{};notes:{}",
        s.running ? 1 : 0, encode_stop_reason(s.reason), s.frames, s.created, s.free, s.size,
        s.circular ? 1 : 0, s.disconnected ? 1 : 0, s.start_time, s.stop_time, to_hex(s.user),
        to_hex(s.notes));
}

} // namespace tpagent::protocol
