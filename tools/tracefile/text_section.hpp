// The text part of a trace file: from after the header to the empty line.
#pragma once
#include "base/result.hpp"
#include "trace/tracepoint.hpp"
#include "tools/tracefile/register_layout.hpp"
#include "tools/tracefile/trace_file.hpp"
#include "tools/tracefile/trace_status.hpp"
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tpagent::tracefile {

// Larger than any real `g` packet (AArch64 with the widest SVE is a few KiB); an R line
// beyond it is corrupt.
inline constexpr std::size_t kMaxRegisterBlockSize = std::size_t{1} << 20;

struct TextSection {
    std::optional<std::size_t> register_block_size; // the R line
    std::optional<TraceStatus> status;
    std::vector<TraceVariable> variables;
    std::vector<trace::Tracepoint> tracepoints;
    std::string target_description;
    std::optional<RegisterLayout> layout;
    std::size_t end = 0; // offset just past the empty line: the first frame
};

// `file` is the whole file; the header has been checked.
Result<TextSection> parse_text_section(std::span<const std::uint8_t> file);

} // namespace tpagent::tracefile
