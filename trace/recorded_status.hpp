// The status line of a file the flight recorder writes (--record) has a fixed width, so that
// it can be rewritten in place: when the file ends (its frame count, the losses so far), or
// when a file cut short is sealed. It is the qTStatus payload, the recording's own fields,
// then `;rpad:000…` up to the width. gdb skips status fields it does not know (remote.c,
// parse_trace_status) and refuses text lines of 1000 characters or more (tracefile-tfile.c).
#pragma once
#include "protocol/trace_status.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tpagent::trace {

// The payload's width (without "status " and without qTStatus's leading T).
inline constexpr std::size_t kRecordedStatusWidth = 960;

// Where a file stands in its recording. Counts are the run's, up to the file's end.
struct RecordingFields {
    std::uint64_t file = 0;      // rfile: the file's number in the folder (trace-NNNNNN.tf)
    std::uint64_t first = 0;     // rfirst: the run's frames that came to the recording before
                                 // the file's first (written or not)
    std::uint64_t lost = 0;      // rlost: frames gone from the buffer before they were recorded
    std::uint64_t dropped = 0;   // rdropped: frames not collected, the buffer having no room
    std::uint64_t unwritten = 0; // runwritten: frames not written, the disk full or refusing
};

// The payload, exactly kRecordedStatusWidth characters; notes and user name shortened if
// the whole would not fit.
std::string recorded_status_payload(protocol::TraceStatus status, const RecordingFields& fields);

// A recorded file's payload with its frame count set to `frames` and `note` added to its
// notes (dropped if it would not fit), at the same width. Nothing if `payload` is not a
// recorded file's (no rpad field), or has no tframes.
std::optional<std::string> restate_recorded_status(std::string_view payload, std::uint64_t frames,
                                                   std::string_view note);

} // namespace tpagent::trace
