#include "tools/tpdump/html_report_data.hpp"

#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/html_collected_registers.hpp"
#include "tools/tpdump/html_memory_names.hpp"
#include "tools/tpdump/html_report_parts.hpp"

namespace tpagent::tpdump {

namespace {

nlohmann::json status_json(const tracefile::TraceFile& file) {
    nlohmann::json j = nlohmann::json::object();
    const auto& status = file.status();
    if (!status) return j;
    j = {{"running", status->running},
         {"stopReason", status->stop_reason},
         {"stopText", status->stop_text},
         {"user", status->user},
         {"notes", status->notes}};
    auto optional = [&](const char* key, const auto& value) {
        if (value) j[key] = *value;
    };
    optional("stopTracepoint", status->stop_tracepoint);
    optional("frames", status->frames);
    optional("created", status->created);
    optional("bufferSize", status->size);
    optional("bufferFree", status->free);
    optional("circular", status->circular);
    optional("startTime", status->start_time);
    optional("stopTime", status->stop_time);
    return j;
}

nlohmann::json variables_json(const tracefile::TraceFile& file) {
    nlohmann::json out = nlohmann::json::array();
    for (const tracefile::TraceVariable& v : file.variables())
        out.push_back({{"number", v.number},
                       {"name", "$" + v.name},
                       {"initial", integer_json(v.initial)},
                       {"builtin", v.builtin}});
    return out;
}

} // namespace

nlohmann::json integer_json(std::int64_t value) {
    constexpr std::int64_t kExact = std::int64_t{1} << 53;
    if (value > -kExact && value < kExact) return value;
    return std::to_string(value);
}

nlohmann::json report_data(const tracefile::TraceFile& file, const Options& options) {
    ReportFrames shown;
    shown.frames = selected_frames(file, options);
    const std::size_t selected = shown.frames.size();
    if (shown.frames.size() > kHtmlMaxFrames) shown.frames.resize(kHtmlMaxFrames);
    MemoryNames names(file);
    const CollectedRegisters collected(file);
    for (const tracefile::Frame* f : shown.frames) {
        shown.block_names.push_back(names.names(*f));
        shown.register_masks.push_back(collected.mask(*f));
    }
    shown.time = time_axis(file, shown.frames);

    nlohmann::json j = {{"file", options.path},
                        {"fileSize", file.file_size()},
                        {"framesInFile", file.frames().size()},
                        {"framesSelected", selected},
                        {"status", status_json(file)},
                        {"variables", variables_json(file)},
                        {"tracepoints", tracepoints_json(file, options)},
                        {"time",
                         {{"unit", shown.time.unit},
                          {"source", shown.time.source},
                          {"origin", std::to_string(shown.time.origin)},
                          {"untimed", shown.time.untimed}}}};
    if (const auto& layout = file.register_layout()) j["architecture"] = layout->architecture;
    j.update(frames_json(file, options, shown));
    j.update(series_json(file, options, shown));
    return j;
}

} // namespace tpagent::tpdump
