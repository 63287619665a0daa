// When each frame was collected, for --perfetto: from the finest clock the frames collected.
//   $trace_timestamp_ns  tpagent's variable of that name: monotonic nanoseconds
//   $trace_timestamp     the built-in: microseconds (tpagent: since the epoch; gdbserver
//                        13: of its steady clock)
// The two clocks count from different origins, so one is used for all frames: a frame that
// did not collect it (a while-stepping step, say) is placed 1 ns after the frame before it,
// frames before the first that did 1 ns apart just before it. Without either clock the
// frame number is the time, in microseconds.
#pragma once
#include "tools/tracefile/trace_file.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tpagent::tpdump {

// The finest clock some of the frames collected (shared by --perfetto and --html).
struct FrameClock {
    std::uint32_t variable;
    std::int64_t ns_per_tick; // 1: $trace_timestamp_ns; 1000: $trace_timestamp
    const char* name;         // "$trace_timestamp_ns"
    const char* unit;         // "ns", "us"
    const char* description;  // "$trace_timestamp_ns (nanoseconds)"
};
std::optional<FrameClock> frame_clock(const tracefile::TraceFile& file,
                                      const std::vector<const tracefile::Frame*>& frames);

struct FrameTimes {
    std::string clock;            // which clock, for people: "$trace_timestamp (microseconds)"
    std::vector<std::int64_t> ns; // per frame, in nanoseconds on that clock
};

FrameTimes frame_times(const tracefile::TraceFile& file,
                       const std::vector<const tracefile::Frame*>& frames);

// Nanoseconds as microseconds with three decimals ("12.345"): exact, where a double would
// round an epoch time's nanoseconds away.
std::string microseconds_text(std::int64_t ns);

} // namespace tpagent::tpdump
