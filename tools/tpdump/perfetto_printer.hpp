// --perfetto: the Chrome trace-event JSON format, which ui.perfetto.dev and
// chrome://tracing open. One track (tid) per tracepoint, named after its location; one
// instant event per frame with its pc and collected variables as arguments.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>

namespace tpagent::tpdump {

void print_perfetto(const tracefile::TraceFile& file, const Options& options, std::FILE* out);

} // namespace tpagent::tpdump
