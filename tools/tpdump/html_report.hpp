// tpdump --html: one self-contained HTML page (no network) with the tracepoints, a timeline
// of hits, a plot per collected scalar and the frame a click selects.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>

namespace tpagent::tpdump {

void print_html(const tracefile::TraceFile& file, const Options& options, std::FILE* out);

} // namespace tpagent::tpdump
