// Sealing a trace file cut short (tpagent killed or the power lost while it recorded, --record):
// the file is truncated after its last whole frame and given the end-of-frames marker, so that
// gdb's `target tfile` opens it (gdb refuses a file without the marker). A file the flight
// recorder wrote also has its status restated: its frame count, and a note of the cut.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <string>

namespace tpagent::trace {

struct SealReport {
    bool was_sealed = false;     // the file had its marker: nothing was changed
    std::uint64_t frames = 0;    // whole frames in the file
    std::uint64_t cut_bytes = 0; // of a frame cut short, removed
};

// Errors: not a trace file, or cut inside its text section (nothing in it to keep).
Result<SealReport> seal_trace_file(const std::string& path);

} // namespace tpagent::trace
