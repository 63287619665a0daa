// A folder tpagent --record wrote, printed as one trace (tracefile/trace_folder.hpp): text and
// JSON lines say, where each file begins, which of the run's frames it holds and what was not
// recorded by then; the other formats see one trace.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_folder.hpp"
#include <cstdio>
#include <string>

namespace tpagent::tpdump {

void print_folder(const tracefile::TraceFolder& folder, const Options& options, std::FILE* out);

// Where a part begins: "--- trace-000004.tf: ..." (text, a blank line first) or a JSON line
// {"file":…,"first_frame":…,"frames":…,…}. `previous`: the part before it, if any (what was
// lost since is said).
std::string part_line(const tracefile::FolderPart& part, const tracefile::FolderPart* previous,
                      OutputFormat format);

} // namespace tpagent::tpdump
