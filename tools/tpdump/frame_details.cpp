#include "tools/tpdump/frame_details.hpp"

#include "trace/trace_state_variables.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::tpdump {

std::vector<const tracefile::Frame*> selected_frames(const tracefile::TraceFile& file,
                                                     const Options& options) {
    std::vector<const tracefile::Frame*> out;
    for (const tracefile::Frame& frame : file.frames())
        if (options.frame_selected(frame.number) && options.tracepoint_selected(frame.tracepoint))
            out.push_back(&frame);
    return out;
}

std::string register_hex(std::span<const std::uint8_t> bytes) {
    std::string out = "0x";
    for (auto it = bytes.rbegin(); it != bytes.rend(); ++it)
        out += fmt::format("{:02x}", *it);
    return out;
}

bool all_zero(std::span<const std::uint8_t> bytes) {
    return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

std::vector<ShownRegister> shown_registers(const tracefile::TraceFile& file,
                                           std::span<const std::uint8_t> block,
                                           const Options& options, bool text) {
    std::vector<ShownRegister> out;
    if (!file.register_layout()) return out;
    const bool named = !options.registers.empty();
    if (named && options.registers.size() == 1 && options.registers[0] == "none") return out;
    for (const tracefile::RegisterInfo& reg : file.register_layout()->registers) {
        auto bytes = tracefile::register_bytes(reg, block);
        if (!bytes) break; // the block is shorter than the description says
        if (named) {
            if (std::find(options.registers.begin(), options.registers.end(), reg.name) ==
                options.registers.end())
                continue;
        } else if (text && !options.all_registers && reg.size > 8 && all_zero(*bytes)) {
            continue;
        }
        out.push_back({&reg, *bytes});
    }
    return out;
}

std::string variable_name(const tracefile::TraceFile& file, std::uint32_t number) {
    if (const tracefile::TraceVariable* v = file.find_variable(number)) return "$" + v->name;
    return fmt::format("#{}", number);
}

namespace {
// The frame's value of the variable the file names `name`, if it holds one.
std::optional<std::int64_t> named_variable(const tracefile::TraceFile& file,
                                           const tracefile::Frame& frame, std::string_view name) {
    for (const tracefile::TraceVariable& v : file.variables())
        if (v.name == name)
            if (auto value = frame.variable(v.number)) return value;
    return std::nullopt;
}
} // namespace

std::uint64_t frame_process(const tracefile::TraceFile& file, const tracefile::Frame& frame) {
    return static_cast<std::uint64_t>(
        named_variable(file, frame, trace::TraceStateVariables::kProcessName).value_or(0));
}

std::optional<FrameThread> frame_thread(const tracefile::TraceFile& file,
                                        const tracefile::Frame& frame) {
    const std::uint64_t process = frame_process(file, frame);
    if (auto id = named_variable(file, frame, trace::TraceStateVariables::kThreadName))
        return FrameThread{static_cast<std::uint64_t>(*id), false, process};
    auto block = frame.registers();
    if (!block || !file.register_layout()) return std::nullopt;
    for (std::string_view name : {"fs_base", "tpidr"})
        if (const tracefile::RegisterInfo* reg = file.register_layout()->find(name))
            if (auto base = tracefile::register_value(*reg, *block); base && *base != 0)
                return FrameThread{*base, true, process};
    return std::nullopt;
}

std::string thread_label(const FrameThread& thread) {
    const std::string of =
        thread.process ? fmt::format("process {} ", thread.process) : std::string();
    return thread.from_tls_base ? fmt::format("{}thread @0x{:x}", of, thread.id)
                                : fmt::format("{}thread {}", of, thread.id);
}

std::string tracepoint_location(const tracefile::TraceFile& file, std::uint32_t number) {
    if (const trace::Tracepoint* tp = file.find_tracepoint(number))
        for (const trace::SourceString& s : tp->sources)
            if (s.type == "at") return s.text;
    return {};
}

} // namespace tpagent::tpdump
