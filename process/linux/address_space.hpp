// The memory of a traced process as tpagent reads and writes it: /proc/PID/mem, with the layer
// of software breakpoints (tpagent's and gdb's) over the program's own bytes.
#pragma once
#include "base/result.hpp"
#include "process/linux/software_breakpoints.hpp"
#include <cstddef>
#include <cstdint>
#include <span>
#include <sys/types.h>

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

  private:
    int mem_fd_ = -1;
    SoftwareBreakpoints breakpoints_;
};

} // namespace tpagent::process
