// --perfetto: the Chrome trace-event JSON format, which ui.perfetto.dev and
// chrome://tracing open. One track (tid) per tracepoint, named after its location, and one
// per thread that collected frames (frame_thread); one instant event per frame on its
// tracepoint's track, and on its thread's when known, with its pc and collected variables
// as arguments. `ts` is in microseconds (frame_times); otherData says from which clock, and
// what damage ended a damaged file.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>

namespace tpagent::tpdump {

void print_perfetto(const tracefile::TraceFile& file, const Options& options, std::FILE* out);

} // namespace tpagent::tpdump
