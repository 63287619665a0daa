// Which registers of a frame's R block the HTML report shows: those its tracepoint's actions
// collected. An R block always holds every register of the target (gdbserver's and tpagent's,
// which widens a fast tracepoint's short block with zeros where the pad saved nothing),
// whatever the mask of the `R` action that recorded it; and gdb adds an `R` action of its own
// for registers an action needs, such as the frame base of `collect n` (a local on the stack).
// So the block is no sign that the user collected registers: the mask is.
#pragma once
#include "trace/tracepoint.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdint>
#include <map>
#include <vector>

namespace tpagent::tpdump {

class CollectedRegisters {
  public:
    explicit CollectedRegisters(const tracefile::TraceFile& file);

    // The mask of the action list `frame` came from; nullptr when the file does not define
    // its tracepoint (then nothing says which registers were meant, and all of them count).
    const trace::RegisterMask* mask(const tracefile::Frame& frame) const;

  private:
    struct Location {
        std::uint64_t address = 0;
        trace::RegisterMask hit; // of the actions on each hit
    };
    struct Masks {
        std::vector<Location> locations;
        trace::RegisterMask stepping; // of every location's while-stepping actions
        trace::RegisterMask any;      // of all its actions
    };

    const tracefile::TraceFile& file_;
    std::map<std::uint32_t, Masks> masks_; // by tracepoint number
};

// Whether `reg` is one that `mask` (from CollectedRegisters::mask) lets the page show.
bool register_collected(const trace::RegisterMask* mask, const tracefile::RegisterInfo& reg);

} // namespace tpagent::tpdump
