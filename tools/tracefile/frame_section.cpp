#include "tools/tracefile/frame_section.hpp"

#include "tools/tracefile/file_error.hpp"
#include "trace/frame_format.hpp"

namespace tpagent::tracefile {

namespace {

using namespace trace; // the frame format

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
        const std::uint8_t* block = file.data() + pos;
        switch (b.type) {
        case kRegistersBlock: {
            if (!register_size)
                return file_error(at, where('R') + " but the file gives no register block size "
                                                   "(no R line, no target description)");
            if (auto s = fits(at, *register_size, 'R'); !s) return s.error();
            b.data = file.subspan(pos + 1, *register_size);
            pos += registers_block_size(*register_size);
            break;
        }
        case kMemoryBlock: {
            if (auto s = fits(at, kMemoryBlockHeaderSize - 1, 'M'); !s) return s.error();
            b.address = memory_block_address(block);
            const std::size_t length = memory_block_length(block);
            if (auto s = fits(at, kMemoryBlockHeaderSize - 1 + length, 'M'); !s) return s.error();
            b.data = file.subspan(pos + kMemoryBlockHeaderSize, length);
            pos += kMemoryBlockHeaderSize + length;
            break;
        }
        case kVariableBlock: {
            if (auto s = fits(at, kVariableBlockSize - 1, 'V'); !s) return s.error();
            b.variable = variable_block_number(block);
            b.value = variable_block_value(block);
            pos += kVariableBlockSize;
            break;
        }
        case kStaticDataBlock: { // gdbserver's static tracepoint data
            if (auto s = fits(at, kStaticDataBlockHeaderSize - 1, 'S'); !s) return s.error();
            const std::size_t length = static_data_block_length(block);
            if (auto s = fits(at, kStaticDataBlockHeaderSize - 1 + length, 'S'); !s)
                return s.error();
            b.data = file.subspan(pos + kStaticDataBlockHeaderSize, length);
            pos += kStaticDataBlockHeaderSize + length;
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

FrameSection parse_frame_section(std::span<const std::uint8_t> file, std::size_t start,
                                 std::optional<std::size_t> register_block_size) {
    FrameSection out;
    std::vector<Frame>& frames = out.frames;
    auto damaged = [&](Error error) {
        out.damage = std::move(error);
        return std::move(out);
    };
    std::size_t pos = start;
    for (;;) {
        std::size_t left = file.size() - pos;
        if (left == 0)
            return damaged(file_error(pos, fmt::format("end of file after {} frames without the "
                                                       "end-of-frames marker (tracepoint number 0)",
                                                       frames.size())));
        if (left < 2)
            return damaged(
                file_error(pos, fmt::format("frame {}: truncated frame header ({} byte left)",
                                            frames.size(), left)));
        const std::uint16_t tracepoint = frame_tracepoint(file.data() + pos);
        if (tracepoint == 0) return out; // gdb pads the marker to 4 bytes; the rest is ignored
        if (left < kFrameHeaderSize)
            return damaged(
                file_error(pos, fmt::format("frame {}: truncated frame header ({} bytes left)",
                                            frames.size(), left)));
        const std::uint64_t length = frame_length(file.data() + pos);
        if (length > left - kFrameHeaderSize)
            return damaged(file_error(
                pos + 2, fmt::format("frame {} (tracepoint {}): data length 0x{:x} goes past "
                                     "the end of the file ({} bytes left)",
                                     frames.size(), tracepoint, length, left - kFrameHeaderSize)));
        Frame frame;
        frame.number = frames.size();
        frame.offset = pos;
        frame.tracepoint = tracepoint;
        std::size_t end = pos + kFrameHeaderSize + length;
        frame.bytes = file.subspan(pos, end - pos);
        auto blocks = parse_blocks(file, pos + kFrameHeaderSize, end, frame, register_block_size);
        if (!blocks) return damaged(blocks.error());
        frame.blocks = std::move(*blocks);
        frames.push_back(std::move(frame));
        pos = end;
    }
}

} // namespace tpagent::tracefile
