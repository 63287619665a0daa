// QTFrame requests: select a trace frame by number, or search forward from the selected
// frame by pc, tracepoint or pc range.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace tpagent::trace {

struct FrameByNumber {
    std::int64_t number = -1; // -1 (`QTFrame:ffffffff`, tfind none): stop looking at frames
};
struct FrameAtPc {
    std::uint64_t pc = 0;
};
struct FrameOfTracepoint {
    std::uint32_t tracepoint = 0;
};
struct FrameInRange { // start <= pc <= end
    std::uint64_t start = 0;
    std::uint64_t end = 0;
};
struct FrameOutsideRange { // pc < start or pc > end
    std::uint64_t start = 0;
    std::uint64_t end = 0;
};
using FrameQuery =
    std::variant<FrameByNumber, FrameAtPc, FrameOfTracepoint, FrameInRange, FrameOutsideRange>;

// The payload after "QTFrame:": `<n>`, `pc:<addr>`, `tdp:<t>`, `range:<a>:<b>`,
// `outside:<a>:<b>`.
Result<FrameQuery> parse_frame_query(std::string_view payload);

// Reply to a successful QTFrame: `F<n>T<tracepoint>`, or `F-1` when nothing matched.
std::string frame_found_reply(std::size_t number, std::uint32_t tracepoint);
inline std::string frame_not_found_reply() {
    return "F-1";
}

} // namespace tpagent::trace
