// Fuzzes the trace-file reader: arbitrary bytes are parsed as a trace file. A file that
// parses must be self-consistent (frames tile the frame section, blocks lie inside their
// frame, up to the damage if any); a file that does not, and any damage, must give an error
// naming an offset inside it. Seeds: the files in tests/data/tracefiles (copied into the
// corpus at configure time).
#include "tools/tracefile/trace_file.hpp"
#include "fuzz/invariant.hpp"

#include <cstdint>
#include <string>
#include <vector>

using namespace tpagent;
using namespace tpagent::tracefile;

namespace {

bool inside(std::span<const std::uint8_t> outer, std::span<const std::uint8_t> inner) {
    return inner.empty() || (inner.data() >= outer.data() &&
                             inner.data() + inner.size() <= outer.data() + outer.size());
}

// The error names an offset in [from, size].
void check_error(const Error& error, std::size_t size, std::size_t from = 0) {
    INVARIANT(error.text.rfind("offset ", 0) == 0);
    const std::size_t offset = std::stoull(error.text.substr(7));
    INVARIANT(offset >= from && offset <= size);
}

void check_file(const TraceFile& file, std::span<const std::uint8_t> bytes) {
    std::size_t next = file.frame_section_offset();
    INVARIANT(next <= bytes.size());
    for (const Frame& frame : file.frames()) {
        INVARIANT(frame.offset == next);
        INVARIANT(frame.tracepoint != 0);
        INVARIANT(frame.bytes.data() == bytes.data() + frame.offset);
        INVARIANT(inside(bytes, frame.bytes));
        for (const trace::FrameBlock& b : frame.blocks) {
            INVARIANT(inside(frame.bytes, b.data));
            if (b.type == 'R') INVARIANT(b.data.size() == *file.register_block_size());
        }
        // The accessors tools use on every frame.
        (void)file.frame_pc(frame);
        (void)frame.variable(1);
        if (auto regs = frame.registers(); regs && file.register_layout())
            for (const RegisterInfo& r : file.register_layout()->registers)
                (void)register_value(r, *regs);
        next = frame.offset + frame.bytes.size();
    }
    if (file.damage())
        check_error(*file.damage(), bytes.size(), next); // in the frame after the good ones
    else
        INVARIANT(next + 2 <= bytes.size()); // the end marker's tracepoint number
    for (const trace::Tracepoint& tp : file.tracepoints())
        INVARIANT(tp.definition.key.number != 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto file = parse_trace_file(std::vector<std::uint8_t>(data, data + size));
    if (file) {
        INVARIANT(file->bytes().size() == size);
        check_file(*file, file->bytes());
    } else {
        check_error(file.error(), size);
    }
    return 0;
}
