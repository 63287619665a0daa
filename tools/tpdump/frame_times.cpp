#include "tools/tpdump/frame_times.hpp"

#include "trace/trace_state_variables.hpp"
#include <cstdint>
#include <fmt/format.h>
#include <optional>

namespace tpagent::tpdump {

namespace {

// tpagent reads any variable named trace_timestamp_ns as its nanosecond clock.
std::optional<std::uint32_t> nanosecond_variable(const tracefile::TraceFile& file) {
    for (const tracefile::TraceVariable& v : file.variables())
        if (v.name == trace::TraceStateVariables::kTimestampNsName) return v.number;
    return std::nullopt;
}

bool collected(const std::vector<const tracefile::Frame*>& frames, std::uint32_t variable) {
    for (const tracefile::Frame* f : frames)
        if (f->variable(variable)) return true;
    return false;
}

// Values come from the file: arithmetic on them must not overflow.
std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    std::int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out)) return b < 0 ? INT64_MIN : INT64_MAX;
    return out;
}

} // namespace

std::optional<FrameClock> frame_clock(const tracefile::TraceFile& file,
                                      const std::vector<const tracefile::Frame*>& frames) {
    if (auto ns = nanosecond_variable(file); ns && collected(frames, *ns))
        return FrameClock{*ns, 1, "$trace_timestamp_ns", "ns", "$trace_timestamp_ns (nanoseconds)"};
    if (auto us = file.timestamp_variable(); us && collected(frames, *us))
        return FrameClock{*us, 1000, "$trace_timestamp", "us", "$trace_timestamp (microseconds)"};
    return std::nullopt;
}

FrameTimes frame_times(const tracefile::TraceFile& file,
                       const std::vector<const tracefile::Frame*>& frames) {
    FrameTimes out;
    auto clock = frame_clock(file, frames);
    if (!clock) {
        out.clock = "frame order";
        for (const tracefile::Frame* f : frames)
            out.ns.push_back(static_cast<std::int64_t>(f->number) * 1000);
        return out;
    }
    out.clock = clock->description;
    auto time = [&](const tracefile::Frame* f) -> std::optional<std::int64_t> {
        std::int64_t ns = 0;
        if (auto t = f->variable(clock->variable))
            if (!__builtin_mul_overflow(*t, clock->ns_per_tick, &ns)) return ns;
        return std::nullopt;
    };
    std::int64_t first = 0;
    for (const tracefile::Frame* f : frames)
        if (auto t = time(f)) {
            first = *t;
            break;
        }
    std::int64_t last = saturating_add(first, -static_cast<std::int64_t>(frames.size()));
    for (const tracefile::Frame* f : frames) {
        last = time(f).value_or(saturating_add(last, 1));
        out.ns.push_back(last);
    }
    return out;
}

std::string microseconds_text(std::int64_t ns) {
    // Magnitude as unsigned: -INT64_MIN does not fit in int64.
    std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : ns;
    return fmt::format("{}{}.{:03}", ns < 0 ? "-" : "", magnitude / 1000, magnitude % 1000);
}

} // namespace tpagent::tpdump
