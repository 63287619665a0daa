// A stopped thread's registers, in gdb's `g` layout, and the siginfo of its last stop: the
// part of a Target that g/G/P/p, qXfer:siginfo and the collectors read and write.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <span>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class ThreadRegisters {
  public:
    virtual ~ThreadRegisters() = default;

    // full=false reads only the general registers (the rest are marked unavailable): cheaper.
    virtual Result<std::vector<std::uint8_t>> read(pid_t tid, std::vector<bool>& available,
                                                   bool full = true) = 0;
    virtual Status write(pid_t tid, std::span<const std::uint8_t> g) = 0;
    virtual Status write_one(pid_t tid, int regnum, std::span<const std::uint8_t> value) = 0;
    virtual Result<std::uint64_t> read_pc(pid_t tid) = 0;
    // The siginfo of the thread's last stop, as the kernel has it (gdb's $_siginfo), and a new
    // one for the signal it is resumed with.
    virtual Result<std::vector<std::uint8_t>> read_siginfo(pid_t /*tid*/) {
        return make_error(ErrorCode::Unsupported, "no siginfo here");
    }
    virtual Status write_siginfo(pid_t /*tid*/, std::span<const std::uint8_t> /*siginfo*/) {
        return make_error(ErrorCode::Unsupported, "no siginfo here");
    }
};

} // namespace tpagent::process
