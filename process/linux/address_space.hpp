// The memory of a traced process as tpagent reads and writes it: /proc/PID/mem, with the layer
// of software breakpoints (tpagent's and gdb's) over the program's own bytes.
#pragma once
#include "base/result.hpp"
#include "process/linux/software_breakpoints.hpp"
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace tpagent::process {

class AddressSpace {
  public:
    explicit AddressSpace(std::span<const std::uint8_t> breakpoint_instruction);
    ~AddressSpace();
    AddressSpace(const AddressSpace&) = delete;
    AddressSpace& operator=(const AddressSpace&) = delete;

    // Opens the memory of process `pid` (again after an exec: the new image's).
    void open(pid_t pid);

    // The bytes in memory, breakpoint instructions and all; `got` may fall short of out's size
    // where the memory ends. An error only if nothing could be read.
    Status read_raw(std::uint64_t addr, std::span<std::uint8_t> out, std::size_t& got) const;
    Status write_raw(std::uint64_t addr, std::span<const std::uint8_t> data);

    SoftwareBreakpoints& breakpoints() { return breakpoints_; }
    const SoftwareBreakpoints& breakpoints() const { return breakpoints_; }

    // gdb's own breakpoints (Z0) among them; the others are tpagent's.
    bool user_breakpoint_at(std::uint64_t addr) const { return user_breakpoints_.count(addr) != 0; }
    Status insert_user_breakpoint(std::uint64_t addr);
    Status remove_user_breakpoint(std::uint64_t addr);
    // gdb's breakpoint carried by a fast jump (LinuxFastSites::add_carrier, whose pad stops
    // the thread when its conditions hold): no breakpoint instruction in memory, still gdb's.
    // Carrying takes the instruction out (the jump under it is whole again); uncarrying puts
    // it back (the jump gone first).
    Status carry_user_breakpoint(std::uint64_t addr);
    Status uncarry_user_breakpoint(std::uint64_t addr);
    bool carried(std::uint64_t addr) const { return carried_.count(addr) != 0; }
    // Each of gdb's breakpoints with the bytes it replaced.
    using BreakpointBytes = std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>;
    // For another process sharing this memory (a vfork child): gdb's breakpoints are
    // forgotten here, left in memory, and adopted there.
    BreakpointBytes give_up_user_breakpoints();
    void adopt_user_breakpoints(const BreakpointBytes& breakpoints);
    // The image is gone (exec, death): forgets every breakpoint, memory untouched.
    void forget_all();

    // A vfork child runs in this memory until it execs or exits: no breakpoint in it meanwhile
    // (the parent waits; its hits are not missed), then they go back.
    void lift_for_vfork();
    void lower_after_vfork();

  private:
    int mem_fd_ = -1;
    SoftwareBreakpoints breakpoints_;
    std::set<std::uint64_t> user_breakpoints_;
    std::set<std::uint64_t> carried_; // of user_breakpoints_, none in breakpoints_
    std::vector<std::uint64_t> lifted_for_vfork_;
};

} // namespace tpagent::process
