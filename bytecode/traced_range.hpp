// An agent expression that does nothing but collect one range of memory, at a constant
// address or at a register plus a constant: gdb's code for `collect` of a variable in memory
// (`const32 A; const8 N; trace; end`, or `reg R; const8 K; ext 8; add; trace_quick N; end`).
// Collected as that range, it needs no expression run at a hit (a fast tracepoint's pad copies
// it in line: experiment/inline_collection.hpp).
#pragma once
#include "bytecode/program.hpp"
#include <cstdint>
#include <optional>

namespace tpagent::bytecode {

struct TracedRange {
    int base_register = -1; // gdb regnum, or -1: the address is `offset`
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    bool operator==(const TracedRange&) const = default;
};

// The one range `p` collects, if that is all it does.
std::optional<TracedRange> traced_range(const Program& p);

} // namespace tpagent::bytecode
