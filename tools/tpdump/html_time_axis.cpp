#include "tools/tpdump/html_time_axis.hpp"

#include "tools/tpdump/frame_times.hpp"
#include <algorithm>

namespace tpagent::tpdump {

TimeAxis time_axis(const tracefile::TraceFile& file,
                   const std::vector<const tracefile::Frame*>& frames) {
    TimeAxis axis;
    if (auto clock = frame_clock(file, frames)) {
        axis = {clock->unit, clock->name, clock->variable};
    } else {
        axis = {"frame", "frame number", std::nullopt};
        if (!frames.empty()) axis.origin = static_cast<std::int64_t>(frames.front()->number);
        axis.offsets.reserve(frames.size());
        for (const tracefile::Frame* f : frames)
            axis.offsets.push_back(static_cast<std::int64_t>(f->number) - axis.origin);
        return axis;
    }
    std::vector<std::optional<std::int64_t>> times;
    times.reserve(frames.size());
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
