// The thread of each frame (the HTML report, the Perfetto tracks), one name per thread. A frame
// names its thread by `$trace_thread` (the thread id, when its tracepoint collected it), else by
// the TLS base register of its R block (fs_base, tpidr; frame_details.hpp). A trace with both kinds
// of frames would show a thread twice, once by each name; but a frame that holds both ties the TLS
// base to the thread id, and the frames that only hold that base take the id.
#pragma once
#include "tools/tpdump/frame_details.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <optional>
#include <vector>

namespace tpagent::tpdump {

// Per frame of `frames` (in file order): its thread, if the frame tells.
std::vector<std::optional<FrameThread>>
frame_threads(const tracefile::TraceFile& file, const std::vector<const tracefile::Frame*>& frames);

} // namespace tpagent::tpdump
