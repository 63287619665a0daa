// Fast tracepoints in a traced program: the instruction at an address becomes a jump to a pad
// that calls collector(argument, block, frame, anchor) in the program (see
// arch::JumpPadRequest), and the in-process agent's code is known to run control. One facet of
// process::Target (Target::fast_sites()).
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

namespace tpagent::process {

class FastSites {
  public:
    virtual ~FastSites() = default;

    // All threads must be stopped; a thread stopped inside the displaced bytes is moved into
    // the pad, and out again on removal. Pads are never unmapped: a thread may still be
    // running one.
    virtual Status add(std::uint64_t addr, std::uint64_t collector, std::uint64_t argument,
                       arch::FastPadOptions options) = 0;
    virtual void remove(std::uint64_t addr) = 0;
    // The bytes a jump at addr would displace, or why no jump can go there: the instruction
    // cannot run from a pad, or (x86-64, an instruction shorter than the jump) the ones after
    // it that the jump also displaces are reached from elsewhere. Such a tracepoint is
    // collected through a trap.
    virtual Result<std::size_t> jump_span(std::uint64_t addr) = 0;
    // The same with the displaced instructions relocated by someone else (gdb, qRelocInsn), one
    // at a time: begin writes the pad's own code and says where the first instruction goes;
    // each relocated length gives the next move, and after the last the jump back and the patch
    // go in (nullopt). A failure (or abandon) leaves nothing installed at that address.
    struct InstructionMove {
        std::uint64_t from = 0; // the original instruction
        std::uint64_t to = 0;   // where its relocated form goes in the pad
    };
    virtual Result<InstructionMove> begin(std::uint64_t addr, std::uint64_t collector,
                                          std::uint64_t argument, arch::FastPadOptions options) = 0;
    virtual Result<std::optional<InstructionMove>> moved(std::uint64_t length) = 0;
    virtual void abandon() = 0;
    // Executable code for the program (compiled agent expressions), in pad memory near `near`.
    virtual Result<std::uint64_t> place_code(std::uint64_t near,
                                             std::span<const std::uint8_t> code) = 0;
    virtual void remove_all() = 0;
    // Whether the pad a breakpoint's jump at `addr` last had, calling with `argument`, is
    // still there to go back to, with the code placed next to it (DebugPoints::carry_breakpoint
    // then reuses them): until nothing is installed and the pages retire.
    virtual bool keeps_carrier(std::uint64_t addr, std::uint64_t argument) const = 0;
    virtual bool has(std::uint64_t addr) const = 0;
    // The jump whose displaced instructions include addr: its address and their length.
    struct Covering {
        std::uint64_t site = 0;
        std::size_t covered = 0;
        std::uint64_t slot = 0; // where the jump to the pad is, reached by a short jump (0: none)
    };
    virtual std::optional<Covering> covering(std::uint64_t addr) const = 0;
    // Whether this program's pads run on agent stacks (arch::AgentStacks: a Go program), so
    // that each stages the whole core itself (FastPadOptions::stage_full_core).
    virtual bool pads_on_agent_stacks() = 0;
    // Their use so far, once there is a pool: stacks taken of how many, and hits not collected
    // for want of one.
    struct AgentStackUse {
        std::uint64_t taken = 0, capacity = 0, hits_without = 0;
    };
    virtual std::optional<AgentStackUse> agent_stack_use() = 0;

    // Where the in-process agent's code is in the program. A SIGSEGV/SIGBUS with the pc in
    // [copy_begin, copy_end) is its copy reading memory unmapped since it was listed readable,
    // not the program's: the pc moves to copy_fault (which returns a short count) and the
    // signal is never delivered. A thread stopped in [code_begin, code_end) is collecting: it
    // is stepped out (with threads in pads) before gdb sees a stop.
    struct InprocAgentCode {
        std::uint64_t copy_begin = 0, copy_end = 0, copy_fault = 0;
        std::uint64_t code_begin = 0, code_end = 0;
        // The trap a breakpoint evaluated in the program executes when its condition holds.
        std::uint64_t breakpoint_trap = 0;
        // If a thread whose stack pointer is `sp` is inside a collector call, also where the
        // collector called out of the library (the vDSO's clock, the C library), the stack
        // pointer the pad called with: the call returns to the address just below it. Such a
        // thread runs on to there, and is stepped on out of the pad, so no run starts or
        // ends with a frame half written.
        std::function<std::optional<std::uint64_t>(std::uint64_t sp)> collector_frame;
    };
    virtual void set_agent_code(std::optional<InprocAgentCode> code) = 0;
};

} // namespace tpagent::process
