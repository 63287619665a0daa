// tpagent's own steps of a thread: over a trap site's lifted breakpoint, through a site's
// pad, through a fast tracepoint's pad and collector, and a site's hit collected before the
// thread leaves it without running its breakpoint.
#include "process/linux/linux_process.hpp"
#include <spdlog/spdlog.h>

namespace tpagent::process {

using thread_activity::SteppingFastJump;
using thread_activity::SteppingOverSite;
using thread_activity::SteppingThroughPad;

namespace {
// A single step over a fast tracepoint runs its pad and collector one instruction at a time;
// past this many, something keeps the thread from the displaced instruction (a loop waiting
// for tpagent, say) and the step is reported where it is.
constexpr std::uint64_t kMaxFastStepInstructions = 200000;
} // namespace

void LinuxProcess::end_step_over(pid_t tid, LinuxThread& t) {
    const std::uint64_t addr = t.doing<SteppingOverSite>()->addr;
    if (auto r = memory_->breakpoints().lower(addr); !r)
        spdlog::warn("thread {}: cannot put back the trap tracepoint at 0x{:x}: {}", tid, addr,
                     r.error().text);
    t.end<SteppingOverSite>();
}

void LinuxProcess::collect_unrun_site(pid_t tid, LinuxThread& t, std::uint64_t pc, bool& step) {
    if (t.collected_at == pc || !on_site_hit_) return;
    const SiteHit hit = on_site_hit_(tid, pc);
    t.collected_at = pc;
    if (hit.consumed && hit.steps > 0) {
        t.while_stepping = WhileStepping{pc, hit.steps};
        step = true;
    }
}

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

// A single step that started in a pad: puts the pc back into the original code. False while
// the step has not left the displaced instruction yet (e.g. it entered a call trampoline).
bool LinuxProcess::finish_pad_step(pid_t tid, LinuxThread& t) {
    const std::uint64_t site_addr = t.doing<SteppingThroughPad>()->site;
    auto site = sites_.find(site_addr);
    auto s = snapshot(tid, false);
    if (site == sites_.end() || !s) {
        t.end<SteppingThroughPad>();
        return true;
    }
    const std::uint64_t pc = arch_.pc(**s), pad = site->second.pad;
    if (!arch::in_relocated(site->second.code, pad, pc)) {
        t.end<SteppingThroughPad>(); // a branch left the pad: the pc is already in original code
        return true;
    }
    auto back = arch::original_address(site->second.code, pad, site_addr, pc);
    if (!back) return false;
    arch_.set_pc(**s, *back);
    if (auto w = arch_.write_general_registers(tid, **s); !w)
        spdlog::warn("thread {}: cannot move the pc out of a pad: {}", tid, w.error().text);
    t.end<SteppingThroughPad>();
    return true;
}

} // namespace tpagent::process
