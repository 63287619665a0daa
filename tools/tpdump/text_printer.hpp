// Human-readable dump: summary, variables, tracepoints, then each selected frame.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>

namespace tpagent::tpdump {

void print_text(const tracefile::TraceFile& file, const Options& options, std::FILE* out);

} // namespace tpagent::tpdump
