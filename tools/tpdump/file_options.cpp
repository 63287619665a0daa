#include "tools/tpdump/file_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

namespace tpagent::tpdump {

namespace {

Error usage(std::string text) {
    return make_error(ErrorCode::BadInput, std::move(text));
}

Status check_registers(const tracefile::TraceFile& file, const Options& options) {
    if (options.registers.size() == 1 && options.registers[0] == "none") return ok_status();
    for (const std::string& name : options.registers) {
        if (name == "none")
            return usage("--registers: `none` cannot be combined with register names");
        if (!file.register_layout())
            return usage(fmt::format("--registers: no register '{}': the file has no target "
                                     "description to name registers",
                                     name));
        if (!file.register_layout()->find(name))
            return usage(fmt::format("--registers: no register '{}' in the file's target "
                                     "description",
                                     name));
    }
    return ok_status();
}

Status check_tracepoints(const tracefile::TraceFile& file, const Options& options) {
    std::set<std::uint32_t> known;
    for (const trace::Tracepoint& tp : file.tracepoints())
        known.insert(tp.definition.key.number);
    for (const tracefile::Frame& frame : file.frames())
        known.insert(frame.tracepoint);
    for (std::uint32_t number : options.tracepoints)
        if (!known.count(number))
            return usage(
                known.empty()
                    ? fmt::format("--tracepoint {}: the file has no tracepoints", number)
                    : fmt::format("--tracepoint {}: no such tracepoint in the file (it has {})",
                                  number, fmt::join(known, ", ")));
    return ok_status();
}

} // namespace

Status check_options_against_file(const tracefile::TraceFile& file, const Options& options) {
    if (auto s = check_registers(file, options); !s) return s;
    return check_tracepoints(file, options);
}

} // namespace tpagent::tpdump
