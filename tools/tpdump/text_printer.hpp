// Human-readable dump: summary, variables, tracepoints, then each selected frame.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>

namespace tpagent::tpdump {

void print_text(const tracefile::TraceFile& file, const Options& options, std::FILE* out);
// The parts of print_text, for a trace printed frame by frame (a folder, --follow): the
// summary, variables and tracepoints; one frame (a blank line first).
void print_text_header(const tracefile::TraceFile& file, const Options& options, std::FILE* out);
std::string text_frame(const tracefile::TraceFile& file, const tracefile::Frame& frame,
                       const Options& options);

} // namespace tpagent::tpdump
