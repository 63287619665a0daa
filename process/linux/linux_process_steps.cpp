// tpagent's own steps of a thread through a fast tracepoint's pad and collector, and a
// collector's fault recovered.
#include "process/linux/linux_process.hpp"
#include <spdlog/spdlog.h>

namespace tpagent::process {

using thread_activity::SteppingFastJump;

namespace {
// A single step over a fast tracepoint runs its pad and collector one instruction at a time;
// past this many, something keeps the thread from the displaced instruction (a loop waiting
// for tpagent, say) and the step is reported where it is.
constexpr std::uint64_t kMaxFastStepInstructions = 200000;
} // namespace

// One instruction of a single step over a fast tracepoint's jump has run. True once the
// displaced instruction has (the pc is put back into the program's code); false to step on.
bool LinuxProcess::finish_fast_step(pid_t tid, LinuxThread& t) {
    SteppingFastJump& step = *t.doing<SteppingFastJump>();
    auto site = fast_sites_.find(step.site);
    auto s = snapshot(tid, false);
    if (site == fast_sites_.end() || !s || ++step.steps > kMaxFastStepInstructions) {
        if (s && site != fast_sites_.end())
            spdlog::warn("thread {}: step over the fast tracepoint at 0x{:x} stopped after {} "
                         "instructions in its pad",
                         tid, site->first, step.steps - 1);
        t.end<SteppingFastJump>();
        return true;
    }
    const FastSite& f = site->second;
    const std::uint64_t pc = arch_.pc(**s);
    const std::uint64_t relocated = f.pad + f.relocated_offset;
    if (!step.in_copy) {
        step.in_copy = pc == relocated; // the collector is done; next: the instruction
        return false;
    }
    if (arch::in_relocated(f.code, relocated, pc)) {
        auto back = arch::original_address(f.code, relocated, site->first, pc);
        if (!back) return false; // within the instructions one original became
        arch_.set_pc(**s, *back);
        if (auto w = arch_.write_general_registers(tid, **s); !w)
            spdlog::warn("thread {}: cannot move the pc out of a pad: {}", tid, w.error().text);
    } // else a branch left the pad: the pc is already the program's
    t.end<SteppingFastJump>();
    return true;
}

bool LinuxProcess::recover_collector_fault(pid_t tid) {
    if (!agent_code_) return false;
    auto s = snapshot(tid, false);
    if (!s) return false;
    const std::uint64_t pc = arch_.pc(**s);
    if (pc < agent_code_->copy_begin || pc >= agent_code_->copy_end) return false;
    arch_.set_pc(**s, agent_code_->copy_fault);
    if (auto w = arch_.write_general_registers(tid, **s); !w) {
        spdlog::warn("thread {}: cannot recover the collector's fault: {}", tid, w.error().text);
        return false;
    }
    spdlog::debug("thread {}: collector read unmapped memory at pc 0x{:x}: recovered", tid, pc);
    return true;
}

} // namespace tpagent::process
