// The data the HTML report's script draws (html/report.js reads it), as JSON. Everything
// sized by the file is bounded, so a huge trace still gives a page a browser can open.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstddef>
#include <nlohmann/json.hpp>

namespace tpagent::tpdump {

// The page holds at most this many frames (the first ones --frames/--tracepoint select).
inline constexpr std::size_t kHtmlMaxFrames = 20000;

nlohmann::json report_data(const tracefile::TraceFile& file, const Options& options);

} // namespace tpagent::tpdump
