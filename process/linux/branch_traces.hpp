// Branch trace (record btrace) of a process's threads: each recorded thread has a ring of taken
// branches, filled by the CPU (perf BTS) where it can, else by the software recorder, which
// steps the thread while it runs and finds each taken branch from where the steps stop.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "process/linux/branch_recorder.hpp"
#include "process/linux/branch_ring.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/linux/perf_branch_trace.hpp"
#include "process/linux/software_breakpoints.hpp"
#include "process/branch_tracing.hpp"
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <sys/types.h>
#include <unordered_map>
#include <vector>

namespace tpagent::process {

class BranchTraces final : public BranchTracing {
  public:
    // A thread's branch trace: the CPU's BTS ring, or the software recorder's steps.
    struct Recording {
        explicit Recording(std::size_t size) : ring(size) {}
        BranchRing ring;
        std::unique_ptr<PerfBranchStore> hardware; // nullptr: recorded by stepping
        SoftwareBranchRecorder software;
        BranchStepMethod method = BranchStepMethod::BlockSteps;
        BranchTraceConfig config;
    };
    // A stopped thread's pc.
    using ReadPc = std::function<Result<std::uint64_t>(pid_t)>;
    // The program's memory as the program sees it (tpagent's breakpoints and jumps hidden).
    using ReadMemory = std::function<Result<std::size_t>(std::uint64_t, std::span<std::uint8_t>)>;

    // The process's threads, and the breakpoints its block ends go in.
    BranchTraces(const arch::Architecture& arch, LinuxThreads& threads,
                 SoftwareBreakpoints& breakpoints, ReadPc read_pc, ReadMemory read_memory);

    // For a thread of the process.
    Result<BranchTraceConfig> enable(pid_t tid, const Request& request) override;
    // Ends the thread's recording (an error if there is none).
    Status disable(pid_t tid) override;
    Result<BranchTraceConfig> config(pid_t tid) const override;
    // The trace of a recorded, stopped thread.
    Result<std::vector<BranchBlock>> read(pid_t tid, BranchTraceRead kind) override;

    // The thread's recording (nullptr: none).
    Recording* find(pid_t tid);
    // The thread's recording if the software recorder makes it (nullptr: none, or the CPU's).
    Recording* software_recording(pid_t tid);
    // Software recording: the thread stopped where it is now; what branch got it there?
    void observe(pid_t tid, Recording& r);
    // Recording by block ends: a breakpoint at the first branch from the thread's pc, which
    // then runs there (false: none placed, the thread steps instead). Not into code already
    // patched: a breakpoint (whose hit is someone else's) or where `patched` says so.
    bool place_block_end(pid_t tid, LinuxThread& t, const Recording& r,
                         SoftwareBreakpoints& breakpoints,
                         const std::function<bool(std::uint64_t)>& patched);
    // Takes out the thread's block-end breakpoint, if it has one.
    static void clear_block_end(LinuxThread& t, SoftwareBreakpoints& breakpoints);

    // The code may have changed (gdb wrote it, the program resumes, a new image): decoded
    // instructions are read again.
    void forget_decoded() { flow_cache_.clear(); }
    // A thread ended: its recording with it.
    void erase(pid_t tid) { recordings_.erase(tid); }
    void clear() { recordings_.clear(); }
    // An exec: thread `former`'s recording goes on as thread `tid`'s, every other one ends.
    void keep_only(pid_t tid, std::optional<pid_t> former);

  private:
    // The software recorder's view of the program's instructions (cached until
    // forget_decoded).
    Result<arch::FlowInstruction> flow_at(std::uint64_t addr);

    const arch::Architecture& arch_;
    LinuxThreads& threads_;
    SoftwareBreakpoints& breakpoints_;
    ReadPc read_pc_;
    ReadMemory read_memory_;
    std::map<pid_t, Recording> recordings_;
    std::unordered_map<std::uint64_t, arch::FlowInstruction> flow_cache_;
};

} // namespace tpagent::process
