// Options that name things in the trace file, checked against the file once it is read.
#pragma once
#include "base/result.hpp"
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"

namespace tpagent::tpdump {

// Every --registers name (other than a lone `none`) must be in the file's register layout,
// every --tracepoint must be defined in the file or have frames there. The error names the
// bad value.
Status check_options_against_file(const tracefile::TraceFile& file, const Options& options);

} // namespace tpagent::tpdump
