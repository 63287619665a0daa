// The binary part of a trace file: frames until one with tracepoint number 0.
#pragma once
#include "base/result.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace tpagent::tracefile {

struct FrameSection {
    std::vector<Frame> frames; // with damage, the frames before it
    std::optional<Error> damage;
};

// `file` is the whole file, `start` the offset of the first frame. R blocks need
// register_block_size. Reading stops at the first frame that does not follow the format.
FrameSection parse_frame_section(std::span<const std::uint8_t> file, std::size_t start,
                                 std::optional<std::size_t> register_block_size);

} // namespace tpagent::tracefile
