// Which `collect` expression of a tracepoint's source recorded each memory block of a frame,
// where the file lets that be told for sure; the other blocks stay unnamed (and are shown
// by address).
//
// gdb compiles one action list per tracepoint (and one for while-stepping): the registers,
// then the static memory ranges sorted by address (M actions), then one agent expression
// per remaining item in source order (X actions; every `collect` of a non-static
// expression or trace state variable, every `teval`). An agent run records one block per
// trace op, so a frame's blocks follow the actions. Naming takes three steps:
//  1. The source items are aligned with the X actions in order (html_item_alignment). An
//     expression is named after an item only if every alignment that fits agrees on it.
//  2. The M actions are named only when the alignment is unique and the items left for
//     them can be told apart: as many items as ranges (so none merged or vanished), a
//     literal `{type} address` by its address, one other item for the one range left.
//  3. Each frame's blocks are walked along the actions (an M action: its address and
//     length; an X action without branches: one block per trace op, of the op's size when
//     it is a constant), which must use up the blocks exactly. An expression's name goes
//     to the block of its final `const N; trace`, which holds the expression's own bytes;
//     the blocks of memory read on the way (the pointer of `*p`) stay unnamed. If the
//     tracepoint has several lists (locations, while-stepping) the frame may come from,
//     every list that fits must give the same names.
// Sound as long as a plain symbol's location needs no memory read (true of C variables;
// not of C++ references or variable-length arrays, whose expressions read a pointer).
#pragma once
#include "trace/tracepoint.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tpagent::tpdump {

// One M or X action of a list, as it shows in a frame's memory blocks.
struct PlannedAction {
    bool is_range = false;    // an M action, else an X action
    trace::MemoryRange range; // M
    // X: the bytes each trace op records, in order (nothing: computed when it runs).
    std::vector<std::optional<std::uint64_t>> traces;
    bool fixed = true; // X: no branch and no tracenz, so it records the same blocks each run
    std::string name;  // the source item: of the M range, or of the X action's final trace
};

struct ActionPlan {
    std::vector<PlannedAction> actions; // in action order; R and L actions left out
};

class MemoryNames {
  public:
    explicit MemoryNames(const tracefile::TraceFile& file);

    // One name per M block of `frame`, in block order; empty where it cannot be told.
    std::vector<std::string> names(const tracefile::Frame& frame) const;

  private:
    const tracefile::TraceFile& file_;
    std::map<std::uint32_t, std::vector<ActionPlan>> plans_; // by tracepoint number
};

} // namespace tpagent::tpdump
