#include "tools/tpdump/html_time_axis.hpp"

#include "trace/trace_state_variables.hpp"
#include <algorithm>

namespace tpagent::tpdump {

namespace {

std::optional<std::uint32_t> variable_named(const tracefile::TraceFile& file,
                                            std::string_view name) {
    for (const tracefile::TraceVariable& v : file.variables())
        if (v.name == name) return v.number;
    return std::nullopt;
}

bool collected(const std::vector<const tracefile::Frame*>& frames, std::uint32_t variable) {
    return std::any_of(frames.begin(), frames.end(), [&](const tracefile::Frame* f) {
        return f->variable(variable).has_value();
    });
}

} // namespace

TimeAxis time_axis(const tracefile::TraceFile& file,
                   const std::vector<const tracefile::Frame*>& frames) {
    TimeAxis axis;
    auto ns = variable_named(file, trace::TraceStateVariables::kTimestampNsName);
    auto us = file.timestamp_variable();
    if (ns && collected(frames, *ns)) {
        axis = {"ns", "$trace_timestamp_ns", ns};
    } else if (us && collected(frames, *us)) {
        axis = {"us", "$trace_timestamp", us};
    } else {
        axis = {"frame", "frame number", std::nullopt};
        if (!frames.empty()) axis.origin = static_cast<std::int64_t>(frames.front()->number);
        for (const tracefile::Frame* f : frames)
            axis.offsets.push_back(static_cast<std::int64_t>(f->number) - axis.origin);
        return axis;
    }
    std::vector<std::optional<std::int64_t>> times;
    for (const tracefile::Frame* f : frames)
        times.push_back(f->variable(*axis.variable));
    axis.origin = **std::min_element(times.begin(), times.end(), [](auto& a, auto& b) {
        return a && (!b || *a < *b); // the smallest of the times there are
    });
    // Frames before the first timed one take its time.
    std::int64_t last = **std::find_if(times.begin(), times.end(), [](auto& t) { return t; });
    for (const auto& t : times) {
        if (t)
            last = *t;
        else
            ++axis.untimed;
        // Unsigned difference: two clock values are less than 2^63 apart.
        axis.offsets.push_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(last) -
                                                         static_cast<std::uint64_t>(axis.origin)));
    }
    return axis;
}

} // namespace tpagent::tpdump
