// tpagent's own steps of a thread: over a trap site's lifted breakpoint, through a site's
// pad, through a fast tracepoint's pad and collector, and a site's hit collected before the
// thread leaves it without running its breakpoint.
#include "process/linux/linux_process.hpp"
#include <spdlog/spdlog.h>

namespace tpagent::process {

using thread_activity::SteppingOverSite;
using thread_activity::SteppingThroughPad;

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
