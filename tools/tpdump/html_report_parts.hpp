// The parts of the HTML report's data (html_report_data.cpp puts them together).
#pragma once
#include "tools/tpdump/html_time_axis.hpp"
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tpagent::tpdump {

// The frames the page shows, with what every part needs about them.
struct ReportFrames {
    std::vector<const tracefile::Frame*> frames;
    std::vector<std::vector<std::string>> block_names; // per frame, per M block (MemoryNames)
    // Per frame, the registers its actions collected (CollectedRegisters::mask; it points
    // into report_data's CollectedRegisters).
    std::vector<const trace::RegisterMask*> register_masks;
    TimeAxis time;
};

// `value` as a JSON number when a JavaScript number holds it exactly, else as decimal text.
nlohmann::json integer_json(std::int64_t value);

// [{number, address, enabled, kind, hits, ..., commands: [{text, depth}]}], by number
nlohmann::json tracepoints_json(const tracefile::TraceFile& file, const Options& options);
// {frames: {number, tracepoint, time, thread, pc, registers: columns}, threads (one name per
//  thread: frame_threads), details, detailsLeftOut}
nlohmann::json frames_json(const tracefile::TraceFile& file, const Options& options,
                           const ReportFrames& shown);
// {series: [{kind, name, role, tracepoint?, frames, values}],
//  constantRegisters: [{tracepoint, name, value}], registerNames, seriesLeftOut}
nlohmann::json series_json(const tracefile::TraceFile& file, const Options& options,
                           const ReportFrames& shown);

} // namespace tpagent::tpdump
