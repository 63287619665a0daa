// tpagent's own system calls and function calls, run by a stopped thread of the traced
// process (each one a RemoteCall): the pads' mmap, madvise, the program's dlopen, the
// in-process agent's image.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/linux_registers.hpp"
#include "process/linux/linux_thread.hpp"
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace tpagent::process {

class RemoteCalls {
  public:
    RemoteCalls(pid_t pid, const arch::Architecture& arch, LinuxThreads& threads,
                LinuxRegisters& registers, AddressSpace& memory)
        : pid_(pid), arch_(arch), threads_(threads), registers_(registers), memory_(memory) {}

    // The thread to run a call: the process's leader, else another, but not one stopped at a
    // system call's entry (its own call would be lost); 0 with none.
    pid_t thread() const;
    // Runs a system call in a stopped thread; its -errno result is an error "WHAT: reason".
    Result<std::uint64_t> system_call(pid_t tid, long number, std::span<const std::uint64_t> args,
                                      std::string_view what);
    // Calls function(args) in a stopped thread, which returns onto a breakpoint at `landing`;
    // the thread's registers are put back after. The function's result.
    Result<std::uint64_t> function_call(pid_t tid, std::uint64_t function,
                                        std::span<const std::uint64_t> args, std::uint64_t landing);

    // Target::map_now and Target::load_library, in one thread of the program (thread()).
    Status map_now(std::uint64_t addr, std::uint64_t length);
    Status load_library(const std::string& path);
    // Target::place_agent_image (remote_calls_image.cpp).
    Status place_agent_image(const std::string& path);

  private:
    long thread_pointer_source();

    pid_t pid_;
    const arch::Architecture& arch_;
    LinuxThreads& threads_;
    LinuxRegisters& registers_;
    AddressSpace& memory_;
};

} // namespace tpagent::process
