// Borrowing a stopped thread to run code of tpagent's own (an injected system call or function
// call): its registers, vector state included, are saved first and put back on every path out,
// with any memory the call overwrote, so the thread goes on (a system call it was stopped in
// restarting) as if nothing had happened.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "process/linux/linux_thread.hpp"
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class RemoteCall {
  public:
    using MemoryWriter = std::function<Status(std::uint64_t, std::span<const std::uint8_t>)>;

    // `current`: the thread's registers now (the vector state too); `what` names the call in
    // the error logged if it cannot be undone.
    RemoteCall(const arch::Architecture& arch, pid_t tid, LinuxThread& thread,
               const arch::RegisterSnapshot& current, MemoryWriter write_memory, std::string what);
    // Undoes the call if finish() has not.
    ~RemoteCall();
    RemoteCall(const RemoteCall&) = delete;
    RemoteCall& operator=(const RemoteCall&) = delete;

    const arch::RegisterSnapshot& saved() const { return saved_; }
    // Sets the thread's registers for the call; they are put back from then on.
    Status set_registers(const arch::RegisterSnapshot& regs);
    // The call overwrote [addr, addr+original.size()) (an instruction at the pc, say): the
    // original bytes are written back before the registers.
    void overwrote(std::uint64_t addr, std::vector<std::uint8_t> original);
    // Puts the memory and the registers back; an error means the thread must not run on.
    Status finish();

  private:
    struct Overwritten {
        std::uint64_t addr = 0;
        std::vector<std::uint8_t> original;
    };
    const arch::Architecture& arch_;
    pid_t tid_;
    LinuxThread& thread_;
    const arch::RegisterSnapshot saved_;
    MemoryWriter write_memory_;
    std::string what_;
    std::vector<Overwritten> overwritten_;
    bool registers_changed_ = false;
    bool finished_ = false;
};

} // namespace tpagent::process
