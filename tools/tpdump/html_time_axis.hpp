// When each frame of the HTML report was collected: the time axis of its timeline and plots.
#pragma once
#include "tools/tracefile/trace_file.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpagent::tpdump {

struct TimeAxis {
    std::string unit;                      // "ns", "us" or "frame"
    std::string source;                    // what the times are, for the axis label
    std::optional<std::uint32_t> variable; // the trace state variable they come from
    std::int64_t origin = 0;               // the earliest time, in `unit`
    std::vector<std::int64_t> offsets;     // per frame: its time - origin
    // Frames that did not collect the variable (a while-stepping step, another tracepoint):
    // they get the time of the frame before them.
    std::size_t untimed = 0;
};

// $trace_timestamp_ns (tpagent's monotonic nanoseconds) if some frame collected it, else
// $trace_timestamp (microseconds), else the frame number.
TimeAxis time_axis(const tracefile::TraceFile& file,
                   const std::vector<const tracefile::Frame*>& frames);

} // namespace tpagent::tpdump
