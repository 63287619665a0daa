// Trap sites (see linux_trap_sites.hpp): placing and removing them, a thread's way past one
// at a resume, and the steps that finish it.
#include "process/linux/linux_trap_sites.hpp"
#include <spdlog/spdlog.h>

namespace tpagent::process {

using thread_activity::SteppingOverSite;
using thread_activity::SteppingThroughPad;

LinuxTrapSites::LinuxTrapSites(const arch::Architecture& arch, AddressSpace& memory,
                               Process process)
    : arch_(arch), memory_(memory), process_(std::move(process)) {}

Result<LinuxTrapSites::Site> LinuxTrapSites::place_displaced(std::uint64_t addr,
                                                             std::span<const std::uint8_t> code) {
    // Relocate once for a provisional address to learn the size, then for the real pad.
    auto probe = arch_.relocate(code, addr, addr, 1);
    if (!probe) return probe.error();
    auto pad = process_.allocate_pad(addr, probe->code.size() + 32);
    if (!pad) return pad.error();
    auto reloc = arch_.relocate(code, addr, *pad, 1);
    if (!reloc) return reloc.error();
    if (auto w = memory_.write_raw(*pad, reloc->code); !w) return w.error();
    return Site{*pad, std::move(*reloc)};
}

Result<std::uint64_t> LinuxTrapSites::passing_pad(std::uint64_t addr) {
    if (const std::uint64_t made = passing_pad_made(addr)) return made;
    if (auto s = process_.check_address(addr, false); !s) return s.error();
    std::vector<std::uint8_t> code(arch_.max_instruction_bytes() * 2);
    auto got = process_.read_memory(addr, code);
    if (!got) return got.error();
    code.resize(*got);
    auto pad = place_displaced(addr, code);
    if (!pad) return pad.error();
    const std::uint64_t at = pad->pad;
    passing_[addr] = std::move(*pad);
    process_.code_changed();
    return at;
}

std::uint64_t LinuxTrapSites::passing_pad_made(std::uint64_t addr) const {
    if (auto site = sites_.find(addr); site != sites_.end() && site->second.pad)
        return site->second.pad;
    auto made = passing_.find(addr);
    return made == passing_.end() ? 0 : made->second.pad;
}

Status LinuxTrapSites::add(std::uint64_t addr) {
    if (sites_.count(addr)) return ok_status();
    if (auto s = process_.check_address(addr, false); !s) return s;
    std::vector<std::uint8_t> code(arch_.max_instruction_bytes() * 2);
    auto got = process_.read_memory(addr, code); // breakpoint bytes hidden: the program's own
    if (!got) return got.error();
    code.resize(*got);
    auto pad = place_displaced(addr, code);
    if (!pad) {
        // Stepped over in place instead: exact for one thread; a thread that reaches the
        // address while another steps over it passes it unseen.
        if (auto s = process_.check_address(addr, true); !s) return s;
        spdlog::debug("trap tracepoint at 0x{:x}: {}; stepping over it in place", addr,
                      pad.error().text);
        pad = Site{};
    }
    if (auto b = memory_.breakpoints().insert(addr); !b) return b;
    sites_[addr] = std::move(*pad);
    recently_removed_.erase(addr);
    process_.code_changed();
    return ok_status();
}

void LinuxTrapSites::remove(std::uint64_t addr) {
    if (!sites_.erase(addr)) return;
    // Removal cannot be refused; a breakpoint that stays is still a site's to the trap
    // handler (recently_removed_), which passes threads over it.
    if (auto r = memory_.breakpoints().remove(addr); !r)
        spdlog::warn("trap tracepoint at 0x{:x}: {}", addr, r.error().text);
    recently_removed_.insert(addr);
}

void LinuxTrapSites::remove_all() {
    while (!sites_.empty())
        remove(sites_.begin()->first);
}

Status LinuxTrapSites::pass(pid_t tid, LinuxThread& t, bool& step) {
    auto s = process_.registers(tid);
    if (!s) return s.error();
    const std::uint64_t pc = arch_.pc(**s);
    if (sites_.count(pc) && !memory_.user_breakpoint_at(pc)) collect_unrun_site(tid, t, pc, step);
    auto site = sites_.find(pc); // the hit may have removed it (the trace stopped)
    if (site != sites_.end() && site->second.pad == 0 && !memory_.user_breakpoint_at(pc)) {
        // No pad: the instruction runs in place, its breakpoint lifted for one step
        // (the pc rewound onto it after the hit reaches the thread now).
        if (auto w = arch_.write_general_registers(tid, **process_.registers(tid)); !w) return w;
        if (auto l = memory_.breakpoints().lift(pc); !l) return l;
        spdlog::debug("thread {}: stepping over the trap tracepoint at 0x{:x}", tid, pc);
        t.activity = SteppingOverSite{pc, !step};
        step = true;
    } else if (site != sites_.end() && !memory_.user_breakpoint_at(pc)) {
        arch::RegisterSnapshot& regs = **process_.registers(tid);
        arch_.set_pc(regs, site->second.pad);
        if (auto w = arch_.write_general_registers(tid, regs); !w) return w;
        if (step) t.activity = SteppingThroughPad{pc};
    }
    return ok_status();
}

void LinuxTrapSites::end_step_over(pid_t tid, LinuxThread& t) {
    const std::uint64_t addr = t.doing<SteppingOverSite>()->addr;
    if (auto r = memory_.breakpoints().lower(addr); !r)
        spdlog::warn("thread {}: cannot put back the trap tracepoint at 0x{:x}: {}", tid, addr,
                     r.error().text);
    t.end<SteppingOverSite>();
}

void LinuxTrapSites::collect_unrun_site(pid_t tid, LinuxThread& t, std::uint64_t pc, bool& step) {
    if (t.collected_at == pc || !on_hit_) return;
    const SiteHit hit = on_hit_(tid, pc);
    t.collected_at = pc;
    if (hit.consumed && hit.steps > 0) {
        t.while_stepping = WhileStepping{pc, hit.steps};
        step = true;
    }
}

bool LinuxTrapSites::finish_pad_step(pid_t tid, LinuxThread& t) {
    const std::uint64_t site_addr = t.doing<SteppingThroughPad>()->site;
    // A site's pad, or the one gdb's breakpoint there is passed through.
    const Site* site = nullptr;
    if (auto it = sites_.find(site_addr); it != sites_.end() && it->second.pad)
        site = &it->second;
    else if (auto made = passing_.find(site_addr); made != passing_.end())
        site = &made->second;
    auto s = process_.registers(tid);
    if (!site || !s) {
        t.end<SteppingThroughPad>();
        return true;
    }
    const std::uint64_t pc = arch_.pc(**s), pad = site->pad;
    if (!arch::in_relocated(site->code, pad, pc)) {
        t.end<SteppingThroughPad>(); // a branch left the pad: the pc is already in original code
        return true;
    }
    auto back = arch::original_address(site->code, pad, site_addr, pc);
    if (!back) return false;
    arch_.set_pc(**s, *back);
    if (auto w = arch_.write_general_registers(tid, **s); !w)
        spdlog::warn("thread {}: cannot move the pc out of a pad: {}", tid, w.error().text);
    t.end<SteppingThroughPad>();
    return true;
}

} // namespace tpagent::process
