// gdb's breakpoints and watchpoints in a traced Linux process: breakpoint instructions in its
// AddressSpace (never inside a fast tracepoint's displaced instructions) and the threads' debug
// registers, which every stopped thread gets and every new thread is given at its first resume.
#pragma once
#include "arch/hw_points.hpp"
#include "process/debug_points.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/linux_fast_sites.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/linux/linux_trap_sites.hpp"
#include "process/target.hpp"
#include <map>
#include <set>

namespace tpagent::process {

class LinuxDebugPoints final : public DebugPoints {
  public:
    LinuxDebugPoints(const arch::Architecture& arch, AddressSpace& memory,
                     LinuxFastSites& fast_sites, LinuxTrapSites& trap_sites, LinuxThreads& threads)
        : arch_(arch), memory_(memory), fast_sites_(fast_sites), trap_sites_(trap_sites),
          threads_(threads) {}

    Status insert_breakpoint(std::uint64_t addr, BreakpointCode code) override;
    Status remove_breakpoint(std::uint64_t addr) override;
    bool breakpoint_at(std::uint64_t addr) const override {
        return memory_.user_breakpoint_at(addr);
    }
    Status carry_breakpoint(std::uint64_t addr, std::uint64_t entry, std::uint64_t record,
                            arch::FastPadOptions options) override;
    bool carried(std::uint64_t addr) const override { return memory_.carried(addr); }
    void set_command_output(CommandOutput output) override { output_ = std::move(output); }
    void set_ring_reader(RingReader reader) override { ring_reader_ = std::move(reader); }
    void read_ring() const {
        if (ring_reader_) ring_reader_();
    }
    bool persistent_commands() const override;

    // A thread stopped by gdb's breakpoint at `addr` (its pc rewound there), a software one
    // or a `hardware` one: runs what gdb gave the breakpoint to run, and says whether gdb is to
    // be told of the hit.
    bool reports_hit(Target& target, pid_t tid, std::uint64_t addr, bool hardware);
    // gdb's hardware breakpoint with code at `addr`.
    bool hw_breakpoint_with_code_at(std::uint64_t addr) const { return hw_code_.count(addr) != 0; }
    // Every breakpoint is gone from the code (detach, exec): their code with them.
    void forget_code() {
        code_.clear();
        hw_code_.clear();
    }
    // The debug registers are cleared (detach).
    void forget_hw() {
        hw_.clear();
        hw_breakpoints_.clear();
        hw_code_.clear();
    }
    Status insert_hw_point(int type, std::uint64_t addr, std::uint64_t len,
                           BreakpointCode code) override;
    Status remove_hw_point(int type, std::uint64_t addr, std::uint64_t len) override;

    // The hardware points set, for the run loop (watchpoint hits, debug registers of new
    // threads, range stepping).
    arch::HwPoints& hw() { return hw_; }
    const arch::HwPoints& hw() const { return hw_; }

  private:
    const arch::Architecture& arch_;
    AddressSpace& memory_;
    LinuxFastSites& fast_sites_;
    LinuxTrapSites& trap_sites_; // (the pads that pass breakpoints with code)
    LinuxThreads& threads_;
    arch::HwPoints hw_;
    std::map<std::uint64_t, BreakpointCode> code_;    // breakpoints with conditions or commands
    std::map<std::uint64_t, BreakpointCode> hw_code_; // hardware ones (Z1) likewise
    std::set<std::uint64_t> hw_breakpoints_;          // the Z1s in the debug registers
    CommandOutput output_;
    RingReader ring_reader_;
};

} // namespace tpagent::process
