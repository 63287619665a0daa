// --json: one JSON object per selected frame, one per line.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>

namespace tpagent::tpdump {

void print_json(const tracefile::TraceFile& file, const Options& options, std::FILE* out);

} // namespace tpagent::tpdump
