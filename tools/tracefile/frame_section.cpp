#include "tools/tracefile/frame_section.hpp"

#include "tools/tracefile/file_error.hpp"

namespace tpagent::tracefile {

namespace {

std::uint64_t get_le(const std::uint8_t* p, std::size_t size) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < size; ++i)
        v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return v;
}

// Walks the blocks of the frame whose data is file[begin, end); every block must end
// inside the frame.
Result<std::vector<trace::FrameBlock>> parse_blocks(std::span<const std::uint8_t> file,
                                                    std::size_t begin, std::size_t end,
                                                    const Frame& frame,
                                                    std::optional<std::size_t> register_size) {
    std::vector<trace::FrameBlock> blocks;
    std::size_t pos = begin;
    auto where = [&](char type) {
        return fmt::format("frame {} (tracepoint {}): {} block", frame.number, frame.tracepoint,
                           type);
    };
    // Checks that `need` bytes after the block's type byte at `at` are inside the frame.
    auto fits = [&](std::size_t at, std::size_t need, char type) -> Status {
        if (end - at - 1 < need)
            return file_error(at, fmt::format("{} needs {} bytes, only {} left in the frame",
                                              where(type), need, end - at - 1));
        return ok_status();
    };
    while (pos < end) {
        std::size_t at = pos;
        trace::FrameBlock b;
        b.type = static_cast<char>(file[pos]);
        const std::uint8_t* p = file.data() + pos + 1;
        switch (b.type) {
        case 'R': {
            if (!register_size)
                return file_error(at, where('R') + " but the file gives no register block size "
                                                   "(no R line, no target description)");
            if (auto s = fits(at, *register_size, 'R'); !s) return s.error();
            b.data = file.subspan(pos + 1, *register_size);
            pos += 1 + *register_size;
            break;
        }
        case 'M': {
            if (auto s = fits(at, 10, 'M'); !s) return s.error();
            b.address = get_le(p, 8);
            std::size_t length = get_le(p + 8, 2);
            if (auto s = fits(at, 10 + length, 'M'); !s) return s.error();
            b.data = file.subspan(pos + 11, length);
            pos += 11 + length;
            break;
        }
        case 'V': {
            if (auto s = fits(at, 12, 'V'); !s) return s.error();
            b.variable = static_cast<std::uint32_t>(get_le(p, 4));
            b.value = static_cast<std::int64_t>(get_le(p + 4, 8));
            pos += 13;
            break;
        }
        case 'S': { // gdbserver's static tracepoint data: 2-byte length, then the text
            if (auto s = fits(at, 2, 'S'); !s) return s.error();
            std::size_t length = get_le(p, 2);
            if (auto s = fits(at, 2 + length, 'S'); !s) return s.error();
            b.data = file.subspan(pos + 3, length);
            pos += 3 + length;
            break;
        }
        default:
            return file_error(at, fmt::format("frame {} (tracepoint {}): unknown block type "
                                              "0x{:02x}",
                                              frame.number, frame.tracepoint, file[pos]));
        }
        blocks.push_back(b);
    }
    return blocks;
}

} // namespace

Result<std::vector<Frame>> parse_frame_section(std::span<const std::uint8_t> file,
                                               std::size_t start,
                                               std::optional<std::size_t> register_block_size) {
    std::vector<Frame> frames;
    std::size_t pos = start;
    for (;;) {
        std::size_t left = file.size() - pos;
        if (left == 0)
            return file_error(pos, fmt::format("end of file after {} frames without the "
                                               "end-of-frames marker (tracepoint number 0)",
                                               frames.size()));
        if (left < 2)
            return file_error(pos, fmt::format("frame {}: truncated frame header ({} byte left)",
                                               frames.size(), left));
        auto tracepoint = static_cast<std::uint16_t>(get_le(file.data() + pos, 2));
        if (tracepoint == 0) return frames; // gdb pads the marker to 4 bytes; the rest is ignored
        if (left < trace::kFrameHeaderSize)
            return file_error(pos, fmt::format("frame {}: truncated frame header ({} bytes left)",
                                               frames.size(), left));
        std::uint64_t length = get_le(file.data() + pos + 2, 4);
        if (length > left - trace::kFrameHeaderSize)
            return file_error(pos + 2,
                              fmt::format("frame {} (tracepoint {}): data length 0x{:x} goes past "
                                          "the end of the file ({} bytes left)",
                                          frames.size(), tracepoint, length,
                                          left - trace::kFrameHeaderSize));
        Frame frame;
        frame.number = frames.size();
        frame.offset = pos;
        frame.tracepoint = tracepoint;
        std::size_t end = pos + trace::kFrameHeaderSize + length;
        frame.bytes = file.subspan(pos, end - pos);
        auto blocks =
            parse_blocks(file, pos + trace::kFrameHeaderSize, end, frame, register_block_size);
        if (!blocks) return blocks.error();
        frame.blocks = std::move(*blocks);
        frames.push_back(std::move(frame));
        pos = end;
    }
}

} // namespace tpagent::tracefile
