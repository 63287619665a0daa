// The registers of a traced Linux process's stopped threads: read once per stop into the
// thread's cache (LinuxThread::regs), which tpagent's own moves of the pc write through too.
#pragma once
#include "arch/arch.hpp"
#include "process/linux/branch_traces.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/thread_registers.hpp"
#include <map>

namespace tpagent::process {

class LinuxRegisters final : public ThreadRegisters {
  public:
    LinuxRegisters(LinuxThreads& threads, const arch::Architecture& arch,
                   BranchTraces& branch_traces)
        : threads_(threads), arch_(arch), branch_traces_(branch_traces) {}

    Result<std::vector<std::uint8_t>> read(pid_t tid, std::vector<bool>& available,
                                           bool full = true) override;
    Status write(pid_t tid, std::span<const std::uint8_t> g) override;
    Status write_one(pid_t tid, int regnum, std::span<const std::uint8_t> value) override;
    Result<std::uint64_t> read_pc(pid_t tid) override;
    Result<std::vector<std::uint8_t>> read_siginfo(pid_t tid) override;
    Status write_siginfo(pid_t tid, std::span<const std::uint8_t> siginfo) override;

    // The cached registers of a stopped thread; `full` also fetches the vector/FP state.
    Result<arch::RegisterSnapshot*> snapshot(pid_t tid, bool full = true);
    // Ok if `tid` is a thread of ours, stopped.
    Status check_stopped(pid_t tid) const;

  private:
    LinuxThreads& threads_;
    const arch::Architecture& arch_;
    BranchTraces& branch_traces_; // a software recording follows writes of the pc
};

} // namespace tpagent::process
