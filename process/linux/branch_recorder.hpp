// The software branch-trace backend's bookkeeping for one thread: the thread runs one step at a
// time (a single step, or a block step where the CPU honours it: on to the next taken branch)
// and each place it stops at is observed here. Walking the instructions from where it was
// resumed finds the branch that was taken, which goes into the thread's BranchRing.
#pragma once
#include "arch/control_flow.hpp"
#include "base/result.hpp"
#include "process/linux/branch_ring.hpp"
#include <cstdint>
#include <functional>
#include <optional>

namespace tpagent::process {

class SoftwareBranchRecorder {
  public:
    // The instruction at an address, as the program's code has it (breakpoints hidden).
    using Decode = std::function<Result<arch::FlowInstruction>(std::uint64_t)>;
    // How far a block step's walk may go looking for its branch: a longer straight run is
    // recorded as a jump from the last instruction walked (gdb shows a gap there).
    static constexpr int kMaxWalk = 65536;

    // The thread stopped at `pc` after a resume from the last observed pc: one instruction
    // ran (block_step false), or instructions up to and including one taken branch.
    void observe(std::uint64_t pc, bool block_step, const Decode& decode, BranchRing& ring);
    // The last stop was at a signal handler's entry (the kernel's stop for a stepped thread
    // given a signal): no instruction ran since the last observed pc.
    void entered_handler() { signalled_ = true; }
    // The pc was changed from outside (gdb wrote it, a new image): no branch leads there.
    void moved_to(std::uint64_t pc);
    // Where the thread was last seen (nullopt: not yet).
    std::optional<std::uint64_t> position() const { return at_; }
    // Stops that found the thread moved, and those of them after a taken branch.
    std::uint64_t steps() const { return steps_; }
    std::uint64_t steps_to_branch() const { return steps_to_branch_; }

  private:
    void taken(BranchRing& ring, std::uint64_t from, std::uint64_t to);

    std::optional<std::uint64_t> at_;   // where the thread was resumed
    std::optional<std::uint64_t> last_; // the last instruction known to have run
    bool signalled_ = false;
    std::uint64_t steps_ = 0, steps_to_branch_ = 0;
};

} // namespace tpagent::process
