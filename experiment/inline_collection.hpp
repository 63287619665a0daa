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

// The pad's frame for `rec`, or why its pad calls the agent's collector.
Result<arch::InlineCollection> inline_collection_for(const SharedBuffer& shared,
                                                     const inproc::TracepointRecord& rec);

} // namespace tpagent::experiment
