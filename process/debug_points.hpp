// gdb's own breakpoints and watchpoints in a traced process (Z0..Z4, z0..z4).
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "bytecode/program.hpp"
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace tpagent::process {

// What gdb gave a software breakpoint to run where the program runs (RSP `Z0` options): the
// hit is reported to gdb only if a condition holds (or there is none) and there are no
// commands; the commands (agent-style dprintf) run at every hit whose condition holds.
struct BreakpointCode {
    std::vector<bytecode::Program> conditions; // any one true: the condition holds
    std::vector<bytecode::Program> commands;
    bool persist = false; // the commands go on after gdb detaches (`set disconnected-dprintf`)

    bool empty() const { return conditions.empty() && commands.empty(); }
};

class DebugPoints {
  public:
    virtual ~DebugPoints() = default;

    // Software breakpoints (Z0), sharing the instruction sites with tracepoints. One at a fast
    // tracepoint's address stops threads before its jump; one inside the instructions the
    // jump replaces is refused (no thread runs those bytes). Inserting again where one is
    // replaces its code, as gdb re-sends a breakpoint whose condition changed.
    virtual Status insert_breakpoint(std::uint64_t addr, BreakpointCode code) = 0;
    virtual Status remove_breakpoint(std::uint64_t addr) = 0;
    virtual bool breakpoint_at(std::uint64_t addr) const = 0;
    // gdb's breakpoint at `addr` (inserted, with conditions) evaluated in the program from now
    // on: a jump to a pad that calls `entry(record, …)` (the in-process agent's breakpoint
    // entry) replaces its instruction, and a thread stops there only when a condition holds.
    // Refused, the breakpoint staying an instruction, where no jump can go or a tracepoint is.
    // It is an instruction again when gdb inserts it anew, and when a tracepoint or another
    // breakpoint needs its place.
    virtual Status carry_breakpoint(std::uint64_t addr, std::uint64_t entry, std::uint64_t record,
                                    arch::FastPadOptions options) = 0;
    virtual bool carried(std::uint64_t addr) const = 0;
    // Where breakpoint commands print (printf of an agent expression), one call per printf.
    using CommandOutput = std::function<void(std::string_view)>;
    virtual void set_command_output(CommandOutput output) = 0;
    // Carried commands print into the agent's ring; a thread that finds it full stops for
    // tpagent, which calls this to empty it, and then goes on.
    using RingReader = std::function<void()>;
    virtual void set_ring_reader(RingReader reader) = 0;
    // A breakpoint whose commands are to go on after gdb detaches.
    virtual bool persistent_commands() const = 0;

    // Hardware breakpoints and watchpoints (Z1..Z4: `type`), in every thread's debug registers.
    // A hardware breakpoint (Z1) may have code too, run as a software one's; a thread whose
    // hit is not gdb's passes it through a copy of the instruction, which must be possible.
    virtual Status insert_hw_point(int type, std::uint64_t addr, std::uint64_t len,
                                   BreakpointCode code) = 0;
    virtual Status remove_hw_point(int type, std::uint64_t addr, std::uint64_t len) = 0;
};

} // namespace tpagent::process
