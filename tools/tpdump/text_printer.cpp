#include "tools/tpdump/text_printer.hpp"

#include "trace/tracepoint_codec.hpp"
#include "bytecode/disassembler.hpp"
#include "protocol/hex.hpp"
#include "tools/tpdump/frame_details.hpp"
#include <fmt/format.h>

namespace tpagent::tpdump {

namespace {

using tracefile::Frame;
using tracefile::TraceFile;

std::string seconds(std::uint64_t microseconds) {
    return fmt::format("{}.{:06}", microseconds / 1000000, microseconds % 1000000);
}

void print_summary(const TraceFile& file, const Options& options, std::string& out) {
    out += fmt::format("trace file {}: {} bytes, {} frames{}\n", options.path, file.file_size(),
                       file.frames().size(), file.damage() ? " before the damage" : "");
    if (const auto& status = file.status()) {
        out += fmt::format("status: {}", status->running ? "running" : "stopped");
        if (!status->stop_reason.empty()) {
            out += fmt::format(" ({}", status->stop_reason);
            if (!status->stop_text.empty()) out += fmt::format(" \"{}\"", status->stop_text);
            if (status->stop_tracepoint.value_or(0) != 0)
                out += fmt::format(", tracepoint {}", *status->stop_tracepoint);
            out += ')';
        }
        if (status->frames)
            out += fmt::format(", {} frames ({} created)", *status->frames,
                               status->created.value_or(*status->frames));
        if (status->size && status->free && *status->free <= *status->size)
            out += fmt::format(", buffer {} of {} bytes used", *status->size - *status->free,
                               *status->size);
        if (status->circular.value_or(false)) out += ", circular";
        out += '\n';
        if (status->start_time) {
            out += fmt::format("started at {} s", seconds(*status->start_time));
            if (status->stop_time && *status->stop_time >= *status->start_time)
                out += fmt::format(", stopped {} s later",
                                   seconds(*status->stop_time - *status->start_time));
            out += '\n';
        }
        if (!status->user.empty()) out += fmt::format("user: {}\n", status->user);
        if (!status->notes.empty()) out += fmt::format("notes: {}\n", status->notes);
        if (const auto& r = status->recorded) {
            out += fmt::format("recorded: file {} of its folder, the run's frames from {}", r->file,
                               r->first);
            if (!file.frames().empty())
                out += fmt::format(" to {}", r->first + file.frames().size() - 1);
            out += fmt::format("; not in any file by this file's end: {} overwritten before "
                               "recorded, {} not collected (no room in the buffer), {} not "
                               "written (disk)\n",
                               r->lost, r->dropped, r->unwritten);
        }
    }
    if (file.register_block_size()) {
        out += fmt::format("register block: {} bytes", *file.register_block_size());
        if (const auto& layout = file.register_layout()) {
            out += fmt::format(", {} registers", layout->registers.size());
            if (!layout->architecture.empty()) out += fmt::format(" ({})", layout->architecture);
            if (layout->block_size() != *file.register_block_size())
                out += fmt::format("; the description adds up to {} bytes", layout->block_size());
        }
        out += '\n';
    }
}

void print_variables(const TraceFile& file, std::string& out) {
    if (file.variables().empty()) return;
    out += "\ntrace state variables:\n";
    for (const tracefile::TraceVariable& v : file.variables())
        out += fmt::format("  {:<20} #{:<3} initial {}{}\n", "$" + v.name, v.number, v.initial,
                           v.builtin ? ", builtin" : "");
}

// Agent-expression instructions, one per line, indented under their action.
void print_disassembly(const bytecode::Program& program, std::string& out) {
    const std::string text = bytecode::disassemble(program);
    for (std::string_view line : protocol::split(text, '\n'))
        if (!line.empty()) out += fmt::format("        {}\n", line);
}

void print_action_strings(const std::vector<trace::ActionString>& strings, const Options& options,
                          std::string& out) {
    for (const trace::ActionString& s : strings) {
        for (const trace::Action& a : s.actions) {
            out += fmt::format("    {}\n", trace::format_action_string(trace::ActionString{{a}}));
            if (const auto* expr = std::get_if<trace::Expression>(&a); expr && options.disassemble)
                print_disassembly(expr->program, out);
        }
    }
}

void print_tracepoint(const trace::Tracepoint& tp, const Options& options, std::string& out) {
    const trace::TracepointDefinition& def = tp.definition;
    static constexpr const char* kKinds[] = {"", "fast ", "static "};
    out += fmt::format("\n{}tracepoint {} at 0x{:x}, {}", kKinds[static_cast<int>(def.kind)],
                       def.key.number, def.key.address, def.enabled ? "enabled" : "disabled");
    if (def.pass_count) out += fmt::format(", pass count {}", def.pass_count);
    if (def.step_count) out += fmt::format(", while-stepping {}", def.step_count);
    out += fmt::format(", {} hits, {} bytes\n", tp.counters.hits, tp.counters.bytes_used);
    bool source_header = false;
    for (const trace::SourceString& s : tp.sources) {
        if (s.type == "at") {
            out += fmt::format("  location: {}\n", s.text);
        } else if (s.type == "cond") {
            out += fmt::format("  condition: {}\n", s.text);
        } else {
            if (!source_header) out += "  commands:\n";
            source_header = true;
            out += fmt::format("    {}\n", s.text);
        }
    }
    if (def.condition) {
        out += fmt::format("  condition bytecode: {} bytes\n", def.condition->bytes.size());
        if (options.disassemble) print_disassembly(def.condition->program, out);
    }
    if (!def.actions.empty()) {
        out += "  actions:\n";
        print_action_strings(def.actions, options, out);
    }
    if (!def.stepping_actions.empty()) {
        out += "  while-stepping actions:\n";
        print_action_strings(def.stepping_actions, options, out);
    }
}

void print_hexdump(std::uint64_t address, std::span<const std::uint8_t> bytes, std::string& out) {
    for (std::size_t row = 0; row < bytes.size(); row += 16) {
        std::size_t n = std::min<std::size_t>(16, bytes.size() - row);
        out += fmt::format("    {:016x} ", address + row);
        for (std::size_t i = 0; i < 16; ++i)
            out += i < n ? fmt::format(" {:02x}", bytes[row + i]) : std::string("   ");
        out += "  |";
        for (std::size_t i = 0; i < n; ++i) {
            char c = static_cast<char>(bytes[row + i]);
            out += c >= 0x20 && c < 0x7f ? c : '.';
        }
        out += "|\n";
    }
}

void print_registers(const TraceFile& file, std::span<const std::uint8_t> block,
                     const Options& options, std::string& out) {
    if (!file.register_layout()) {
        out += fmt::format("  registers: {} bytes (no target description to name them)\n",
                           block.size());
        return;
    }
    auto shown = shown_registers(file, block, options, true);
    out += "  registers:\n";
    // Registers of up to 8 bytes three to a line, wider ones on their own line.
    std::string line;
    std::size_t column = 0;
    auto flush = [&] {
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out += "   " + line + "\n";
        line.clear();
        column = 0;
    };
    for (const ShownRegister& r : shown) {
        if (r.info->size > 8) continue;
        line += fmt::format(" {:>8} {:<18}", r.info->name, register_hex(r.bytes));
        if (++column == 3) flush();
    }
    if (column) flush();
    for (const ShownRegister& r : shown)
        if (r.info->size > 8)
            out += fmt::format("    {:>8} {}\n", r.info->name, register_hex(r.bytes));
}

void print_frame(const TraceFile& file, const Frame& frame, const Options& options,
                 std::string& out) {
    out += fmt::format("\nframe {}: tracepoint {}", frame.number, frame.tracepoint);
    std::string location = tracepoint_location(file, frame.tracepoint);
    if (!location.empty()) out += fmt::format(" ({})", location);
    if (auto pc = file.frame_pc(frame)) out += fmt::format(", pc 0x{:x}", *pc);
    out += fmt::format(", {} bytes at offset {}\n", frame.bytes.size(), frame.offset);
    for (const trace::FrameBlock& b : frame.blocks) {
        switch (b.type) {
        case 'R':
            print_registers(file, b.data, options, out);
            break;
        case 'M':
            out += fmt::format("  memory 0x{:x}, {} bytes:\n", b.address, b.data.size());
            print_hexdump(b.address, b.data, out);
            break;
        case 'V':
            out += fmt::format("  variable {} = {}\n", variable_name(file, b.variable), b.value);
            break;
        case 'S':
            out += fmt::format("  static tracepoint data, {} bytes:\n", b.data.size());
            print_hexdump(0, b.data, out);
            break;
        }
    }
}

} // namespace

void print_text_header(const TraceFile& file, const Options& options, std::FILE* stream) {
    std::string out;
    print_summary(file, options, out);
    print_variables(file, out);
    for (const trace::Tracepoint& tp : file.tracepoints())
        if (options.tracepoint_selected(tp.definition.key.number))
            print_tracepoint(tp, options, out);
    std::fputs(out.c_str(), stream);
}

std::string text_frame(const TraceFile& file, const Frame& frame, const Options& options) {
    std::string out;
    print_frame(file, frame, options, out);
    return out;
}

void print_text(const TraceFile& file, const Options& options, std::FILE* stream) {
    print_text_header(file, options, stream);
    // Frame by frame, so a large file starts printing at once.
    for (const Frame* frame : selected_frames(file, options))
        std::fputs(text_frame(file, *frame, options).c_str(), stream);
}

} // namespace tpagent::tpdump
