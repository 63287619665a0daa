#include "tools/tracefile/trace_status.hpp"

#include "protocol/hex.hpp"
#include <array>
#include <fmt/format.h>

namespace tpagent::tracefile {

namespace {

constexpr std::array kStopReasons = {"tnotrun",    "tstop",  "tfull",   "tdisconnected",
                                     "tpasscount", "terror", "tunknown"};

Error bad(const std::string& what) {
    return make_error(ErrorCode::BadInput, "status line: " + what);
}

Result<std::uint64_t> number(std::string_view name, std::string_view digits) {
    auto v = protocol::parse_hex_u64(digits);
    if (!v) return bad(fmt::format("{}: bad hex number '{}'", name, digits));
    return *v;
}

Result<std::string> text(std::string_view name, std::string_view hex) {
    auto v = protocol::hex_to_text(hex);
    if (!v) return bad(fmt::format("{}: bad hex text", name));
    return std::move(*v);
}

bool is_stop_reason(std::string_view name) {
    for (std::string_view r : kStopReasons)
        if (r == name) return true;
    return false;
}

// `tstop:<hex note>:<tpnum>`, `terror:<hex text>:<tpnum>`, the others `<reason>:<tpnum>`.
Status parse_stop_reason(TraceStatus& status, std::string_view name,
                         const std::vector<std::string_view>& args) {
    status.stop_reason = std::string(name);
    bool has_text = name == "tstop" || name == "terror";
    std::size_t want = has_text ? 2 : 1;
    if (args.size() < want) return bad(fmt::format("{}: missing fields", name));
    if (has_text) {
        auto t = text(name, args[0]);
        if (!t) return t.error();
        status.stop_text = std::move(*t);
    }
    auto tp = number(name, args[want - 1]);
    if (!tp) return tp.error();
    if (*tp > 0xffffffff) return bad(fmt::format("{}: tracepoint number too large", name));
    status.stop_tracepoint = static_cast<std::uint32_t>(*tp);
    return ok_status();
}

} // namespace

Result<TraceStatus> parse_trace_status(std::string_view payload) {
    if (!payload.empty() && payload[0] == 'T') payload.remove_prefix(1);
    auto fields = protocol::split(payload, ';');
    TraceStatus status;
    if (fields[0] != "0" && fields[0] != "1")
        return bad(fmt::format("running flag must be 0 or 1, not '{}'", fields[0]));
    status.running = fields[0] == "1";
    for (std::size_t i = 1; i < fields.size(); ++i) {
        if (fields[i].empty()) continue; // a trailing ';'
        auto parts = protocol::split(fields[i], ':');
        std::string_view name = parts[0];
        std::vector<std::string_view> args(parts.begin() + 1, parts.end());
        if (is_stop_reason(name)) {
            auto s = parse_stop_reason(status, name, args);
            if (!s) return s.error();
            continue;
        }
        std::string_view value =
            args.empty() ? std::string_view() : fields[i].substr(name.size() + 1);
        if (name == "username" || name == "notes") {
            auto t = text(name, value);
            if (!t) return t.error();
            (name == "username" ? status.user : status.notes) = std::move(*t);
            continue;
        }
        std::optional<std::uint64_t>* counter = name == "tframes"     ? &status.frames
                                                : name == "tcreated"  ? &status.created
                                                : name == "tfree"     ? &status.free
                                                : name == "tsize"     ? &status.size
                                                : name == "starttime" ? &status.start_time
                                                : name == "stoptime"  ? &status.stop_time
                                                                      : nullptr;
        std::optional<bool>* flag = name == "circular"  ? &status.circular
                                    : name == "disconn" ? &status.disconnected
                                                        : nullptr;
        if (name == "rpad") continue; // a recorded file's status line, padded to its width
        std::uint64_t RecordedFile::*recorded = name == "rfile"        ? &RecordedFile::file
                                                : name == "rfirst"     ? &RecordedFile::first
                                                : name == "rlost"      ? &RecordedFile::lost
                                                : name == "rdropped"   ? &RecordedFile::dropped
                                                : name == "runwritten" ? &RecordedFile::unwritten
                                                                       : nullptr;
        if (recorded) {
            auto v = number(name, value);
            if (!v) return v.error();
            if (!status.recorded) status.recorded.emplace();
            (*status.recorded).*recorded = *v;
            continue;
        }
        if (counter || flag) {
            auto v = number(name, value);
            if (!v) return v.error();
            if (counter) *counter = *v;
            if (flag) *flag = *v != 0;
            continue;
        }
        status.other.emplace_back(std::string(name), std::string(value));
    }
    return status;
}

} // namespace tpagent::tracefile
