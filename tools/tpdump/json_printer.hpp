// --json: one JSON object per selected frame, one per line.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>
#include <string>

namespace tpagent::tpdump {

void print_json(const tracefile::TraceFile& file, const Options& options, std::FILE* out);
// One frame's line (with its newline), for a trace printed frame by frame.
std::string json_frame_line(const tracefile::TraceFile& file, const tracefile::Frame& frame,
                            const Options& options);

} // namespace tpagent::tpdump
