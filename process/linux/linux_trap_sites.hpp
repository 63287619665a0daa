// A Linux process's trap sites (process/trap_sites.hpp): each a breakpoint whose instruction
// runs from a pad near the code (or is stepped over in place, its breakpoint lifted), and the
// steps tpagent takes a thread through for them. The process's run control asks it at each
// resume and trap.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/trap_sites.hpp"
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <sys/types.h>

namespace tpagent::process {

class LinuxTrapSites final : public TrapSites {
  public:
    struct Site {
        std::uint64_t pad = 0; // 0: no pad, the instruction is stepped over in place
        arch::Relocated code;
    };
    // What the sites need of their process.
    struct Process {
        // The program's own code (tpagent's breakpoints and jumps hidden).
        std::function<Result<std::size_t>(std::uint64_t, std::span<std::uint8_t>)> read_memory;
        // Refused where no site may go (a fast tracepoint's jump covers addr, or a trap there
        // would change what the program does); `stepped`: the instruction is stepped there.
        std::function<Status(std::uint64_t addr, bool stepped)> check_address;
        // Room for a pad of `size` bytes near `near`.
        std::function<Result<std::uint64_t>(std::uint64_t near, std::size_t size)> allocate_pad;
        // The cached general registers of a stopped thread.
        std::function<Result<arch::RegisterSnapshot*>(pid_t)> registers;
        // A site was added: what tpagent has put in the code is published again.
        std::function<void()> code_changed;
    };

    LinuxTrapSites(const arch::Architecture& arch, AddressSpace& memory, Process process);

    void set_handlers(SiteHitHandler hit, SiteStepHandler step) override {
        on_hit_ = std::move(hit);
        on_step_ = std::move(step);
    }
    Status add(std::uint64_t addr) override;
    void remove(std::uint64_t addr) override;
    void remove_all() override;
    bool has(std::uint64_t addr) const override { return sites_.count(addr) != 0; }

    bool empty() const { return sites_.empty(); }
    const std::map<std::uint64_t, Site>& sites() const { return sites_; }
    // The pads made to pass gdb's breakpoints (passing_pad).
    const std::map<std::uint64_t, Site>& passing_pads() const { return passing_; }
    // Whether a site runs its instruction from a pad, or a thread may pass a breakpoint
    // through one.
    bool any_pad() const {
        return !passing_.empty() || std::any_of(sites_.begin(), sites_.end(),
                                                [](const auto& s) { return s.second.pad; });
    }
    // A site removed while traps it set may still arrive.
    bool recently_removed(std::uint64_t addr) const { return recently_removed_.count(addr) != 0; }
    // The hit handler's answer for a thread at a site (nothing consumed without one).
    SiteHit hit(pid_t tid, std::uint64_t site) { return on_hit_ ? on_hit_(tid, site) : SiteHit{}; }
    // One while-stepping step of a thread that hit `site` has run.
    void stepped(pid_t tid, std::uint64_t site) {
        if (on_step_) on_step_(tid, site);
    }
    // The image is gone (exec, death): every site with it, nothing written back.
    void forget() {
        sites_.clear();
        passing_.clear();
        recently_removed_.clear();
    }

    // A stopped thread about to be resumed at a site leaves it through the pad (or, with no
    // pad, by a step over the lifted breakpoint, which sets `step`), its hit collected first if
    // it did not run the breakpoint. Not where gdb has a breakpoint of its own.
    Status pass(pid_t tid, LinuxThread& t, bool& step);
    // The displaced copy of the instruction at `addr` (in a pad, with a jump back after it)
    // through which a thread passes gdb's breakpoint there without lifting it, so that other
    // threads keep meeting it: a trap site's pad, or one made for this and kept. All threads
    // must be stopped the first time (a pad may have to be mapped).
    Result<std::uint64_t> passing_pad(std::uint64_t addr);
    // The one made already, or 0.
    std::uint64_t passing_pad_made(std::uint64_t addr) const;
    // A single step that started in a pad: puts the pc back into the original code. False
    // while the step has not left the displaced instruction yet.
    bool finish_pad_step(pid_t tid, LinuxThread& t);
    // The step over a lifted site's instruction is over: its breakpoint goes back.
    void end_step_over(pid_t tid, LinuxThread& t);

  private:
    // A site's displaced instruction, relocated into a pad near `addr`.
    Result<Site> place_displaced(std::uint64_t addr, std::span<const std::uint8_t> code);
    // Collects a site's hit for a thread about to leave its address without having run the
    // breakpoint (it stepped onto it, or was stopped there).
    void collect_unrun_site(pid_t tid, LinuxThread& t, std::uint64_t pc, bool& step);

    const arch::Architecture& arch_;
    AddressSpace& memory_;
    Process process_;
    std::map<std::uint64_t, Site> sites_;
    std::set<std::uint64_t> recently_removed_; // traps already taken may still arrive
    std::map<std::uint64_t, Site> passing_;    // passing_pad()s made for gdb's breakpoints
    SiteHitHandler on_hit_;
    SiteStepHandler on_step_;
};

} // namespace tpagent::process
