// Which fast tracepoints their pads collect in line (arch::InlineCollection), and the frame
// each pad writes: decided once, when the pad is made, from the tracepoint's record in the
// shared buffer, so that no hit interprets the record's description again. The rest (a
// condition, a pass count, an expression, the FP/vector state, the self-mapped image's
// threads) stays with the agent's collector.
#pragma once
#include "arch/arch.hpp"
#include "experiment/shared_buffer.hpp"
#include "inproc/shared_buffer.hpp"
#include <string>

namespace tpagent::experiment {

// The pad's frame for `rec`, or why its pad calls the agent's collector. `pc_regnum`: the
// architecture's (Architecture::pc_regnum()); the general registers a pad saves are the ones
// numbered below it, and a condition may read those and the pc.
Result<arch::InlineCollection> inline_collection_for(const SharedBuffer& shared,
                                                     const inproc::TracepointRecord& rec,
                                                     int pc_regnum);

} // namespace tpagent::experiment
