// gdb's own breakpoints and watchpoints in a traced process (Z0..Z4, z0..z4).
#pragma once
#include "base/result.hpp"
#include <cstdint>

namespace tpagent::process {

class DebugPoints {
  public:
    virtual ~DebugPoints() = default;

    // Software breakpoints (Z0), sharing the instruction sites with tracepoints. One at a fast
    // tracepoint's address stops threads before its jump; one inside the instructions the
    // jump replaces is refused (no thread runs those bytes).
    virtual Status insert_breakpoint(std::uint64_t addr) = 0;
    virtual Status remove_breakpoint(std::uint64_t addr) = 0;
    virtual bool breakpoint_at(std::uint64_t addr) const = 0;

    // Hardware breakpoints and watchpoints (Z1..Z4: `type`), in every thread's debug registers.
    virtual Status insert_hw_point(int type, std::uint64_t addr, std::uint64_t len) = 0;
    virtual Status remove_hw_point(int type, std::uint64_t addr, std::uint64_t len) = 0;
};

} // namespace tpagent::process
